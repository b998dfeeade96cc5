"""Rules about the repository: Git hygiene, case collisions, names, symlinks and the marker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Optional

import pytest
from conftest import git, init_repo, run_cli
from helpers_check import PAGES, commit, located, page, vault_repo, write

from echoes_lint.checker import run_checks
from echoes_lint.findings import Finding


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return vault_repo(tmp_path / "repo")


def findings(repo: Path, *codes: str, paths: Optional[list[str]] = None) -> list[Finding]:
    return run_checks(repo, select=codes, paths=paths).findings


# --- EV020 / EV021 tracked local files ---------------------------------------------------------


def test_staged_index_is_ev020_with_the_exact_fix_and_rm_cached_clears_it(repo: Path) -> None:
    write(repo, "EchoesVault/index.md", "# EchoesVault Index\n")
    assert findings(repo, "EV020") == []  # ignored and untracked: fine
    git(repo, "add", "-f", "EchoesVault/index.md")
    (finding,) = findings(repo, "EV020")
    assert (finding.path, finding.line, finding.col) == ("EchoesVault/index.md", 1, 1)
    assert finding.fix == "git rm --cached -- EchoesVault/index.md"
    assert "`git rm --cached -- EchoesVault/index.md`" in finding.message
    git(repo, "rm", "-q", "--cached", "EchoesVault/index.md")
    assert findings(repo, "EV020") == []


@pytest.mark.parametrize("relative", [".echoes-vault/state.json", ".echoes-vault/lock",
                                      ".opencode/echoes-state.json",
                                      ".codex/echoes-vault-state.json"])
def test_staged_local_state_is_ev021(repo: Path, relative: str) -> None:
    write(repo, relative, "{}\n")
    assert findings(repo, "EV021") == []
    git(repo, "add", "-f", relative)
    (finding,) = findings(repo, "EV021")
    assert (finding.path, finding.code) == (relative, "EV021")
    assert finding.fix == f"git rm --cached -- {relative}"


# --- EV022 untracked durable files -------------------------------------------------------------


def test_untracked_and_ignored_pages_are_ev022_warnings(repo: Path) -> None:
    write(repo, f"{PAGES}/new.md", page())
    write(repo, f"{PAGES}/secret.md", page())
    write(repo, ".gitignore", "EchoesVault/pages/secret.md\n")
    result = findings(repo, "EV022")
    assert [(f.path, f.severity.value, f.fix) for f in result] == [
        (f"{PAGES}/new.md", "warning", f"git add -- {PAGES}/new.md"),
        (f"{PAGES}/secret.md", "warning", f"git add -f -- {PAGES}/secret.md"),
    ]
    git(repo, "add", f"{PAGES}/new.md")
    assert [f.path for f in findings(repo, "EV022")] == [f"{PAGES}/secret.md"]


def test_named_untracked_file_is_ev022_and_tracked_one_is_not(repo: Path) -> None:
    write(repo, f"{PAGES}/new.md", page())
    assert located(repo, paths=[f"{PAGES}/new.md"], select=["EV022"]) == [
        (f"{PAGES}/new.md", 1, 1, "EV022")]
    assert located(repo, paths=[f"{PAGES}/home.md"], select=["EV022"]) == []


# --- EV030 case collisions ---------------------------------------------------------------------


def test_new_file_colliding_with_a_committed_one_names_both(repo: Path) -> None:
    write(repo, f"{PAGES}/Home.md", page())
    (finding,) = findings(repo, "EV030")
    assert (finding.path, finding.line, finding.col) == (f"{PAGES}/Home.md", 1, 1)
    assert finding.message.startswith(f"new file `{PAGES}/Home.md` collides with `{PAGES}/home.md`")


def test_staged_collision_is_found_whatever_files_a_hook_passes(repo: Path) -> None:
    write(repo, f"{PAGES}/HOME.md", page())
    write(repo, f"{PAGES}/other.md", page())
    git(repo, "add", "-A")
    assert located(repo, paths=[f"{PAGES}/other.md"], select=["EV030"]) == [
        (f"{PAGES}/HOME.md", 1, 1, "EV030")]
    assert located(repo, paths=[], select=["EV030"]) == [(f"{PAGES}/HOME.md", 1, 1, "EV030")]


def test_two_new_files_and_non_ascii_folding_collide(repo: Path) -> None:
    write(repo, f"{PAGES}/Straße.md", page())
    write(repo, f"{PAGES}/STRASSE.md", page())
    composed = unicodedata.normalize("NFC", "café.md")
    decomposed = unicodedata.normalize("NFD", "Café.md")
    write(repo, f"{PAGES}/{composed}", page())
    write(repo, f"{PAGES}/{decomposed}", page())
    git(repo, "add", "-A")
    result = findings(repo, "EV030", paths=[])
    assert [f.path for f in result] == [f"{PAGES}/Straße.md", f"{PAGES}/{composed}"]
    assert f"`{PAGES}/STRASSE.md`" in result[0].message


def test_folder_collision_is_reported_once_at_the_folder(repo: Path) -> None:
    write(repo, "EchoesVault/assets/Img/a.png", "a")
    write(repo, "EchoesVault/assets/img/b.png", "b")
    write(repo, "EchoesVault/assets/img/a.png", "a")
    assert located(repo, select=["EV030"]) == [("EchoesVault/assets/img", 1, 1, "EV030")]


def test_distinct_names_do_not_collide(repo: Path) -> None:
    write(repo, f"{PAGES}/home-2.md", page())
    write(repo, f"{PAGES}/homé.md", page())
    assert findings(repo, "EV030") == []


# --- EV031 unsafe page names -------------------------------------------------------------------


def test_entries_of_pages_that_are_not_pages_are_ev031_errors(repo: Path) -> None:
    write(repo, f"{PAGES}/sub/nested.md", page())
    write(repo, f"{PAGES}/notes.txt", "notes")
    commit(repo, "strays", f"{PAGES}/notes.txt")
    result = findings(repo, "EV031")
    assert [(f.path, f.severity.value) for f in result] == [
        (f"{PAGES}/notes.txt", "error"), (f"{PAGES}/sub", "error")]
    assert result[0].fix == f"git mv -- {PAGES}/notes.txt EchoesVault/assets/notes.txt"


def test_page_names_not_in_nfc_are_ev031(repo: Path) -> None:
    decomposed = unicodedata.normalize("NFD", "Résumé.md")
    write(repo, f"{PAGES}/{decomposed}", page())
    result = findings(repo, "EV031")
    assert [f.path for f in result] == [f"{PAGES}/{decomposed}"]
    assert unicodedata.normalize("NFC", "`Résumé.md` instead") in result[0].message


def test_names_windows_cannot_check_out_are_ev031_warnings(repo: Path) -> None:
    write(repo, f"{PAGES}/con.md", page())
    write(repo, f"{PAGES}/why?.md", page())
    write(repo, "EchoesVault/raw/trailing./a.txt", "a")
    write(repo, "EchoesVault/raw/trailing./b.txt", "b")
    result = findings(repo, "EV031")
    assert [(f.path, f.severity.value) for f in result] == [
        (f"{PAGES}/con.md", "warning"), (f"{PAGES}/why?.md", "warning"),
        ("EchoesVault/raw/trailing.", "warning")]


def test_ignored_droppings_and_ordinary_names_are_fine(repo: Path) -> None:
    write(repo, ".gitignore", ".DS_Store\n")
    write(repo, f"{PAGES}/.DS_Store", "x")
    write(repo, f"{PAGES}/Console notes.md", page())
    assert findings(repo, "EV031") == []


# --- EV040 symbolic links ----------------------------------------------------------------------


def test_symlinks_in_the_vault_are_ev040(repo: Path) -> None:
    os.symlink("home.md", repo / PAGES / "alias.md")
    os.symlink("../raw", repo / "EchoesVault/assets/linked")
    assert located(repo, select=["EV040"]) == [
        ("EchoesVault/assets/linked", 1, 1, "EV040"), (f"{PAGES}/alias.md", 1, 1, "EV040")]
    assert located(repo, paths=[f"{PAGES}/alias.md"], select=["EV040"]) == [
        (f"{PAGES}/alias.md", 1, 1, "EV040")]


def test_file_below_a_linked_folder_reports_the_folder(repo: Path) -> None:
    write(repo, "outside/page.md", page())
    os.symlink("../../outside", repo / "EchoesVault/raw/linked")
    assert located(repo, paths=["EchoesVault/raw/linked/page.md"], select=["EV040"]) == [
        ("EchoesVault/raw/linked", 1, 1, "EV040")]


def test_no_symlink_no_ev040(repo: Path) -> None:
    assert findings(repo, "EV040") == []


# --- EV041 marker ------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "fragment"), [
    (None, "is missing"),
    ("{not json", "not valid JSON"),
    (json.dumps({"protocolVersion": "2.0.0"}), "does not declare protocol 1.0.0"),
])
def test_missing_invalid_or_foreign_marker_is_ev041(repo: Path, text: Optional[str],
                                                    fragment: str) -> None:
    marker = repo / "EchoesVault/.echoes-vault.json"
    if text is None:
        marker.unlink()
    else:
        marker.write_text(text, encoding="utf-8")
    (finding,) = findings(repo, "EV041")
    assert (finding.path, finding.line, finding.col) == ("EchoesVault/.echoes-vault.json", 1, 1)
    assert fragment in finding.message
    assert finding.fix == "echoes-lint init"
    # Repository-wide: reported even when a hook passes an unrelated file.
    assert [f.code for f in findings(repo, "EV041", paths=[f"{PAGES}/home.md"])] == ["EV041"]


def test_valid_marker_is_not_ev041(repo: Path) -> None:
    assert findings(repo, "EV041") == []


# --- the marker as the commit records it, and where the vault is -------------------------------


def test_a_staged_deletion_of_the_marker_is_ev041_in_staged_and_hook_modes(repo: Path) -> None:
    git(repo, "rm", "-q", "--cached", "EchoesVault/.echoes-vault.json")
    assert ("EchoesVault/.echoes-vault.json", 1, 1, "EV041") in located(repo, staged=True)
    assert ("EchoesVault/.echoes-vault.json", 1, 1, "EV041") in located(
        repo, paths=[f"{PAGES}/home.md"])


def test_a_staged_marker_is_read_from_the_index_not_the_disk(repo: Path) -> None:
    marker = repo / "EchoesVault" / ".echoes-vault.json"
    good = marker.read_text(encoding="utf-8")
    marker.write_text(good.replace('"1.0.0"', '"2.0.0"'), encoding="utf-8")
    git(repo, "add", "EchoesVault/.echoes-vault.json")
    marker.write_text(good, encoding="utf-8")  # the disk is fine again, the commit is not
    assert ("EchoesVault/.echoes-vault.json", 1, 1, "EV041") in located(repo, staged=True)


def test_the_only_committed_vault_of_a_monorepo_is_found_without_configuration(
        tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "mono")
    (repo / "docs").mkdir()
    git(repo, "mv", "EchoesVault", "docs/EchoesVault")
    commit(repo, "move the vault")
    write(repo, "docs/EchoesVault/pages/broken.md", "no frontmatter\n")
    assert ("docs/EchoesVault/pages/broken.md", 1, 1, "EV010") in located(repo)


def test_hooks_pass_quietly_in_a_repository_without_a_vault(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "plain")
    write(repo, "README.md", "project\n")
    completed = subprocess.run([sys.executable, "-c",
                                "import sys; from echoes_lint.precommit import lint_main; "
                                "sys.exit(lint_main(['README.md']))"],
                               cwd=repo, capture_output=True, text=True, check=False)
    assert (completed.returncode, completed.stdout, completed.stderr) == (0, "", "")
    completed = run_cli("check", cwd=repo)
    assert completed.returncode == 2 and "no vault" in completed.stderr


def test_untracked_protocol_files_are_named_as_such(repo: Path) -> None:
    write(repo, ".echoes-vault/echoes_vault.py", 'ENGINE_VERSION = "1.2.0"\n')
    write(repo, f"{PAGES}/new.md", page())
    messages = {f.path: f.message for f in findings(repo, "EV022")}
    assert messages[".echoes-vault/echoes_vault.py"].startswith(
        "EchoesVault protocol file that every clone needs is not tracked")
    assert messages[f"{PAGES}/new.md"].startswith("durable vault file is not tracked")
