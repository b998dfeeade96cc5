"""The whole-vault gates' walk files the worker's rows a folder at a time (issue 13): the common
daily folder (a row for every entry, each a regular file named `*.md`) and the rest of pages/
once the walk met the worker (a row for every entry) go in one pass each (`_file_rows`), and
any other folder entry by entry, with the same result: a row is taken exactly for an entry the
walk itself reads as a daily file or a page, in the walk's order, each file's path one string
for its document and its `Scan.files` key. Behaviour only, never how long anything takes."""

from __future__ import annotations

import operator
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers_check import PAGES, page, vault_repo, write
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_gates_worker import _facts, _serial, _starting

from echoes_lint import checker, engine
from echoes_lint.checker import run_checks

_NAMES = st.lists(st.sampled_from(["a.md", "b.MD", ".md", "c.txt", "d.md.md", "e.md~", "ü.md",
                                   "f.md"]), min_size=0, max_size=6, unique=True)
_KINDS = st.lists(st.sampled_from(["file", "file", "file", "folder", "link", "fifo"]),
                  min_size=6, max_size=6)


def _filings(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The paths of each `_file_rows` call, call by call."""
    calls: list[list[str]] = []
    file_rows = checker._file_rows

    def counted(scan: engine.Scan, documents: list[engine.Document], rows: Any) -> None:
        calls.append([row[0].path for row in rows])
        file_rows(scan, documents, rows)

    monkeypatch.setattr(checker, "_file_rows", counted)
    return calls


@settings(max_examples=80, deadline=None, derandomize=True)
@given(names=_NAMES, kinds=_KINDS, rowless=st.sets(st.integers(0, 5), max_size=2))
@example(names=["a.md", "f.md", "ü.md"], kinds=["file"] * 6, rowless=set())  # the common one
@example(names=["a.md", "b.MD"], kinds=["file"] * 6, rowless=set())  # `.MD`: entry by entry
@example(names=["a.md", "f.md"], kinds=["file", "link"] + ["file"] * 4, rowless=set())
def test_a_daily_folder_is_filed_whole_only_when_it_is_the_common_one(
        names: list[str], kinds: list[str], rowless: set[int]) -> None:
    with tempfile.TemporaryDirectory() as temporary, pytest.MonkeyPatch.context() as patch:
        _check_days(Path(temporary), names, kinds, rowless, _filings(patch))


def _check_days(workspace: Path, names: list[str], kinds: list[str], rowless: set[int],
                calls: list[list[str]]) -> None:
    relative_dir = "EchoesVault/daily/2026-01-01"
    folder = workspace / relative_dir
    folder.mkdir(parents=True)
    rows: dict[str, Any] = {}
    for number, (name, kind) in enumerate(zip(names, kinds)):
        if kind == "folder":
            (folder / name).mkdir()
        elif kind == "link":
            (folder / name).symlink_to("elsewhere.md")
        elif kind == "fifo":
            os.mkfifo(folder / name)
        else:
            (folder / name).write_text("x\n", encoding="utf-8")
        if number not in rowless:  # the worker's row, whatever the entry is now
            document = engine.Document(f"{relative_dir}/{name}", "x\n", None, [])
            rows[name] = (document, (2, float(number)))
    entries = sorted(os.scandir(folder), key=operator.attrgetter("name"))
    scan = engine.Scan(workspace)
    given_to_walk = [entry.name for entry in checker._taking_days(
        scan, relative_dir, entries, {relative_dir: dict(rows)})]
    # The walk's own decision (`engine._walk_vault`, `classify_vault_path`), entry by entry,
    # in the walk's order.
    taken = sorted(name for name, kind in zip(names, kinds) if name in rows
                   and name[-3:].casefold() == ".md" and kind == "file")
    assert given_to_walk == sorted(name for name in names if name not in taken)
    assert [document.path for document in scan.daily] == [f"{relative_dir}/{name}" for name in taken]
    assert scan.files == {f"{relative_dir}/{name}": rows[name][1] for name in taken}
    assert all(key is document.path for key, document in zip(scan.files, scan.daily))
    common = bool(names) and len(rows) == len(names) and all(kind == "file" for kind in kinds[
        :len(names)]) and all(name.endswith(".md") for name in names)
    assert len(calls) == (1 if common else len(taken))


@pytest.mark.skipif(
    not hasattr(os, "fork") or len(os.sched_getaffinity(0)) < 2
    if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) < 2,
    reason="the worker needs fork and two CPUs")
@pytest.mark.parametrize("kept", [(), (0, 20, 21, 39)])
def test_the_rest_of_pages_is_filed_a_run_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: tuple[int, ...]) -> None:
    """Once the walk met the worker at its first page (the worker sent every lean page before
    the walk began), each run of lean pages of the rest of pages/ is filed at once, between the
    pages the walk reads itself (a broken link keeps a page's text), as a serial walk files
    them."""
    repo = vault_repo(tmp_path / "repo")
    for number in range(40):
        write(repo, f"{PAGES}/p{number:02d}.md",
              page("[[nowhere]]\n" if number in kept else f"[[home]] {number}\n"))
    alone = _facts(_serial(repo, monkeypatch))
    calls = _filings(monkeypatch)
    _starting(monkeypatch)
    result = run_checks(repo)
    runs = [call for call in calls if call and call[0].startswith(PAGES)]
    lean = [f"{PAGES}/p{number:02d}.md" for number in range(40) if number not in kept]
    # After home.md, where the walk met the worker.
    assert runs == ([lean] if not kept else [lean[:19], lean[19:]])
    assert all(result.scan.files[path] is not None for path in lean)
    assert _facts(result) == alone
