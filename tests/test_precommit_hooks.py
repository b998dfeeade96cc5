"""The hooks of this repository run through the real pre-commit framework on real commits.

pre-commit only sees committed files of a hook repository, so the session fixture commits a copy
of the current working tree (package, hooks, manifest) to a temporary repository and points
`repo:` at it. The hook environment is installed once per session in a shared PRE_COMMIT_HOME.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, git, init_repo, make_vault, write_page
from helpers_check import PAGES, commit, page, write
from test_rules_portability import PORTABILITY_CASES

HOOK_IDS = ("echoes-lint", "echoes-conflict-markers", "echoes-frontmatter",
            "echoes-forbid-local-files", "echoes-case-collisions")
SOURCES = ("echoes_lint", "hooks", ".pre-commit-hooks.yaml", "pyproject.toml", "README.md",
           "LICENSE")


@pytest.fixture(scope="session")
def hook_source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(a Git repository holding this working tree's hooks, its HEAD commit)."""
    source = tmp_path_factory.mktemp("hook-source")
    for name in SOURCES:
        origin = ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif origin.is_file():
            shutil.copy2(origin, source / name)
    if not (source / "README.md").exists():  # pyproject.toml names it as the long description
        (source / "README.md").write_text("# echoes-lint\n", encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "commit.gpgsign=false", "commit", "-q", "-m", "hooks"]):
        subprocess.run(["git", *args], cwd=source, env=env, check=True, capture_output=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=source, env=env, check=True,
                         capture_output=True, text=True).stdout.strip()
    return source, sha


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


def pre_commit_env(home: Path) -> dict[str, str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("NO_COLOR", None)
    return env


@pytest.fixture
def hooked(tmp_path: Path, hook_source: tuple[Path, str], pre_commit_home: Path) -> Path:
    """A repository with a committed vault and the five hooks installed as its Git hook."""
    return hooked_repo(tmp_path, hook_source, pre_commit_home, HOOK_IDS)


def hooked_repo(tmp_path: Path, hook_source: tuple[Path, str], pre_commit_home: Path,
                hook_ids: tuple[str, ...]) -> Path:
    """A repository with a committed vault and `hook_ids` installed as its Git hook."""
    source, sha = hook_source
    repo = init_repo(tmp_path / "repo")
    make_vault(repo)
    write_page(repo, "home.md", summary="Start here.")
    hooks = "".join(f"      - id: {hook_id}\n" for hook_id in hook_ids)
    write(repo, ".pre-commit-config.yaml",
          f"repos:\n  - repo: {source}\n    rev: {sha}\n    hooks:\n{hooks}")
    commit(repo, "vault")
    installed = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=repo,
                               env=pre_commit_env(pre_commit_home), capture_output=True,
                               text=True, check=False)
    assert installed.returncode == 0, installed.stderr
    return repo


def try_commit(repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """`git commit` of what is staged, through the installed pre-commit hook."""
    return subprocess.run(["git", "commit", "-q", "-m", "test"], cwd=repo,
                          env=pre_commit_env(home), capture_output=True, text=True, check=False)


def refused(repo: Path, home: Path, *codes: str) -> str:
    head = git(repo, "rev-parse", "HEAD")
    staged = git(repo, "diff", "--cached", "--name-status")
    result = try_commit(repo, home)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    for code in codes:
        assert f" {code} " in output, output
    # Read-only: no commit was made and the staged snapshot is untouched.
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "diff", "--cached", "--name-status") == staged
    return output


def passes(repo: Path, home: Path) -> str:
    result = try_commit(repo, home)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    return output


def test_clean_commit_passes(hooked: Path, pre_commit_home: Path) -> None:
    write_page(hooked, "next.md", summary="Another page.", body="See [[home]].\n")
    git(hooked, "add", "-A")
    output = passes(hooked, pre_commit_home)
    assert output.count("Passed") == len(HOOK_IDS)


def test_conflicted_page_is_refused(hooked: Path, pre_commit_home: Path) -> None:
    write(hooked, f"{PAGES}/home.md",
          page(body="<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> branch\n"))
    git(hooked, "add", "-A")
    output = refused(hooked, pre_commit_home, "EV001")
    assert f"{PAGES}/home.md:8:1: EV001" in output


