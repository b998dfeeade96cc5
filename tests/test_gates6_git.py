"""How the gates (and the engine's read-only commands) wait for Git's answers (issue 13, the
gates' fixed cost at 5,000 pages). Behaviour only, never how long anything takes.

- A git answer is taken, once git closed its pipes, by waiting for its exit without a timeout:
  `Popen.wait` with one polls, sleeping 1 ms before it looks again, and git closes its pipes
  just before it ends (each `check-ignore` at the end of a gate's walk waited that long).
- A git that never answers is still ended by the timeout, and the gate says why; so is one
  that answers and closes its pipes but does not exit: the one guard bounds the exit too.
- A gate that cannot start a thread (a process limit) starts its git processes itself: the
  same findings and exit code, and the same one-line error when git cannot run.
- A whole-vault gate's first git processes are started by a thread beside its imports, and
  taken before the page worker is forked, with no other thread alive; the merge-driver rule's
  by a thread beside the walk, once the worker is forked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Optional

import pytest
from conftest import init_repo, run_cli
from helpers_check import vault_repo, write

from echoes_lint import checker, cli, engine


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[Optional[float]]:
    """The timeouts every `Popen.wait` of this test was asked with."""
    asked: list[Optional[float]] = []
    original = subprocess.Popen.wait

    def wait(self: subprocess.Popen[bytes], timeout: Optional[float] = None) -> int:
        asked.append(timeout)
        return original(self, timeout)

    monkeypatch.setattr(subprocess.Popen, "wait", wait)
    return asked


def _pidfd() -> bool:
    """Whether this system gives a descriptor for a process (Linux >= 5.3, not filtered)."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


@pytest.mark.skipif(not _pidfd(), reason="the exit is polled for without a pidfd")
def test_a_git_answer_waits_for_the_exit_without_polling(tmp_path: Path,
                                                         waits: list[Optional[float]]) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / "kept.md").write_text("x\n", encoding="utf-8")
    (repo / ".gitignore").write_text("ignored.md\n", encoding="utf-8")
    output, cause = engine.git_output(repo, ["rev-parse", "--show-toplevel"])
    assert cause is None and output is not None and Path(output.decode().strip()) == repo
    started = engine.start_git_ignored(repo)
    assert engine.git_ignored(started, ["kept.md", "ignored.md"]) == (["ignored.md"], None)
    assert waits and all(timeout is None for timeout in waits)
    process = started[0]
    assert process is not None and process.returncode == 0
    # The process is left as Popen made it: its own `wait` again.
    assert process.wait.__func__ is subprocess.Popen.wait  # type: ignore[attr-defined]


def test_a_git_that_never_answers_is_ended_by_the_timeout(monkeypatch: pytest.MonkeyPatch,
                                                          ) -> None:
    original = subprocess.Popen.communicate

    def communicate(self: subprocess.Popen[bytes], input: Optional[bytes] = None,
                    timeout: Optional[float] = None) -> Any:
        assert timeout == 60  # the guard is still asked for
        return original(self, input, 0.2)

    monkeypatch.setattr(subprocess.Popen, "communicate", communicate)
    hung = subprocess.Popen(["sleep", "30"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    output, cause = engine.git_finish((hung, None), ["ls-files"])
    assert output is None and cause is not None and "timed out" in cause
    assert hung.returncode is not None  # ended and collected
    assert engine.git_ignored((subprocess.Popen(["sleep", "30"], stdin=subprocess.PIPE,
                                                stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE), None),
                              ["a.md"])[1] == "cannot run git check-ignore: " + (
        "Command '['sleep', '30']' timed out after 0.2 seconds")


def test_a_gate_starts_its_first_git_processes_beside_its_imports_and_forks_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`cli._start_toplevel`'s rev-parse and listings are started by a thread (a `Popen`
    returns only once git runs: ms when the other CPU is busy), joined before the check takes
    them, so that the page worker is forked with no other thread alive."""
    repo = vault_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    starters, forks = [], []
    start, worker = cli._git, checker._PageWorker.start.__func__  # type: ignore[attr-defined]

    def starting(folder: str, args: tuple[str, ...]) -> subprocess.Popen[bytes]:
        starters.append(threading.current_thread() is threading.main_thread())
        return start(folder, args)

    def forking(cls: type[checker._PageWorker], reader: checker._GateReader) -> Any:
        forks.append((threading.active_count(), cli._starting))
        return worker(cls, reader)

    prefetch, prefetched = checker.mergedriver.prefetch, []

    def prefetching(top: Path) -> None:
        prefetched.append((threading.current_thread() is threading.main_thread(), len(forks)))
        prefetch(top)

    monkeypatch.setattr(cli, "_git", starting)
    monkeypatch.setattr(checker._PageWorker, "start", classmethod(forking))
    monkeypatch.setattr(checker.mergedriver, "prefetch", prefetching)
    assert cli.main(["check"]) == 0
    assert starters == [False] * 3  # rev-parse and the two listings, none by this thread
    assert forks == [(1, None)]
    # The merge-driver rule's git commands too, once the worker is forked; taken by the rule.
    assert prefetched == [(False, 1)] and checker.mergedriver._prefetched == {}
    assert cli._toplevels == {} and cli._listings == {} and cli._starting is None


def _shrunk_guard(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """`communicate`'s 60 s guard (still asked for) cut to `seconds`."""
    original = subprocess.Popen.communicate

    def communicate(self: subprocess.Popen[bytes], input: Optional[bytes] = None,
                    timeout: Optional[float] = None) -> Any:
        assert timeout == 60
        return original(self, input, seconds)

    monkeypatch.setattr(subprocess.Popen, "communicate", communicate)


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "no-pidfd"])
def test_a_git_that_closes_its_pipes_but_never_exits_is_ended_by_the_timeout(
        monkeypatch: pytest.MonkeyPatch, pidfd: bool) -> None:
    """The guard covers the exit as well as the answer: without a pidfd (before Linux 5.3,
    elsewhere) by `Popen.wait`'s own timeout."""
    if not pidfd:
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    _shrunk_guard(monkeypatch, 0.5)
    lingering = ["sh", "-c", "echo /repo; exec >&- 2>&-; exec sleep 30"]
    stuck = subprocess.Popen(lingering, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL)
    output, cause = engine.git_finish((stuck, None), ["rev-parse"])
    assert output is None and cause is not None
    assert cause.startswith(f"cannot run git: Command '{lingering}' timed out after ")
    assert stuck.returncode is not None  # ended and collected
    stuck = subprocess.Popen(lingering, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.PIPE)
    matched, cause = engine.git_ignored((stuck, None), ["a.md"])
    assert matched == [] and cause is not None
    assert cause.startswith(f"cannot run git check-ignore: Command '{lingering}' timed out")
    assert stuck.returncode is not None


