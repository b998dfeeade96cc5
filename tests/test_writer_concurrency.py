"""The shared `.echoes-vault/lock`: real concurrent processes, foreign, stale and dead locks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import pytest
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


def stale_lock(repo: Path, token: str = "4242-abandoned") -> Path:
    (repo / ".echoes-vault").mkdir(exist_ok=True)
    lock = repo / LOCK
    lock.write_text(token + "\n")
    old = time.time() - 61
    os.utime(lock, (old, old))
    return lock


def test_12_concurrent_upserts_leave_all_12_pages_in_the_index(git_repo: Path) -> None:
    init_vault(git_repo)
    twelve_upserts(git_repo)


def test_a_stale_lock_is_taken_over_safely_by_concurrent_writers(git_repo: Path) -> None:
    init_vault(git_repo)
    stale_lock(git_repo)
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
    lock = stale_lock(git_repo, "another-engine-token")
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


# Deterministic takeover races, in process: two waiters that saw the same stale lock.


def test_a_waiter_never_takes_over_while_another_holds_the_takeover_guard(tmp_path: Path) -> None:
    lock = stale_lock(tmp_path)
    guard = lock.with_name(engine.LOCK_GUARD_NAME)
    guard.write_text("")
    waiter = engine.VaultLock(tmp_path)
    assert waiter._take_over_stale() is False
    assert lock.read_text() == "4242-abandoned\n"


def test_a_takeover_guard_left_by_a_dead_waiter_is_cleared(tmp_path: Path) -> None:
    lock = stale_lock(tmp_path)
    guard = lock.with_name(engine.LOCK_GUARD_NAME)
    guard.write_text("")
    old = time.time() - engine.LOCK_GUARD_STALE_SECONDS - 1
    os.utime(guard, (old, old))
    waiter = engine.VaultLock(tmp_path)
    assert waiter._take_over_stale() is False  # clears the dead guard; the next try proceeds
    assert waiter._take_over_stale() is True
    assert not lock.exists() and not guard.exists()


def test_a_waiter_that_saw_the_stale_lock_leaves_the_new_owners_lock_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lock = stale_lock(tmp_path)
    first, second = engine.VaultLock(tmp_path), engine.VaultLock(tmp_path)
    stale_identity = second._stale(lock)
    assert stale_identity is not None
    real_stale = second._stale
    judged = iter([stale_identity])  # the second waiter judged the lock stale before...
    monkeypatch.setattr(second, "_stale", lambda path: next(judged, None) or real_stale(path))

    def rename_while_a_third_waiter_locks(source: object, target: object) -> None:
        os.replace(source, target)  # type: ignore[arg-type]
        lock.write_text("third-waiter\n")  # ...and a third locks the emptied path at once

    with first:  # ...the first took the stale lock over and now holds a fresh one
        monkeypatch.setattr(os, "rename", rename_while_a_third_waiter_locks)
        assert second._take_over_stale() is True  # retry, without moving the fresh lock
        assert lock.read_text().strip() == first.token


def test_a_fresh_lock_renamed_aside_by_mistake_is_put_back(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    lock = stale_lock(tmp_path)
    waiter = engine.VaultLock(tmp_path)
    judged = iter([(1, 2, 3), (1, 2, 3)])  # stale when judged, but the file moved aside is not it
    real_stale = waiter._stale
    monkeypatch.setattr(waiter, "_stale", lambda path: next(judged, None) or real_stale(path))
    lock.write_text("fresh-owner\n")  # a newcomer's fresh lock replaced the stale one meanwhile
    assert waiter._take_over_stale() is True
    assert lock.read_text() == "fresh-owner\n"
