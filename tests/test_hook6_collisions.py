"""EV030 on Git's listing checks a large folder a few entries at a time (`_listed_unchanged`),
never as one copy of the folder, and finds exactly what NFC and case folding of every file and
folder finds: for any chunk size, with names that fold beyond ASCII, and through pre-commit."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from conftest import git, write_page
from helpers_check import PAGES, commit
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hook_collisions import VAULT, common, listing, plain
from test_precommit_hooks import hook_source, hooked, passes, pre_commit_home, refused  # noqa: F401  (fixtures)

from echoes_lint import gitindex
from echoes_lint.rules import collisions as rule
from echoes_lint.rules.context import GitIndex

# ASCII, and what folds with it or to it: ß/SS/ss, composed and decomposed é, KELVIN SIGN,
# long s, the ff ligature, dotted and dotless i, Greek sigma in its final form.
_NAME = st.lists(st.sampled_from(
    ["a", "A", "b", "s", "S", "ss", "SS", "\u00df", "\u017f", "\u00e9", "e\u0301", "E\u0301",
     "k", "K", "\u212a", "f", "ff", "FF", "\ufb00", "i", "I", "\u0131", "\u0130", "\u03c3",
     "\u03c2", "\u03a3", "T", "Z", "0", "-", ".md"]), min_size=1, max_size=3).map("".join)
# Mostly one flat folder of pages (what the chunks go through) whose first name is lower-case
# (so the rule tries the chunks), with names that fold together further down; some other folders.
_TWIN = st.lists(st.sampled_from(["s", "S", "ss", "SS", "\u00df", "\u017f", "k", "K", "\u212a",
                                  "\u00e9", "e\u0301", "ff", "FF", "\ufb00", "i", "I", "\u0131",
                                  "\u0130", "\u03c3", "\u03c2", "\u03a3"]),
                 min_size=1, max_size=2).map("".join)
_PATH = st.one_of(st.builds("pages/page-{}.md".format, st.integers(0, 60)),
                  st.builds("pages/page-{}.md".format, _TWIN),
                  st.lists(_NAME, min_size=1, max_size=3).map("/".join),
                  st.builds("pages/{}".format, _NAME))


def hook_groups(files: frozenset[str]) -> set[frozenset[str]]:
    """EV030's groups as the one-file hook finds them: on Git's own listing when it is the
    common one (ASCII), else on the paths split off it."""
    index = GitIndex(gitindex.listed(listing(list(files), ["100644"] * len(files),
                                             [1] * len(files))))  # (common when ASCII)
    groups = rule.listed_collisions(index)
    if groups is None:
        groups = rule.collisions(index.frozen(), index.listed, within=True)
    return {frozenset(group) for group in groups}


@settings(max_examples=600, deadline=None, derandomize=True)
@given(st.lists(_PATH, max_size=40), st.integers(1, 200), st.booleans())
def test_the_hook_finds_what_folding_every_file_and_folder_finds(paths: list[str], chunk: int,
                                                                 ascii_only: bool) -> None:
    """ASCII only: Git's common listing, searched as it is; else the paths split off it."""
    agree_in_chunks(paths, [], chunk, ascii_only)


def agree_in_chunks(paths: list[str], more: list[str], chunk: int, ascii_only: bool) -> None:
    """The hook's EV030 groups of `paths` (the non-ASCII ones left out when `ascii_only`) and
    `more`, Git's listing taken `chunk` bytes at a time, are those of folding every path."""
    chosen = [path for path in paths if path.isascii() or not ascii_only]
    files = frozenset(VAULT + path for path in (*chosen, *more, "pages/!first.md"))
    saved = gitindex._CHUNK
    gitindex._CHUNK = chunk  # chunk boundaries anywhere in an entry
    try:
        assert hook_groups(files) == plain(files)
    finally:
        gitindex._CHUNK = saved


def test_a_folder_of_100000_pages_is_checked_without_a_copy_of_it() -> None:
    """The peak of memory taken while EV030 goes through a 3 MB folder of lower-case pages (the
    common vault) stays a small part of it."""
    pages = [f"{VAULT}pages/page-{number:06d}.md" for number in range(100_000)]
    index = GitIndex(common(pages, [1] * len(pages)))
    assert index.text is not None and len(index.text) > 3_100_000
    tracemalloc.start()
    try:
        groups = rule.listed_collisions(index)
        _size, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert groups == []
    assert peak < len(index.text) // 16, peak


def test_pre_commit_refuses_a_capital_twin_past_the_first_chunk_and_passes_without(
        hooked: Path, pre_commit_home: Path) -> None:  # noqa: F811
    for number in range(2_500):  # more than one chunk of the listing
        write_page(hooked, f"page-{number:04d}.md")
    commit(hooked, "pages")
    write_page(hooked, "page-2400.md", summary="Changed.")
    git(hooked, "add", "-A")
    passes(hooked, pre_commit_home)
    # `.MD` sorts just before its twin, far past the first chunk (`Page-` would sort first).
    (hooked / PAGES / "page-2400.MD").write_bytes((hooked / PAGES / "page-2400.md").read_bytes())
    git(hooked, "add", "-A")
    output = refused(hooked, pre_commit_home, "EV030")
    assert f"{PAGES}/page-2400.MD:1:1: EV030 new file `{PAGES}/page-2400.MD` collides with " \
           f"`{PAGES}/page-2400.md`" in output
