"""Git lists the index before the hook proves it (issue 13): the index file is opened and its
identity taken before git starts, git's listing of the paths alone starts at once, and the
bytes are proved while git lists (at 100,000 pages the proof takes about as long as half of
git's listing, which no longer waits for it). Where the proof fails, the listing of the paths is
ended and the listing with the modes starts, still before the hook's imports; the file proved is
still the one git read (the tests of `test_hook10_proof.py` swap it around git's listing)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_check import PAGES, vault_repo
from test_hook9_gitlinks import FOUND, add_gitlink
from test_hook_listing import staged_collision

from echoes_lint import gitindex

# A hook run in-process that records, in order, each git it starts (the listing of the paths,
# of the modes, or another), each proof of the index bytes, and each git it ends unread.
SPY = """\
import sys
from echoes_lint import gitindex, precommit
events, start, proven, end = [], gitindex._start, gitindex._proven, gitindex._end
names, kinds = {gitindex.LS_PATHS: "paths", gitindex.LS_FILES: "modes"}, {}
def started(folder, args):
    events.append(("start", names.get(args, "other"), "echoes_lint.check" in sys.modules))
    process = start(folder, args)
    kinds[id(process[0])] = names.get(args, "other")
    return process
def proving(index):
    events.append(("prove", len(index) > 0, "echoes_lint.check" in sys.modules))
    return proven(index)
def ended(process):
    events.append(("end", kinds.get(id(process[0]), "other"), False))
    return end(process)
gitindex._start, gitindex._proven, gitindex._end = started, proving, ended
status = precommit.lint_main([HOOK_FILE])
print(status)
print(events)
"""


def spied(repo: Path, path: str) -> tuple[str, list[tuple[str, str, bool]]]:
    run = subprocess.run([sys.executable, "-c", SPY.replace("HOOK_FILE", repr(path))], cwd=repo,
                         capture_output=True, text=True, check=False, timeout=120)
    lines = run.stdout.splitlines()
    assert len(lines) >= 2, run.stdout + run.stderr
    return "\n".join(lines[:-2]) + "\n" + lines[-2], ast.literal_eval(lines[-1])


def test_the_listing_of_the_paths_starts_before_the_proof(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    staged_collision(repo)
    output, events = spied(repo, f"{PAGES}/Home.md")
    assert output.splitlines()[-1] == "1", output
    kinds = [(kind, what) for kind, what, _ in events]
    assert kinds.index(("start", "paths")) < kinds.index(("prove", True)), events
    # Both before the hook's imports; the proof held, so no listing with the modes.
    assert not any(imported for kind, what, imported in events
                   if (kind, what) in (("start", "paths"), ("prove", True))), events
    assert ("start", "modes") not in kinds, events


def test_a_failed_proof_ends_the_listing_of_the_paths_and_lists_the_modes(tmp_path: Path) -> None:
    """A gitlink in the vault: the listing of the paths, started before the proof, is ended
    unread, and the listing with the modes starts before the hook's imports; the gitlink is
    reported as before."""
    repo = vault_repo(tmp_path / "repo")
    add_gitlink(repo)
    output, events = spied(repo, f"{PAGES}/home.md")
    assert FOUND in output, output
    kinds = [(kind, what) for kind, what, _ in events]
    first, proof, modes = (kinds.index(("start", "paths")), kinds.index(("prove", True)),
                           kinds.index(("start", "modes")))
    assert first < proof < modes, events
    assert ("end", "paths") in kinds[proof:modes], events
    assert not events[modes][2], events  # before the imports


@pytest.mark.parametrize("header", [b"", b"DIRC", b"DIRC\0\0\0\1", b"DIRC\0\0\0\5", b"XXXX\0\0\0\2"])
def test_an_index_file_no_proof_can_hold_starts_no_listing_of_the_paths(
        tmp_path: Path, header: bytes) -> None:
    """A file whose header is not that of an index git writes (empty, cut short, a version git
    does not know) proves nothing: the listing with the modes starts, without a listing of the
    paths started in vain, and git's refusal of the file fails the hook."""
    repo = vault_repo(tmp_path / "repo")
    (repo / ".git" / "index").write_bytes(header + bytes(64 if header else 0))
    output, events = spied(repo, f"{PAGES}/home.md")
    kinds = [(kind, what) for kind, what, _ in events]
    assert ("start", "paths") not in kinds and ("start", "modes") in kinds, events
    assert ("prove", True) not in kinds and ("prove", False) not in kinds, events
    if header:  # (an empty index file is git's empty index)
        assert output.splitlines()[-1] == "2", output


def test_an_interrupted_proof_ends_the_git_it_started(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the bytes are proved: the listing of the paths and git naming the index,
    both started before the proof, are ended (none is left for `discard`: the listing was not
    yet kept), and the index file is closed."""
    repo = vault_repo(tmp_path / "repo")
    started: list[tuple[object, tuple[str, ...]]] = []
    ended: list[object] = []
    start, end = gitindex._start, gitindex._end

    def spied_start(folder: str, args: tuple[str, ...]) -> gitindex.Started:
        process = start(folder, args)
        started.append((process[0], args))
        return process

    def spied_end(process: gitindex.Started) -> None:
        ended.append(process[0])
        end(process)

    def interrupted(index: object) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(gitindex, "_start", spied_start)
    monkeypatch.setattr(gitindex, "_end", spied_end)
    monkeypatch.setattr(gitindex, "_proven", interrupted)
    opened = os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else None
    with pytest.raises(KeyboardInterrupt):
        gitindex.start(str(repo))
    assert [args for _, args in started] == [gitindex.LS_PATHS, gitindex.INDEX_FILE]
    assert {id(process) for process, _ in started} == {id(process) for process in ended}
    assert all(getattr(process, "returncode", None) is not None for process, _ in started)
    if opened is not None:
        assert sorted(os.listdir("/proc/self/fd")) == sorted(opened)
    gitindex.discard()


def test_the_index_header_is_read_without_pread(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows has no `os.pread`: the header is read where the file was just opened."""
    repo = vault_repo(tmp_path / "repo")
    monkeypatch.delattr(os, "pread")
    index = gitindex._Index.opened(str(repo))
    assert index is not None
    assert index.proved()
    index.close()
