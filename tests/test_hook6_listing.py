"""The hook's `git ls-files` starts before `subprocess` loads (`os.posix_spawnp`), and behaves
as the `subprocess.Popen` it replaces: its output, its messages, its status, its timeout."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_check import PAGES, vault_repo
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hook_listing import fake_git_folder, staged_collision

from echoes_lint import gitindex

SPY = """import sys
from echoes_lint import gitindex
start = gitindex._start

def spy(folder, args):
    sys.stderr.write(f"git {args[0]} started, subprocess loaded: {'subprocess' in sys.modules}\\n")
    return start(folder, args)

gitindex._start = spy
from echoes_lint.precommit import lint_main
sys.exit(lint_main(['EchoesVault/pages/Home.md']))
"""

needs_spawn = pytest.mark.skipif(not hasattr(os, "posix_spawnp"), reason="no posix_spawn")


@needs_spawn
def test_the_hook_starts_git_before_subprocess_loads(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    staged_collision(repo)
    run = subprocess.run([sys.executable, "-c", SPY], cwd=repo, capture_output=True, text=True,
                         check=False, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stderr.startswith("git ls-files started, subprocess loaded: False\n")
    assert f"{PAGES}/Home.md:1:1: EV030 new file" in run.stdout


def fake_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """A `git` first on PATH that runs `script` for `ls-files` and is the real git otherwise."""
    folder = fake_git_folder(tmp_path, script)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def test_git_runs_in_the_folder_asked_with_its_messages_and_status(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`-C folder`: the listing of the folder asked, from anywhere; a failing git's own words
    and its status, as `subprocess` gives them."""
    repo = vault_repo(tmp_path / "repo")
    monkeypatch.chdir(tmp_path)
    listed, cause = gitindex.output(repo)
    assert cause is None and isinstance(listed, gitindex.Written)  # as git wrote it
    assert b"EchoesVault/pages/home.md\x00" in bytes(listed.data)
    assert b"100644" not in bytes(listed.data)  # the paths alone
    fake_git(tmp_path, monkeypatch, "printf 'half' ; echo 'fatal: index file corrupt' >&2; exit 128")
    started = gitindex._start(str(repo), gitindex.LS_FILES)
    assert gitindex._finish(started, gitindex.LS_FILES) == (None, "fatal: index file corrupt")
    assert getattr(started[0], "returncode", None) == 128


def test_a_git_that_does_not_end_times_out_and_is_killed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = vault_repo(tmp_path / "repo")
    fake_git(tmp_path, monkeypatch, "exec sleep 30")
    process, sink = gitindex._start(str(repo), gitindex.LS_FILES)
    assert process is not None and sink is not None and not isinstance(sink, str)
    with pytest.raises(subprocess.TimeoutExpired):
        process.communicate(timeout=0.2)
    if isinstance(process, gitindex._Spawned):  # the hang guard counts from the first wait
        assert process.left(0.2) <= 0
        with pytest.raises(subprocess.TimeoutExpired):
            process.communicate(timeout=0.2)
    process.kill()
    assert process.wait() == -9
    with process:  # closes what is left, waits no more
        pass
    sink.close()


