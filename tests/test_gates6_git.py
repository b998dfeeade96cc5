"""How the gates (and the engine's read-only commands) wait for Git's answers (issue 13, the
gates' fixed cost at 5,000 pages). Behaviour only, never how long anything takes.

- A git answer is taken, once git closed its pipes, by waiting for its exit without a timeout:
  `Popen.wait` with one polls, sleeping 1 ms before it looks again, and git closes its pipes
  just before it ends (each `check-ignore` at the end of a gate's walk waited that long).
- A git that never answers is still ended by the timeout, and the gate says why.
- A whole-vault gate's first git processes are started by a thread beside its imports, and
  taken before the page worker is forked, with no other thread alive; the merge-driver rule's
  by a thread beside the walk, once the worker is forked.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from typing import Any, Optional

import pytest
from conftest import init_repo
from helpers_check import vault_repo

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

    def forking(cls: type[checker._PageWorker], root: Path) -> Any:
        forks.append((threading.active_count(), cli._starting))
        return worker(cls, root)

    prefetch, prefetched = checker.mergedriver.prefetch, []

    def prefetching(top: Path) -> None:
        prefetched.append(threading.current_thread() is threading.main_thread())
        prefetch(top)

    monkeypatch.setattr(cli, "_git", starting)
    monkeypatch.setattr(checker._PageWorker, "start", classmethod(forking))
    monkeypatch.setattr(checker.mergedriver, "prefetch", prefetching)
    assert cli.main(["check"]) == 0
    assert starters == [False] * 4  # rev-parse and the three listings, none by this thread
    assert forks == [(1, None)]
    # The merge-driver rule's git commands too, once the worker is forked; taken by the rule.
    assert prefetched == [False] and checker.mergedriver._prefetched == {}
    assert cli._toplevels == {} and cli._listings == {} and cli._starting is None
