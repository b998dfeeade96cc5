"""EV030 folds only what could collide, and finds exactly what folding every path finds.

The rule walks the sorted vault paths folder by folder and skips, in C, each folder whose paths
folding leaves alone (lower-case ASCII); the one-file hook lists Git's index once. Compared here
with the plain definition: every file and every folder holding one, folded one by one, grouped,
and split by parent folder.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from conftest import git
from helpers_check import PAGES, commit, conflicted_vault, located, page, vault_repo, write
from hypothesis import given, settings
from hypothesis import strategies as st

from echoes_lint import engine, gitindex
from echoes_lint.rules import collisions as rule
from echoes_lint.rules.context import GitIndex

VAULT = "EchoesVault/"


def plain(files: frozenset[str]) -> set[frozenset[str]]:
    """The definition: NFC then case folding of every file and folder, by hand."""
    members = set(files)
    for path in files:
        while "/" in path:
            path = path.rpartition("/")[0]
            members.add(path)
    groups: dict[tuple[str, str], set[str]] = {}
    for member in members:
        key = unicodedata.normalize("NFC", unicodedata.normalize("NFC", member).casefold())
        groups.setdefault((member.rpartition("/")[0], key), set()).add(member)
    return {frozenset(group) for group in groups.values() if len(group) > 1}


def found(files: frozenset[str], order: tuple[str, ...] = (),
          within: bool = False) -> set[frozenset[str]]:
    groups = rule.collisions(files, order, within)
    assert all(len(group) == len(set(group)) for group in groups)
    return {frozenset(group) for group in groups}


# Names that fold to one another, change length, compose, or are not UTF-8 (`\udcff`).
_NAME = st.lists(st.sampled_from(["a", "A", "b", "ß", "SS", "ss", "é", "e\u0301", "E\u0301", "ı",
                                  "I", "i", "İ", "\u212a", "k", "K", "T", "Z", "0", "-", ".",
                                  "md", "\udcff"]), min_size=1, max_size=3).map("".join)
_PATH = st.lists(_NAME, min_size=1, max_size=3).map("/".join)
_PATHS = st.lists(_PATH, max_size=12)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_PATHS, st.lists(_PATH, max_size=6), st.booleans(), st.integers(0, 3))
def test_collisions_are_those_of_folding_every_file_and_folder(
        below: list[str], outside: list[str], in_vault: bool, hint: int) -> None:
    """Below the vault, and (never from the checker) not; with an exact, partial, reversed,
    foreign or no listing of Git's index as the hint."""
    files = frozenset(f"{VAULT}{path}" for path in below) | (
        frozenset() if in_vault else frozenset(outside))
    ordered = sorted(files)
    order = ((), tuple(ordered), tuple(ordered[: len(ordered) // 2]),
             tuple(reversed([*ordered, "EchoesVault/zz-not-a-vault-path"])))[hint]
    assert found(files, order) == plain(files)
    if hint in (1, 2):  # a sorted part of `files`, as the index of a hook without gitlinks
        assert found(files, order, within=True) == plain(files)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.lists(_NAME, min_size=6, max_size=10).map("/".join), max_size=10),
       st.sampled_from(["", "a/", "A/b/", "d/" * 7]))
def test_deep_folders_collide_as_by_folding_every_file_and_folder(paths: list[str],
                                                                  stem: str) -> None:
    """Below the levels walked folder by folder, the one-pass grouping finds the same."""
    files = frozenset(VAULT + stem + path for path in paths)
    assert found(files) == plain(files)


def test_a_tree_hundreds_of_levels_deep_is_checked_without_recursion() -> None:
    """A hostile index nests 600 folders (no stack for a recursive walk) with a collision of
    files at the bottom and of folders halfway down."""
    deep = VAULT + "assets/" + "a/" * 600
    half = VAULT + "assets/" + "a/" * 300
    files = frozenset({deep + "X.png", deep + "x.png", half + "B/1.png", half + "b/2.png"})
    assert found(files) == plain(files) == {frozenset({deep + "X.png", deep + "x.png"}),
                                            frozenset({half + "B", half + "b"})}


def test_a_capital_meets_its_lower_case_twin_in_a_flat_folder_and_nowhere_else() -> None:
    pages = frozenset(f"{VAULT}pages/page-{number:04d}.md" for number in range(2000))
    extra = frozenset({f"{VAULT}pages/PAGE-0007.md", f"{VAULT}pages/Stra\u00dfe.md",
                       f"{VAULT}pages/strasse.md", f"{VAULT}pages/caf\u00e9.md",
                       f"{VAULT}pages/cafe\u0301.md", f"{VAULT}pages/Only.md",
                       f"{VAULT}daily/2026-01-01/20260101T120000Z-a.md",
                       f"{VAULT}daily/2026-01-01/20260101t120000z-a.md",
                       f"{VAULT}daily/2026-01-02/20260102T120000Z-a.md",
                       f"{VAULT}Daily/x.md", f"{VAULT}assets/img", f"{VAULT}assets/IMG/a.png"})
    files = pages | extra
    assert found(files, tuple(sorted(pages))) == plain(files) == {
        frozenset({f"{VAULT}pages/PAGE-0007.md", f"{VAULT}pages/page-0007.md"}),
        frozenset({f"{VAULT}pages/Stra\u00dfe.md", f"{VAULT}pages/strasse.md"}),
        frozenset({f"{VAULT}pages/caf\u00e9.md", f"{VAULT}pages/cafe\u0301.md"}),
        frozenset({f"{VAULT}daily/2026-01-01/20260101T120000Z-a.md",
                   f"{VAULT}daily/2026-01-01/20260101t120000z-a.md"}),
        frozenset({f"{VAULT}daily", f"{VAULT}Daily"}),
        frozenset({f"{VAULT}assets/img", f"{VAULT}assets/IMG"})}


