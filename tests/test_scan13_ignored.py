"""Which durable files Git ignores is `git check-ignore`'s answer about the durable files the
scan found, as the reference engine asks it (issue 13): the scan no longer lists every ignored
file with `git ls-files --others --ignored`, a second walk of the vault by Git beside its
listing of untracked files. The same files are reported: untracked ones an ignore rule
matches, ones inside an ignored folder, and tracked ones that a rule matches."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import git, init_repo, make_vault, page_text
from helpers_check import write

from echoes_lint import engine

RUNTIME = Path(engine.__file__)
IGNORED = [
    "EchoesVault/assets/build/out.bin",  # inside an ignored folder
    "EchoesVault/pages/.DS_Store",
    "EchoesVault/pages/secret.md",
    "EchoesVault/raw/sub/a.tmp",
    "EchoesVault/raw/tracked-ignored.txt",  # tracked, and matched by a rule
]


def ignoring_repo(path: Path) -> Path:
    repo = init_repo(path)
    make_vault(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "vault")
    rules = "secret.md\nbuild/\n.DS_Store\ntracked-ignored.txt\n*.tmp\n"
    ignore = repo / "EchoesVault" / ".gitignore"
    ignore.write_text(ignore.read_text(encoding="utf-8") + rules, encoding="utf-8")
    write(repo, "EchoesVault/pages/secret.md", page_text("Secret."))
    write(repo, "EchoesVault/pages/new.md", page_text("New."))
    for relative in IGNORED:
        if not relative.endswith(".md"):  # (the page above)
            write(repo, relative, "x\n")
    git(repo, "add", "-f", "--", IGNORED[4])
    write(repo, "EchoesVault/assets/untracked.png", "y\n")
    return repo


def logging_git(tmp_path: Path) -> tuple[dict[str, str], Path]:
    real = shutil.which("git")
    assert real is not None
    folder, log = tmp_path / "bin", tmp_path / "git.log"
    folder.mkdir()
    (folder / "git").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {shlex.quote(str(log))}\n'
                                f'exec {shlex.quote(real)} "$@"\n', encoding="utf-8")
    (folder / "git").chmod(0o755)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}, log


def test_ignored_durable_files_come_from_check_ignore_alone(tmp_path: Path) -> None:
    repo = ignoring_repo(tmp_path / "repo")
    env, log = logging_git(tmp_path)
    run = subprocess.run([sys.executable, str(RUNTIME), "--workspace", str(repo), "status"],
                         capture_output=True, text=True, check=False, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    readiness = json.loads(run.stdout)["health"]["git"]
    assert [path for path in readiness["ignoredDurableFiles"]
            if path.startswith("EchoesVault/")] == IGNORED
    assert readiness["untrackedDurableFiles"] == ["EchoesVault/assets/untracked.png",
                                                  "EchoesVault/pages/new.md"]
    calls = log.read_text(encoding="utf-8").splitlines()
    assert any(call.startswith("check-ignore ") for call in calls), calls
    assert not any("--ignored" in call.split() for call in calls), calls


def test_check_reports_the_same_ignored_files(tmp_path: Path) -> None:
    """The gates take the same answer: an EV022 warning for each ignored file."""
    repo = ignoring_repo(tmp_path / "repo")
    env, log = logging_git(tmp_path)
    run = subprocess.run([sys.executable, "-m", "echoes_lint", "check"], cwd=repo,
                         capture_output=True, text=True, check=False, env=env, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr  # (warnings)
    for relative in IGNORED:
        assert f"{relative}:1:1: EV022" in run.stdout, run.stdout
    assert not any("--ignored" in call.split()
                   for call in log.read_text(encoding="utf-8").splitlines())
