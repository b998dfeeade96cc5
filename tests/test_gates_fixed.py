"""What a gate run loads before it looks at the vault: only what its command needs.

- A report loads the reporter of its format and no other; an unknown format is refused with the
  same message; every registered format still renders its golden (tests/test_report.py).
- The option parser checks each option's metavar as argparse does, without importing `shutil`
  or asking the terminal's size; help is still wrapped to the terminal's width.
- `git check-ignore` starts beside the walk and answers for the durable files the walk found,
  as a fresh one does; it is collected on every path (nothing to ask, no repository), and one
  that cannot start stops the gate; when the walk fails, Git's thread and its check-ignore
  are collected before the error goes on (an in-process caller lives on).
- A whole-vault gate starts Git's two listings with its rev-parse, before the engine loads,
  and its scan takes them (the same report as listings started by the scan); a check of
  named or staged files starts none, and listings no scan takes are ended.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import init_repo, make_vault
from helpers_check import PAGES, commit, page, vault_repo, write
from test_report import make_input

from echoes_lint import checker, cli, engine
from echoes_lint.check import Parser, build_parser
from echoes_lint.report import FORMATS, render

# Runs a command of the CLI in-process and prints, at exit, the reporters and stdlib modules
# it loaded (the subprocess starts from a fresh interpreter).
_PROBE = """\
import atexit, sys
def loaded():
    names = sorted(name for name in sys.modules
                   if name.startswith("echoes_lint.report.") or name == "shutil")
    sys.stderr.write("LOADED " + " ".join(names) + "\\n")
atexit.register(loaded)
from echoes_lint.cli import main
sys.exit(main(sys.argv[1:]))
"""

_MODULES = {"concise": "concise", "full": "full", "json": "json_report", "github": "github",
            "sarif": "sarif"}


def _loaded(repo: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    completed = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=repo,
                               capture_output=True, text=True, timeout=120, check=False)
    line = next(line for line in completed.stderr.splitlines() if line.startswith("LOADED"))
    return completed, line.split()[1:]


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_check_loads_only_the_reporter_of_its_format(tmp_path: Path, fmt: str) -> None:
    repo = vault_repo(tmp_path / "repo")
    completed, loaded = _loaded(repo, "check", "--exit-zero", "--output-format", fmt)
    assert completed.returncode == 0, completed.stderr
    assert loaded == ["echoes_lint.report._common", f"echoes_lint.report.{_MODULES[fmt]}"]


def test_ci_loads_the_full_reporter_and_no_shutil(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    completed, loaded = _loaded(repo, "ci", "--summary", "false", "--fail-on", "never")
    assert completed.returncode == 0, completed.stderr
    assert loaded == ["echoes_lint.report._common", "echoes_lint.report.full"]


def test_every_format_is_registered_and_an_unknown_one_is_refused() -> None:
    assert dict(FORMATS) == _MODULES
    for fmt in FORMATS:
        assert render(fmt, make_input())  # each reporter is found and renders
    with pytest.raises(ValueError) as refused:
        render("xml", make_input())
    assert str(refused.value) == ("unknown output format 'xml'; expected one of: concise, full, "
                                  "json, github, sarif")


def test_the_parser_still_checks_metavars_as_argparse_does() -> None:
    with pytest.raises(ValueError, match="length of metavar tuple does not match nargs"):
        Parser(prog="p").add_argument("--pair", nargs=2, metavar=("A", "B", "C"))
    with pytest.raises(ValueError, match="length of metavar tuple does not match nargs"):
        argparse.ArgumentParser(prog="p").add_argument("--pair", nargs=2,
                                                       metavar=("A", "B", "C"))


def test_help_is_wrapped_to_the_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = {}
    for columns in (40, 200):
        monkeypatch.setenv("COLUMNS", str(columns))
        parser = build_parser()
        texts[columns] = parser.format_help()
        assert parser._get_formatter()._width == columns - 2  # argparse's own choice
    assert len(texts[40].splitlines()) > len(texts[200].splitlines())


class _Starts:
    """Every `git check-ignore` the engine starts, to see that each one is collected."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.processes: list[subprocess.Popen[bytes]] = []
        start = engine.start_git_ignored

        def starting(workspace: Path) -> Any:
            started = start(workspace)
            assert started[0] is not None
            self.processes.append(started[0])
            return started

        monkeypatch.setattr(engine, "start_git_ignored", starting)


