"""The one-file hook lists the paths alone (no mode) when the index file git reads proves that it
holds no gitlink; any index that may hold one (a gitlink's mode bytes anywhere in it, a split or
sparse index, a file that is not a regular file) is listed with the modes, as before, and its
gitlinks in the vault are still reported. The index file is the one git names: the hook's
`GIT_INDEX_FILE` (`git commit <paths>` sets one), not a guess."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Optional

import pytest
from conftest import git
from helpers_check import PAGES, page, vault_repo, write
from test_hook_listing import HOOK, staged_collision

from echoes_lint import gitindex

SUB = "EchoesVault/assets/sub"
FOUND = f"{SUB}:1:1: EV046"
MODE = b"\0\0\xe0\0"  # a gitlink's mode (0o160000) as an index file holds it, big-endian


def logging_git(tmp_path: Path, real_index: bool = False) -> tuple[dict[str, str], Path]:
    """The environment of a hook whose `git` logs each command line (then runs the real git),
    and that log; with `real_index`, git reads the repository's own index whatever the hook's
    `GIT_INDEX_FILE` names."""
    real = shutil.which("git")
    assert real is not None
    folder, log = tmp_path / "bin", tmp_path / "git.log"
    folder.mkdir()
    own = "unset GIT_INDEX_FILE\n" if real_index else ""
    (folder / "git").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {shlex.quote(str(log))}\n'
                                f'{own}exec {shlex.quote(real)} "$@"\n', encoding="utf-8")
    (folder / "git").chmod(0o755)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}, log


def hook(repo: Path, env: dict[str, str], *paths: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HOOK, *(paths or (f"{PAGES}/home.md",))], cwd=repo,
                          capture_output=True, text=True, check=False, timeout=120, env=env)


def with_modes(log: Path) -> bool:
    """Whether the hook asked git for the modes (`LS_FILES`, or `LS_STAGE` on an old git)."""
    return any(f" {gitindex.LS_FILES[0]} " in line and ("--format=" in line or " --stage " in line)
               for line in log.read_text(encoding="utf-8").splitlines())


def add_gitlink(repo: Path, env: Optional[dict[str, str]] = None) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    subprocess.run(["git", "update-index", "--add", "--cacheinfo", f"160000,{head},{SUB}"],
                   cwd=repo, check=True, env=env)


def index_bytes(repo: Path, name: str = "index") -> bytes:
    return (repo / ".git" / name).read_bytes()


@pytest.mark.parametrize("version", ["2", "4"])
def test_an_ordinary_index_is_listed_without_the_modes(tmp_path: Path, version: str) -> None:
    """The common repository: git lists the paths alone (before: always with the modes), and
    the hook finds what it found then (a staged capital twin)."""
    repo = vault_repo(tmp_path / "repo")
    git(repo, "update-index", "--index-version", version)
    staged_collision(repo)
    assert index_bytes(repo)[4:8] == int(version).to_bytes(4, "big")
    env, log = logging_git(tmp_path)
    run = hook(repo, env, f"{PAGES}/Home.md")
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"{PAGES}/Home.md:1:1: EV030 new file" in run.stdout
    assert not with_modes(log), log.read_text(encoding="utf-8")
    assert "rev-parse --git-path index" in log.read_text(encoding="utf-8")


def test_a_gitlink_in_the_vault_is_listed_with_the_modes_and_reported(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    add_gitlink(repo)
    assert MODE in index_bytes(repo)
    env, log = logging_git(tmp_path)
    run = hook(repo, env)
    assert run.returncode == 1, run.stdout + run.stderr
    assert FOUND in run.stdout
    assert with_modes(log)


@pytest.mark.parametrize("absolute", [True, False])
def test_the_index_file_scanned_is_the_one_git_reads(tmp_path: Path, absolute: bool) -> None:
    """`GIT_INDEX_FILE` (absolute, or relative to the repository root where the hook runs):
    its gitlink is found though `.git/index` has none; and with the gitlink in `.git/index`
    only, the other index is listed without the modes."""
    repo = vault_repo(tmp_path / "repo")
    other = repo / ".git" / "other-index"
    shutil.copyfile(repo / ".git" / "index", other)
    env, log = logging_git(tmp_path)
    env["GIT_INDEX_FILE"] = str(other) if absolute else ".git/other-index"
    add_gitlink(repo, env)
    assert MODE in other.read_bytes()
    assert MODE not in index_bytes(repo)
    run = hook(repo, env)
    assert run.returncode == 1, run.stdout + run.stderr
    assert FOUND in run.stdout
    # The other way round: the gitlink in `.git/index`, none in the index git reads.
    shutil.copyfile(other, repo / ".git" / "index")
    subprocess.run(["git", "rm", "-q", "--cached", SUB], cwd=repo, check=True, env=env)
    assert MODE not in other.read_bytes()
    log.unlink()
    run = hook(repo, env)
    assert FOUND not in run.stdout, run.stdout + run.stderr
    assert not with_modes(log)


def test_a_gitlink_in_the_shared_part_of_a_split_index_is_reported(tmp_path: Path) -> None:
    """`git update-index --split-index`: the gitlink lives in the shared index file, which the
    index file links to (`link`): no proof, the modes are listed."""
    repo = vault_repo(tmp_path / "repo")
    add_gitlink(repo)
    git(repo, "update-index", "--split-index")
    write(repo, f"{PAGES}/new.md", page())
    git(repo, "add", "--", f"{PAGES}/new.md")  # the index file: this entry and the link
    assert MODE not in index_bytes(repo) and b"link" in index_bytes(repo)
    env, log = logging_git(tmp_path)
    run = hook(repo, env)
    assert run.returncode == 1, run.stdout + run.stderr
    assert FOUND in run.stdout
    assert with_modes(log)


def test_a_gitlink_in_a_folder_a_sparse_index_keeps_whole_is_reported(tmp_path: Path) -> None:
    """A sparse index holds a folder outside the sparse checkout as one entry (`sdir`), which
    git's listing expands from its tree: the gitlink in it is not in the index file."""
    repo = vault_repo(tmp_path / "repo")
    add_gitlink(repo)
    git(repo, "commit", "-q", "--no-verify", "-m", "gitlink")
    git(repo, "sparse-checkout", "init", "--cone", "--sparse-index")
    git(repo, "sparse-checkout", "set", PAGES)
    git(repo, "checkout", "-q", "-b", "before", "HEAD~1")  # back and forth: the folder whole
    git(repo, "checkout", "-q", "-")
    assert b"sdir" in index_bytes(repo) and MODE not in index_bytes(repo)
    assert SUB in git(repo, "ls-files", "--", SUB)
    env, log = logging_git(tmp_path)
    run = hook(repo, env)
    assert FOUND in run.stdout, run.stdout + run.stderr
    assert with_modes(log)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFO")
