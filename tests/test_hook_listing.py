"""The one-file hooks start `git ls-files` before loading the linter and use that one listing.

Git lists a large index while the modules load; the check takes the listing started where it
looks (the repository root) and lists no second time; a listing nobody takes (the vault lives
elsewhere, or the hook reads files only) is ended and reaped, and the findings are the same.
"""

from __future__ import annotations

import mmap
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Optional, Union

import pytest
from conftest import git
from helpers_check import PAGES, conflicted_vault, page, vault_repo, write
from hypothesis import given, settings
from hypothesis import strategies as st

from echoes_lint import engine, gitindex, precommit
from echoes_lint.precommit import HOOKS, LISTS_INDEX
from echoes_lint.rules import GIT_CODES

HOOK = str(Path(sysconfig.get_path("scripts")) / "echoes-lint-hook")


LISTINGS = (gitindex.LS_PATHS, gitindex.LS_FILES)


@pytest.fixture()
def listings(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Optional[int]]]:
    """(folder, exit status when collected) of every listing of the index the hook started
    (`LS_PATHS`, or `LS_FILES` where the index proves nothing); None while it was never
    collected."""
    started: list[tuple[str, Optional[int]]] = []
    start, finish = gitindex._start, gitindex._finish

    def git_start(folder: str, args: tuple[str, ...]) -> gitindex.Started:
        if args in LISTINGS:
            started.append((folder, None))
        return start(folder, args)

    def git_finish(begun: gitindex.Started, args: tuple[str, ...],
                   mapped: bool = False) -> tuple[Optional[gitindex.Buffer], Optional[str]]:
        output = finish(begun, args, mapped)
        if args in LISTINGS:
            started[-1] = (started[-1][0], getattr(begun[0], "returncode", None))
        return output

    monkeypatch.setattr(gitindex, "_start", git_start)
    monkeypatch.setattr(gitindex, "_finish", git_finish)
    return started


def test_the_listing_covers_the_vault_and_the_local_only_paths_of_the_engine() -> None:
    """The hook starts git before it loads the engine, so it spells the engine's paths out."""
    assert (engine.VAULT_DIR, *engine.LOCAL_ONLY_PATHS) == gitindex.SCOPE
    for args in (gitindex.LS_PATHS, gitindex.LS_FILES, gitindex.LS_STAGE, gitindex.DIFF_STAGED):
        assert args[-len(gitindex.PATHSPEC) - 1:] == ("--", *gitindex.PATHSPEC)
    # Each path of the scope is in the pathspec, or below a folder of it (the vault's index).
    assert all(path in gitindex.PATHSPEC or path.startswith(f"{engine.VAULT_DIR}/")
               for path in gitindex.SCOPE)
    assert engine.VAULT_DIR in gitindex.PATHSPEC


def staged_collision(repo: Path) -> None:
    write(repo, f"{PAGES}/Home.md", page())
    git(repo, "add", "--", f"{PAGES}/Home.md")


def test_the_hook_lists_the_index_once_started_before_the_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        listings: list[tuple[str, Optional[int]]]) -> None:
    repo = vault_repo(tmp_path / "repo")
    staged_collision(repo)
    monkeypatch.chdir(repo)
    assert precommit.lint_main([f"{PAGES}/Home.md"]) == 1
    assert listings == [(str(repo), 0)]  # started at the root, taken there, and only there
    assert f"{PAGES}/Home.md:1:1: EV030 new file" in capsys.readouterr().out
    assert gitindex._started == {}


def test_a_listing_started_elsewhere_is_ended_and_the_check_lists_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        listings: list[tuple[str, Optional[int]]]) -> None:
    repo = vault_repo(tmp_path / "repo")
    staged_collision(repo)
    monkeypatch.chdir(repo / "EchoesVault")  # a hook run by hand, below the vault's workspace
    processes: list[Union[subprocess.Popen[bytes], gitindex._Spawned]] = []
    start = gitindex.start

    def remember() -> None:
        start()
        processes.extend(process for (process, _sink), _index in gitindex._started.values()
                         if process)

    monkeypatch.setattr(gitindex, "start", remember)
    assert precommit.case_collisions_main([]) == 1
    assert [folder for folder, _status in listings] == [str(repo / "EchoesVault"), str(repo)]
    assert listings[1][1] == 0  # the check listed the index of its own workspace
    assert "EV030" in capsys.readouterr().out
    assert processes and all(process.returncode is not None for process in processes)
    assert gitindex._started == {}


