"""Issue 10 item 10 (check, ci, hooks): file names that are not UTF-8 and a submodule (gitlink)
under the vault give findings (EV045, EV034, EV046), never a traceback or an internal error."""

from __future__ import annotations

import os
import subprocess
import sysconfig
from pathlib import Path

import pytest
from conftest import git, page_text
from helpers_check import commit, vault_repo
from helpers_gates import run_guarded

HOOK = str(Path(sysconfig.get_path("scripts")) / "echoes-lint-hook")
BAD_PAGE = b"EchoesVault/pages/bad\xff.md"
BAD_ASSET = b"EchoesVault/assets/pic\xfe.png"


def gate_outputs(repo: Path, *hook_files: str) -> list[subprocess.CompletedProcess[str]]:
    hook = subprocess.run([HOOK, *hook_files], cwd=repo, capture_output=True, text=True,
                          errors="backslashreplace", check=False, timeout=60)
    return [run_guarded("check", cwd=repo), run_guarded("check", "--staged", cwd=repo),
            run_guarded("check", "--output-format", "json", cwd=repo),
            run_guarded("check", "--output-format", "sarif", cwd=repo),
            run_guarded("ci", cwd=repo, env={"GITHUB_ACTIONS": "true"}), hook]


@pytest.mark.skipif(os.uname().sysname == "Darwin", reason="macOS refuses names that are not UTF-8")
def test_names_that_are_not_utf8_are_findings(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    root = os.fsencode(repo)
    with open(os.path.join(root, BAD_PAGE), "wb") as handle:
        handle.write(page_text().encode("utf-8"))
    with open(os.path.join(root, BAD_ASSET), "wb") as handle:
        handle.write(b"\x89PNG")
    git(repo, "add", "-A")  # staged, not committed: --staged sees them too
    for completed in gate_outputs(repo, os.fsdecode(BAD_PAGE)):
        assert completed.returncode == 1, completed.stdout + completed.stderr
        assert completed.stderr == "", completed.stderr
        assert "EV045" in completed.stdout and "pic" in completed.stdout
    check = run_guarded("check", cwd=repo)
    assert "EchoesVault/assets/pic\\xfe.png:1:1: EV045" in check.stdout
    assert ("EchoesVault/pages/bad\\xff.md:1:1: EV034 Page filename is not valid UTF-8: "
            "`bad\\xff.md`; rename it") in check.stdout


def test_a_submodule_under_the_vault_is_a_finding(tmp_path: Path) -> None:
    other = vault_repo(tmp_path / "other")
    repo = vault_repo(tmp_path / "repo")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(other),
        "EchoesVault/raw/vendored")
    for completed in gate_outputs(repo, "EchoesVault/raw/vendored"):
        assert completed.returncode == 1, completed.stdout + completed.stderr
        assert "EchoesVault/raw/vendored" in completed.stdout
        assert "collides with" not in completed.stdout  # the gitlink is not a collision
    commit(repo, "vendored knowledge")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True, capture_output=True)
    check = run_guarded("check", cwd=clone)  # the folder is empty in a plain clone
    assert "EchoesVault/raw/vendored:1:1: EV046" in check.stdout, check.stdout