def test_an_index_file_that_is_a_fifo_is_no_proof_and_does_not_block(tmp_path: Path) -> None:
    """Opened without blocking (nobody writes the FIFO), it proves nothing: the modes are
    listed and the staged collision found. (Git itself reads the real index here.)"""
    repo = vault_repo(tmp_path / "repo")
    staged_collision(repo)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    env, log = logging_git(tmp_path, real_index=True)
    env["GIT_INDEX_FILE"] = str(fifo)
    run = hook(repo, env, f"{PAGES}/Home.md")
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"{PAGES}/Home.md:1:1: EV030 new file" in run.stdout
    assert with_modes(log)


@pytest.mark.parametrize(("index", "proven"), [
    (b"DIRC\0\0\0\2\0\0\0\0", True),
    (b"DIRC\0\0\0\4\0\0\0\0", True),
    (b"DIRC\0\0\0\1\0\0\0\0", False),  # a version git's format does not name
    (b"DIRC\0\0\0\5\0\0\0\0", False),
    (b"DIRX\0\0\0\2\0\0\0\0", False),
    # No room for an entry after a gitlink's mode, no chain of extensions from `link`/`sdir`
    # to the checksum: none is real (`test_hook10_proof` has those that could be).
    (b"DIRC\0\0\0\2\0\0\0\0" + MODE, True),
    (b"DIRC\0\0\0\2\0\0\0\0link", True),
    (b"DIRC\0\0\0\2\0\0\0\1" + bytes(64) + b"sdir", True),
    (b"", False),
])
def test_the_proof_of_no_gitlink(index: bytes, proven: bool) -> None:
    assert gitindex._proven(index) is proven
