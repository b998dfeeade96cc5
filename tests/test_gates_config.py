"""Issue 10 item 4: in `ci` the workflow author wins over the pull request. A configuration the
pull request changes cannot lower `fail-on` or switch off the protocol-fatal rules or the rules
the workflow selects; the SARIF path stays inside the workspace, never goes through a symbolic
link, and `args` can neither replace it nor turn the gate into `--help`."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import git, run_cli, write_page
from helpers_action import ActionRunner, commit_all, fresh_clone, healthy_vault
from test_action import conflicted_repo, runner  # noqa: F401  (the session's installed action)

WEAKENING = """\
fail-on = "never"
select = ["EV050"]
ignore = ["EV001", "EV002", "EV01", "EV020", "EV030"]

[per-file-ignores]
"EchoesVault/pages/*.md" = ["EV001", "EV010"]
"""


@pytest.fixture
def weakened(git_repo: Path, tmp_path: Path) -> Path:
    """A clone of a pull request with a real conflict, a committed index and a configuration
    that tries to switch all of it off."""
    conflicted_repo(git_repo)
    (git_repo / "EchoesVault" / "index.md").write_text("# EchoesVault Index\n", encoding="utf-8")
    git(git_repo, "add", "-f", "EchoesVault/index.md")
    (git_repo / ".echoes-lint.toml").write_text(WEAKENING, encoding="utf-8")
    page = git_repo / "EchoesVault" / "pages" / "alpha.md"
    page.write_text("<!-- echoes-lint-disable-next-line -->\n" + page.read_text(encoding="utf-8"),
                    encoding="utf-8")
    commit_all(git_repo, "Silence the gate")
    return fresh_clone(git_repo, tmp_path / "checkout")


def codes(output: str) -> set[str]:
    return set(re.findall(r": (EV\d{3}) \[", output))


def test_the_action_fails_whatever_the_pull_requests_configuration_says(
        runner: ActionRunner, weakened: Path) -> None:  # noqa: F811
    run = runner.run(weakened)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "echoes-lint ci: failed (fail-on error)" in run.stdout
    assert {"EV001", "EV020"} <= codes(run.stdout)
    # Locally, `check` honours the same configuration: it is the repository's own choice there.
    assert run_cli("check", cwd=weakened).returncode == 0


def test_only_the_workflow_can_switch_a_protected_rule_off(weakened: Path) -> None:
    assert {"EV001", "EV020"} <= codes(run_cli("ci", cwd=weakened).stdout)
    relaxed = run_cli("ci", "--args", "--ignore EV001,EV020", "--fail-on", "never", cwd=weakened)
    assert relaxed.returncode == 0, relaxed.stdout + relaxed.stderr
    assert not {"EV001", "EV020"} & codes(relaxed.stdout)


def test_rules_the_workflow_selects_stay_on(git_repo: Path, tmp_path: Path) -> None:
    healthy_vault(git_repo)
    write_page(git_repo, "gamma.md", body="<!-- echoes-lint-disable-next-line EV050 -->\n"
                                          "See [[nowhere]].\n")
    (git_repo / ".echoes-lint.toml").write_text('ignore = ["EV050"]\n', encoding="utf-8")
    commit_all(git_repo, "Hide a broken link")
    checkout = fresh_clone(git_repo, tmp_path / "checkout")
    completed = run_cli("ci", "--select", "EV050", "--fail-on", "warning", cwd=checkout)
    assert completed.returncode == 1, completed.stdout
    assert codes(completed.stdout) == {"EV050"}


@pytest.mark.parametrize(("args", "message"), [
    ("--sarif elsewhere.sarif", "--args cannot carry --sarif"),
    ("--help", "--args cannot carry --help"),
    ("-h", "--args cannot carry -h"),
    ("--summary=false", "--args cannot carry --summary"),
    ("--sar x.sarif", "unrecognized arguments: --sar"),
])
def test_args_cannot_redirect_the_sarif_log_or_ask_for_help(tmp_path: Path, args: str,
                                                           message: str) -> None:
    completed = run_cli("ci", "--sarif", "out.sarif", f"--args={args}", cwd=tmp_path)
    assert completed.returncode == 2, completed.stdout
    assert message in completed.stderr
    assert not (tmp_path / "elsewhere.sarif").exists() and not (tmp_path / "out.sarif").exists()


def test_args_cannot_replace_an_input_that_is_set(tmp_path: Path) -> None:
    completed = run_cli("ci", "--fail-on", "error", "--args", "--fail-on never", cwd=tmp_path)
    assert completed.returncode == 2
    assert "--args cannot replace --fail-on" in completed.stderr


def test_sarif_path_stays_in_the_workspace_and_never_follows_a_link(git_repo: Path,
                                                                   tmp_path: Path) -> None:
    healthy_vault(git_repo)
    outside = tmp_path / "outside"
    outside.mkdir()
    (git_repo / "reports").symlink_to(outside)
    (git_repo / "log.sarif").symlink_to(outside / "log.sarif")
    commit_all(git_repo, "Links where the log would go")
    checkout = fresh_clone(git_repo, tmp_path / "checkout")
    for target, message in (("reports/echoes.sarif", "Refusing to use the symbolic link reports"),
                            ("log.sarif", "Refusing to use the symbolic link log.sarif"),
                            ("../escape.sarif", "is outside the workspace"),
                            (str(outside / "abs.sarif"), "is outside the workspace")):
        completed = run_cli("ci", "--sarif", target, cwd=checkout)
        assert completed.returncode == 2, (target, completed.stdout)
        assert message in completed.stderr, completed.stderr
    assert os.listdir(outside) == []
    assert not (tmp_path / "escape.sarif").exists()
    written = run_cli("ci", "--sarif", "out/deep/echoes.sarif", cwd=checkout)
    assert written.returncode == 0, written.stderr
    assert json.loads((checkout / "out/deep/echoes.sarif").read_text(encoding="utf-8"))[
        "version"] == "2.1.0"
    assert os.listdir(checkout / "out/deep") == ["echoes.sarif"]  # no temporary file left


def test_a_configured_decoy_vault_does_not_hide_the_real_one(git_repo: Path,
                                                            tmp_path: Path) -> None:
    """A pull request that adds a clean vault and points `vault-dir` at it: ci refuses to
    choose between the committed vaults; the workflow's own choice still works."""
    conflicted_repo(git_repo)
    healthy_vault(git_repo, "decoy")
    (git_repo / ".echoes-lint.toml").write_text('vault-dir = "decoy/EchoesVault"\n',
                                                encoding="utf-8")
    commit_all(git_repo, "Point the gate at a clean vault")
    checkout = fresh_clone(git_repo, tmp_path / "checkout")
    assert run_cli("check", cwd=checkout).returncode == 0  # locally, the repository chooses
    refused = run_cli("ci", cwd=checkout)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert ("chooses the vault 'decoy/EchoesVault', but it also commits EchoesVault: in ci only "
            "the workflow chooses") in refused.stderr
    assert "All checks passed" not in refused.stdout
    chosen = run_cli("ci", "--vault-dir", "EchoesVault", cwd=checkout)
    assert chosen.returncode == 1 and "EV001" in chosen.stdout
