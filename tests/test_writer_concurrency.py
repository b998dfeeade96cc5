"""The shared `.echoes-vault/lock`: real concurrent processes, foreign, stale and dead locks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import List

from helpers_writer import (
    INDEX,
    LOCK,
    RUNTIME,
    cli,
    daily_entries,
    init_vault,
    ok,
    page,
    refused,
    runtime,
)

from echoes_lint import engine


def start_runtime(repo: Path, *args: str, payload: object) -> subprocess.Popen[str]:
    process = subprocess.Popen([sys.executable, "-I", "-S", RUNTIME, "--workspace", ".", *args],
                               cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, encoding="utf-8")
    assert process.stdin is not None
    process.stdin.write(json.dumps(payload))
    process.stdin.close()
    return process


def finish(processes: List[subprocess.Popen[str]]) -> List[str]:
    errors = []
    for process in processes:
        assert process.stdout is not None and process.stderr is not None
        process.wait(timeout=120)
        if process.returncode != 0:
            errors.append(process.stderr.read())
        process.stdout.close()
        process.stderr.close()
    return errors


def test_24_concurrent_appends_write_24_distinct_files(git_repo: Path) -> None:
    init_vault(git_repo)
    processes = [start_runtime(git_repo, "append", "--payload", "-",
                               payload={"entry": f"- entry {number}", "agent": "racer"})
                 for number in range(24)]
    assert finish(processes) == []
    entries = daily_entries(git_repo)
    assert len(entries) == 24
    assert sorted(text.rsplit("\n", 2)[-2] for text in entries.values()) == sorted(
        f"- entry {number}" for number in range(24))
    assert json.loads((git_repo / ".echoes-vault/state.json").read_text())["stats"][
        "totalDailyLogs"] == 24
    assert not (git_repo / LOCK).exists()


def twelve_upserts(repo: Path) -> None:
    processes = [start_runtime(repo, "upsert", "--payload", "-",
                               payload={"filename": f"page-{number:02}.md",
                                        "content": page(f"Page {number}.")})
                 for number in range(12)]
    assert finish(processes) == []
    index = (repo / INDEX).read_text()
    assert [line for line in index.splitlines() if line.startswith("- [[")] == [
        f"- [[page-{number:02}]]: Page {number}." for number in range(12)]
    assert ok(cli(repo, "rebuild-index"))["rebuilt"] is False
    assert not (repo / LOCK).exists()


def test_12_concurrent_upserts_leave_all_12_pages_in_the_index(git_repo: Path) -> None:
    init_vault(git_repo)
    twelve_upserts(git_repo)


def test_a_stale_lock_is_taken_over_safely_by_concurrent_writers(git_repo: Path) -> None:
    init_vault(git_repo)
    lock = git_repo / LOCK
    lock.write_text("4242-abandoned\n")
    old = time.time() - 61
    os.utime(lock, (old, old))
    twelve_upserts(git_repo)


def test_a_fresh_foreign_lock_makes_a_writer_wait_then_fail(git_repo: Path) -> None:
    init_vault(git_repo)
    lock = git_repo / LOCK
    lock.write_text("another-engine-token\n")
    began = time.monotonic()
    message = refused(runtime(git_repo, "append", "--payload", "-", payload={"entry": "x"}))
    waited = time.monotonic() - began
    assert 7.5 <= waited < 30
    assert "holds .echoes-vault/lock" in message
    assert lock.read_text() == "another-engine-token\n"
    assert daily_entries(git_repo) == {}


def test_a_lock_older_than_60_seconds_is_taken_over(git_repo: Path) -> None:
    init_vault(git_repo)
    lock = git_repo / LOCK
    lock.write_text("another-engine-token\n")
    old = time.time() - 61
    os.utime(lock, (old, old))
    ok(runtime(git_repo, "append", "--payload", "-", payload={"entry": "x"}))
    assert len(daily_entries(git_repo)) == 1
    assert not lock.exists()


def test_a_lock_of_a_dead_local_writer_is_taken_over_at_once(git_repo: Path) -> None:
    init_vault(git_repo)
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)
    host = os.uname().nodename
    lock = git_repo / LOCK
    lock.write_text(f"{finished.stdout.strip()}-{'0' * 16}@{host}\n")
    began = time.monotonic()
    ok(runtime(git_repo, "append", "--payload", "-", payload={"entry": "x"}))
    assert time.monotonic() - began < engine.LOCK_WAIT_SECONDS
    assert not lock.exists()
    # The same token format naming a live process is a lock like any other.
    lock.write_text(f"{os.getpid()}-{'0' * 16}@{host}\n")
    assert not engine.lock_owner_gone(lock.read_text().strip())
    assert engine.lock_owner_gone(f"{finished.stdout.strip()}-{'0' * 16}@{host}")
    assert not engine.lock_owner_gone(f"{finished.stdout.strip()}-{'0' * 16}@other-host")
