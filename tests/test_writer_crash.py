"""Crash consistency beyond Protocol 1.0.0: an `end` (or `init`) SIGKILLed at any step of its
write sequence leaves, after the next command, either the whole change or none of it."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Dict, Optional

import pytest
from conftest import init_repo
from helpers_writer import (
    INDEX,
    INTENT,
    LOCK,
    PAGES,
    STATE,
    cli,
    daily_entries,
    init_vault,
    ok,
    page,
    page_hash,
    runtime,
    snapshot,
)

from echoes_lint import engine

# `end` below writes 5 files in this order: auth.md, tokens.md, the session entry, the index and
# the state. The intent file is written first; each write has a step before its replacement.
END_STEPS = ["end:intent:tmp", "end:intent",
             *(f"end:{number}{suffix}" for number in range(1, 6) for suffix in (":tmp", ""))]
NEW_AUTH = page("Auth, second edition.")
TOKENS = page("Token rules.")


def prepared(repo: Path) -> Dict[str, object]:
    init_vault(repo)
    ok(cli(repo, "upsert", "--payload", "-",
           payload={"filename": "auth.md", "content": page("Auth, first edition.")}))
    return {"dailySummary": "- Saved at last.", "agent": "codex",
            "pages": [{"filename": "auth.md", "content": NEW_AUTH,
                       "expectedSha256": page_hash(repo, "auth.md")},
                      {"filename": "tokens.md", "content": TOKENS}]}


def without_state(tree: Dict[str, Optional[bytes]]) -> Dict[str, Optional[bytes]]:
    return {path: data for path, data in tree.items() if path != str(STATE)}


def killed_end(repo: Path, payload: Dict[str, object], step: str) -> None:
    crashed = runtime(repo, "end", "--confirm-explicit-user-end", "--payload", "-",
                      payload=payload, env={engine.CRASH_ENV: step})
    assert crashed.returncode == -signal.SIGKILL, (step, crashed.stderr)


@pytest.mark.parametrize("step", END_STEPS)
def test_a_killed_end_is_completed_or_absent_after_the_next_command(git_repo: Path,
                                                                    step: str) -> None:
    payload = prepared(git_repo)
    before = snapshot(git_repo)
    killed_end(git_repo, payload, step)
    # A killed writer leaves its lock behind; the next command sees its owner is gone.
    assert (git_repo / LOCK).exists()
    result = ok(runtime(git_repo, "hydrate"))
    after = snapshot(git_repo)
    assert not (git_repo / LOCK).exists() and not (git_repo / INTENT).exists()
    assert not [path for path in after if path.endswith(".echoes-tmp")]
    if step == "end:intent:tmp":
        assert "recovered" not in result
        assert without_state(after) == without_state(before)
        return
    assert result["recovered"]["operation"] == "end"
    assert result["recovered"]["superseded"] == []
    assert (git_repo / PAGES / "auth.md").read_text() == NEW_AUTH
    assert (git_repo / PAGES / "tokens.md").read_text() == TOKENS
    [(name, text)] = daily_entries(git_repo).items()
    assert "-session-codex-" in name and text.endswith("\n\n- Saved at last.\n")
    assert (git_repo / INDEX).read_text().endswith(
        "- [[auth]]: Auth, second edition.\n- [[tokens]]: Token rules.\n")
    state = json.loads((git_repo / STATE).read_text())
    assert state["session"]["saved"] is True and state["stats"]["totalDailyLogs"] == 1


def test_an_engine_that_ignores_the_intent_still_sees_a_valid_vault(git_repo: Path) -> None:
    killed_end(git_repo, prepared(git_repo), "end:2:tmp")
    health = ok(cli(git_repo, "status"))["health"]
    assert health["invalidFrontmatter"] == [] and health["indexBuildErrors"] == []
    assert health["conflictMarkers"] == [] and health["unreadableFiles"] == []


def test_a_file_changed_by_another_writer_after_the_crash_is_not_overwritten(
        git_repo: Path) -> None:
    killed_end(git_repo, prepared(git_repo), "end:intent")
    foreign = page("Rewritten by another engine.")
    (git_repo / PAGES / "auth.md").write_text(foreign)
    result = ok(runtime(git_repo, "append", "--payload", "-", payload={"entry": "after"}))
    assert result["recovered"]["superseded"] == ["EchoesVault/pages/auth.md"]
    assert (git_repo / PAGES / "auth.md").read_text() == foreign
    assert (git_repo / PAGES / "tokens.md").read_text() == TOKENS
    assert len(daily_entries(git_repo)) == 2


def test_a_failed_command_after_recovery_says_what_was_recovered(git_repo: Path) -> None:
    killed_end(git_repo, prepared(git_repo), "end:3")
    refused = runtime(git_repo, "upsert", "--payload", "-",
                      payload={"filename": "auth.md", "content": page()})
    assert refused.returncode == 2
    error = json.loads(refused.stderr)["error"]
    assert "expectedSha256" in error and "An interrupted `end` was completed first" in error
    assert not (git_repo / INTENT).exists()


def test_start_notes_the_recovery_above_its_context(git_repo: Path) -> None:
    killed_end(git_repo, prepared(git_repo), "end:1")
    context = runtime(git_repo, "start")
    assert context.returncode == 0, context.stderr
    assert context.stdout.startswith("> An interrupted `end` was completed first (")
    assert "\n\n# EchoesVault session context\n" in context.stdout


def test_an_unreadable_intent_stops_writers_without_guessing(git_repo: Path) -> None:
    init_vault(git_repo)
    (git_repo / INTENT).write_text(json.dumps({"version": 99}))
    before = snapshot(git_repo)
    refused = runtime(git_repo, "hydrate")
    assert refused.returncode == 2 and "cannot read" in json.loads(refused.stderr)["error"]
    assert snapshot(git_repo) == before


def test_a_killed_init_is_completed_by_the_next_init(git_repo: Path, tmp_path: Path) -> None:
    reference = init_repo(tmp_path / "reference")
    init_vault(reference)
    killed = cli(git_repo, "init", env={engine.CRASH_ENV: "init:6:tmp"})
    assert killed.returncode == -signal.SIGKILL
    assert "recovered" in init_vault(git_repo)
    assert snapshot(git_repo) == snapshot(reference)


def test_status_reports_an_interrupted_write_until_hydrate_finishes_it(git_repo: Path) -> None:
    payload = prepared(git_repo)
    killed_end(git_repo, payload, "end:2")
    health = ok(cli(git_repo, "status"))["health"]
    assert health["interruptedWrites"] == ["../.echoes-vault/intent.json"]
    assert health["integrity"] == "attention"
    assert "interrupted multi-file write" in cli(git_repo, "status", "--format", "card").stdout
    ok(cli(git_repo, "hydrate"))
    assert ok(cli(git_repo, "status"))["health"]["interruptedWrites"] == []
