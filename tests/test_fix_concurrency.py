"""Issue 12: a fix racing an agent's `upsert` of the same page. The fix process stops itself (the
engine's STOP_ENV test hook) between reading the page and writing it, or while it holds the lock;
the agent writes meanwhile. Either one wins and the other notices: nothing is lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from helpers_check import PAGES, commit, vault_repo, write
from helpers_writer import cli, ok, page_hash, refused
from test_fix_rules import BANNER, DEPRECATED, FRONT

from echoes_lint import engine

BEFORE = f"{FRONT}\nTitle\n=======\n"
FIXED = f"{FRONT}\nTitle\n========\n"
AGENT = f"{DEPRECATED}\n# Written by the agent\n"


def stopped_fix(repo: Path, step: str) -> subprocess.Popen[str]:
    """`echoes-lint check --fix` once it has stopped itself at `step`."""
    process = subprocess.Popen([sys.executable, "-m", "echoes_lint", "check", "--fix"], cwd=repo,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, engine.STOP_ENV: step})
    wait_stopped(process, step)
    return process


def wait_stopped(process: subprocess.Popen[str], step: str) -> None:
    _pid, status = os.waitpid(process.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), f"the fix finished without stopping at {step}"


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    stdout, stderr = process.communicate(timeout=60)
    return process.returncode, stdout, stderr


def test_an_upsert_between_the_fix_reading_and_writing_wins_and_the_fix_rereads(
        tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    page = write(repo, f"{PAGES}/race.md", BEFORE)
    commit(repo, "page")
    fixer = stopped_fix(repo, "fix:read")  # it read BEFORE and planned FIXED
    ok(cli(repo, "upsert", "--payload", "-", payload={"filename": "race.md", "content": AGENT,
                                    "expectedSha256": page_hash(repo, "race.md")}))
    fixer.send_signal(signal.SIGCONT)
    # Its write was refused (the page changed), so it read the agent's page again and
    # planned that page's own fix: the banner of a deprecated page.
    wait_stopped(fixer, "fix:read again")
    assert page.read_text(encoding="utf-8") == AGENT
    fixer.send_signal(signal.SIGCONT)
    code, stdout, stderr = finish(fixer)
    assert (code, stderr) == (0, ""), stdout
    assert page.read_text(encoding="utf-8") == f"{DEPRECATED}\n{BANNER}# Written by the agent\n"
    assert stdout == "Found 1 warning (1 fixed, 0 remaining).\n"


def test_a_fix_holding_the_lock_wins_and_the_stale_upsert_is_refused(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    page = write(repo, f"{PAGES}/race.md", BEFORE)
    commit(repo, "page")
    read_by_agent = page_hash(repo, "race.md")
    fixer = stopped_fix(repo, "fix:commit")  # under the lock, its hash check passed
    assert (repo / ".echoes-vault" / "lock").is_file()
    payload = tmp_path / "payload.json"
    payload.write_text(json.dumps({"filename": "race.md", "content": AGENT,
                                   "expectedSha256": read_by_agent}), encoding="utf-8")
    # The agent's upsert waits for the lock the stopped fix holds.
    upsert = subprocess.Popen(
        [sys.executable, "-m", "echoes_lint", "upsert", "--payload", str(payload)], cwd=repo,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    fixer.send_signal(signal.SIGCONT)
    assert finish(fixer)[0] == 0
    assert page.read_text(encoding="utf-8") == FIXED
    stdout, stderr = upsert.communicate(timeout=60)
    message = refused(subprocess.CompletedProcess(upsert.args, upsert.returncode, stdout,
                                                  stderr))
    assert message.startswith("Concurrent change detected for race.md")
    # The agent rereads the fixed page and retries: its content lands, nothing was lost.
    ok(cli(repo, "upsert", "--payload", "-", payload={"filename": "race.md", "content": AGENT,
                                    "expectedSha256": page_hash(repo, "race.md")}))
    assert page.read_text(encoding="utf-8") == AGENT


def test_a_file_changed_by_hand_under_the_fix_is_never_overwritten(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    page = write(repo, f"{PAGES}/race.md", BEFORE)
    commit(repo, "page")
    fixer = stopped_fix(repo, "fix:read")
    edited = f"{FRONT}\nEdited by hand, no underline left.\n"
    page.write_text(edited, encoding="utf-8")
    fixer.send_signal(signal.SIGCONT)
    code, stdout, _stderr = finish(fixer)
    assert (code, stdout) == (0, "All checks passed!\n")
    assert page.read_text(encoding="utf-8") == edited


def test_a_fix_killed_between_the_page_and_the_index_is_completed_by_the_next_writer(
        tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    page = write(repo, f"{PAGES}/race.md", BEFORE)
    commit(repo, "page")
    killed = subprocess.run([sys.executable, "-m", "echoes_lint", "check", "--fix"], cwd=repo,
                            capture_output=True, text=True, check=False, timeout=60,
                            env={**os.environ, engine.CRASH_ENV: "fix:1"})
    assert killed.returncode == -signal.SIGKILL
    # The page was replaced, the index not yet: the change set is recorded in the intent.
    assert page.read_text(encoding="utf-8") == FIXED
    assert (repo / ".echoes-vault" / "intent.json").is_file()
    assert not (repo / "EchoesVault" / "index.md").exists()
    recovered = ok(cli(repo, "rebuild-index"))
    assert recovered["rebuilt"] is False  # the roll-forward already wrote the recorded index
    assert "- [[race]]: S\n" in (repo / "EchoesVault" / "index.md").read_text(encoding="utf-8")
    assert not (repo / ".echoes-vault" / "intent.json").exists()
