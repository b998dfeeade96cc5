"""Once the whole-vault gates' walk has met the page worker, the daily files the worker read are
filed as the walk goes through the daily folders (`FileCache.entries_walked`), not loaded one by
one (issue 13), and that changes nothing but the time:

- no daily file the worker has a row for goes through `_GateReader.load`, and the scan,
  findings and reports are those of a serial run (no worker);
- a row is taken only for an entry the walk itself reads as a daily file: a daily file that
  became a folder, a link, a FIFO or the like once the worker read it goes to the walk, with
  the result of a serial run on the same tree.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from helpers_check import write
from test_gates_worker import _facts, _serial, _starting, _taken_paths, _vault

from echoes_lint import checker, engine
from echoes_lint.checker import run_checks

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or len(os.sched_getaffinity(0)) < 2
    if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) < 2,
    reason="the worker needs fork and two CPUs")

_DAILY = "EchoesVault/daily"


def _counting(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[str]]:
    """(the paths `_GateReader.load` was given, the paths of the worker's files the walk took)."""
    loaded: list[str] = []
    load = checker._GateReader.load

    def counted_load(self: checker._GateReader, entry: os.DirEntry[str], relative: str, kind: str,
                     limit: int = engine.MAX_TEXT_BYTES) -> Any:
        loaded.append(relative)
        return load(self, entry, relative, kind, limit)

    monkeypatch.setattr(checker._GateReader, "load", counted_load)
    return loaded, _taken_paths(monkeypatch)


def test_the_walk_files_the_worker_s_daily_files_without_loading_each(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _vault(tmp_path)
    alone = _facts(_serial(repo, monkeypatch))
    loaded, taken = _counting(monkeypatch)
    _starting(monkeypatch)
    result = run_checks(repo)
    days = [path for path in taken if path.startswith(f"{_DAILY}/")]
    # Every daily file without markers came from the worker, none of them by `load`; the one
    # with markers the walk read itself.
    assert sorted(days) == sorted(document.path for document in result.scan.daily
                                  if not document.markers) and len(days) == 12
    assert not set(days) & set(loaded)
    assert f"{_DAILY}/2026-01-02/conflict.md" in loaded
    assert _facts(result) == alone


def test_a_row_is_taken_only_for_what_the_walk_reads_as_a_daily_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _vault(tmp_path)
    folder = repo / _DAILY / "2026-01-01"  # e0, e3, e6, e9

    def replaced() -> None:  # once the worker read every daily file
        (folder / "e0.md").unlink()
        write(repo, f"{_DAILY}/2026-01-01/e0.md/inside.md", "### Session — y\n")
        (folder / "e3.md").unlink()
        os.symlink("e9.md", folder / "e3.md")  # a regular file
        (folder / "e6.md").rename(folder / "e6.md.gone")
        os.mkfifo(folder / "e6.md")

    _loaded, taken = _counting(monkeypatch)
    _starting(monkeypatch, replaced)
    result = run_checks(repo)
    days = {path for path in taken if path.startswith(f"{_DAILY}/")}
    assert f"{_DAILY}/2026-01-01/e9.md" in days
    assert not days & {f"{_DAILY}/2026-01-01/{name}" for name in ("e0.md", "e3.md", "e6.md")}
    scan = result.scan
    assert f"{_DAILY}/2026-01-01/e3.md" in scan.symlinks
    assert f"{_DAILY}/2026-01-01/e6.md" in scan.special
    assert f"{_DAILY}/2026-01-01/e0.md/inside.md" in {document.path for document in scan.daily}
    assert _facts(result) == _facts(_serial(repo, monkeypatch))
