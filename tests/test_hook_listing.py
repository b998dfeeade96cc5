"""The one-file hooks start `git ls-files` before loading the linter and use that one listing.

Git lists a large index while the modules load; the check takes the listing started where it
looks (the repository root) and lists no second time; a listing nobody takes (the vault lives
elsewhere, or the hook reads files only) is ended and reaped, and the findings are the same.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

import pytest
from conftest import git
from helpers_check import PAGES, page, vault_repo, write

from echoes_lint import engine, gitindex, precommit
from echoes_lint.precommit import HOOKS, LISTS_INDEX
from echoes_lint.rules import GIT_CODES


@pytest.fixture()
def listings(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Optional[int]]]:
    """(folder, exit status when collected) of every `git ls-files` of the index the hook
    started; None while it was never collected."""
    started: list[tuple[str, Optional[int]]] = []
    start, finish = engine.git_start, engine.git_finish

    def git_start(workspace: Path, args: Sequence[str], stdin: bool = False,
                  ) -> tuple[Optional[object], Optional[str]]:
        if tuple(args) == gitindex.LS_FILES:
            started.append((str(workspace), None))
        return start(workspace, args, stdin)

    def git_finish(begun: tuple[object, Optional[str]], args: Sequence[str],
                   stdin: Optional[bytes] = None) -> tuple[Optional[bytes], Optional[str]]:
        output = finish(begun, args, stdin)  # type: ignore[arg-type]
        if tuple(args) == gitindex.LS_FILES:
            process = begun[0]
            started[-1] = (started[-1][0], getattr(process, "returncode", None))
        return output

    monkeypatch.setattr(engine, "git_start", git_start)
    monkeypatch.setattr(engine, "git_finish", git_finish)
    return started


def staged_collision(repo: Path) -> None:
    write(repo, f"{PAGES}/Home.md", page())
    git(repo, "add", "--", f"{PAGES}/Home.md")


def test_the_hook_lists_the_index_once_started_before_the_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        listings: list[tuple[str, Optional[int]]]) -> None:
    repo = vault_repo(tmp_path / "repo")
    staged_collision(repo)
    monkeypatch.chdir(repo)
    assert precommit.lint_main([f"{PAGES}/Home.md"]) == 1
    assert listings == [(str(repo), 0)]  # started at the root, taken there, and only there
    assert f"{PAGES}/Home.md:1:1: EV030 new file" in capsys.readouterr().out
    assert gitindex._started == {}


def test_a_listing_started_elsewhere_is_ended_and_the_check_lists_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        listings: list[tuple[str, Optional[int]]]) -> None:
    repo = vault_repo(tmp_path / "repo")
    staged_collision(repo)
    monkeypatch.chdir(repo / "EchoesVault")  # a hook run by hand, below the vault's workspace
    processes: list[subprocess.Popen[bytes]] = []
    start = gitindex.start

    def remember() -> None:
        start()
        processes.extend(process for process, _cause in gitindex._started.values() if process)

    monkeypatch.setattr(gitindex, "start", remember)
    assert precommit.case_collisions_main([]) == 1
    assert [folder for folder, _status in listings] == [str(repo / "EchoesVault"), str(repo)]
    assert listings[1][1] == 0  # the check listed the index of its own workspace
    assert "EV030" in capsys.readouterr().out
    assert processes and all(process.returncode is not None for process in processes)
    assert gitindex._started == {}


def test_hooks_that_read_files_only_or_the_whole_vault_start_no_listing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        listings: list[tuple[str, Optional[int]]]) -> None:
    repo = vault_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    assert precommit.conflict_markers_main([f"{PAGES}/home.md"]) == 0
    assert precommit.frontmatter_main([f"{PAGES}/home.md"]) == 0
    monkeypatch.setenv("PRE_COMMIT_REMOTE_NAME", "origin")  # a push: the whole vault
    assert precommit.lint_main([]) == 0
    assert listings == []


def test_the_hooks_that_list_the_index_are_those_whose_rules_need_it() -> None:
    needs = {hook for hook, codes in HOOKS.items()
             if not codes or any(code.startswith(codes) for code in (*GIT_CODES, "EV050"))}
    assert needs - {precommit.PUSH_HOOK} == LISTS_INDEX
