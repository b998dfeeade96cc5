"""`echoes-lint ci` and `check` run in a working copy give the verdict CI gives on the same
commit: the local-only index, state and intent file (ignored, so never in a CI checkout) change
no exit code, finding, output or status figure; a stale one only earns a note naming the command
that fixes it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable

import pytest
from conftest import git, run_cli, write_page
from helpers_action import commit_all, fresh_clone, healthy_vault, parse_output_file

from echoes_lint import engine

NOTE = re.compile(r"^  note: .*\n", re.MULTILINE)
NOTES_HEADING = "Local-only files (a CI checkout has none, so they do not change the verdict):\n"
INDEX = Path("EchoesVault/index.md")
STATE = Path(".echoes-vault/state.json")
INTENT = Path(".echoes-vault/intent.json")


def stale_index_and_state(clone: Path) -> None:
    """A pull brought pages the local index has never seen; the state is of an old schema."""
    (clone / INDEX).write_text(engine.render_index([]), encoding="utf-8")
    (clone / STATE).write_text('{"version": 1}\n', encoding="utf-8")


def unreadable_index(clone: Path) -> None:
    (clone / INDEX).write_bytes(b"# Index\n\xff\xfe not UTF-8\n")


def missing_index_and_state(clone: Path) -> None:
    for relative in (INDEX, STATE):
        if (clone / relative).exists():
            (clone / relative).unlink()


def interrupted_write(clone: Path) -> None:
    (clone / INTENT).write_text('{"version": 2}\n', encoding="utf-8")


LOCAL_STATES: dict[str, Callable[[Path], None]] = {
    "stale index and invalid state": stale_index_and_state,
    "unreadable index": unreadable_index,
    "missing index and state": missing_index_and_state,
    "interrupted write": interrupted_write,
}


def commit_healthy(repo: Path) -> None:
    healthy_vault(repo)


def commit_with_findings(repo: Path) -> None:
    healthy_vault(repo)
    write_page(repo, "gamma.md", body="# Gamma\n\nSee [[nowhere]].\n")
    (repo / "EchoesVault/pages/delta.md").write_text(
        "---\ntype: note\nstack: [python]\nstatus: active\nsummary: Delta.\n - stray\n---\n",
        encoding="utf-8")
    commit_all(repo, "A broken link and a frontmatter line engines skip")


COMMITS: dict[str, Callable[[Path], None]] = {
    "healthy": commit_healthy,
    "with findings": commit_with_findings,
}


def ci_view(checkout: Path, tmp_path: Path, name: str) -> dict[str, object]:
    """Everything `ci` decides and prints."""
    output = tmp_path / f"{name}.output"
    output.write_text("", encoding="utf-8")
    # Inside the checkout (ci writes nowhere else) but outside the work tree.
    completed = run_cli("ci", "--sarif=.git/echoes-lint.sarif", cwd=checkout,
                        env={"GITHUB_OUTPUT": str(output)})
    assert completed.stderr == ""
    sarif = json.loads((checkout / ".git/echoes-lint.sarif").read_text(encoding="utf-8"))
    outputs = parse_output_file(output.read_text(encoding="utf-8"))
    outputs.pop("sarif-file")
    return {"exit": completed.returncode, "log": completed.stdout, "outputs": outputs,
            "results": sarif["runs"][0]["results"]}


def check_view(checkout: Path) -> tuple[int, object, str]:
    as_json = run_cli("check", "--output-format", "json", cwd=checkout)
    concise = run_cli("check", cwd=checkout)
    return as_json.returncode, json.loads(as_json.stdout), concise.stdout


def working_clone(origin: Path, destination: Path, local: Callable[[Path], None],
                  *workspace: str) -> Path:
    """A developer's clone: hydrated once, then left with the local-only state under test."""
    clone = fresh_clone(origin, destination)
    hydrated = run_cli(*workspace, "hydrate", cwd=clone)
    assert hydrated.returncode == 0, hydrated.stderr
    local(clone)
    assert git(clone, "status", "--porcelain") == ""  # the same commit, nothing changed
    return clone


