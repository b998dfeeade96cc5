"""`ci`'s status report made by a forked child while the rules run (`checker.Beside`) changes
nothing but the time.

- The child's value comes back as it was (tuples, lists, dict order, booleans), and this
  process does not compute it again.
- A value `marshal` cannot carry, or a child that dies, is computed here instead; without fork
  it is computed here when asked.
- `stop` ends and collects the child.
- `ci` prints, summarises and outputs the same bytes with the report from the child and made
  in-process, and a check that fails after the child started leaves no child behind.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from conftest import write_page
from helpers_action import commit_all, healthy_vault

from echoes_lint import checker, ci

_VALUE = {"b": (1, [2, "x"], {"z": None, "a": True}), "a": [False, 0, 1.5, "é\udcff"]}


def _counting(value: Callable[[], Any]) -> tuple[Callable[[], Any], list[int]]:
    """`value` as a function that counts its calls in this process (a child's are its own)."""
    parent, calls = os.getpid(), []

    def compute() -> Any:
        if os.getpid() == parent:
            calls.append(1)
        return value()

    return compute, calls


@pytest.fixture
def fork(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child wherever fork exists (this machine may have one CPU, or another thread)."""
    monkeypatch.setattr(checker, "_can_fork", lambda: True)


def _gone(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_the_value_comes_from_the_child_as_it_was(fork: None) -> None:
    compute, calls = _counting(lambda: _VALUE)
    beside = checker.Beside(compute)
    pid = beside.pid
    assert pid
    value = beside.result()
    assert value == _VALUE and list(value) == ["b", "a"] and list(value["b"][2]) == ["z", "a"]
    assert type(value["b"]) is tuple and type(value["b"][1]) is list
    assert value["b"][2]["a"] is True and value["a"][0] is False
    assert calls == []  # this process never computed it
    assert _gone(pid) and beside.pid == 0


def test_a_value_marshal_cannot_carry_is_computed_here(fork: None) -> None:
    compute, calls = _counting(lambda: {"path": Path("EchoesVault")})
    beside = checker.Beside(compute)
    assert beside.pid
    assert beside.result() == {"path": Path("EchoesVault")}
    assert calls == [1]


def test_a_child_that_dies_leaves_the_value_to_this_process(fork: None) -> None:
    parent = os.getpid()

    def dying() -> Any:
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return _VALUE

    compute, calls = _counting(dying)
    assert checker.Beside(compute).result() == _VALUE
    assert calls == [1]


def test_stop_ends_and_collects_the_child(fork: None) -> None:
    beside = checker.Beside(lambda: time.sleep(60))  # ended long before it could wake
    pid = beside.pid
    assert pid
    beside.stop()
    assert _gone(pid) and beside.pid == 0
    beside.stop()  # once is enough


def test_a_wait_interrupted_leaves_the_child_for_stop_to_end(
        fork: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while `ci` waits for the report: the child is still this one's to end."""
    beside = checker.Beside(lambda: time.sleep(60))
    pid = beside.pid
    assert pid
    wait = os.waitpid

    def interrupted(*args: Any) -> tuple[int, int]:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "waitpid", interrupted)
    with pytest.raises(KeyboardInterrupt):
        beside.result()
    monkeypatch.setattr(os, "waitpid", wait)
    assert not _gone(pid)
    beside.stop()
    assert _gone(pid) and beside.file == -1


def test_without_fork_the_value_is_computed_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checker, "_can_fork", lambda: False)
    compute, calls = _counting(lambda: _VALUE)
    beside = checker.Beside(compute)
    assert beside.pid == 0 and calls == []
    assert beside.result() == _VALUE and calls == [1]


@pytest.fixture
def attention_vault(git_repo: Path) -> Path:
    """A committed vault with status issues and findings (a broken link, a page without a
    summary), so that every part of ci's report has lines."""
    healthy_vault(git_repo)
    write_page(git_repo, "gamma.md", body="# Gamma\n\nSee [[nowhere]].\n")
    (git_repo / "EchoesVault/pages/delta.md").write_text("---\ntype: note\n---\n# Delta\n",
                                                          encoding="utf-8")
    commit_all(git_repo, "A broken link and a page without a summary")
    return git_repo


def _ci(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capfdbinary: pytest.CaptureFixture[bytes], name: str) -> tuple[int, bytes, str, str]:
    output, summary = tmp_path / f"{name}.output", tmp_path / f"{name}.summary"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    status = ci.main(["--workspace", str(repo)])
    return (status, capfdbinary.readouterr().out, output.read_text(encoding="utf-8"),
            summary.read_text(encoding="utf-8"))


def test_ci_reports_the_same_bytes_with_the_report_from_the_child(
        attention_vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    made = ci.status_report
    parent, here = os.getpid(), []

    def counted(scan: Any) -> Any:
        if os.getpid() == parent:
            here.append(1)
        return made(scan)

    monkeypatch.setattr(ci, "status_report", counted)
    monkeypatch.setattr(checker, "_can_fork", lambda: True)
    monkeypatch.setattr(ci, "BESIDE_PAGES", 0)  # a child for every vault
    from_child = _ci(attention_vault, tmp_path, monkeypatch, capfdbinary, "child")
    assert here == []  # the child made it
    monkeypatch.setattr(checker, "_can_fork", lambda: False)
    made_here = _ci(attention_vault, tmp_path, monkeypatch, capfdbinary, "here")
    assert here == [1]
    assert from_child == made_here
    status, log, outputs, summary = made_here
    assert status == 1 and b"integrity attention" in log and b"EV050" in log
    assert "integrity=attention\n" in outputs and "**Lint findings**" in summary


def test_a_check_that_fails_stops_the_child(
        attention_vault: Path, monkeypatch: pytest.MonkeyPatch,
        capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    started: list[checker.Beside] = []
    real = checker.Beside

    def beside(compute: Callable[[], Any]) -> checker.Beside:
        started.append(real(compute))
        return started[-1]

    def failing_rules(_context: Any) -> Any:
        raise RuntimeError("a rule failed")

    monkeypatch.setattr(checker, "_can_fork", lambda: True)
    monkeypatch.setattr(ci, "BESIDE_PAGES", 0)
    monkeypatch.setattr(ci, "Beside", beside)
    monkeypatch.setattr(checker, "FAMILIES", [(frozenset({"EV050"}), failing_rules)])
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    assert ci.main(["--workspace", str(attention_vault), "--summary", "false"]) == 2
    assert b"internal error (RuntimeError): a rule failed" in capfdbinary.readouterr().err
    assert len(started) == 1 and started[0].pid == 0  # stopped and collected
