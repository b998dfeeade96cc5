"""`ci`'s status report is made by a second process only in a large vault (`ci.BESIDE_PAGES`):
below, the fork and its copy-on-write faults cost about what the report costs in-process.
Behaviour only: which process makes the report, never how long it takes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import pytest
from test_gates_beside import attention_vault  # noqa: F401 (a fixture)

from echoes_lint import checker, ci


def _run_ci(repo: Path, monkeypatch: pytest.MonkeyPatch, pages: int) -> tuple[list[int], int]:
    """(the report's computations in this process, children started) of one `ci` run with
    `pages` as the threshold, wherever fork exists."""
    made, real = ci.status_report, checker.Beside
    parent, here, children = os.getpid(), [], []

    def counted(scan: Any) -> Any:
        if os.getpid() == parent:
            here.append(1)
        return made(scan)

    def beside(compute: Callable[[], Any]) -> checker.Beside:
        children.append(1)
        return real(compute)

    monkeypatch.setattr(ci, "status_report", counted)
    monkeypatch.setattr(ci, "Beside", beside)
    monkeypatch.setattr(checker, "_can_fork", lambda: True)
    monkeypatch.setattr(ci, "BESIDE_PAGES", pages)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    assert ci.main(["--workspace", str(repo), "--summary", "false"]) == 1
    return here, len(children)


def test_a_small_vault_gets_its_report_in_process(
        attention_vault: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    assert ci.BESIDE_PAGES > 5_000  # the benchmark's 5,000 pages: no child
    pages = len(list((attention_vault / "EchoesVault/pages").glob("*.md")))
    assert _run_ci(attention_vault, monkeypatch, pages + 1) == ([1], 0)
    small = capfdbinary.readouterr().out
    assert _run_ci(attention_vault, monkeypatch, pages) == ([], 1)  # from its threshold on
    assert capfdbinary.readouterr().out == small and b"integrity attention" in small
