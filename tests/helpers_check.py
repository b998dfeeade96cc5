"""Helpers for the `echoes-lint check` tests: committed vaults, the CLI, parsed findings."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Optional, Sequence

from conftest import git, init_repo, make_vault, page_text, run_cli, write_page

from echoes_lint.checker import run_checks

PAGES = "EchoesVault/pages"
_CONCISE = re.compile(r"^(.+?):(\d+):(\d+): (EV\d{3}) (.*)$", re.MULTILINE)

Located = tuple[str, int, int, str]


def vault_repo(path: Path) -> Path:
    """A Git repository with a valid vault and one committed page, `home.md`."""
    repo = init_repo(path)
    make_vault(repo)
    write_page(repo, "home.md", summary="Start here.")
    commit(repo, "vault")
    return repo


def commit(repo: Path, message: str = "change", *paths: str) -> None:
    git(repo, "add", "-A", "--", *(paths or ["."]))
    git(repo, "commit", "-q", "--no-verify", "-m", message)


def write(repo: Path, relative: str, text: str) -> Path:
    path = repo / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)
    return path


def page(body: str = "# Title\n", summary: str = "A page.", **fields: str) -> str:
    return page_text(summary, body, **fields)


def conflicted_vault(path: Path) -> Path:
    """A `vault_repo` stopped in a merge whose `alpha.md` conflicts: Git's index holds that page
    at three stages."""
    repo = vault_repo(path)
    write(repo, f"{PAGES}/alpha.md", page("base\n"))
    commit(repo)
    git(repo, "checkout", "-q", "-b", "other")
    write(repo, f"{PAGES}/alpha.md", page("other\n"))
    commit(repo, "other")
    git(repo, "checkout", "-q", "main")
    write(repo, f"{PAGES}/alpha.md", page("ours\n"))
    commit(repo, "ours")
    git(repo, "merge", "-q", "other", check=False)
    return repo


def located(repo: Path, paths: Optional[Sequence[str]] = None, staged: bool = False,
            select: Sequence[str] = (), ignore: Sequence[str] = (),
            vault_dir: Optional[str] = None) -> list[Located]:
    """(path, line, col, code) of every finding of an in-process check."""
    result = run_checks(repo, paths=paths, staged=staged, select=select, ignore=ignore,
                        vault_dir=vault_dir)
    return [(f.path, f.line, f.col, f.code) for f in result.findings]


def codes(repo: Path, paths: Optional[Sequence[str]] = None, staged: bool = False) -> list[str]:
    return [code for _path, _line, _col, code in located(repo, paths, staged)]


def lint(repo: Path, *args: str, env: Optional[dict[str, str]] = None,
         cwd: Optional[Path] = None) -> subprocess.CompletedProcess[str]:
    """`python -m echoes_lint check ARGS` run in the repository (or `cwd`)."""
    return run_cli("check", *args, cwd=cwd or repo, env=env)


def parsed(output: str) -> list[Located]:
    """(path, line, col, code) of every concise finding line in `output`."""
    return [(m.group(1), int(m.group(2)), int(m.group(3)), m.group(4))
            for m in _CONCISE.finditer(output)]