# `echoes-lint` in a process where no thread can start ("can't start new thread": a process
# limit such as `ulimit -u`).
_THREADLESS = """import sys, threading
def start(self):
    raise RuntimeError("can't start new thread")
threading.Thread.start = start
from echoes_lint.cli import entry
sys.argv[0] = "echoes-lint"
entry()
"""


def test_a_gate_that_cannot_start_a_thread_runs_as_one_that_can(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, "EchoesVault/pages/untracked.md", "---\nsummary: Not added.\n---\n# U\n")
    write(repo, "EchoesVault/pages/broken.md", "no frontmatter\n")
    empty = tmp_path / "bin"
    empty.mkdir()
    for command, env in (("check", {}), ("ci", {}), ("check", {"PATH": str(empty)})):
        threadless = subprocess.run(
            [sys.executable, "-c", _THREADLESS, command], cwd=repo, capture_output=True,
            text=True, encoding="utf-8", check=False, env={**os.environ, **env}, timeout=300)
        threaded = run_cli(command, cwd=repo, env=env)
        assert threaded.returncode == (2 if env else 1), threaded.stdout + threaded.stderr
        assert (threadless.returncode, threadless.stdout, threadless.stderr) == (
            threaded.returncode, threaded.stdout, threaded.stderr)
    # git missing: the one-line error, nothing else.
    assert threadless.stdout == "" and threadless.stderr.count("\n") == 1
    assert threadless.stderr.startswith("echoes-lint: error: ")
    assert "git is not installed or not on PATH" in threadless.stderr


def test_the_merge_driver_prefetch_is_taken_before_the_check_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`checker._whole_context` joins the prefetch thread once the walk is done: its git
    commands are all started before the rule (or `ci`'s fork) takes them. The prefetch here
    is held until the walk ends, then slow."""
    repo = vault_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    walked, done = threading.Event(), []
    prefetch, scan, whole = (checker.mergedriver.prefetch, engine.scan_workspace,
                             checker._whole_context)

    def prefetching(top: Path) -> None:
        walked.wait(60)
        time.sleep(0.3)  # not a measure: leaves a check that did not join well ahead
        prefetch(top)
        done.append(top)

    def scanning(*args: Any, **kwargs: Any) -> Any:
        try:
            return scan(*args, **kwargs)
        finally:
            walked.set()

    def context(*args: Any, **kwargs: Any) -> Any:
        taken = whole(*args, **kwargs)
        if kwargs.get("prefetch") is not None:
            assert done == [repo]
        return taken

    monkeypatch.setattr(checker.mergedriver, "prefetch", prefetching)
    monkeypatch.setattr(engine, "scan_workspace", scanning)
    monkeypatch.setattr(checker, "_whole_context", context)
    assert cli.main(["check"]) == 0
    assert done == [repo] and checker.mergedriver._prefetched == {}
