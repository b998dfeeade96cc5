"""The one-file hook keeps Git's common listing (ASCII paths, no gitlink) as git wrote it,
undecoded: the index searches its bytes and EV030's survey walks them, with the answers its text
gives; a listing that is not the common one is told so, however much of it was searched while
git wrote it. Git is asked for the vault once: its index, below it, needs no pathspec of its
own."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import git
from helpers_check import PAGES, page, vault_repo, write
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hook_collisions import VAULT, common, listing, plain
from test_hook_listing import staged_collision

from echoes_lint import gitindex, precommit
from echoes_lint.rules import collisions as rule
from echoes_lint.rules.context import GitIndex

# Names with capitals and their twins, a daily stamp's shape, what folds beyond ASCII, and a
# name no UTF-8 decodes (`\udcff`, as os.fsdecode gives it).
_NAME = st.lists(st.sampled_from(["a", "A", "b", "t", "T", "Z", "z", "-", ".md", "0", "\u00e9",
                                  "e\u0301", "\u212a", "\udcff"]),
                 min_size=1, max_size=3).map("".join)
_PATHS = st.lists(st.lists(_NAME, min_size=1, max_size=3).map("/".join), max_size=12)
_MODES = st.lists(st.sampled_from(["100644", "100644", "100755", "120000", "160000"]),
                  min_size=14, max_size=14)
_REPEATS = st.lists(st.sampled_from([1, 1, 1, 2]), min_size=14, max_size=14)


def _probes(paths: list[str]) -> set[str]:
    """Each path, its folders, and what is next to it: one more character, a capital or a
    character beyond ASCII in place of its last, a NUL in it."""
    probes = {"", VAULT[:-1], VAULT, f"{VAULT}\u00e9", "EchoesVault/index.md"}
    for path in paths:
        probes.update((path, f"{path}x", f"{path[:-1]}A", f"{path[:-1]}\u00e9", f"{path}\0"))
        while "/" in path:
            path = path.rpartition("/")[0]
            probes.update((path, f"{path}/"))
    return probes


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_PATHS, _MODES, _REPEATS, st.integers(1, 120), st.booleans(), st.data())
def test_the_listing_as_git_wrote_it_answers_as_its_text(
        below: list[str], modes: list[str], repeats: list[int], part: int, common_only: bool,
        data: st.DataObject) -> None:
    """Searched a part at a time (of any size), whatever part of the output was written at
    each search, the listing of the paths is the common one exactly when it is ASCII, as the
    listing with modes decoded is when it holds no gitlink either; then the index of its bytes
    holds the paths its text holds, the capitals kept on the way are those of any span of it,
    and EV030 finds the same collisions, those of folding every file and folder."""
    paths = sorted({f"{VAULT}{path}" for path in below if path.isascii() or not common_only})
    if common_only:  # (else mostly a gitlink or a name beyond ASCII)
        modes = [mode.replace("160000", "100644") for mode in modes]
    text = listing(paths, modes, repeats)  # `LS_FILES`, when the index file proves nothing
    paths_only = common(paths, repeats)  # `LS_PATHS`
    # What git writes (os.fsdecode's inverse).
    output = paths_only.encode("utf-8", "surrogateescape")
    saved, gitindex._PART = gitindex._PART, part
    try:
        capitals, clean = gitindex.Capitals(), 0
        for written in sorted(data.draw(st.lists(st.integers(0, len(output)), max_size=4))):
            clean = max(0, gitindex._search(output, clean, written, capitals))  # (`_searched`)
        ascii = paths_only.isascii()
        assert (gitindex._search(output, clean, len(output), capitals) >= 0) is ascii
        gitlink = "160000" in modes[:len(paths)]
        assert isinstance(gitindex.listed(text), str) is (ascii and not gitlink)
        if not ascii or gitlink:
            return
        assert gitindex.listed(text) == paths_only
        start = data.draw(st.integers(0, len(output)))
        end = data.draw(st.integers(start, len(output)))
        assert capitals.of(output, start, end) in (
            None, output[start:end].translate(None, gitindex._NOT_CAPITAL))
        undecoded = GitIndex(gitindex.Written(output, capitals))
        decoded = GitIndex(gitindex.listed(text))  # (`paths_only`)
        for probe in _probes(paths):
            assert (probe in undecoded) is (probe in decoded) is (probe in paths), probe
        assert undecoded.ascii() and undecoded.gitlinks == frozenset()
        assert undecoded.survey() == decoded.survey() == gitindex.survey(output)
        groups = rule.listed_collisions(undecoded)
    finally:
        gitindex._PART = saved
    assert groups == rule.listed_collisions(decoded)
    if groups is not None:
        assert {frozenset(group) for group in groups} == plain(frozenset(paths))
    assert undecoded.text == paths_only and undecoded.listed == decoded.listed


def test_the_one_file_hook_decodes_no_listing_and_a_collision_only_its_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Before: the whole listing was decoded on every run (6 MB of fresh memory at 100,000
    pages). Now a run without a finding decodes nothing, and a staged capital twin (EV030)
    only the entries of its own folder."""
    repo = vault_repo(tmp_path / "repo")
    for number in range(300):
        write(repo, f"{PAGES}/page-{number:03d}.md", page())
    write(repo, "EchoesVault/daily/2026-01-01/20260101T120000Z-session.md", "# Day\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", "pages")
    write(repo, f"{PAGES}/page-001.md", page(summary="Changed."))
    git(repo, "add", "--", f"{PAGES}/page-001.md")
    monkeypatch.chdir(repo)
    decoded: list[int] = []
    text_of = gitindex.text_of

    def counted(data: gitindex.Buffer) -> str:
        decoded.append(len(data))
        return text_of(data)

    monkeypatch.setattr(gitindex, "text_of", counted)
    assert precommit.lint_main([f"{PAGES}/page-001.md"]) == 0
    assert decoded == []
    staged_collision(repo)
    assert precommit.case_collisions_main([f"{PAGES}/Home.md"]) == 1
    assert f"{PAGES}/Home.md:1:1: EV030" in capsys.readouterr().out
    output = subprocess.run(["git", *gitindex.LS_PATHS], cwd=repo, capture_output=True,
                            check=True).stdout
    folder = [entry for entry in output.split(b"\0") if entry.startswith(b"EchoesVault/p")]
    assert decoded == [len(b"".join(folder)) + len(folder)] < [len(output)]
    assert gitindex._started == {}


