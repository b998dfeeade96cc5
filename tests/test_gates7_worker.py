"""The whole-vault gates fork their page worker once the engine is loaded, before the linter
loads (issue 13: `check` and `ci` at 5,000 pages), for the vault they will most likely check:
the folder's `EchoesVault`. Behaviour only, never how long anything takes.

- The worker is forked before the rules are imported, and the check takes it: no second fork.
- A guess that misses (the configuration's `vault-dir` names another vault with files of the
  same names) is ended and collected; the check forks a worker for its own vault and reports
  that vault's files, not the rows the first worker read from the other one.
- A usage error ends and collects the early worker; named files fork none.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Optional

import pytest
from conftest import git, make_vault, write_page
from helpers_check import PAGES, commit, page, parsed, vault_repo, write
from helpers_gates import run_guarded

from echoes_lint import cli

_DAY = "EchoesVault/daily/2026-01-02/entry.md"


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """(vault, pid) of every page worker forked in this process."""
    forked: list[tuple[str, int]] = []
    fork = cli.fork_worker

    def recorded(vault: str) -> Optional[tuple[int, int, int, memoryview]]:
        started = fork(vault)
        if started is not None:
            forked.append((vault, started[0]))
        return started

    monkeypatch.setattr(cli, "fork_worker", recorded)
    return forked


def _collected(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


# The first fork of a gate run as its own process, and what was loaded then.
_PROBE = """
import json, os, sys
fork = os.fork
seen = []
def probe():
    loaded = [name for name in ("echoes_lint.engine", "echoes_lint.checker", "echoes_lint.rules")
              if name in sys.modules]
    pid = fork()
    if pid:
        seen.append(loaded)
    return pid
os.fork = probe
from echoes_lint import cli
status = cli.main(sys.argv[1:])
sys.stderr.write("FORKS " + json.dumps(seen) + "\\n")
sys.exit(status)
"""


def test_the_worker_is_forked_before_the_linter_loads_and_taken(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/broken.md", "---\ntype: note\n---\n")
    write(repo, _DAY, "### Session — a\n\nText.\n")
    commit(repo)
    expected = run_guarded("check", "--output-format", "json", cwd=repo)
    import subprocess

    probed = subprocess.run([sys.executable, "-c", _PROBE, "check", "--output-format", "json"],
                            cwd=repo, capture_output=True, text=True, timeout=60, check=False)
    assert (probed.returncode, probed.stdout) == (expected.returncode, expected.stdout)
    assert json.loads(expected.stdout)  # the broken page is reported
    line = next(line for line in probed.stderr.splitlines() if line.startswith("FORKS "))
    # One fork (the worker, taken by the check), with the engine loaded and no rule yet.
    assert json.loads(line[6:]) == [["echoes_lint.engine"]]


def test_the_early_worker_is_the_one_the_check_takes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forks: list[tuple[str, int]],
        capsys: pytest.CaptureFixture[str]) -> None:
    repo = vault_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    taken: list[Any] = []
    take = cli.page_worker
    monkeypatch.setattr(cli, "page_worker", lambda vault: taken.append(take(vault)) or taken[-1])
    assert cli.main(["check"]) == 0
    assert forks == [(str(repo.resolve() / "EchoesVault"), forks[0][1])]
    assert taken[0] is not None and taken[0][0] == forks[0][1]
    assert _collected(forks[0][1]) and cli._worker is None


def _twin_vaults(tmp_path: Path) -> Path:
    """A root vault and `docs/EchoesVault` (the configured one) with files of the same names:
    the root's are clean, the configured vault's page and daily file are not."""
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/a.md", page("# A\n"))
    write(repo, _DAY, "### Session — a\n\nClean.\n")
    make_vault(repo / "docs")
    write_page(repo / "docs", "home.md", summary="Start here.")
    write(repo, f"docs/{PAGES}/a.md", "---\ntype: note\nsummary: [unclosed\n---\n")
    write(repo, f"docs/{_DAY}", "### Session — a\n\n<<<<<<< ours\nx\n=======\ny\n>>>>>>> b\n")
    write(repo, "pyproject.toml", "[project]\nname = 'demo'\n\n[tool.echoes-lint]\n"
                                  'vault-dir = "docs/EchoesVault"\n')
    commit(repo)
    return repo


def test_a_guess_that_misses_is_ended_and_the_vault_checked_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forks: list[tuple[str, int]],
        capsys: pytest.CaptureFixture[str]) -> None:
    repo = _twin_vaults(tmp_path)
    monkeypatch.chdir(repo)
    status = cli.main(["check", "--select", "EV0"])
    found = {(path, code) for path, _line, _col, code in parsed(capsys.readouterr().out)}
    assert status == 1
    assert (f"docs/{_DAY}", "EV001") in found
    assert any(path == f"docs/{PAGES}/a.md" and code.startswith("EV01") for path, code in found)
    assert not any(path.startswith("EchoesVault/") for path, _code in found)
    root = repo.resolve()
    # The guess (the root's vault) ended, then the configured vault's own worker.
    assert [vault for vault, _pid in forks] == [str(root / "EchoesVault"),
                                                str(root / "docs" / "EchoesVault")]
    assert all(_collected(pid) for _vault, pid in forks) and cli._worker is None
    # The same report as a run in which nothing is forked early.
    monkeypatch.setattr(cli, "_fork_worker_early", lambda folder: None)
    assert cli.main(["check", "--select", "EV0"]) == 1
    assert {(path, code) for path, _line, _col, code
            in parsed(capsys.readouterr().out)} == found


def test_a_usage_error_ends_the_early_worker_and_named_files_fork_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forks: list[tuple[str, int]],
        capsys: pytest.CaptureFixture[str]) -> None:
    repo = vault_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    assert cli.main(["check", "--bogus"]) == 2
    assert len(forks) == 1 and _collected(forks[0][1]) and cli._worker is None
    assert cli.main(["check", f"{PAGES}/home.md"]) == 0
    assert cli.main(["ci", "--summary", "false", "--vault-dir", "nowhere/EchoesVault"]) == 2
    assert len(forks) == 2 and _collected(forks[1][1]) and cli._worker is None
    git(repo, "status")  # the repository is as it was
