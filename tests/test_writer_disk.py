"""Writers on a failing disk: a write that fails at any byte (RLIMIT_FSIZE stands in for a full
disk or a quota) leaves either nothing changed or the whole change, never an empty lock, and
says which; names too long for the file system are refused before anything is written."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from conftest import git
from helpers_check import lint, parsed
from helpers_writer import (
    INTENT,
    LOCK,
    PAGES,
    cli,
    daily_entries,
    init_vault,
    ok,
    page,
    page_hash,
    refused,
    resumed,
    runtime,
    snapshot,
    stopped_runtime,
)

from echoes_lint import engine

# Byte positions from inside the lock token to past the largest file (the intent of `end`).
LIMITS = [0, 1, 8, 24, 40, 64, 100, 150, 200, 260, 330, 420, 540, 700, 900, 1200, 1600, 2100,
          2800, 3700, 5000, 8000, 1 << 20]
ENTRY = {"entry": "- A fact worth keeping.", "agent": "codex"}


def end_payload(repo: Path) -> Dict[str, Any]:
    return {"dailySummary": "- Saved.", "agent": "codex", "pages": [
        {"filename": "auth.md", "content": page("Auth, second edition.", body="# Auth\n" * 20),
         "expectedSha256": page_hash(repo, "auth.md")},
        {"filename": "tokens.md", "content": page("Token rules.", body="# Tokens\n" * 40)}]}


COMMANDS: List[Tuple[str, Tuple[str, ...]]] = [
    ("end", ("end", "--confirm-explicit-user-end", "--payload", "-")),
    ("upsert", ("upsert", "--payload", "-")),
    ("append", ("append", "--payload", "-")),
]


def payload_for(name: str, repo: Path) -> Dict[str, Any]:
    if name == "end":
        return end_payload(repo)
    if name == "upsert":
        return {"filename": "auth.md", "content": page("Auth, second edition."),
                "expectedSha256": page_hash(repo, "auth.md")}
    return ENTRY


def completed(name: str, repo: Path) -> bool:
    """Whether the whole change of `name` is on disk."""
    auth = (repo / PAGES / "auth.md").read_text()
    entries = daily_entries(repo)
    if name == "end":
        return ("Auth, second edition." in auth and (repo / PAGES / "tokens.md").exists()
                and len(entries) == 1)
    if name == "upsert":
        return "Auth, second edition." in auth and "Auth, second edition." in (
            repo / "EchoesVault" / "index.md").read_text()
    return len(entries) == 1


@pytest.mark.parametrize(("name", "command"), COMMANDS)
def test_a_write_failing_at_any_byte_changes_all_or_nothing_and_says_which(
        tmp_path: Path, git_repo: Path, name: str, command: Tuple[str, ...]) -> None:
    init_vault(git_repo)
    ok(cli(git_repo, "upsert", "--payload", "-",
           payload={"filename": "auth.md", "content": page("Auth, first edition.")}))
    payload = payload_for(name, git_repo)
    outcomes = set()
    for limit in LIMITS:
        repo = tmp_path / f"copy-{limit}"
        shutil.copytree(git_repo, repo, symlinks=True)
        before = snapshot(repo)
        result = runtime(repo, *command, payload=payload, file_size_limit=limit)
        assert not (repo / LOCK).exists(), (limit, result.stderr)
        assert not (repo / INTENT).exists(), (limit, result.stderr)
        assert not [path for path in snapshot(repo) if path.endswith(".echoes-tmp")]
        if result.returncode == 0:
            outcomes.add("written")
            assert completed(name, repo), limit
            continue
        message = refused(result)
        assert "Nothing was changed" in message, (limit, message)
        assert snapshot(repo) == before, (limit, message)
        outcomes.add("lock" if str(LOCK) in message else "files")
        # Nothing blocks the next writer: the same command succeeds once the disk has room.
        ok(runtime(repo, *command, payload=payload))
        assert completed(name, repo), limit
    assert outcomes == {"lock", "files", "written"}


def test_retrying_a_recorded_append_never_duplicates_it(git_repo: Path) -> None:
    init_vault(git_repo)
    crashed = runtime(git_repo, "append", "--payload", "-", payload=ENTRY,
                      env={engine.CRASH_ENV: "append:intent"})
    assert crashed.returncode == -signal.SIGKILL
    assert daily_entries(git_repo) == {}  # recorded, not yet written
    retried = ok(runtime(git_repo, "append", "--payload", "-", payload=ENTRY))
    assert retried["recovered"]["operation"] == "append"
    [(name, text)] = daily_entries(git_repo).items()
    assert retried["dailyLog"].endswith(name) and text.endswith(f"\n{ENTRY['entry']}\n")
    # Another entry (or the same one sent again later) is a new entry, as always.
    ok(runtime(git_repo, "append", "--payload", "-", payload=ENTRY))
    assert len(daily_entries(git_repo)) == 2


def name_max_255(path: Path) -> None:
    if os.pathconf(path, "PC_NAME_MAX") != 255:
        pytest.skip("this file system does not limit names to 255 bytes")


@pytest.mark.parametrize("command", ["upsert", "end"])
def test_a_page_name_too_long_for_its_temporary_file_is_refused_up_front(
        git_repo: Path, command: str) -> None:
    name_max_255(git_repo)
    init_vault(git_repo)
    name = "n" * 240 + ".md"  # 243 bytes: the page fits, `.<name>.<8 hex>.echoes-tmp` does not
    item = {"filename": name, "content": page()}
    before = snapshot(git_repo)
    if command == "upsert":
        result = cli(git_repo, "upsert", "--payload", "-", payload=item)
    else:
        result = cli(git_repo, "end", "--confirm-explicit-user-end", "--payload", "-",
                     payload={"dailySummary": "- x", "pages": [item]})
    message = refused(result)
    assert "264-byte name, longer than this file system's limit of 255 bytes" in message
    assert "at most 234 bytes" in message and "Nothing was changed" in message
    assert snapshot(git_repo) == before
    # Nothing was recorded, so nothing blocks the next writer.
    ok(cli(git_repo, "append", "--payload", "-", payload=ENTRY))
    ok(cli(git_repo, "upsert", "--payload", "-",
           payload={"filename": "n" * 231 + ".md", "content": page()}))


def test_ev035_flags_a_page_name_no_engine_can_update(git_repo: Path) -> None:
    name_max_255(git_repo)
    init_vault(git_repo)
    long_name, longest = "l" * 240 + ".md", "k" * 231 + ".md"
    for name in (long_name, longest):
        (git_repo / PAGES / name).write_text(page())
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "pages")
    result = lint(git_repo)
    assert parsed(result.stdout) == [(f"{PAGES}/{long_name}", 1, 1, "EV035")], result.stdout
    assert "is 243 bytes" in result.stdout and "at most 234 bytes" in result.stdout


def test_a_failure_after_the_change_was_recorded_says_it_will_be_completed(
        git_repo: Path) -> None:
    init_vault(git_repo)
    ok(cli(git_repo, "upsert", "--payload", "-",
           payload={"filename": "auth.md", "content": page("Auth, first edition.")}))
    process = stopped_runtime(git_repo, "end", "--confirm-explicit-user-end", "--payload", "-",
                              payload=end_payload(git_repo), step="end:intent")
    # The intent is in place; the second file's rename will now fail (a folder took its path).
    (git_repo / PAGES / "tokens.md").mkdir()
    message = resumed(process)
    assert f"after the change was recorded in {INTENT}, with 1 of 5 files written" in message
    assert engine.COMPLETE_COMMAND in message and "Do not send this payload again" in message
    (git_repo / PAGES / "tokens.md").rmdir()
    assert ok(runtime(git_repo, "rebuild-index"))["recovered"]["operation"] == "end"
    assert completed("end", git_repo)
