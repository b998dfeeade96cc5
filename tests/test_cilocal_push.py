"""Untracked or ignored durable files (EV022) fail a push through the real pre-commit framework:
`pre-commit install --hook-type pre-push`, then a real `git push` to a local bare remote is
refused until the files are committed, or allowed with `fail-on-untracked-at-push = false`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, init_repo, run_cli, write_page
from helpers_check import commit, write
from test_precommit_entry import run_hook
from test_precommit_hooks import hook_source, pre_commit_env, pre_commit_home  # noqa: F401

PAGE = "EchoesVault/pages/new.md"


@pytest.fixture(params=["echoes-untracked-files", "echoes-lint"])
def pushing_repo(request: pytest.FixtureRequest, tmp_path: Path,
                 hook_source: tuple[Path, str], pre_commit_home: Path) -> Path:  # noqa: F811
    """A committed vault made by `init`, a bare remote, and one hook installed for pre-push."""
    source, sha = hook_source
    repo = init_repo(tmp_path / "repo")
    assert run_cli("init", cwd=repo).returncode == 0
    write(repo, ".pre-commit-config.yaml",
          f"repos:\n  - repo: {source}\n    rev: {sha}\n    hooks:\n"
          f"      - id: {request.param}\n")
    commit(repo, "A vault and its hooks")
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "remote.git")], check=True)
    git(repo, "remote", "add", "origin", str(tmp_path / "remote.git"))
    installed = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install", "--hook-type", "pre-push"], cwd=repo,
        env=pre_commit_env(pre_commit_home), capture_output=True, text=True, check=False)
    assert installed.returncode == 0, installed.stderr
    return repo


def push(repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "push", "-q", "origin", "main"], cwd=repo,
                          env=pre_commit_env(home), capture_output=True, text=True, check=False)


def remote_head(repo: Path) -> str:
    return git(repo, "ls-remote", "origin", "refs/heads/main").split("\t")[0]


def test_a_push_that_leaves_a_page_behind_is_refused_until_it_is_committed(
        pushing_repo: Path, pre_commit_home: Path) -> None:  # noqa: F811
    write_page(pushing_repo, "new.md", summary="Knowledge only this clone has.")
    refused = push(pushing_repo, pre_commit_home)
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0, output
    assert f"{PAGE}:1:1: EV022 " in output
    assert f"  git add -- {PAGE}\n" in output  # the grouped command, once
    assert "fail-on-untracked-at-push = false" in output
    assert remote_head(pushing_repo) == ""  # nothing reached the remote

    git(pushing_repo, "add", "--", PAGE)
    commit(pushing_repo, "Add the page")
    allowed = push(pushing_repo, pre_commit_home)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert remote_head(pushing_repo) == git(pushing_repo, "rev-parse", "HEAD").strip()


def test_an_ignored_page_is_refused_with_the_forced_add(
        pushing_repo: Path, pre_commit_home: Path) -> None:  # noqa: F811
    write(pushing_repo, ".gitignore", "new.md\n")
    commit(pushing_repo, "Ignore a name")
    write_page(pushing_repo, "new.md")
    refused = push(pushing_repo, pre_commit_home)
    assert refused.returncode != 0
    assert f"  git add -f -- {PAGE}\n" in refused.stdout + refused.stderr


def test_the_option_off_lets_the_push_through(pushing_repo: Path,
                                              pre_commit_home: Path) -> None:  # noqa: F811
    write(pushing_repo, ".echoes-lint.toml", "fail-on-untracked-at-push = false\n")
    commit(pushing_repo, "Push without untracked files")
    write_page(pushing_repo, "new.md")
    allowed = push(pushing_repo, pre_commit_home)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert remote_head(pushing_repo) == git(pushing_repo, "rev-parse", "HEAD").strip()


def test_only_a_push_fails_on_untracked_files_and_the_hook_argument_wins(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init_repo(tmp_path / "repo")
    assert run_cli("init", cwd=repo).returncode == 0
    commit(repo, "A vault")
    write_page(repo, "new.md")
    # At commit the all-rules hook checks the files it is given and keeps EV022 a warning ...
    assert run_hook(repo, "echoes-lint", PAGE).returncode == 0
    assert run_hook(repo, "echoes-untracked-files").returncode == 1  # it fails at any stage
    # ... at push (pre-commit names the remote) it checks the whole vault and fails.
    monkeypatch.setenv("PRE_COMMIT_REMOTE_NAME", "origin")
    assert run_hook(repo, "echoes-lint", PAGE).returncode == 1
    for hook_id in ("echoes-untracked-files", "echoes-lint"):
        off = run_hook(repo, hook_id, "--fail-on-untracked-at-push=false")
        assert off.returncode == 0, off.stdout
        assert f"{PAGE}:1:1: EV022 " in off.stdout  # still reported
    write(repo, ".echoes-lint.toml", "fail-on-untracked-at-push = false\n")
    assert run_hook(repo, "echoes-untracked-files").returncode == 0
    assert run_hook(repo, "echoes-untracked-files",
                    "--fail-on-untracked-at-push=true").returncode == 1
    write(repo, ".echoes-lint.toml", 'fail-on-untracked-at-push = "no"\n')
    broken = run_hook(repo, "echoes-untracked-files")
    assert broken.returncode == 2
    assert "`fail-on-untracked-at-push`" in broken.stderr
