"""The page worker of the whole-vault gates (`checker._PageWorker`) takes the common pages/
(every entry a regular file named `<name>.md`) as a whole, decided in a few passes in C; any
other listing entry by entry (`_walked_page`). Either way it reads exactly the pages the walk
reads as pages. Behaviour only, never how long anything takes."""

from __future__ import annotations

import operator
import os
import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from echoes_lint import checker

_NAMES = st.lists(st.sampled_from(["a.md", "b.md", ".md", "c.MD", "d.txt", ".e.md", "f.md.md",
                                   "g..md", "h", "i.md~", "j.md", "ü.md"]),
                  min_size=0, max_size=6, unique=True)
_KINDS = st.sampled_from(["file", "file", "file", "folder", "link"])


@settings(max_examples=60, deadline=None, derandomize=True)
@given(names=_NAMES, kinds=st.lists(_KINDS, min_size=6, max_size=6))
@example(names=["a.md", ".e.md", "g..md", "ü.md"], kinds=["file"] * 6)  # the common folder
@example(names=["a.md", ".md"], kinds=["file"] * 6)  # `.md` alone, last, is no page
def test_the_common_pages_folder_is_taken_whole_and_only_it(names: list[str],
                                                            kinds: list[str]) -> None:
    with tempfile.TemporaryDirectory() as temporary:
        _check(Path(temporary), names, kinds)


def _check(folder: Path, names: list[str], kinds: list[str]) -> None:
    for name, kind in zip(names, kinds):
        if kind == "folder":
            (folder / name).mkdir()
        elif kind == "link":
            (folder / name).symlink_to("elsewhere.md")
        else:
            (folder / name).write_text("x\n", encoding="utf-8")
    entries = sorted(os.scandir(folder), key=operator.attrgetter("name"))
    walked = [entry for entry in entries if checker._walked_page(entry)]
    common = all(kind == "file" for kind in kinds[:len(names)]) and all(
        name.endswith(".md") and name != ".md" for name in names) and bool(names)
    assert checker._all_pages(entries) is common
    if common:
        assert walked == entries  # what the worker then takes: every entry
