"""The installed portable runtime on its own, and the hand-over between engines (spec 12.1)."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest
from conftest import git
from helpers_writer import (
    ENGINE_FILE,
    PAGES,
    RUNTIME,
    cli,
    daily_entries,
    engine_copy,
    init_vault,
    ok,
    page,
    refused,
    runtime,
    snapshot,
)

from echoes_lint import engine

# Resolved at import, before the tests point HOME at a temporary folder.
PYTHON39 = Path("~/.pyenv/versions/3.9.18/bin/python3").expanduser()
INTERPRETERS = [
    pytest.param([sys.executable, "-I", "-S"], id="current"),
    pytest.param([str(PYTHON39), "-I"], id="python3.9", marks=pytest.mark.skipif(
        not PYTHON39.exists(), reason="Python 3.9 is not installed")),
]


@pytest.mark.parametrize("python", INTERPRETERS)
def test_the_bare_runtime_runs_a_full_cycle(git_repo: Path, python: List[str]) -> None:
    bootstrap = subprocess.run([*python, str(ENGINE_FILE), "--workspace", str(git_repo), "init"],
                               capture_output=True, text=True, check=False)
    assert bootstrap.returncode == 0, bootstrap.stderr
    assert (git_repo / RUNTIME).read_bytes() == ENGINE_FILE.read_bytes()
    assert ok(runtime(git_repo, "init", python=python))["created"] is False
    ok(runtime(git_repo, "append", "--payload", "-", python=python,
               payload={"entry": "- Verified the contract.", "agent": "codex"}))
    created = ok(runtime(git_repo, "upsert", "--payload", "-", python=python,
                         payload={"filename": "contract.md", "content": page("API contract.")}))
    hashed = ok(runtime(git_repo, "hash", "contract.md", python=python))
    assert hashed["sha256"] == created["sha256"]
    ended = ok(runtime(git_repo, "end", "--confirm-explicit-user-end", "--payload", "-",
                       python=python, payload={
                           "dailySummary": "- Contract settled.", "agent": "codex",
                           "pages": [{"filename": "contract.md", "content": page("API v2."),
                                      "expectedSha256": hashed["sha256"]}]}))
    assert ended["memorySaved"] is True and len(daily_entries(git_repo)) == 2
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "memory")
    status = ok(runtime(git_repo, "status", python=python))
    health = status["health"]
    assert health["integrity"] == "healthy", health
    assert status["state"]["session"]["saved"] is True
    card = runtime(git_repo, "status", "--format", "card", python=python)
    assert card.returncode == 0 and card.stdout.startswith("### EchoesVault · Healthy")


def install_runtime(repo: Path, source: str) -> None:
    (repo / RUNTIME).write_text(source, encoding="utf-8")


def test_a_newer_project_runtime_runs_the_command(git_repo: Path, tmp_path: Path) -> None:
    init_vault(git_repo)
    newer = engine_copy("9.9.9", "NEWER-RUNTIME-9.9.9")
    install_runtime(git_repo, newer)
    appended = cli(git_repo, "append", "--payload", "-", payload={"entry": "via stdin"})
    assert appended.returncode == 0
    assert appended.stderr == "NEWER-RUNTIME-9.9.9\n"
    assert Path(json.loads(appended.stdout)["dailyLog"]).read_text().endswith("via stdin\n")
    status = cli(git_repo, "status")
    assert json.loads(status.stdout)["health"]["engineVersion"] == "9.9.9"
    payload = tmp_path / "payload.json"
    payload.write_text(json.dumps({"filename": "a.md", "content": page(),
                                   "expectedSha256": "0" * 64}))
    ok(cli(git_repo, "upsert", "--payload", str(payload)))
    stale = cli(git_repo, "upsert", "--payload", str(payload))
    assert stale.returncode == 2
    assert stale.stderr.splitlines()[0] == "NEWER-RUNTIME-9.9.9"
    assert "Concurrent change" in json.loads(stale.stderr.splitlines()[1])["error"]
    # Never a downgrade: init and upgrade go to the newer runtime, which keeps itself.
    for command in ("init", "upgrade"):
        assert cli(git_repo, command).stderr == "NEWER-RUNTIME-9.9.9\n"
        assert (git_repo / RUNTIME).read_text(encoding="utf-8") == newer


def test_the_installer_itself_never_downgrades_a_newer_runtime(git_repo: Path) -> None:
    init_vault(git_repo)
    newer = engine_copy("9.9.9", "NEWER")
    install_runtime(git_repo, newer)
    ctx = engine.Context(git_repo, None, None, io.BytesIO())
    result = engine.cmd_init(ctx, argparse.Namespace(command="upgrade"))
    assert result["agentAdapters"]["runtimeUpdated"] is False
    assert (git_repo / RUNTIME).read_text(encoding="utf-8") == newer


def test_an_older_project_runtime_blocks_mutations_until_upgrade(git_repo: Path) -> None:
    init_vault(git_repo)
    install_runtime(git_repo, engine_copy("1.0.0", "OLDER"))
    before = snapshot(git_repo)
    message = refused(cli(git_repo, "append", "--payload", "-", payload={"entry": "x"}))
    assert "older than engine" in message and "`upgrade`" in message
    assert snapshot(git_repo) == before
    assert ok(cli(git_repo, "status"))["health"]["outdatedRuntime"] != []
    assert ok(cli(git_repo, "upgrade"))["agentAdapters"]["runtimeUpdated"] is True
    assert (git_repo / RUNTIME).read_bytes() == ENGINE_FILE.read_bytes()
    ok(cli(git_repo, "append", "--payload", "-", payload={"entry": "x"}))


def test_an_unrecognised_runtime_is_never_overwritten(git_repo: Path) -> None:
    init_vault(git_repo)
    install_runtime(git_repo, "print('my own script')\n")
    before = snapshot(git_repo)
    assert "never overwritten" in refused(cli(git_repo, "upsert", "--payload", "-", payload={
        "filename": "a.md", "content": page()}))
    for command in ("init", "migrate", "upgrade"):
        assert "Refusing to replace .echoes-vault/echoes_vault.py" in refused(cli(git_repo,
                                                                                  command))
    assert snapshot(git_repo) == before
    assert ok(cli(git_repo, "status"))["health"]["projectRuntime"]["recognized"] is False


def test_hydrate_needs_the_project_runtime(git_repo: Path) -> None:
    init_vault(git_repo)
    (git_repo / RUNTIME).unlink()
    before = snapshot(git_repo)
    assert "run `init`" in refused(cli(git_repo, "hydrate"))
    assert snapshot(git_repo) == before


def test_a_symlinked_runtime_is_neither_run_nor_replaced(git_repo: Path, tmp_path: Path) -> None:
    init_vault(git_repo)
    elsewhere = tmp_path / "engine.py"
    elsewhere.write_text(engine_copy("9.9.9", "SHOULD-NOT-RUN"), encoding="utf-8")
    (git_repo / RUNTIME).unlink()
    (git_repo / RUNTIME).symlink_to(elsewhere)
    before = snapshot(git_repo)
    appended = cli(git_repo, "append", "--payload", "-", payload={"entry": "x"})
    assert "symbolic link" in refused(appended)
    assert "symbolic link" in refused(cli(git_repo, "init"))
    assert snapshot(git_repo) == before and not list((git_repo / PAGES).iterdir())
