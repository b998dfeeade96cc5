"""`install-git-hooks` and the hook scripts of hooks/: hydrate after Git rewrites the work
tree, silent everywhere else, and never in the way of a user's own hooks."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, git, make_vault, run_cli, write_page
from helpers_merge import commit_on, edit_main, install_driver, vault_with_page

from echoes_lint import engine
from echoes_lint.merge.githooks import HOOK_NAMES, hook_source

HOOKS = ROOT / "hooks"
INDEX = "EchoesVault/index.md"


def install_hooks(repo: Path) -> subprocess.CompletedProcess[str]:
    completed = run_cli("install-git-hooks", cwd=repo)
    assert "Traceback" not in completed.stderr
    return completed


def run_hook(repo: Path, name: str, *args: str, path: str | None = None,
             stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path if path is not None else os.environ["PATH"]}
    return subprocess.run([str(HOOKS / name), *args], cwd=repo, env=env, input=stdin,
                          capture_output=True, text=True, check=False)


def test_install_puts_the_three_hooks_in_place_and_twice_changes_nothing(git_repo: Path) -> None:
    completed = install_hooks(git_repo)
    assert completed.returncode == 0, completed.stderr
    hooks = git_repo / ".git" / "hooks"
    for name in HOOK_NAMES:
        assert (hooks / name).read_bytes() == hook_source(name)
        assert f"ECHOES_LINT_PYTHON:-{sys.executable}}}".encode() in hook_source(name)
        assert (hooks / name).stat().st_mode & stat.S_IXUSR
    before = {path.name: (path.read_bytes(), path.stat().st_mtime_ns) for path in hooks.iterdir()}
    again = install_hooks(git_repo)
    assert again.returncode == 0
    assert again.stdout.count("already installed") == 3
    assert {path.name: (path.read_bytes(), path.stat().st_mtime_ns)
            for path in hooks.iterdir()} == before


def test_core_hooks_path_is_honoured(git_repo: Path) -> None:
    git(git_repo, "config", "core.hooksPath", "team-hooks")
    assert install_hooks(git_repo).returncode == 0
    assert sorted(p.name for p in (git_repo / "team-hooks").iterdir()) == sorted(HOOK_NAMES)
    assert not (git_repo / ".git" / "hooks" / "post-merge").exists()


def test_an_existing_user_hook_is_chained_with_its_arguments_input_and_status(
        git_repo: Path) -> None:
    hooks = git_repo / ".git" / "hooks"
    log = git_repo.parent / "user-hook.log"
    user_hook = f"#!/bin/sh\necho \"$(basename \"$0\") $*\" >> '{log}'\ncat >> '{log}'\nexit 3\n"
    for name in ("post-checkout", "post-rewrite"):
        (hooks / name).write_text(user_hook)
        (hooks / name).chmod(0o755)
    completed = install_hooks(git_repo)
    assert completed.returncode == 0, completed.stderr
    assert "your hook is now post-checkout.before-echoes-lint and still runs first" in \
        completed.stdout
    assert (hooks / "post-checkout.before-echoes-lint").read_text() == user_hook
    assert (hooks / "post-checkout").read_bytes() == hook_source("post-checkout")
    git(git_repo, "commit", "-q", "--allow-empty", "-m", "one")
    old = git(git_repo, "rev-parse", "HEAD").strip()
    git(git_repo, "commit", "-q", "--amend", "--allow-empty", "-m", "amended")
    new = git(git_repo, "rev-parse", "HEAD").strip()
    # post-checkout's exit status becomes `git switch`'s: the user's failure must survive.
    switch = subprocess.run(["git", "switch", "-q", "-c", "topic"], cwd=git_repo,
                            capture_output=True, text=True, check=False)
    assert switch.returncode != 0
    direct = subprocess.run([str(hooks / "post-checkout"), "a", "b", "0"], cwd=git_repo,
                            input="", capture_output=True, text=True, check=False)
    assert direct.returncode == 3
    assert log.read_text().splitlines() == [
        "post-rewrite.before-echoes-lint amend",
        f"{old} {new}",
        f"post-checkout.before-echoes-lint {new} {new} 1",
        "post-checkout.before-echoes-lint a b 0",
    ]
    assert install_hooks(git_repo).stdout.count("already installed") == 3


def test_install_refuses_when_a_user_hook_cannot_be_chained(git_repo: Path) -> None:
    hooks = git_repo / ".git" / "hooks"
    (hooks / "post-merge").write_text("#!/bin/sh\necho mine\n")
    (hooks / "post-merge.before-echoes-lint").write_text("#!/bin/sh\necho older\n")
    completed = install_hooks(git_repo)
    assert completed.returncode == 2
    assert "post-merge.before-echoes-lint already exists" in completed.stderr
    assert (hooks / "post-merge").read_text() == "#!/bin/sh\necho mine\n"
    assert not (hooks / "post-checkout").exists()


def test_hooks_are_silent_and_succeed_in_an_uninitialised_repository(git_repo: Path) -> None:
    for name in HOOK_NAMES:
        completed = run_hook(git_repo, name, "a", "b", "1")
        assert (completed.returncode, completed.stdout, completed.stderr) == (0, "", "")
    assert not (git_repo / "EchoesVault").exists()


def test_hooks_leave_a_legacy_vault_alone(git_repo: Path) -> None:
    write_page(git_repo, "old.md", summary="Legacy page.")
    (git_repo / INDEX).write_text("# Legacy index\n")
    before = sorted(p.relative_to(git_repo) for p in git_repo.rglob("*") if ".git" not in p.parts)
    for name in HOOK_NAMES:
        completed = run_hook(git_repo, name)
        assert (completed.returncode, completed.stdout, completed.stderr) == (0, "", "")
    assert (git_repo / INDEX).read_text() == "# Legacy index\n"
    assert sorted(p.relative_to(git_repo) for p in git_repo.rglob("*")
                  if ".git" not in p.parts) == before


def test_hooks_succeed_silently_without_python3_or_when_hydrate_fails(git_repo: Path,
                                                                      tmp_path: Path) -> None:
    make_vault(git_repo)
    runtime = git_repo / engine.RUNTIME_PATH
    runtime.parent.mkdir()
    runtime.write_text("import sys\nsys.stderr.write('boom')\nsys.exit(2)\n")
    only_git = tmp_path / "bin"
    only_git.mkdir()
    git_path = shutil.which("git")
    assert git_path is not None
    (only_git / "git").symlink_to(git_path)
    for path in (str(only_git), None):
        completed = run_hook(git_repo, "post-merge", "0", path=path)
        assert (completed.returncode, completed.stdout, completed.stderr) == (0, "", "")
    assert not (git_repo / INDEX).exists()


def test_outside_a_repository_install_is_an_error(tmp_path: Path) -> None:
    completed = install_hooks(tmp_path)
    assert completed.returncode == 2
    assert "not inside a Git repository" in completed.stderr


def test_post_merge_refreshes_the_index_after_a_driver_merge(git_repo: Path) -> None:
    vault_with_page(git_repo, runtime=True)
    install_driver(git_repo)
    assert install_hooks(git_repo).returncode == 0
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "tools")
    commit_on(git_repo, "feature", ("summary: Original summary.", "summary: A new summary."))
    edit_main(git_repo, ("status: active", "status: done"))
    # The branch switches above already ran post-checkout.
    assert "- [[auth]]: Original summary.\n" in (git_repo / INDEX).read_text(encoding="utf-8")
    git(git_repo, "merge", "-q", "--no-edit", "feature")
    text = (git_repo / "EchoesVault/pages/auth.md").read_text(encoding="utf-8")
    assert engine.validate_page_text(text)[1] == []
    assert "- [[auth]]: A new summary.\n" in (git_repo / INDEX).read_text(encoding="utf-8")