@pytest.mark.parametrize("commit", COMMITS)
@pytest.mark.parametrize("local", LOCAL_STATES)
def test_ci_and_check_in_a_working_clone_give_the_fresh_clones_verdict(
        git_repo: Path, tmp_path: Path, commit: str, local: str) -> None:
    COMMITS[commit](git_repo)
    ci_checkout = fresh_clone(git_repo, tmp_path / "ci")
    clone = working_clone(git_repo, tmp_path / "work", LOCAL_STATES[local])

    expected = ci_view(ci_checkout, tmp_path, "ci")
    seen = ci_view(clone, tmp_path, "work")
    assert NOTES_HEADING not in str(expected["log"])  # CI never has a note to print
    assert seen["exit"] == expected["exit"] == (1 if commit == "with findings" else 0)
    assert seen["outputs"] == expected["outputs"]
    assert seen["results"] == expected["results"]
    assert NOTE.sub("", str(seen["log"]).replace(NOTES_HEADING, "")).replace("\n\n\n", "\n\n") \
        == expected["log"]
    assert check_view(clone) == check_view(ci_checkout)


def notes_of(clone: Path) -> list[str]:
    return [line.strip() for line in NOTE.findall(run_cli("ci", cwd=clone).stdout)]


def test_each_stale_local_file_is_a_note_with_the_command_that_fixes_it(
        git_repo: Path, tmp_path: Path) -> None:
    healthy_vault(git_repo)
    clone = working_clone(git_repo, tmp_path / "work", stale_index_and_state)
    interrupted_write(clone)
    assert notes_of(clone) == [
        "note: EchoesVault/index.md is out of date; `echoes-lint hydrate` rebuilds it",
        "note: .echoes-vault/state.json is invalid (unsupported state version: 1); "
        "`echoes-lint hydrate` rewrites it",
        "note: .echoes-vault/intent.json records an interrupted write; "
        "`echoes-lint rebuild-index` completes it",
    ]
    (clone / INTENT).unlink()
    hydrated = run_cli("hydrate", cwd=clone)
    assert hydrated.returncode == 0, hydrated.stderr
    assert notes_of(clone) == []  # the command the note names fixes it
    missing_index_and_state(clone)
    assert notes_of(clone) == []  # a missing local file is what every fresh clone has


def test_a_vault_in_a_subfolder_gets_a_note_without_a_command(
        git_repo: Path, tmp_path: Path) -> None:
    """The engine hydrates a vault at the repository root only, so no command is offered."""
    healthy_vault(git_repo, base="docs")
    (git_repo / ".echoes-lint.toml").write_text('vault-dir = "docs/EchoesVault"\n',
                                                encoding="utf-8")
    commit_all(git_repo, "Configure the vault folder")
    clone = fresh_clone(git_repo, tmp_path / "work")
    expected = run_cli("ci", cwd=clone)
    (clone / "docs" / INDEX).write_text("stale\n", encoding="utf-8")
    completed = run_cli("ci", cwd=clone)
    assert [line.strip() for line in NOTE.findall(completed.stdout)] == [
        "note: docs/EchoesVault/index.md is out of date"]
    assert completed.returncode == expected.returncode == 0


def test_a_committed_index_is_judged_as_ci_sees_it(git_repo: Path, tmp_path: Path) -> None:
    """Tracked, the index is no longer local-only: CI has it too, and it fails there (EV020)."""
    healthy_vault(git_repo)
    (git_repo / INDEX).write_text("stale\n", encoding="utf-8")
    git(git_repo, "add", "-f", "--", str(INDEX))
    git(git_repo, "commit", "-q", "-m", "Commit the index by mistake")
    clone = fresh_clone(git_repo, tmp_path / "work")
    completed = run_cli("ci", cwd=clone)
    assert completed.returncode == 1
    assert "EV020" in completed.stdout
    assert "stale generated index: 1" in completed.stdout
    assert NOTES_HEADING not in completed.stdout
