"""The hook's view of the vault paths: `Context.vault_paths()` hands out Git's index itself when
a copy would hold the same paths, and `vault_ascii()` checks Git's listing instead of the set.
Both compared with the plain definition over random indexes, files passed and gitlinks."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from echoes_lint import engine, gitindex
from echoes_lint.rules.context import OUTSIDE_VAULT, VAULT_PREFIX, Context, GitIndex

PATHS = st.sampled_from([
    "EchoesVault/pages/a.md", "EchoesVault/pages/b.md", "EchoesVault/assets/m/x.png",
    "EchoesVault/assets/m", "EchoesVault/assets/m/y\udcff.png", "EchoesVault/pages/\u00e9.md",
    "EchoesVault/index.md", "EchoesVault", *sorted(OUTSIDE_VAULT)])


def plain(index: frozenset[str], passed: frozenset[str],
          gitlinks: frozenset[str]) -> frozenset[str]:
    """The definition for checks of named files: the index under the vault, the files passed,
    without a gitlink or anything below one."""
    paths = index.difference(OUTSIDE_VAULT) | passed
    return frozenset(path for path in paths if path not in gitlinks
                     and not any(path.startswith(link + "/") for link in gitlinks))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(PATHS, max_size=8), st.frozensets(PATHS, max_size=3),
       st.frozensets(PATHS, max_size=2))
def test_vault_paths_of_named_files(listed: list[str], passed: frozenset[str],
                                    gitlinks: frozenset[str]) -> None:
    passed = frozenset(path for path in passed if path.startswith(VAULT_PREFIX))  # vault files
    scan = engine.Scan(Path("."))
    scan.git = engine.GitFacts(True, tuple(listed))
    gitlinks = frozenset(link for link in gitlinks if link in listed)
    ctx = Context(scan, "", True, frozenset(listed), passed, gitlinks=gitlinks)
    expected = plain(frozenset(listed), passed, gitlinks)
    assert ctx.vault_paths() == expected
    assert ctx.vault_ascii() == "".join(expected).isascii()
    # Git's index as the hook has it: its paths in Git's order, and the gitlinks.
    listing = GitIndex((tuple(sorted(listed)), gitlinks))
    hook = Context(scan, "", True, listing, passed, gitlinks=gitlinks)
    assert hook.vault_paths() == expected
    assert hook.vault_ascii() == "".join(expected).isascii()
    if passed <= ctx.index and not gitlinks and ctx.index.isdisjoint(OUTSIDE_VAULT):
        assert ctx.vault_paths() is ctx.index  # no copy of the index


# ASCII paths of Git's common listing, and keys around them.
_LISTED = st.lists(st.sampled_from(["a", "b", "B", "-", ".", "0", "md", "/", "z"]), min_size=1,
                   max_size=4).map("".join).map(lambda tail: f"EchoesVault/{tail}")
_KEYS = st.one_of(_LISTED, st.sampled_from(["", "E", "EchoesVault", "EchoesVault/", "\x7f",
                                             "EchoesVault/a\0100644", "EchoesVault/\u00e9",
                                             ".codex/x", "EchoesVault/a\0"]))


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(st.tuples(_LISTED, st.sampled_from(["100644", "100755", "120000"]),
                          st.sampled_from([1, 1, 2, 3])), max_size=12),
       st.lists(_KEYS, max_size=8))
def test_the_index_searched_in_gits_listing_is_the_set_of_its_paths(
        entries: list[tuple[str, str, int]], keys: list[str]) -> None:
    """Membership by binary search of Git's output (executables, links, unmerged paths listed
    once per stage) is membership of the set of its paths; so are its paths, size and ASCII."""
    chosen = {path: (mode, count) for path, mode, count in entries}
    text = "".join(f"{path}\0{mode}\0" * count for path, (mode, count) in sorted(chosen.items()))
    index = GitIndex(gitindex.listed(text))
    common = "".join(f"{path}\0" * count for path, (_mode, count) in sorted(chosen.items()))
    assert index.text == common  # the common index: nothing split
    paths = frozenset(chosen)
    for key in [*keys, *paths]:
        assert (key in index) == (key in paths), key
    assert index.text == common  # no set was needed
    assert index.listed == gitindex.by_format(text)[0]
    assert (set(index), len(index), index.ascii()) == (paths, len(paths), True)


def test_an_index_with_a_gitlink_or_a_path_not_ascii_is_a_set() -> None:
    for text in ("EchoesVault/a\x00160000\x00", "EchoesVault/\u00e9\x00100644\x00"):
        index = GitIndex(gitindex.listed(text))
        assert index.text is None and set(index) == {text.split("\0")[0]}
    assert GitIndex(gitindex.listed("EchoesVault/a\x00160000\x00")).gitlinks == {"EchoesVault/a"}
    assert not GitIndex(gitindex.listed("EchoesVault/\u00e9\x00100644\x00")).ascii()
