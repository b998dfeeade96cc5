"""Issue 10 items 5 and 6: a gate that cannot look never passes.

Inside a repository that git cannot read (git missing from PATH, a broken `.git`, a repository
owned by someone else), `check`, `ci` and the hooks exit 2 with the cause and the fix; the
engine's `status` keeps reporting Git as unavailable, as the reference engine does. A configured
`vault-dir` that does not exist fails a hook as it fails `check`."""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
from pathlib import Path

import pytest
from conftest import run_cli
from helpers_check import vault_repo, write

HOOK = str(Path(sysconfig.get_path("scripts")) / "echoes-lint-hook")


def gates(repo: Path, env: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
    hook = subprocess.run([HOOK, "EchoesVault/pages/home.md"], cwd=repo, capture_output=True,
                          text=True, check=False, env={**os.environ, **env})
    return [run_cli("check", cwd=repo, env=env), run_cli("check", "--staged", cwd=repo, env=env),
            run_cli("ci", cwd=repo, env=env), hook]


def assert_refused(runs: list[subprocess.CompletedProcess[str]], *expected: str) -> None:
    for completed in runs:
        assert completed.returncode == 2, completed.stdout + completed.stderr
        assert "passed" not in completed.stdout
        assert completed.stderr.startswith("echoes-lint: error: ")
        assert "is a Git repository, but git cannot read it" in completed.stderr
        for text in expected:
            assert text in completed.stderr, completed.stderr


def test_git_missing_from_path(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    empty = tmp_path / "bin"
    empty.mkdir()
    assert_refused(gates(repo, {"PATH": str(empty)}), "git is not installed or not on PATH",
                   "install Git")


def test_broken_repository(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    (repo / ".git" / "HEAD").write_text("garbage\n", encoding="utf-8")
    assert_refused(gates(repo, {}), "repair the repository")
    # The engine's own status still reports, with Git unavailable (reference behaviour).
    status = run_cli("status", cwd=repo)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["health"]["git"]["available"] is False


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="needs root to hand the repository to another owner")
def test_dubious_ownership_names_the_safe_directory_fix(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    os.chown(repo, 12345, 12345)
    os.chown(repo / ".git", 12345, 12345)
    assert_refused(gates(repo, {}), "dubious ownership",
                   f"git config --global --add safe.directory {repo}")


def test_configured_vault_dir_that_does_not_exist_fails_the_hook(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, ".echoes-lint.toml", 'vault-dir = "docs/EchoesVault"\n')
    hook = subprocess.run([HOOK], cwd=repo, capture_output=True, text=True, check=False)
    check = run_cli("check", cwd=repo)
    for completed in (hook, check):
        assert completed.returncode == 2, completed.stdout + completed.stderr
        assert "no vault at 'docs/EchoesVault'" in completed.stderr
    # Without a configured folder, a repository with no vault has nothing for the hook to check.
    (repo / ".echoes-lint.toml").unlink()
    (repo / "EchoesVault").rename(repo / "Elsewhere")
    assert subprocess.run([HOOK], cwd=repo, check=False).returncode == 0
