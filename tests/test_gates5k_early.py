"""The git a whole-vault gate starts before it loads (issue 13, the gates' fixed cost): started
while the linter's modules load, when the second CPU has nothing else to do, instead of beside
the walk, where they take that CPU from the page worker."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pytest
from helpers_check import PAGES, vault_repo
from test_gates_fixed import _Listings

from echoes_lint import cli, engine
from echoes_lint.merge import ATTRIBUTES_LINE
from echoes_lint.rules import mergedriver


def test_the_early_merge_driver_commands_are_the_rules() -> None:
    assert cli._MERGE_DRIVER == (mergedriver._CONFIG, mergedriver._ATTRIBUTES)


@pytest.mark.parametrize("command", [["check"], ["ci", "--summary", "false", "--fail-on", "never"]])
def test_the_merge_driver_rule_takes_the_git_started_before_the_gate_loaded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        command: list[str]) -> None:
    repo = vault_repo(tmp_path / "repo")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text(ATTRIBUTES_LINE + "\n", encoding="utf-8")
    asked: list[str] = []
    start = engine.git_start

    def recorded(workspace: Path, args: Sequence[str], stdin: bool = False) -> Any:
        asked.append(" ".join(args[:2]))
        return start(workspace, args, stdin)

    monkeypatch.setattr(engine, "git_start", recorded)
    listings = _Listings(monkeypatch)
    monkeypatch.chdir(repo)  # the root, as pre-commit and the Action run a gate
    cli.main(command)
    at_root = capsys.readouterr().out
    assert "EV091" in at_root  # the answers, as git gave them
    assert [" ".join(process.args[1:3]) for process in listings.started[-2:]] == [
        "config --show-origin", "rev-parse --git-path"]
    assert "config --show-origin" not in asked and "rev-parse --git-path" not in asked
    assert listings.collected() and mergedriver._prefetched == {}
    # Below the root: what git prints there is relative to that folder, so the rule asks git
    # in the root itself, and the early ones are ended.
    monkeypatch.chdir(repo / PAGES)
    cli.main(command)
    assert {"config --show-origin", "rev-parse --git-path"} <= set(asked)
    assert listings.collected() and mergedriver._prefetched == {}
    assert "EV091" in capsys.readouterr().out
