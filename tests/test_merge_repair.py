"""Issue 11: a partial merge-driver configuration is reported (EV091) and repaired, an outdated
command is reported (EV092), `uninstall-git-hooks` removes only what `install-git-hooks` put
there, and both installers say clearly that a vault in a subfolder is not theirs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import git, make_vault, run_cli
from helpers_merge import (
    PAGE,
    commit_on,
    edit_main,
    git_run,
    install_driver,
    record_driver,
    vault_with_page,
)

from echoes_lint.merge import ATTRIBUTES_LINE
from echoes_lint.merge.githooks import CHAIN_SUFFIX, HOOK_NAMES

# The command echoes-lint 0.1 recorded: an interpreter that exists, but no fallback.
OUTDATED = ("'/bin/sh' -c 'from echoes_lint.cli import main; main()' merge-driver "
            "--marker-size %L %O %A %B %P")


def lint(repo: Path) -> list[str]:
    completed = run_cli("check", "--select", "EV09", cwd=repo)
    assert "Traceback" not in completed.stderr
    return [line for line in completed.stdout.splitlines() if " EV09" in line]


def test_a_name_without_a_driver_stops_git_and_install_repairs_it(git_repo: Path) -> None:
    vault_with_page(git_repo)
    (git_repo / ".gitattributes").write_text(ATTRIBUTES_LINE + "\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "team attribute")
    # What a fresh clone has, and what Git merges as plain text: not reported.
    assert lint(git_repo) == []
    git(git_repo, "config", "merge.echoes-vault.name", "EchoesVault page merge driver")
    commit_on(git_repo, "feature", ("summary: Original summary.", "summary: Theirs."))
    edit_main(git_repo, ("Line one.", "Line one, ours."))
    merge = git_run(git_repo, "merge", "--no-edit", "feature")
    assert merge.returncode == 128
    assert "custom merge driver echoes-vault lacks command line" in merge.stderr
    assert lint(git_repo) == [
        ".git/config:1:1: EV091 `merge.echoes-vault` has keys but no `driver`: Git stops every "
        "merge that touches a page (\"custom merge driver ... lacks command line\"); run "
        "`echoes-lint install-merge-driver` to repair it"]
    repaired = run_cli("install-merge-driver", cwd=git_repo)
    assert repaired.returncode == 0, repaired.stderr
    assert repaired.stdout.startswith("merge.echoes-vault: repaired a partial configuration")
    assert lint(git_repo) == []
    git(git_repo, "merge", "-q", "--no-edit", "feature")
    text = (git_repo / PAGE).read_text(encoding="utf-8")
    assert "summary: Theirs.\n" in text and "Line one, ours.\n" in text


def test_a_local_attribute_without_a_driver_is_reported(git_repo: Path) -> None:
    vault_with_page(git_repo)
    install_driver(git_repo, "--local-attributes")
    git(git_repo, "config", "--remove-section", "merge.echoes-vault")
    assert lint(git_repo) == [
        ".git/info/attributes:1:1: EV091 `.git/info/attributes` assigns `merge=echoes-vault` but "
        "no driver is configured: pages merge as plain text; run `echoes-lint "
        "install-merge-driver` to repair it"]
    install_driver(git_repo, "--local-attributes")
    assert lint(git_repo) == []


def test_a_fifo_as_the_local_attributes_never_blocks_the_check(git_repo: Path) -> None:
    vault_with_page(git_repo)
    info = git_repo / ".git" / "info"
    info.mkdir(exist_ok=True)
    os.mkfifo(info / "attributes")
    completed = subprocess.run([sys.executable, "-m", "echoes_lint", "check", "--select", "EV09"],
                               cwd=git_repo, capture_output=True, text=True, timeout=60,
                               check=False)  # the hang guard: opening the FIFO would wait
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_a_command_without_fallback_is_reported_and_replaced(git_repo: Path) -> None:
    vault_with_page(git_repo)
    install_driver(git_repo)
    record_driver(git_repo, OUTDATED)
    [finding] = lint(git_repo)
    assert finding.startswith(".git/config:1:1: EV092 the echoes-vault merge driver was recorded "
                              "by an earlier echoes-lint without a fallback")
    completed = run_cli("install-merge-driver", cwd=git_repo)
    assert "merge.echoes-vault.driver: the recorded command had no fallback to Git's text " \
           "merge" in completed.stdout
    assert f"The driver runs {sys.executable}; after moving or recreating that environment " \
           "elsewhere, run `echoes-lint install-merge-driver` again" in completed.stdout
    assert lint(git_repo) == []


def test_a_foreign_driver_is_not_ours_to_judge(git_repo: Path) -> None:
    vault_with_page(git_repo)
    record_driver(git_repo, "/nowhere/other-tool %O %A %B")
    assert lint(git_repo) == []


# ---------------------------------------------------------------------------------------------
# uninstall-git-hooks
# ---------------------------------------------------------------------------------------------


def test_uninstall_git_hooks_removes_ours_and_gives_back_the_users_hook(git_repo: Path) -> None:
    hooks = git_repo / ".git" / "hooks"
    user_merge = "#!/bin/sh\necho my post-merge\n"
    (hooks / "post-merge").write_text(user_merge)
    (hooks / "post-merge").chmod(0o750)
    (hooks / "post-commit").write_text("#!/bin/sh\necho unrelated\n")
    before = sorted(path.name for path in hooks.iterdir())
    assert run_cli("install-git-hooks", cwd=git_repo).returncode == 0
    assert (hooks / f"post-merge{CHAIN_SUFFIX}").read_text() == user_merge
    # A hook the user wrote over ours later is theirs now.
    (hooks / "post-rewrite").write_text("#!/bin/sh\necho replaced by the user\n")
    completed = run_cli("uninstall-git-hooks", cwd=git_repo)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == [
        "post-merge: removed; your hook is back at .git/hooks/post-merge",
        "post-checkout: removed (.git/hooks/post-checkout)",
        "post-rewrite: left alone, not installed by echoes-lint (.git/hooks/post-rewrite)",
    ]
    assert (hooks / "post-merge").read_text() == user_merge
    assert (hooks / "post-merge").stat().st_mode & 0o777 == 0o750
    assert (hooks / "post-commit").read_text() == "#!/bin/sh\necho unrelated\n"
    assert sorted(path.name for path in hooks.iterdir()) == sorted([*before, "post-rewrite"])
    again = run_cli("uninstall-git-hooks", cwd=git_repo)
    assert again.returncode == 0
    assert "post-merge: left alone" in again.stdout and "removed" not in again.stdout


def test_uninstall_without_hooks_says_so(git_repo: Path) -> None:
    completed = run_cli("uninstall-git-hooks", cwd=git_repo)
    assert (completed.returncode, completed.stdout) == (
        0, "nothing to remove: no echoes-lint Git hooks are installed\n")
    assert all(not (git_repo / ".git" / "hooks" / name).exists() for name in HOOK_NAMES)


# ---------------------------------------------------------------------------------------------
# A vault in a subfolder
# ---------------------------------------------------------------------------------------------


def test_both_installers_refuse_a_vault_in_a_subfolder_and_write_nothing(git_repo: Path) -> None:
    make_vault(git_repo / "docs")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "vault in docs")
    config = (git_repo / ".git" / "config").read_bytes()
    for command in ("install-merge-driver", "install-git-hooks"):
        completed = run_cli(command, cwd=git_repo)
        assert completed.returncode == 2
        assert completed.stderr == (
            f"echoes-lint {command}: the vault is at docs/EchoesVault, not at the top of the "
            f"repository; {command}, `resolve` and the hooks work on `EchoesVault/` at the top "
            "(the engine's workspace is the Git top level), so a vault in a subfolder is not "
            "supported; `echoes-lint check --vault-dir docs/EchoesVault` still checks it\n")
    assert (git_repo / ".git" / "config").read_bytes() == config
    assert not (git_repo / ".gitattributes").exists()
    assert all(not (git_repo / ".git" / "hooks" / name).exists() for name in HOOK_NAMES)
    # The linter does check it.
    assert run_cli("check", "--vault-dir", "docs/EchoesVault", cwd=git_repo).returncode == 0
