"""The first `check` after `init` ends with one grouped `git add` command (the engine's grouping
and quoting, 100 paths a line) instead of a command per file; running it fixes every EV022."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from conftest import git, run_cli, write_page
from helpers_check import commit, vault_repo, write

from echoes_lint import engine

HINT = "To fix Git readiness, run from the repository root:\n"
COMMAND = re.compile(r"^  (git .*)$", re.MULTILINE)


def hint_commands(output: str) -> list[str]:
    """The commands of the hint, which must come once, after the summary line."""
    assert output.count(HINT) == 1, output
    before, after = output.split(HINT)
    assert re.search(r"^(Found .*|All checks passed!)\n\n$", before, re.MULTILINE), before[-200:]
    return COMMAND.findall(after)


def run_in_shell(repo: Path, commands: list[str]) -> None:
    for command in commands:
        subprocess.run(["sh", "-c", command], cwd=repo, check=True, capture_output=True)


@pytest.mark.parametrize("output_format", ["concise", "full"])
def test_the_first_check_after_init_gives_one_git_add_for_every_file(
        git_repo: Path, output_format: str) -> None:
    initialized = run_cli("init", cwd=git_repo)
    assert initialized.returncode == 0, initialized.stderr
    completed = run_cli("check", "--output-format", output_format, cwd=git_repo)
    assert completed.returncode == 0, completed.stderr
    untracked = sorted(line.split(":", 1)[0] for line in completed.stdout.splitlines()
                       if ": EV022 " in line)
    assert len(untracked) >= 10
    commands = hint_commands(completed.stdout)
    assert commands == [" ".join(["git add --", *untracked])]
    run_in_shell(git_repo, commands)
    after = run_cli("check", cwd=git_repo)
    assert "EV022" not in after.stdout
    assert HINT not in after.stdout
    assert after.stdout == "All checks passed!\n"


def test_machine_formats_keep_one_fix_per_finding(git_repo: Path) -> None:
    assert run_cli("init", cwd=git_repo).returncode == 0
    as_json = run_cli("check", "--output-format", "json", cwd=git_repo)
    findings = json.loads(as_json.stdout)
    assert HINT not in as_json.stdout
    assert findings and all(item["fix"] is not None for item in findings)
    fixes = [item["fix"]["message"] if isinstance(item["fix"], dict) else item["fix"]
             for item in findings]
    assert all(str(fix).startswith("git add -- ") for fix in fixes)
    sarif = run_cli("check", "--output-format", "sarif", cwd=git_repo)
    assert HINT not in sarif.stdout
    json.loads(sarif.stdout)


def test_many_files_are_split_every_hundred_paths_and_quoted_like_the_engine(
        tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    names = [f"page {number:03d}'s.md" for number in range(250)]
    for name in names:
        write_page(repo, name)
    completed = run_cli("check", cwd=repo)
    commands = hint_commands(completed.stdout)
    expected = engine.git_fix_commands([], sorted(f"EchoesVault/pages/{name}" for name in names),
                                       [])
    assert commands == expected
    assert [len(command.split(" -- ", 1)[1].split("' '")) for command in commands] \
        == [100, 100, 50]
    run_in_shell(repo, commands)
    assert "EV022" not in run_cli("check", cwd=repo).stdout


def test_each_kind_gets_its_command_and_only_reported_findings_count(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, "EchoesVault/index.md", "stale\n")
    git(repo, "add", "-f", "--", "EchoesVault/index.md")
    write(repo, ".gitignore", "EchoesVault/raw/\n")
    commit(repo, "ignore raw sources")
    write(repo, "EchoesVault/raw/source.txt", "data\n")
    write_page(repo, "new.md")
    completed = run_cli("check", cwd=repo)
    assert hint_commands(completed.stdout) == [
        "git rm --cached -- EchoesVault/index.md",
        "git add -f -- EchoesVault/raw/source.txt",
        "git add -- EchoesVault/pages/new.md",
    ]
    ignored = run_cli("check", "--ignore", "EV022", cwd=repo)
    assert hint_commands(ignored.stdout) == ["git rm --cached -- EchoesVault/index.md"]
    narrowed = run_cli("check", "--select", "EV022", "EchoesVault/pages", cwd=repo)
    assert hint_commands(narrowed.stdout) == ["git add -- EchoesVault/pages/new.md"]
    statistics = run_cli("check", "--statistics", cwd=repo)
    assert len(hint_commands(statistics.stdout)) == 3


def test_a_marker_not_yet_added_is_named_as_such_with_its_git_add(git_repo: Path) -> None:
    """A hook checks Git's index: right after `init` the marker is on disk but not added, which
    is not the "missing" marker that `init` would recreate."""
    assert run_cli("init", cwd=git_repo).returncode == 0
    marker = f"{engine.VAULT_DIR}/{engine.MARKER_FILE}"
    completed = run_cli("check", f"{engine.VAULT_DIR}/{engine.PROTOCOL_FILE}", cwd=git_repo)
    assert completed.returncode == 1
    (line,) = [line for line in completed.stdout.splitlines() if " EV041 " in line]
    assert "is on disk but not in Git's index" in line
    assert line.endswith(f"run `git add -- {marker}`")
    git(git_repo, "add", "--", marker)
    assert " EV041 " not in run_cli("check", f"{engine.VAULT_DIR}/{engine.PROTOCOL_FILE}",
                                    cwd=git_repo).stdout
    git(git_repo, "rm", "-q", "--cached", "--", marker)
    (git_repo / marker).unlink()
    gone = run_cli("check", f"{engine.VAULT_DIR}/{engine.PROTOCOL_FILE}", cwd=git_repo)
    assert "is missing" in next(line for line in gone.stdout.splitlines() if " EV041 " in line)
