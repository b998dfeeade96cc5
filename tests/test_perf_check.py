"""The faster read-only gate paths of issue 13 decide exactly as the plain ones did.

Names are folded all at once, Git's NUL-separated output is decoded in one piece, a page whose
every link resolves is not located, and a one-file hook resolves links to pages Git knows by
name and finds collisions with the files it is given, however large the vault.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from conftest import git
from helpers_check import PAGES, commit, located, page, vault_repo, write
from hypothesis import given, settings
from hypothesis import strategies as st

from echoes_lint import engine

# Letters whose folding changes length or composes: the cases a bulk fold could get wrong.
_TRICKY = st.sampled_from(["a", "A", "ß", "SS", "s", "é", "e\u0301", "E\u0301", "\u212a", "k",
                           "\u0958", "\u0915\u093c", "ς", "Σ", "σ", "ﬀ", "ff", "İ", "ǅ", "/",
                           ".", "\udcff"])
_NAMES = st.lists(st.lists(_TRICKY | st.characters(), max_size=6).map("".join), max_size=8)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(_NAMES)
def test_names_folded_at_once_fold_as_one_by_one(names: list[str]) -> None:
    assert engine.fold_names(names) == [engine.fold_name(name) for name in names]
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(unicodedata.normalize(
            "NFC", unicodedata.normalize("NFC", name).casefold()), []).append(name)
    assert engine.name_collisions(names) == sorted(
        sorted(group) for group in groups.values() if len(group) > 1)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.binary(max_size=12).map(lambda item: item.replace(b"\0", b"")), max_size=8))
def test_git_output_decoded_at_once_decodes_as_one_by_one(items: list[bytes]) -> None:
    output = b"".join(item + b"\0" for item in items)
    assert engine.split_nul(output) == [os.fsdecode(item) for item in items if item]


def test_a_link_is_judged_the_same_in_and_out_of_code_and_frontmatter(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/plain.md", page("[[home]] [[Home]] [[home#top]] [[#self]]\n"))
    write(repo, f"{PAGES}/linked-in-frontmatter.md",
          "---\ntype: note\nstack: [x]\nstatus: active\nsummary: See [[nowhere]].\n---\n\n[[home]]\n")
    write(repo, f"{PAGES}/code.md", page("`[[nowhere]]` and [[missing]]\n\n```\n[[nowhere]]\n```\n"))
    write(repo, f"{PAGES}/broken.md", page("ok [[home]]\n\nnot ok [[gone]] and [[gone]]\n"))
    assert located(repo, select=["EV050"]) == [
        (f"{PAGES}/broken.md", 10, 8, "EV050"), (f"{PAGES}/broken.md", 10, 21, "EV050"),
        (f"{PAGES}/code.md", 8, 19, "EV050")]


def test_a_one_file_hook_finds_every_collision_with_the_files_it_is_given(tmp_path: Path,
                                                                         ) -> None:
    repo = vault_repo(tmp_path / "repo")
    for number in range(300):
        write(repo, f"{PAGES}/page-{number:03d}.md", page(f"[[page-{(number + 1) % 300:03d}]]\n"))
    write(repo, "EchoesVault/assets/Img/a.png", "a")
    commit(repo)
    write(repo, f"{PAGES}/PAGE-007.md", page("[[page-008]] [[Home]]\n"))
    write(repo, f"{PAGES}/Stra\u00dfe.md", page())
    write(repo, f"{PAGES}/STRASSE.md", page())
    write(repo, "EchoesVault/assets/img/b.png", "b")
    # Untracked and not given, the others are not the hook's business; the given one is.
    assert located(repo, paths=[f"{PAGES}/PAGE-007.md"]) == [
        (f"{PAGES}/PAGE-007.md", 1, 1, "EV022"), (f"{PAGES}/PAGE-007.md", 1, 1, "EV030")]
    assert located(repo, paths=[f"{PAGES}/STRASSE.md", "EchoesVault/assets/img/b.png"],
                   select=["EV030"]) == [("EchoesVault/assets/img", 1, 1, "EV030")]
    # Staged, every collision is found, whatever file the hook is given.
    git(repo, "add", "-A")
    assert located(repo, paths=[f"{PAGES}/page-100.md"], select=["EV030"]) == [
        ("EchoesVault/assets/img", 1, 1, "EV030"), (f"{PAGES}/PAGE-007.md", 1, 1, "EV030"),
        (f"{PAGES}/Stra\u00dfe.md", 1, 1, "EV030")]