def test_hooks_that_read_files_only_or_the_whole_vault_start_no_listing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        listings: list[tuple[str, Optional[int]]]) -> None:
    repo = vault_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    assert precommit.conflict_markers_main([f"{PAGES}/home.md"]) == 0
    assert precommit.frontmatter_main([f"{PAGES}/home.md"]) == 0
    monkeypatch.setenv("PRE_COMMIT_REMOTE_NAME", "origin")  # a push: the whole vault
    assert precommit.lint_main([]) == 0
    assert listings == []


def test_the_hooks_that_list_the_index_are_those_whose_rules_need_it() -> None:
    needs = {hook for hook, codes in HOOKS.items()
             if not codes or any(code.startswith(codes) for code in (*GIT_CODES, "EV050"))}
    assert needs - {precommit.PUSH_HOOK} == LISTS_INDEX


def fake_git_folder(tmp_path: Path, script: str) -> Path:
    """A folder holding a `git` that runs `script` for `ls-files` and is the real git
    otherwise (put it first on PATH)."""
    real = shutil.which("git")
    assert real is not None
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = folder / "git"
    fake.write_text(f'#!/bin/sh\ncase " $* " in *" ls-files "*) {script};; esac\n'
                    f'exec {shlex.quote(real)} "$@"\n', encoding="utf-8")
    fake.chmod(0o755)
    return folder


@pytest.mark.parametrize("failure", ["printf 'EchoesVault/pages/home.md' >&1; kill -9 $$",
                                     "printf 'partial' ; echo 'fatal: index broken' >&2; exit 128"])
def test_a_listing_git_killed_or_failed_midway_fails_the_hook(tmp_path: Path,
                                                               failure: str) -> None:
    """Half a listing is no listing: the hook exits 2 and says git could not read the index."""
    repo = vault_repo(tmp_path / "repo")
    staged_collision(repo)
    folder = fake_git_folder(tmp_path, failure)
    hook = subprocess.run([HOOK, f"{PAGES}/Home.md"], cwd=repo, capture_output=True, text=True,
                          check=False, timeout=120,
                          env={**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"})
    assert hook.returncode == 2, hook.stdout + hook.stderr
    assert hook.stderr.startswith("echoes-lint: error: ")
    assert "git cannot read it" in hook.stderr
    assert "EV030" not in hook.stdout


def odd_index(tmp_path: Path) -> Path:
    """An index with what a listing can meet: a conflicted page (three stages), a gitlink in the
    vault, names with a tab, a newline and bytes that are not UTF-8, a tracked local file."""
    repo = conflicted_vault(tmp_path / "repo")
    for name in ("tab\there.png", "new\nline.png"):
        write(repo, f"EchoesVault/assets/{name}", "x")
    (repo / "EchoesVault" / "assets").joinpath(os.fsdecode(b"caf\xe9.png")).write_bytes(b"x")
    write(repo, "EchoesVault/index.md", "# Index\n")
    git(repo, "add", "-f", "--", "EchoesVault/assets", "EchoesVault/index.md")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},EchoesVault/assets/sub")
    return repo


def test_the_listing_by_format_is_the_listing_by_stage(tmp_path: Path) -> None:
    repo = odd_index(tmp_path)
    listed, cause = gitindex.output(repo)
    assert cause is None and listed is not None
    stage, cause = gitindex._finish(gitindex._start(str(repo), gitindex.LS_STAGE),
                                    gitindex.LS_STAGE)
    assert stage is not None
    assert listed == gitindex._by_stage(gitindex._decode(stage))
    paths, gitlinks = listed
    assert gitlinks == {"EchoesVault/assets/sub"}
    assert paths.count(f"{PAGES}/alpha.md") == 3
    assert {"EchoesVault/assets/tab\there.png", "EchoesVault/assets/new\nline.png",
            os.fsdecode(b"EchoesVault/assets/caf\xe9.png")} <= set(paths)
    assert list(paths) == sorted(paths)


def test_the_listing_is_mapped_not_copied_and_an_empty_one_is_read(tmp_path: Path) -> None:
    """The hook decodes the listing from the file git wrote, mapped into memory; a file that
    cannot be mapped (an empty listing) is read, and both give what reading gives."""
    repo = odd_index(tmp_path)
    mapped, _cause = gitindex._finish(gitindex._start(str(repo), gitindex.LS_FILES),
                                      gitindex.LS_FILES, mapped=True)
    read, _cause = gitindex._finish(gitindex._start(str(repo), gitindex.LS_FILES),
                                    gitindex.LS_FILES)
    assert isinstance(mapped, mmap.mmap) and isinstance(read, bytes)
    assert gitindex._decode(mapped) == gitindex._decode(read)
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    git(empty, "read-tree", "--empty")  # an index file, with no entry
    listed, cause = gitindex.output(empty)  # the common index, with no entry, as git wrote it
    assert cause is None and isinstance(listed, gitindex.Written) and listed.data == b""


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.tuples(
    st.sampled_from(["EchoesVault/a.md", "EchoesVault/100644", "EchoesVault/b\udcff", ".codex/x",
                     "EchoesVault/sub", "EchoesVault/c d"]),
    st.sampled_from(["100644", "100644", "100755", "120000", "160000"])), max_size=8))