def test_check_ignore_starts_beside_the_walk_and_answers_as_asked_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/kept.md", page())
    commit(repo, "kept")
    write(repo, ".gitignore", "kept.md\nloose.md\n")  # one tracked and one untracked page
    write(repo, f"{PAGES}/loose.md", page())
    starts = _Starts(monkeypatch)
    scan = engine.scan_workspace(repo)
    assert len(starts.processes) == 1 and starts.processes[0].returncode is not None
    asked = subprocess.run(["git", "check-ignore", "--no-index", "--stdin", "-z"], cwd=repo,
                           input="\0".join(scan.durable).encode() + b"\0", capture_output=True,
                           check=False).stdout.decode().split("\0")
    assert scan.git.ignored == (f"{PAGES}/kept.md", f"{PAGES}/loose.md")
    assert set(scan.git.ignored) == {path for path in asked if path}
    assert scan.git.error is None


def test_a_started_check_ignore_is_collected_when_nothing_is_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init_repo(tmp_path / "repo")  # a repository without a vault: no durable file
    outside = tmp_path / "plain"
    outside.mkdir()
    starts = _Starts(monkeypatch)
    assert engine.scan_workspace(repo).durable == ()
    assert len(starts.processes) == 1 and starts.processes[0].returncode is not None
    assert not engine.scan_workspace(outside).git.available
    assert len(starts.processes) == 1  # no repository: no check-ignore


def test_a_check_ignore_that_cannot_start_stops_the_gate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = vault_repo(tmp_path / "repo")
    monkeypatch.setattr(engine, "start_git_ignored",
                        lambda workspace: (None, "cannot run git check-ignore: refused"))
    assert engine.scan_workspace(repo).git.error == "cannot run git check-ignore: refused"
    with pytest.raises(checker.GitUnavailable, match="cannot run git check-ignore: refused"):
        checker.run_checks(repo)


@pytest.mark.parametrize("repository", [True, False])
def test_git_lists_start_together_and_each_is_collected(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repository: bool) -> None:
    folder = vault_repo(tmp_path / "repo") if repository else tmp_path
    events: list[tuple[str, Any]] = []
    start, finish = engine.git_start, engine.git_finish

    def starting(workspace: Path, args: Any, stdin: bool = False) -> Any:
        started = start(workspace, args, stdin)
        events.append(("start", started[0]))
        return started

    def finishing(started: Any, args: Any, stdin: Any = None) -> Any:
        events.append(("finish", started[0]))
        return finish(started, args, stdin)

    monkeypatch.setattr(engine, "git_start", starting)
    monkeypatch.setattr(engine, "git_finish", finishing)
    facts = engine.collect_git_facts(folder)
    assert [kind for kind, _ in events] == ["start"] * 2 + ["finish"] * 2
    assert all(process is not None and process.returncode is not None for _, process in events)
    assert facts.available is repository and (facts.error is None) is repository
    if repository:
        assert f"{PAGES}/home.md" in facts.tracked


