"""Issue 10 item 2: the gates read with the packaged engine and never run the repository's
`.echoes-vault/echoes_vault.py`, whatever version it claims; an agent's protocol command still
hands over to it (spec 12.1), which is what shows that the planted runtime would have run."""

from __future__ import annotations

import subprocess
import sysconfig
from pathlib import Path

import pytest
from conftest import run_cli
from helpers_action import ActionRunner, commit_all, fresh_clone, healthy_vault
from test_action import runner  # noqa: F401  (the session's installed action)

from echoes_lint.precommit import HOOKS

HOOK_SCRIPTS = ("echoes-lint-hook", "echoes-conflict-markers", "echoes-frontmatter",
                "echoes-forbid-local-files", "echoes-case-collisions", "echoes-untracked-files",
                "echoes-lint-fix")


def plant_runtime(root: Path, sentinel: Path) -> None:
    """A project runtime that claims a much newer engine and leaves a file when it runs."""
    (root / ".echoes-vault" / "echoes_vault.py").write_text(
        'PROTOCOL_VERSION = "1.0.0"\nENGINE_VERSION = "99.0.0"\n'
        "import pathlib, sys\n"
        f"pathlib.Path({str(sentinel)!r}).write_text(' '.join(sys.argv[1:]))\n"
        'print(\'{"ok": true}\')\n', encoding="utf-8")


@pytest.fixture
def planted(git_repo: Path, tmp_path: Path) -> tuple[Path, Path]:
    healthy_vault(git_repo)
    sentinel = tmp_path / "runtime-ran"
    plant_runtime(git_repo, sentinel)
    commit_all(git_repo, "A runtime from the future")
    return git_repo, sentinel


def test_check_ci_and_hooks_never_run_the_project_runtime(planted: tuple[Path, Path]) -> None:
    repo, sentinel = planted
    assert len(HOOK_SCRIPTS) == len(HOOKS)
    runs = [run_cli("check", cwd=repo), run_cli("check", "--staged", cwd=repo),
            run_cli("ci", cwd=repo)]
    scripts = Path(sysconfig.get_path("scripts"))
    for name in HOOK_SCRIPTS:
        runs.append(subprocess.run([str(scripts / name), "EchoesVault/pages/alpha.md"], cwd=repo,
                                   capture_output=True, text=True, check=False))
    for completed in runs:
        assert completed.returncode in (0, 1), completed.stderr
        assert "Traceback" not in completed.stderr
    assert not sentinel.exists(), sentinel.read_text()
    # The protocol command an agent runs does hand over: the planted runtime was runnable.
    status = run_cli("status", cwd=repo)
    assert status.stdout == '{"ok": true}\n'
    assert sentinel.read_text().endswith("status")


def test_the_action_never_runs_the_project_runtime(runner: ActionRunner,  # noqa: F811
                                                   planted: tuple[Path, Path],
                                                   tmp_path: Path) -> None:
    repo, sentinel = planted
    run = runner.run(fresh_clone(repo, tmp_path / "checkout"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.outputs["integrity"] == "healthy"
    assert not sentinel.exists()