def test_the_listing_of_regular_files_splits_at_their_modes(
        entries: list[tuple[str, str]]) -> None:
    """The split at each regular file's mode gives what splitting at every NUL gives, for any
    mix of modes (executables, symbolic links and gitlinks fall back to the NUL split)."""
    text = "".join(f"{path}\0{mode}\0" for path, mode in entries)
    fields = [field for entry in entries for field in entry]
    assert gitindex.by_format(text) == gitindex._by_fields(fields)
    assert gitindex.by_format(text)[0] == tuple(path for path, _mode in entries)


def test_a_git_without_format_is_asked_for_the_stages(tmp_path: Path) -> None:
    """Git before 2.38 refuses `--format`: the hook lists the stages and finds the same."""
    repo = odd_index(tmp_path)
    real = shutil.which("git")
    assert real is not None
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = folder / "git"
    fake.write_text("#!/bin/sh\ncase \" $* \" in *\" --format=\"*) echo \"error: unknown option "
                    "\\`format'\" >&2; exit 129;; esac\n"
                    f'exec {shlex.quote(real)} "$@"\n', encoding="utf-8")
    fake.chmod(0o755)
    runs = [subprocess.run([HOOK, f"{PAGES}/home.md"], cwd=repo, capture_output=True, text=True,
                           check=False, timeout=120, env={**os.environ, **extra})
            for extra in ({}, {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"})]
    assert runs[0].returncode == runs[1].returncode == 1, runs
    assert runs[0].stdout == runs[1].stdout
    assert "EchoesVault/assets/sub:1:1: EV046" in runs[1].stdout
    assert "EchoesVault/index.md:1:1: EV020" in runs[1].stdout


SPY = """import sys
from echoes_lint import gitindex
start = gitindex._start

def spy(folder, args):
    loaded = 'echoes_lint.engine' in sys.modules
    sys.stderr.write(f"git {args[0]} started, engine loaded: {loaded}\\n")
    return start(folder, args)

gitindex._start = spy
"""


@pytest.mark.parametrize(("entry", "started"), [
    ("from echoes_lint.precommit import lint_main; sys.exit(lint_main(['EchoesVault/pages/Home.md']))",
     # The staged changes only when a finding asks whether its file is new.
     [("ls-files", False), ("rev-parse", False), ("diff", True)]),
    ("from echoes_lint.cli import main; sys.exit(main(['check', '--staged']))",
     [("ls-files", False), ("rev-parse", False), ("diff", False)])])
def test_the_hooks_start_the_listing_before_the_engine_loads_and_list_once(
        tmp_path: Path, entry: str, started: list[tuple[str, bool]]) -> None:
    """The one-file hook and the plain Git hook (`check --staged`, which also asks for the
    staged changes): git reads the index while the engine and the linter load, and the check
    takes what it started."""
    repo = vault_repo(tmp_path / "repo")
    staged_collision(repo)
    run = subprocess.run([sys.executable, "-c", SPY + entry], cwd=repo, capture_output=True,
                         text=True, check=False, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stderr == "".join(f"git {command} started, engine loaded: {loaded}\n"
                                 for command, loaded in started)
    assert f"{PAGES}/Home.md:1:1: EV030" in run.stdout


def test_without_a_file_for_the_listing_git_lists_into_a_pipe(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no unnamed or temporary file can be made, the same listing comes through a pipe."""
    repo = odd_index(tmp_path)
    listed = gitindex.output(repo)
    assert listed[0] is not None
    monkeypatch.setattr(gitindex, "_sink", lambda: None)
    assert gitindex.output(repo) == listed
