"""Issue 12: the `echoes-lint-fix` hook through the real pre-commit framework: it fixes the staged
pages, fails the commit that it changed (the fixer convention), passes once the fix is staged,
and never touches Git's index (an index fix stays a printed command)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git
from helpers_check import PAGES, write
from test_fix_rules import BANNER, DEPRECATED, FRONT
from test_precommit_hooks import (  # noqa: F401  (session fixtures)
    hook_source,
    hooked_repo,
    pre_commit_home,
    try_commit,
)


@pytest.fixture
def fix_hooked(tmp_path: Path, hook_source: tuple[Path, str],  # noqa: F811
               pre_commit_home: Path) -> Path:  # noqa: F811
    return hooked_repo(tmp_path, hook_source, pre_commit_home, ("echoes-lint-fix",))


def test_the_fix_hook_fixes_fails_once_and_then_passes(fix_hooked: Path,
                                                       pre_commit_home: Path) -> None:  # noqa: F811
    repo = fix_hooked
    write(repo, f"{PAGES}/old.md", f"{DEPRECATED}\n# Old\n")
    write(repo, f"{PAGES}/setext.md", f"{FRONT}\nTitle\n=======\n")
    git(repo, "add", "-A")
    head = git(repo, "rev-parse", "HEAD")
    staged = git(repo, "diff", "--cached")
    first = try_commit(repo, pre_commit_home)
    output = first.stdout + first.stderr
    assert first.returncode != 0, output
    assert "files were modified by this hook" in output
    assert "Fixed 1 error and 1 warning:" in output
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "diff", "--cached") == staged  # the index is the user's to update
    assert (repo / PAGES / "old.md").read_text(encoding="utf-8") == \
        f"{DEPRECATED}\n{BANNER}# Old\n"
    assert (repo / PAGES / "setext.md").read_text(encoding="utf-8").endswith("\n========\n")
    git(repo, "add", "-A")
    second = try_commit(repo, pre_commit_home)
    assert second.returncode == 0, second.stdout + second.stderr
    assert git(repo, "rev-parse", "HEAD") != head


def test_the_fix_hook_leaves_index_fixes_as_printed_commands(fix_hooked: Path,
                                                             pre_commit_home: Path,  # noqa: F811
                                                             ) -> None:
    repo = fix_hooked
    write(repo, "EchoesVault/index.md", "# index\n")
    git(repo, "add", "-f", "EchoesVault/index.md")
    result = try_commit(repo, pre_commit_home)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "EchoesVault/index.md:1:1: EV020" in output
    assert "git rm --cached -- EchoesVault/index.md" in output
    assert "EchoesVault/index.md" in git(repo, "diff", "--cached", "--name-only")
