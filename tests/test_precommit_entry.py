"""The hook manifest and the hook console scripts, run directly as pre-commit would run them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, git
from helpers_check import PAGES, commit, page, parsed, vault_repo, write

from echoes_lint.precommit import HOOKS

SCRIPTS = {
    "echoes-lint": "echoes-lint-hook",
    "echoes-conflict-markers": "echoes-conflict-markers",
    "echoes-frontmatter": "echoes-frontmatter",
    "echoes-forbid-local-files": "echoes-forbid-local-files",
    "echoes-case-collisions": "echoes-case-collisions",
    "echoes-untracked-files": "echoes-untracked-files",
    "echoes-lint-fix": "echoes-lint-fix",
}
STAGES = ["pre-commit", "pre-merge-commit", "pre-push", "manual"]
# Untracked files fail a push, not a commit (tests/test_cilocal_push.py).
PUSH_STAGES = ["pre-push", "manual"]


def manifest() -> list[dict[str, object]]:
    hooks: list[dict[str, object]] = yaml.safe_load(
        (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    return hooks


def test_manifest_declares_the_hooks_as_python_console_scripts() -> None:
    hooks = manifest()
    assert [hook["id"] for hook in hooks] == list(SCRIPTS) == list(HOOKS)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for hook in hooks:
        assert hook["language"] == "python"
        assert hook["entry"] == SCRIPTS[str(hook["id"])]
        assert f'\n{hook["entry"]} = "echoes_lint.precommit:' in pyproject
        assert hook["stages"] == (PUSH_STAGES if hook["id"] == "echoes-untracked-files"
                                  else STAGES)
        assert hook["minimum_pre_commit_version"] == "3.2.0"


def test_repository_wide_hooks_always_run() -> None:
    hooks = {str(hook["id"]): hook for hook in manifest()}
    assert hooks["echoes-lint"]["always_run"] is True
    for hook_id in ("echoes-forbid-local-files", "echoes-case-collisions"):
        assert hooks[hook_id]["always_run"] is True
        assert hooks[hook_id]["pass_filenames"] is False


def run_hook(repo: Path, hook_id: str, *args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / SCRIPTS[hook_id]
    return subprocess.run([str(script), *args], cwd=repo, capture_output=True, text=True,
                          check=False)


@pytest.fixture
def messy(tmp_path: Path) -> Path:
    """A commit in the making with a conflict, bad frontmatter, the index and a collision."""
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/merge.md", page(body="<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n"))
    write(repo, f"{PAGES}/bad.md", "---\ntype: note\n---\n")
    write(repo, f"{PAGES}/Home.md", page())
    write(repo, "EchoesVault/index.md", "# index\n")
    git(repo, "add", "-A", "-f")
    return repo


STAGED = [f"{PAGES}/merge.md", f"{PAGES}/bad.md", f"{PAGES}/Home.md", "EchoesVault/index.md"]


@pytest.mark.parametrize(("hook_id", "args", "expected"), [
    ("echoes-conflict-markers", STAGED, [(f"{PAGES}/merge.md", 8, 1, "EV001")]),
    ("echoes-frontmatter", STAGED, [(f"{PAGES}/bad.md", 1, 1, "EV015")] * 3),
    ("echoes-forbid-local-files", [], [("EchoesVault/index.md", 1, 1, "EV020")]),
    ("echoes-case-collisions", [], [(f"{PAGES}/Home.md", 1, 1, "EV030")]),
])
def test_each_single_purpose_hook_reports_only_its_rules(messy: Path, hook_id: str,
                                                         args: list[str],
                                                         expected: list[object]) -> None:
    result = run_hook(messy, hook_id, *args)
    assert result.returncode == 1
    assert parsed(result.stdout) == expected


def test_lint_hook_reports_everything_for_the_passed_files(messy: Path) -> None:
    result = run_hook(messy, "echoes-lint", f"{PAGES}/merge.md")
    assert result.returncode == 1
    assert parsed(result.stdout) == [("EchoesVault/index.md", 1, 1, "EV020"),
                                     (f"{PAGES}/Home.md", 1, 1, "EV030"),
                                     (f"{PAGES}/merge.md", 8, 1, "EV001")]


def test_lint_hook_without_files_still_checks_the_repository(messy: Path) -> None:
    result = run_hook(messy, "echoes-lint")
    assert [code for *_rest, code in parsed(result.stdout)] == ["EV020", "EV030"]


def test_hooks_pass_silently_on_a_clean_commit(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/next.md", page(body="[[home]]\n"))
    git(repo, "add", "-A")
    for hook_id in SCRIPTS:
        result = run_hook(repo, hook_id, f"{PAGES}/next.md")
        assert (hook_id, result.returncode, result.stdout, result.stderr) == (hook_id, 0, "", "")


def test_hook_arguments_select_the_vault_and_report_usage_errors(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, "docs/EchoesVault/index.md", "# index\n")
    write(repo, "docs/EchoesVault/.echoes-vault.json",
          (repo / "EchoesVault/.echoes-vault.json").read_text(encoding="utf-8"))
    git(repo, "add", "-A", "-f")
    result = run_hook(repo, "echoes-forbid-local-files", "--vault-dir", "docs/EchoesVault")
    assert parsed(result.stdout) == [("docs/EchoesVault/index.md", 1, 1, "EV020")]
    bad = run_hook(repo, "echoes-lint", "--vault-dir", "nowhere/EchoesVault")
    assert bad.returncode == 2
    assert bad.stderr.startswith("echoes-lint: error: no vault at 'nowhere/EchoesVault'")


def test_config_ignores_apply_to_hooks(messy: Path) -> None:
    write(messy, ".echoes-lint.toml", 'ignore = ["EV020"]\n')
    commit(messy, "config", ".echoes-lint.toml")
    assert run_hook(messy, "echoes-forbid-local-files").returncode == 0