def test_ascii_folds_by_lower_exactly_as_by_nfc_and_casefold() -> None:
    """Every ASCII character (so every ASCII name, character by character: NFC composes
    nothing in ASCII) folds by `lower` as by NFC and case folding; and only `A`-`Z` change."""
    for code in range(128):
        char = chr(code)
        assert unicodedata.normalize("NFC", unicodedata.normalize("NFC", char).casefold()) \
            == char.lower() == engine.fold_name(char)
        assert (char.lower() != char) == (char in "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    name = "".join(map(chr, range(1, 128)))
    assert engine.fold_name(name) == unicodedata.normalize("NFC", name.casefold()) == name.lower()


@pytest.fixture()
def folded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every name the rule folds, one by one or at once."""
    names: list[str] = []
    one, many = engine.fold_name, engine.fold_names

    def fold_name(name: str) -> str:
        names.append(name)
        return one(name)

    def fold_names(batch: list[str]) -> list[str]:
        names.extend(batch)
        return many(batch)

    monkeypatch.setattr(engine, "fold_name", fold_name)
    monkeypatch.setattr(engine, "fold_names", fold_names)
    return names


def test_a_one_file_hook_folds_the_few_names_that_could_collide(tmp_path: Path,
                                                                 folded: list[str]) -> None:
    """Of the vault's lower-case pages only the twin of a page with a capital is folded, and the
    daily entries (capital T and Z) with their folders; the finding is the one folding every
    path gives."""
    repo = vault_repo(tmp_path / "repo")
    for number in range(400):
        write(repo, f"{PAGES}/page-{number:03d}.md", page())
    write(repo, "EchoesVault/daily/2026-01-01/20260101T120000Z-a.md", "- x\n")
    commit(repo)
    write(repo, f"{PAGES}/Page-007.md", page())
    git(repo, "add", "-A")
    assert located(repo, paths=[f"{PAGES}/page-001.md"], select=["EV030"]) == [
        (f"{PAGES}/Page-007.md", 1, 1, "EV030")]
    assert {name for name in folded if name.startswith("page-")} == {"page-007.md"}, folded
    assert len(folded) < 20, folded  # and the few names right in the vault folder


def test_an_unmerged_index_lists_each_path_once_to_the_rule(tmp_path: Path) -> None:
    """Mid-merge, Git lists a conflicted path once per stage: the rule still finds a collision
    of a file outside the index (its listing, as long as the index, lacks that file) with the
    conflicted one."""
    repo = conflicted_vault(tmp_path / "repo")
    assert git(repo, "ls-files", "--unmerged", "--", f"{PAGES}/alpha.md")  # three stages
    write(repo, f"{PAGES}/Alpha.md", page())  # untracked
    assert located(repo, paths=[f"{PAGES}/Alpha.md"], select=["EV030"]) == [
        (f"{PAGES}/Alpha.md", 1, 1, "EV030")]


# ASCII names (Git's common listing) that fold to one another, with the capitals of daily files.
_ASCII_NAME = st.lists(st.sampled_from(["a", "A", "b", "B", "ss", "SS", "I", "i", "k", "K", "T",
                                        "Z", "0", "-", ".", "md"]),
                       min_size=1, max_size=3).map("".join)
_ASCII_PATHS = st.lists(st.lists(_ASCII_NAME, min_size=1, max_size=4).map("/".join), max_size=14)


def listing(paths: list[str], modes: list[str], repeats: list[int]) -> str:
    """Git's `--format` listing of `paths`: sorted, each with a mode, some listed once per
    stage (unmerged)."""
    return "".join(f"{path}\0{mode}\0" * count
                   for path, mode, count in zip(sorted(set(paths)), modes, repeats))


def common(paths: list[str], repeats: list[int]) -> str:
    """Git's common listing (`LS_PATHS`) of `paths`: sorted, some listed once per stage."""
    return "".join(f"{path}\0" * count for path, count in zip(sorted(set(paths)), repeats))


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_ASCII_PATHS, st.lists(st.sampled_from(["100644", "100755", "120000"]), min_size=14,
                              max_size=14),
       st.lists(st.sampled_from([1, 1, 1, 2, 3]), min_size=14, max_size=14))
