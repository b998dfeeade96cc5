"""Shared setup for the merge-tool tests: one committed page edited on real branches."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from conftest import git, make_vault, run_cli, write_page

from echoes_lint import engine

PAGE = "EchoesVault/pages/auth.md"
BODY = "# Auth\n\nLine one.\nLine two.\nLine three.\nLine four.\n"
ENGINE_FILE = Path(engine.__file__)


def vault_with_page(repo: Path, runtime: bool = False) -> Path:
    """A hand-made vault (no `init`) with one valid page, committed on `main`."""
    make_vault(repo)
    if runtime:
        install_runtime(repo)
    write_page(repo, "auth.md", summary="Original summary.", body=BODY)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return repo / PAGE


def install_runtime(repo: Path) -> None:
    """The project runtime exactly as `init` places it: the engine file, byte for byte."""
    target = repo / engine.RUNTIME_PATH
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ENGINE_FILE, target)
    (target.parent / ".gitignore").write_text("# EchoesVault runtime files\n/state.json\n/lock\n",
                                              encoding="utf-8")


def replace(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_bytes(text.replace(old, new, 1).encode("utf-8"))


def commit_on(repo: Path, branch: str, *edits: tuple[str, str], start: str = "main",
              path: str = PAGE) -> None:
    """Create `branch` from `start` with the (old, new) text edits to `path`, then go back."""
    git(repo, "checkout", "-q", "-b", branch, start)
    for old, new in edits:
        replace(repo / path, old, new)
    git(repo, "commit", "-q", "-a", "-m", f"edit on {branch}")
    git(repo, "checkout", "-q", "main")


def edit_main(repo: Path, *edits: tuple[str, str], path: str = PAGE) -> None:
    for old, new in edits:
        replace(repo / path, old, new)
    git(repo, "commit", "-q", "-a", "-m", "edit on main")


def git_run(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git without check, for commands whose failure is the point (a conflicted merge)."""
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)


def install_driver(repo: Path, *extra: str) -> None:
    completed = run_cli("install-merge-driver", *extra, cwd=repo)
    assert completed.returncode == 0, completed.stderr


def driven_vault(repo: Path) -> Path:
    """`vault_with_page` with the merge driver installed and its attribute committed."""
    vault_with_page(repo)
    install_driver(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "use the echoes-vault merge driver")
    return repo


def unmerged_paths(repo: Path) -> set[str]:
    records = git(repo, "ls-files", "-u", "-z").split("\0")
    return {record.split("\t", 1)[1] for record in records if record}


def resolve(repo: Path, *args: str) -> tuple[int, str]:
    """`echoes-lint resolve ARGS` in `repo`: (exit status, standard output)."""
    completed = run_cli("resolve", *args, cwd=repo)
    assert "Traceback" not in completed.stderr
    return completed.returncode, completed.stdout


def diverge(repo: Path) -> None:
    """`feature` changes the summary, the stack and a body line; `main` changes the summary."""
    commit_on(repo, "feature", ("summary: Original summary.", "summary: Theirs."),
              ("stack: [python]", "stack: [python, go]"), ("Line three.", "Line three, theirs."))
    edit_main(repo, ("summary: Original summary.", "summary: Ours."))


def record_driver(repo: Path, command: str) -> None:
    """Replace the driver command `install-merge-driver` recorded (another environment's)."""
    git(repo, "config", "merge.echoes-vault.driver", command)