def test_the_vault_in_the_pathspec_lists_its_index_and_the_local_only_paths(
        tmp_path: Path) -> None:
    """The listing of the pathspec (the vault's index file left to the vault) is the listing of
    every path of the scope, with the index file and the local-only paths tracked."""
    repo = vault_repo(tmp_path / "repo")
    for relative in ("EchoesVault/index.md", ".echoes-vault/state.json", ".codex/x.json",
                     ".codex/echoes-vault-state.json", "other/EchoesVault/a.md"):
        write(repo, relative, "{}\n")
    git(repo, "add", "-f", "--", ".")
    assert "EchoesVault/index.md" not in gitindex.PATHSPEC
    scope = ["git", *gitindex.LS_PATHS[:-len(gitindex.PATHSPEC)], *gitindex.SCOPE]
    whole = subprocess.run(scope, cwd=repo, capture_output=True, check=True).stdout
    listed, cause = gitindex.output(repo)
    assert isinstance(listed, gitindex.Written) and cause is None
    assert bytes(listed.data) == whole
    index = GitIndex(listed)
    assert all(path in index for path in ("EchoesVault/index.md", ".echoes-vault/state.json",
                                          ".codex/echoes-vault-state.json"))
    assert ".codex/x.json" not in index and "other/EchoesVault/a.md" not in index
    assert os.fsencode(f"{PAGES}/home.md\0") in whole


def test_a_listing_found_uncommon_while_git_wrote_it_is_not_searched_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the search beside git found a non-ASCII name or a gitlink, the listing is decoded
    as it is: not searched again from its start (nor copied whole) after git ends."""
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/caf\u00e9.md", page())
    git(repo, "add", "-A")
    monkeypatch.setattr(gitindex, "_searched", lambda started, capitals=None: -1)
    searched: list[int] = []
    real = gitindex._search
    monkeypatch.setattr(gitindex, "_search", lambda output, clean, written, capitals=None:
                        searched.append(clean) or real(output, clean, written, capitals))
    listing, cause = gitindex.output(repo)
    assert cause is None and searched == []
    assert listing == (tuple(gitindex._decode(subprocess.run(
        ["git", *gitindex.LS_PATHS], cwd=repo, capture_output=True, check=True).stdout)),
        frozenset())
