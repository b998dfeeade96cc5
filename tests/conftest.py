"""Shared fixtures: real Git repositories in temporary folders and real CLI subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from echoes_lint import engine

ROOT = Path(__file__).resolve().parent.parent

# Git must not read the developer's config or prompt; commits need a fixed identity.
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.invalid",
    "GIT_TERMINAL_PROMPT": "0",
}


@pytest.fixture(autouse=True)
def _isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


def git(repo: Path, *args: str, check: bool = True, input: Optional[str] = None) -> str:
    completed = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=False, input=input
    )
    if check and completed.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {completed.stderr}")
    return completed.stdout


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "commit.gpgsign", "false")
    git(path, "config", "core.autocrlf", "false")
    return path


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo")


def run_cli(*args: str, cwd: Path, input: Optional[str] = None,
            env: Optional[dict[str, str]] = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "echoes_lint", *args],
        cwd=cwd, input=input, capture_output=True, text=True, encoding="utf-8", check=False,
        env={**os.environ, **(env or {})},
    )


def page_text(summary: str = "A page.", body: str = "# Title\n", **fields: str) -> str:
    values = {"type": "note", "stack": "[python]", "status": "active", **fields}
    lines = ["---", *(f"{k}: {v}" for k, v in values.items()), f"summary: {summary}", "---", ""]
    return "\n".join(lines) + "\n" + body


def write_page(repo: Path, name: str, summary: str = "A page.", body: str = "# Title\n",
               **fields: str) -> Path:
    path = repo / "EchoesVault" / "pages" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(page_text(summary, body, **fields).encode("utf-8"))
    return path


MARKER = engine.MARKER_VALUE


def make_vault(repo: Path) -> Path:
    """A vault laid out by hand (no `init`), for tests independent of the writer."""
    vault = repo / "EchoesVault"
    for name in ("pages", "daily", "assets", "raw"):
        (vault / name).mkdir(parents=True, exist_ok=True)
    (vault / ".echoes-vault.json").write_text(json.dumps(MARKER, indent=2) + "\n", encoding="utf-8")
    (vault / ".gitignore").write_text("# Generated locally by EchoesVault\n/index.md\n",
                                      encoding="utf-8")
    return vault


@pytest.fixture
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_cli


def load_json(text: str) -> Any:
    return json.loads(text)