def test_a_walk_that_fails_collects_git_and_its_check_ignore_before_raising(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = vault_repo(tmp_path / "repo")
    starts = _Starts(monkeypatch)
    collect = engine.collect_git_facts

    def slow_git(*args: Any) -> engine.GitFacts:
        time.sleep(0.3)  # Git still at work when the walk fails
        return collect(*args)

    def failing_walk(*_args: Any) -> None:
        raise engine.VaultError("the walk failed")

    monkeypatch.setattr(engine, "collect_git_facts", slow_git)
    monkeypatch.setattr(engine, "_walk_vault", failing_walk)
    with pytest.raises(engine.VaultError, match="the walk failed"):
        engine.scan_workspace(repo)
    assert threading.active_count() == 1  # Git's thread was joined
    assert len(starts.processes) == 1 and starts.processes[0].returncode is not None


# Runs `entry` as the console script does, with an exit handler that says when the
# interpreter's teardown runs.
_ENTRY = """\
import atexit, gc, sys
atexit.register(lambda: sys.stderr.write("TEARDOWN\\n"))
sys.argv[0] = "echoes-lint"
from echoes_lint import cli
main = cli.main
def probe(argv=None):
    status = main(argv)
    sys.stderr.write(f"GC {gc.isenabled()} KEPT {len(cli._kept or ())}\\n")
    return status
cli.main = probe
cli.entry()
"""


@pytest.mark.parametrize("command", [["check"], ["ci", "--summary", "false", "--fail-on", "never"]])
def test_a_gate_process_ends_without_teardown_after_its_whole_output(
        tmp_path: Path, command: list[str]) -> None:
    repo = vault_repo(tmp_path / "repo")
    for number in range(300):  # a report larger than a pipe's buffer
        write(repo, f"{PAGES}/page-{number:03d}.md", page("[[missing]]\n"))
    commit(repo, "pages")
    completed = subprocess.run([sys.executable, "-c", _ENTRY, *command], cwd=repo,
                               capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr  # warnings only
    assert completed.stdout.count("EV050") == 300  # every finding, flushed before the exit
    assert completed.stdout.endswith("\n")
    assert "GC False KEPT 1" in completed.stderr  # no collector, the result held to the end
    assert "TEARDOWN" not in completed.stderr


def test_other_commands_end_as_usual(tmp_path: Path) -> None:
    completed = subprocess.run([sys.executable, "-c", _ENTRY, "--version"], cwd=tmp_path,
                               capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0 and completed.stdout.startswith("echoes-lint ")
    assert "GC True KEPT 0" in completed.stderr and "TEARDOWN" in completed.stderr


def test_the_early_listings_are_the_engines() -> None:
    assert [list(args) for args in cli._LISTINGS] == list(engine.git_listings())


class _Listings:
    """What `collect_git_facts` is given, and every git `cli` starts before the engine loads."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.given: list[Any] = []
        self.started: list[subprocess.Popen[bytes]] = []
        collect, start = engine.collect_git_facts, cli._git

        def collecting(workspace: Path, scope: Any = engine._GIT_SCOPE,
                       started: Any = None) -> engine.GitFacts:
            self.given.append(started)
            return collect(workspace, scope, started)

        def starting(folder: str, args: tuple[str, ...]) -> subprocess.Popen[bytes]:
            self.started.append(start(folder, args))
            return self.started[-1]

        monkeypatch.setattr(engine, "collect_git_facts", collecting)
        monkeypatch.setattr(cli, "_git", starting)

    def collected(self) -> bool:
        return all(process.returncode is not None for process in self.started) \
            and cli._listings == {} and cli._toplevels == {}


@pytest.mark.parametrize("command", [["check"], ["ci", "--summary", "false", "--fail-on", "never"]])
def test_a_whole_vault_gate_takes_the_listings_started_before_it_loaded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        command: list[str]) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/loose.md", page("[[nowhere]]\n"))  # untracked: EV022, and EV050
    monkeypatch.chdir(repo)
    listings = _Listings(monkeypatch)
    status = cli.main(command)
    early = capsys.readouterr().out
    assert len(listings.started) == 3 and listings.collected()  # rev-parse and the listings
    assert [[process for process, _cause in listings.given[0]]] == [listings.started[1:]]
    # As the Action runs it: started in the folder --workspace names, and taken there.
    assert cli.main([*command, f"--workspace={repo}"]) == status
    assert len(listings.started) == 6 and listings.collected()
    assert [process for process, _cause in listings.given[1]] == listings.started[4:]
    assert capsys.readouterr().out == early  # the same report
    assert cli.main([*command, "--workspace", str(repo), f"--workspace={repo}"]) == status
    assert len(listings.started) == 6 and listings.given[2] is None  # which one: not guessed
    assert capsys.readouterr().out == early
    assert "EV022" in early and "EV050" in early


@pytest.mark.parametrize("arguments", [["--staged"], [f"{PAGES}/home.md"], [f"{PAGES}/*.md"]])
def test_a_check_of_some_files_starts_no_listing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, arguments: list[str]) -> None:
    repo = vault_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    listings = _Listings(monkeypatch)
    assert cli.main(["check", *arguments]) == 0
    # `check --staged` is the Git hook's: Git's index, asked by gitindex, and no rev-parse.
    expected = [] if arguments == ["--staged"] else ["rev-parse"]
    assert [process.args[1] for process in listings.started] == expected
    assert listings.collected() and listings.given == []  # Git's index, not the scan's


def test_listings_no_scan_takes_are_ended(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    repo = init_repo(tmp_path / "repo")
    make_vault(repo / "docs")  # the vault below the root: git was asked at the root
    write(repo, ".echoes-lint.toml", 'vault-dir = "docs/EchoesVault"\n')
    commit(repo, "vault")
    monkeypatch.chdir(repo)
    listings = _Listings(monkeypatch)
    assert cli.main(["check"]) == 0
    assert len(listings.started) == 3 and listings.collected()
    assert listings.given == [None]  # the scan of docs/ asked git itself
    assert cli.main(["check", "--bogus"]) == 2  # a usage error: ended too
    assert len(listings.started) == 6 and listings.collected()
    capsys.readouterr()