def test_a_listing_nobody_takes_is_killed_and_reaped(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    repo = vault_repo(tmp_path / "repo")
    fake_git(tmp_path, monkeypatch, "exec sleep 30")
    gitindex.start(str(repo))
    process = next(iter(gitindex._started.values()))[0][0]
    assert process is not None and process.returncode is None
    gitindex.discard()
    assert process.returncode == -9 and gitindex._started == {}


@needs_spawn
@pytest.mark.parametrize(("last", "common"), [(b"EchoesVault/b\0", True),
                                              (b"EchoesVault/\xc3\xa9\0", False)])
def test_the_output_is_searched_while_git_writes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, last: bytes, common: bool) -> None:
    """What git has written is searched while the hook waits for the rest; the verdict is
    that of a search after git ends, a name beyond ASCII found early or late alike."""
    repo = vault_repo(tmp_path / "repo")
    (tmp_path / "first").write_bytes(b"EchoesVault/a.md\x00" * 6000)  # two parts
    (tmp_path / "last").write_bytes(last)
    go = tmp_path / "go"  # git writes the rest once the search has gone over the first part
    fake_git(tmp_path, monkeypatch,
             f"cat {shlex.quote(str(tmp_path / 'first'))}; i=0; "
             f"while [ ! -e {shlex.quote(str(go))} ] && [ $i -lt 3000 ]; do sleep 0.02; "
             f"i=$((i+1)); done; cat {shlex.quote(str(tmp_path / 'last'))}; exit 0")
    started = gitindex._start(str(repo), gitindex.LS_PATHS)
    process, sink = started
    assert isinstance(process, gitindex._Spawned) and sink is not None
    ended, waits = process.ended, []

    def ended_after_the_first_part(timeout: float) -> bool:
        # Two waits once the first part is all written: a whole search of it lies between.
        if os.fstat(sink.fileno()).st_size >= (tmp_path / "first").stat().st_size:
            waits.append(timeout)
            if len(waits) == 2:
                go.touch()
        return ended(timeout)

    monkeypatch.setattr(process, "ended", ended_after_the_first_part)
    clean = gitindex._searched(started)
    data, cause = gitindex._finish(started, gitindex.LS_PATHS, mapped=True)
    assert cause is None and data is not None
    # All it had written before the pause, at least; or -1: a name beyond ASCII (`output`
    # searches no more then).
    assert clean >= (tmp_path / "first").stat().st_size or (clean == -1 and not common)
    assert (clean >= 0 and gitindex._search(data, clean, len(data)) >= 0) is common
    assert (gitindex._search(data, 0, len(data)) >= 0) is common


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(["a", "b", "\u00e9"]), max_size=6), st.data())
def test_a_listing_known_ascii_up_to_any_point_before_a_name_beyond_is_the_same(
        names: list[str], data: st.DataObject) -> None:
    output = "".join(f"EchoesVault/{name}\0" for name in names).encode()
    first = next((at for at, byte in enumerate(output) if byte > 127), len(output))
    clean = data.draw(st.integers(0, first))
    assert gitindex._search(output, clean, len(output)) == gitindex._search(output, 0, len(output))


@needs_spawn
def test_the_search_while_git_writes_stops_at_the_hang_guard(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A git that never ends is searched no longer than `_finish` waits for it (60 s from the
    first wait, shortened here), which then ends it."""
    repo = vault_repo(tmp_path / "repo")
    fake_git(tmp_path, monkeypatch, "exec sleep 30")
    process, sink = gitindex._start(str(repo), gitindex.LS_PATHS)
    assert isinstance(process, gitindex._Spawned)
    monkeypatch.setattr(gitindex._Spawned, "left", lambda self, timeout: 0.0)
    assert gitindex._searched((process, sink)) == 0
    output, cause = gitindex._finish((process, sink), gitindex.LS_PATHS)
    assert output is None and cause is not None and "timed out" in cause
    assert process.returncode == -9


SIGCHLD_IGNORED = """import os, signal, sys
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # inherited through exec, as from such a parent
os.execv(sys.executable, [sys.executable, "-m", "echoes_lint", *sys.argv[1:]])
"""
STDIN_CLOSED = """import os, sys
os.close(0)  # git's output file then takes fd 0
os.execv(sys.executable, [sys.executable, "-m", "echoes_lint", *sys.argv[1:]])
"""


@pytest.mark.parametrize("wrapper", [SIGCHLD_IGNORED, STDIN_CLOSED], ids=["sigchld", "stdin"])
def test_the_listing_runs_where_posix_spawn_could_not_follow_git(tmp_path: Path,
                                                                 wrapper: str) -> None:
    """A parent that ignores SIGCHLD (the system reaps git, its status lost to waitpid) or
    closed the hook's stdin (the output file is fd 0, where the spawn puts /dev/null): git
    runs as `subprocess` runs it, and the staged collision is found."""
    repo = vault_repo(tmp_path / "repo")
    staged_collision(repo)
    run = subprocess.run([sys.executable, "-c", wrapper, "check", "--staged"], cwd=repo,
                         capture_output=True, text=True, check=False, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"{PAGES}/Home.md:1:1: EV030 new file" in run.stdout
    assert run.stderr == ""
