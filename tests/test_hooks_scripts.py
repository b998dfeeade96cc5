"""The dependency-free scripts in hooks/: the plain Git pre-commit hook and the agent
SessionStart hook, run exactly as Git and the agents run them."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest
from conftest import ROOT, git
from helpers_cache import CACHE, upsert_payload
from helpers_check import PAGES, page, vault_repo, write
from helpers_writer import init_vault, ok, runtime

from echoes_lint import engine

PRE_COMMIT = ROOT / "hooks" / "pre-commit"
SESSION_START = ROOT / "hooks" / "session_start.py"
STDLIB_ONLY = (sys.executable, "-I", "-S")  # no site-packages: echoes_lint is not importable


# --- hooks/pre-commit --------------------------------------------------------------------------


@pytest.fixture
def hooked(tmp_path: Path) -> Path:
    repo = vault_repo(tmp_path / "repo")
    target = repo / ".git" / "hooks" / "pre-commit"
    shutil.copy2(PRE_COMMIT, target)
    target.chmod(target.stat().st_mode | stat.S_IXUSR)
    return repo


def commit(repo: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "commit", "-q", "-m", "test"], cwd=repo, capture_output=True,
                          text=True, check=False, env={**os.environ, **env})


def test_plain_hook_refuses_a_staged_conflict_even_when_the_disk_is_fixed(hooked: Path) -> None:
    write(hooked, f"{PAGES}/home.md", page(body="<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n"))
    git(hooked, "add", "-A")
    write(hooked, f"{PAGES}/home.md", page(body="# Fixed only on disk\n"))
    result = commit(hooked, ECHOES_LINT_PYTHON=sys.executable)
    assert result.returncode == 1
    # Git shows a hook's standard output on its standard error.
    assert f"{PAGES}/home.md:8:1: EV001 " in result.stderr
    assert git(hooked, "log", "--format=%s") == "vault\n"


def test_plain_hook_refuses_a_staged_index_and_passes_a_clean_commit(hooked: Path) -> None:
    write(hooked, "EchoesVault/index.md", "# index\n")
    git(hooked, "add", "-f", "EchoesVault/index.md")
    refused = commit(hooked, ECHOES_LINT_PYTHON=sys.executable)
    assert refused.returncode == 1
    assert "git rm --cached -- EchoesVault/index.md" in refused.stderr
    git(hooked, "rm", "-q", "--cached", "EchoesVault/index.md")
    write(hooked, f"{PAGES}/next.md", page(body="See [[home]].\n"))
    git(hooked, "add", f"{PAGES}/next.md")
    passed = commit(hooked, ECHOES_LINT_PYTHON=sys.executable)
    assert (passed.returncode, passed.stderr) == (0, "All checks passed!\n")


def test_plain_hook_explains_when_echoes_lint_is_missing(hooked: Path) -> None:
    git(hooked, "commit", "-q", "--allow-empty", "--no-verify", "-m", "base")
    write(hooked, f"{PAGES}/next.md", page())
    git(hooked, "add", "-A")
    result = commit(hooked, ECHOES_LINT_PYTHON="no-such-python", PATH="/usr/bin:/bin")
    assert result.returncode == 1
    assert "cannot run the EchoesVault checks" in result.stderr
    assert "the staged vault files were NOT checked" in result.stderr
    assert "no-such-python -m pip install echoes-lint" in result.stderr
    assert "git commit --no-verify" in result.stderr


# --- hooks/session_start.py --------------------------------------------------------------------


def session_start(event: Optional[dict[str, str]], python: tuple[str, ...] = (sys.executable,),
                  cwd: Optional[Path] = None,
                  env: Optional[dict[str, str]] = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*python, str(SESSION_START)], cwd=cwd,
                          input=json.dumps(event) if event is not None else "",
                          capture_output=True, text=True, check=False,
                          env={**os.environ, **(env or {})})


def context_of(result: subprocess.CompletedProcess[str]) -> str:
    assert (result.returncode, result.stderr) == (0, "")
    output = json.loads(result.stdout)
    assert list(output) == ["hookSpecificOutput"]
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context: str = output["hookSpecificOutput"]["additionalContext"]
    return context


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = vault_repo(tmp_path / "repo")
    (repo / "src").mkdir()
    return repo


def snapshot(repo: Path) -> dict[str, bytes]:
    return {str(p.relative_to(repo)): p.read_bytes() for p in sorted(repo.rglob("*"))
            if p.is_file() and ".git" not in p.parts}


def test_session_start_is_silent_without_a_vault(git_repo: Path) -> None:
    result = session_start({"cwd": str(git_repo), "hook_event_name": "SessionStart"})
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_session_start_never_runs_the_project_runtime(project: Path) -> None:
    runtime = project / ".echoes-vault" / "echoes_vault.py"
    runtime.parent.mkdir()
    shutil.copy2(engine.__file__, runtime)
    before = snapshot(project)
    result = session_start({"cwd": str(project / "src"), "source": "startup"},
                           python=STDLIB_ONLY)
    context = context_of(result)
    assert context.startswith("EchoesVault project memory is available in this repository.")
    assert "### EchoesVault · status unavailable" in context
    assert "never runs the project's own `.echoes-vault/echoes_vault.py`" in context
    assert snapshot(project) == before  # read-only: no index, no state, no lock


def test_session_start_reads_with_the_installed_package(project: Path) -> None:
    context = context_of(session_start(None, cwd=project / "src"))
    assert "### EchoesVault · " in context
    assert "1 pages" in context


def test_session_start_uses_claude_project_dir_and_says_when_no_card_is_possible(
        project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = session_start({}, python=STDLIB_ONLY, cwd=elsewhere,
                           env={"CLAUDE_PROJECT_DIR": str(project)})
    assert "### EchoesVault · status unavailable" in context_of(result)


def test_session_start_reads_through_the_cache_and_never_writes_it(git_repo: Path) -> None:
    """The card comes through the local cache as `status` reads it (the cache's summary, when
    nothing changed), equals the runtime's own card, and leaves every file, the cache
    included, as it was."""
    init_vault(git_repo)
    for number in range(engine.CACHE_MIN_CHANGES):  # enough entries for a writer to keep them
        write(git_repo, f"{PAGES}/p{number}.md", page())
    ok(runtime(git_repo, "upsert", "--payload", "-", payload=upsert_payload(git_repo, "a.md", "A.")))
    cache = git_repo / CACHE
    assert cache.is_file()
    status = runtime(git_repo, "status", "--format", "card")
    assert status.returncode == 0, status.stderr
    before, cached = snapshot(git_repo), os.stat(cache)
    context = context_of(session_start(None, cwd=git_repo))
    assert status.stdout.strip() in context
    assert snapshot(git_repo) == before
    after = os.stat(cache)
    assert (after.st_mtime_ns, after.st_ino) == (cached.st_mtime_ns, cached.st_ino)
