"""The hook's view of the vault paths: `Context.vault_paths()` hands out Git's index itself when
a copy would hold the same paths, and `vault_ascii()` checks Git's listing instead of the set.
Both compared with the plain definition over random indexes, files passed and gitlinks."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from echoes_lint import engine
from echoes_lint.rules.context import OUTSIDE_VAULT, VAULT_PREFIX, Context

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
    if passed <= ctx.index and not gitlinks and ctx.index.isdisjoint(OUTSIDE_VAULT):
        assert ctx.vault_paths() is ctx.index  # no copy of the index
