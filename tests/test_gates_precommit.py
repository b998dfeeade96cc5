"""The rules of issue 10 (EV042-EV046) through the real pre-commit framework: each refuses a
commit (or a `pre-commit run`) with its finding, and the repaired case passes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git
from helpers_check import PAGES, commit, page, vault_repo, write
from helpers_gates import HANG_GUARD
from test_precommit_hooks import (  # noqa: F401  (fixtures)
    hook_source,
    hooked,
    passes,
    pre_commit_env,
    pre_commit_home,
    refused,
)


def run_hook(repo: Path, home: Path, *files: str) -> subprocess.CompletedProcess[str]:
    """`pre-commit run echoes-lint --files FILES`: pre-commit passes what git cannot stage."""
    return subprocess.run([sys.executable, "-m", "pre_commit", "run", "echoes-lint", "--files",
                           *files], cwd=repo, env=pre_commit_env(home), capture_output=True,
                          text=True, check=False, timeout=HANG_GUARD)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_ev042_a_fifo_is_reported_without_blocking(hooked: Path,  # noqa: F811
                                                   pre_commit_home: Path) -> None:  # noqa: F811
    os.mkfifo(hooked / PAGES / "pipe.md")
    blocked = run_hook(hooked, pre_commit_home, f"{PAGES}/pipe.md")
    assert blocked.returncode == 1, blocked.stdout
    assert f"{PAGES}/pipe.md:1:1: EV042 " in blocked.stdout
    (hooked / PAGES / "pipe.md").unlink()
    write(hooked, f"{PAGES}/pipe.md", page())
    clean = run_hook(hooked, pre_commit_home, f"{PAGES}/pipe.md")
    assert clean.returncode == 0, clean.stdout


def test_ev043_ev044_stale_and_unknown_suppressions(hooked: Path,  # noqa: F811
                                                    pre_commit_home: Path) -> None:  # noqa: F811
    write(hooked, ".echoes-lint.toml", 'fail-on = "warning"\n')
    commit(hooked, "strict")
    write(hooked, f"{PAGES}/notes.md", page(body="<!-- echoes-lint-disable-next-line EV050 -->\n"
                                                 "No link here.\n"))
    git(hooked, "add", "-A")
    refused(hooked, pre_commit_home, "EV043")
    write(hooked, f"{PAGES}/notes.md", page(body="<!-- echoes-lint-disable-next-line EV05O -->\n"
                                                 "See [[nowhere]].\n"))
    git(hooked, "add", "-A")
    refused(hooked, pre_commit_home, "EV044")
    write(hooked, f"{PAGES}/notes.md", page(body="<!-- echoes-lint-disable-next-line EV050 -->\n"
                                                 "See [[nowhere]].\n"))
    git(hooked, "add", "-A")
    passes(hooked, pre_commit_home)


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS refuses names that are not UTF-8")
def test_ev045_a_name_that_is_not_utf8(hooked: Path, pre_commit_home: Path) -> None:  # noqa: F811
    """pre-commit itself cannot pass such a name to a hook, so the name is committed and a
    later commit is checked: the always-run hook reads it from Git's index."""
    bad = os.fsdecode(b"EchoesVault/assets/pic\xfe.png")
    with open(os.path.join(os.fsencode(hooked), os.fsencode(bad)), "wb") as handle:
        handle.write(b"\x89PNG")
    commit(hooked, "an asset with a Latin-1 name")
    write(hooked, f"{PAGES}/next.md", page())
    git(hooked, "add", "-A")
    refused(hooked, pre_commit_home, "EV045")
    git(hooked, "mv", "-f", bad, "EchoesVault/assets/pic.png")
    git(hooked, "commit", "-q", "--no-verify", "-m", "rename")
    write(hooked, f"{PAGES}/next.md", page(summary="Next."))
    git(hooked, "add", "-A")
    passes(hooked, pre_commit_home)


def test_ev046_a_submodule_in_the_vault(hooked: Path, pre_commit_home: Path,  # noqa: F811
                                        tmp_path: Path) -> None:
    other = vault_repo(tmp_path / "other")
    git(hooked, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(other),
        "EchoesVault/raw/vendored")
    refused(hooked, pre_commit_home, "EV046")
    git(hooked, "rm", "-q", "--cached", "EchoesVault/raw/vendored")
    git(hooked, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "--force",
        str(other), "vendor/other")
    passes(hooked, pre_commit_home)
