"""Issue 10 item 8: FIFOs and sockets wherever the tools read are reported as not regular files
(EV042) and never opened; nothing blocks. A FIFO without a writer blocks a plain `open` forever,
so every run here has a hang guard."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from conftest import run_cli
from helpers_check import PAGES, vault_repo, write
from helpers_gates import run_guarded

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")

VAULT_FIFOS = (f"{PAGES}/pipe.md", "EchoesVault/daily/2026-01-05/pipe.md", "EchoesVault/raw/pipe",
               "EchoesVault/assets/pipe.png")
MANAGED_FIFOS = ("EchoesVault/.echoes-vault.json", ".echoes-vault/state.json", "AGENTS.md",
                 ".echoes-vault/echoes_vault.py")


def fifo(repo: Path, relative: str) -> None:
    path = repo / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    os.mkfifo(path)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return vault_repo(tmp_path / "repo")


def test_fifos_everywhere_are_reported_and_nothing_blocks(repo: Path, tmp_path: Path) -> None:
    for relative in (*VAULT_FIFOS, *MANAGED_FIFOS):
        fifo(repo, relative)
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(repo / "EchoesVault/raw/sock"))
    except OSError:  # a path longer than sun_path allows
        pytest.skip("cannot bind a Unix socket here")
    try:
        check = run_guarded("check", cwd=repo)
        assert check.returncode == 1, check.stderr
        reported = {line.split(":", 1)[0] for line in check.stdout.splitlines() if " EV042 " in line}
        assert reported >= {*VAULT_FIFOS, *MANAGED_FIFOS}, check.stdout
        assert "EchoesVault/raw/sock" in reported
        ci = run_guarded("ci", cwd=repo)
        assert ci.returncode == 1 and " EV042 " in ci.stdout
        hook = run_guarded("check", f"{PAGES}/pipe.md", cwd=repo)
        assert f"{PAGES}/pipe.md:1:1: EV042" in hook.stdout
        for command in (["status"], ["inspect"], ["search", "x"], ["hash", "pipe.md"],
                        ["protocol"]):
            completed = run_guarded(*command, cwd=repo)
            assert "Traceback" not in completed.stderr
            assert completed.returncode in (0, 2), completed.stderr
        status = json.loads(run_guarded("status", cwd=repo).stdout)
        assert "pages/pipe.md" in status["health"]["unreadableFiles"]
    finally:
        listener.close()


@pytest.mark.parametrize("name", [".echoes-lint.toml", "pyproject.toml"])
def test_a_fifo_as_configuration_is_a_clear_error(repo: Path, name: str) -> None:
    fifo(repo, name)
    completed = run_guarded("check", cwd=repo)
    assert completed.returncode == 2
    assert completed.stderr == f"echoes-lint: error: cannot read {repo / name}: not a regular file\n"


def test_an_explicit_configuration_may_be_a_link_to_a_file(repo: Path, tmp_path: Path) -> None:
    target = write(tmp_path, "shared.toml", 'ignore = ["EV022"]\n')
    (repo / "linked.toml").symlink_to(target)
    assert run_cli("check", "--config", "linked.toml", cwd=repo).returncode == 0