def test_broken_frontmatter_is_refused(hooked: Path, pre_commit_home: Path) -> None:
    write(hooked, f"{PAGES}/bad.md", "---\ntype: note\nstack: []\nsummary: S\n---\n")
    git(hooked, "add", "-A")
    assert f"{PAGES}/bad.md:1:1: EV015" in refused(hooked, pre_commit_home, "EV015")


def test_staged_index_is_refused_with_the_fix_and_rm_cached_passes(
        hooked: Path, pre_commit_home: Path) -> None:
    write(hooked, "EchoesVault/index.md", "# EchoesVault Index\n")
    git(hooked, "add", "-f", "EchoesVault/index.md")
    output = refused(hooked, pre_commit_home, "EV020")
    assert "git rm --cached -- EchoesVault/index.md" in output
    # Committed behind the hook's back, it still fails commits that do not touch it ...
    git(hooked, "commit", "-q", "--no-verify", "-m", "sneak the index in")
    write_page(hooked, "other.md")
    git(hooked, "add", f"{PAGES}/other.md")
    refused(hooked, pre_commit_home, "EV020")
    # ... until `git rm --cached` removes it from the index; the file stays on disk.
    git(hooked, "rm", "-q", "--cached", "EchoesVault/index.md")
    passes(hooked, pre_commit_home)
    assert (hooked / "EchoesVault/index.md").is_file()
    assert "EchoesVault/index.md" not in git(hooked, "ls-files")


def test_staged_local_state_is_refused(hooked: Path, pre_commit_home: Path) -> None:
    write(hooked, ".echoes-vault/state.json", "{}\n")
    git(hooked, "add", "-f", ".echoes-vault/state.json")
    assert "git rm --cached -- .echoes-vault/state.json" in refused(
        hooked, pre_commit_home, "EV021")


@pytest.mark.parametrize(("committed", "added"), [("alpha.md", "Alpha.md"),
                                                  ("Straße.md", "STRASSE.md")])
def test_case_collisions_are_refused(hooked: Path, pre_commit_home: Path, committed: str,
                                     added: str) -> None:
    write_page(hooked, committed)
    commit(hooked, "committed page")
    write_page(hooked, added)
    git(hooked, "add", "-A")
    output = refused(hooked, pre_commit_home, "EV030")
    assert f"`{PAGES}/{committed}`" in output
    assert f"{PAGES}/{added}" in output


def test_a_page_name_too_long_to_update_is_refused_and_a_shorter_one_passes(
        hooked: Path, pre_commit_home: Path) -> None:
    long_name = "l" * 240 + ".md"  # its temporary file name would be 264 bytes
    write_page(hooked, long_name)
    git(hooked, "add", "-A")
    assert f"{PAGES}/{long_name}:1:1: EV035" in refused(hooked, pre_commit_home, "EV035")
    git(hooked, "mv", f"{PAGES}/{long_name}", f"{PAGES}/{'l' * 231}.md")
    passes(hooked, pre_commit_home)


def test_pages_engines_accept_but_tools_misread_are_refused_until_fixed(
        hooked: Path, pre_commit_home: Path) -> None:
    # One failing page per EV032-EV034 and EV070-EV078 rule, then their fixed twins.
    for _code, name, text, _position, _fixed_name, _fixed in PORTABILITY_CASES:
        write(hooked, f"{PAGES}/{name}", text)
    git(hooked, "add", "-A")
    output = refused(hooked, pre_commit_home, *(case[0] for case in PORTABILITY_CASES))
    for code, name, _text, (line, col), _fixed_name, _fixed in PORTABILITY_CASES:
        assert f"{PAGES}/{name}:{line}:{col}: {code}" in output, code
    git(hooked, "rm", "-q", "--cached", "--", *(f"{PAGES}/{case[1]}" for case in PORTABILITY_CASES))
    for _code, name, _text, _position, fixed_name, fixed in PORTABILITY_CASES:
        (hooked / PAGES / name).unlink()
        write(hooked, f"{PAGES}/{fixed_name}", fixed)
    git(hooked, "add", "-A")
    passes(hooked, pre_commit_home)