def test_collisions_of_the_listing_are_those_of_folding_every_file_and_folder(
        below: list[str], modes: list[str], repeats: list[int]) -> None:
    """EV030 on Git's common listing itself (clean folders skipped in C, the rest split off)
    finds what folding every path finds, with executables, links and unmerged paths (the
    listing with modes made the common one)."""
    files = frozenset(f"{VAULT}{path}" for path in below)
    index = GitIndex(gitindex.listed(listing(list(files), modes, repeats)))
    assert index.text == common(list(files), repeats)
    groups = rule.listed_collisions(index)
    assert groups is not None
    assert {frozenset(group) for group in groups} == plain(files)
    assert all(len(group) == len(set(group)) for group in groups)


def test_a_listing_with_paths_outside_the_vault_is_left_to_the_sets() -> None:
    assert rule.listed_collisions(GitIndex(common([".codex/x", "EchoesVault/a"], [1, 1]))) is None
    assert rule.listed_collisions(GitIndex("")) == []
    # Git refuses an index out of order; a listing out of order still ends, left to the sets.
    unsorted = "".join(f"{VAULT}{path}\0" for path in ("a/1", "z", "b/1"))
    assert rule.listed_collisions(GitIndex(unsorted)) is None
    assert rule.listed_collisions(GitIndex(((f"{VAULT}a",), frozenset()))) is None


def test_a_one_file_hook_makes_no_string_per_path(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Of Git's common index the one-file check splits off only the folder whose names have
    capitals (the daily entries), never the pages, and builds no set of the index."""
    repo = vault_repo(tmp_path / "repo")
    for number in range(300):
        write(repo, f"{PAGES}/page-{number:03d}.md", page(body="[[home]] [[page-001]]\n"))
    write(repo, "EchoesVault/daily/2026-01-01/20260101T120000Z-a.md", "- x\n")
    commit(repo)
    write(repo, f"{PAGES}/page-001.md", "---\ntype: note\n---\n[[home]] [[page-002]]\n")
    git(repo, "add", "-A")
    made: list[int] = []

    def frozen(self: GitIndex) -> frozenset[str]:
        raise AssertionError("a set of every path")

    monkeypatch.setattr(GitIndex, "frozen", frozen)
    monkeypatch.setattr(gitindex, "by_format", lambda entries: made.append(len(entries)))
    assert located(repo, paths=[f"{PAGES}/page-001.md"]) == [(f"{PAGES}/page-001.md", 1, 1,
                                                              "EV015")] * 3
    assert made == []


# Daily-like trees: date folders of files named with capitals, a few deeper folders, folders
# and files whose names differ only in case (a collision between folders, or a file and a folder).
_DAILY_NAME = st.sampled_from(["2026-01-01", "2026-01-02", "20260101T1Z-a.md", "20260101t1z-a.md",
                               "20260101T1Z-b.md", "x.md", "X.md", "a", "A", "b", "k", "K"])
_DAILY_PATH = st.tuples(st.sampled_from(["daily", "Daily", "pages", "pages/Sub", "pages/sub"]),
                        st.lists(_DAILY_NAME, min_size=1, max_size=7)).map(
    lambda parts: "/".join((parts[0], *parts[1])))


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(_DAILY_PATH, max_size=24),
       st.lists(st.sampled_from(["100644", "100644", "100755"]), min_size=24, max_size=24),
       st.lists(st.sampled_from([1, 1, 1, 1, 2]), min_size=24, max_size=24))
def test_daily_like_listings_collide_as_by_folding_every_file_and_folder(
        below: list[str], modes: list[str], repeats: list[int]) -> None:
    """Folders of files alone decided on the listing itself by lowering (date folders), deep
    trees walked on the listing, collisions only between folders or between a file and a
    folder: what folding every path finds."""
    files = frozenset(f"{VAULT}{path}" for path in below)
    groups = rule.listed_collisions(GitIndex(gitindex.listed(listing(list(files), modes,
                                                                     repeats))))
    assert groups is not None
    assert {frozenset(group) for group in groups} == plain(files)
    assert all(len(group) == len(set(group)) for group in groups)


def test_date_folders_of_capital_names_are_checked_each_on_its_own() -> None:
    """Every date folder holds capitals; one holds two names that lowering joins, another a
    folder and a file that differ in case, and two date folders differ in case only."""
    paths = [f"daily/2026-01-0{day}/2026010{day}T120000Z-{n}.md" for day in range(1, 4)
             for n in range(3)]
    paths += ["daily/2026-01-02/20260102t120000z-1.md", "daily/2026-01-03/Sub/x.md",
              "daily/2026-01-03/sub", "daily/2026-01-0X/a.md", "daily/2026-01-0x/a.md"]
    files = frozenset(f"{VAULT}{path}" for path in paths)
    groups = rule.listed_collisions(GitIndex(common(sorted(files), [1] * len(files))))
    assert groups is not None
    assert {frozenset(group) for group in groups} == plain(files) != set()
    assert len(plain(files)) == 3
