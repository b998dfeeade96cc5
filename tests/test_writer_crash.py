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
    refused,
    runtime,
    snapshot,
)

from echoes_lint import engine

# `end` below writes 5 files in this order: auth.md, tokens.md, the session entry, the index and
# the state. Every temporary file is written first (`end:N:tmp`), then the intent's; the intent is
# renamed into place (`end:intent`), then each file (`end:N`). Before the intent's rename nothing
# is recorded and nothing changes; from it on, the change is completed by the next writer.
UNRECORDED_STEPS = [*(f"end:{number}:tmp" for number in range(1, 6)), "end:intent:tmp"]
END_STEPS = [*UNRECORDED_STEPS, "end:intent", *(f"end:{number}" for number in range(1, 6))]
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
    # The state and the cache: local files that writers refresh.
    return {path: data for path, data in tree.items()
            if path not in (str(STATE), engine.CACHE_PATH)}


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
    result = ok(runtime(git_repo, "rebuild-index"))
    after = snapshot(git_repo)
    assert not (git_repo / LOCK).exists() and not (git_repo / INTENT).exists()
    assert not [path for path in after if path.endswith(".echoes-tmp")]
    if step in UNRECORDED_STEPS:
        assert "recovered" not in result
        # At most the empty date folder of the entry that was never written stays.
        assert {path: data for path, data in without_state(after).items()
                if not path.startswith("EchoesVault/daily/")} == {
            path: data for path, data in without_state(before).items()
            if not path.startswith("EchoesVault/daily/")}
        assert daily_entries(git_repo) == {}
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
    killed_end(git_repo, prepared(git_repo), "end:2")
    health = ok(cli(git_repo, "status"))["health"]
    assert health["invalidFrontmatter"] == [] and health["indexBuildErrors"] == []
    assert health["conflictMarkers"] == [] and health["unreadableFiles"] == []


def test_a_file_changed_by_another_writer_after_the_crash_is_not_overwritten(
        git_repo: Path) -> None:
    killed_end(git_repo, prepared(git_repo), "end:intent")
    foreign = page("Rewritten by another engine.")
    (git_repo / PAGES / "auth.md").write_text(foreign)
    (git_repo / LOCK).unlink()  # the killed writer's
    before = snapshot(git_repo, temporaries=False)
    error = refused(runtime(git_repo, "append", "--payload", "-", payload={"entry": "after"}))
    # The change set no longer fits the vault: none of it is applied, and the way out is named.
    assert "EchoesVault/pages/auth.md changed since" in error and "was not applied" in error
    assert error.endswith(engine.DISCARD_COMMAND)
    assert snapshot(git_repo) == before
    discarded = ok(runtime(git_repo, *engine.DISCARD_COMMAND.split()[4:]))
    assert discarded["discardedInterruptedWrite"]["operation"] == "end"
    ok(runtime(git_repo, "append", "--payload", "-", payload={"entry": "after"}))
    assert (git_repo / PAGES / "auth.md").read_text() == foreign
    assert not (git_repo / PAGES / "tokens.md").exists()
    assert len(daily_entries(git_repo)) == 1


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
    error = refused(runtime(git_repo, "rebuild-index"))
    assert "intent version 99" in error and error.endswith(engine.DISCARD_COMMAND)
    assert snapshot(git_repo) == before


def test_a_killed_init_is_completed_by_the_next_init(git_repo: Path, tmp_path: Path) -> None:
    reference = init_repo(tmp_path / "reference")
    init_vault(reference)
    killed = cli(git_repo, "init", env={engine.CRASH_ENV: "init:6"})
    assert killed.returncode == -signal.SIGKILL
    assert "recovered" in init_vault(git_repo)
    assert snapshot(git_repo) == snapshot(reference)


def test_status_reports_an_interrupted_write_until_a_writer_finishes_it(git_repo: Path) -> None:
    payload = prepared(git_repo)
    killed_end(git_repo, payload, "end:2")
    health = ok(cli(git_repo, "status"))["health"]
    assert health["interruptedWrites"] == ["../.echoes-vault/intent.json"]
    assert health["integrity"] == "attention"
    card = cli(git_repo, "status", "--format", "card").stdout
    assert "interrupted multi-file write (the next writer or `echoes-lint rebuild-index` " \
           "finishes it): 1" in card
    ok(cli(git_repo, "rebuild-index"))
    assert ok(cli(git_repo, "status"))["health"]["interruptedWrites"] == []
