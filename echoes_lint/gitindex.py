"""Git's index over the vault and the local-only paths, listed by one `git ls-files`.

A pre-commit hook starts the listing first (`start`), before it loads even the engine, so that
git reads a large index while the linter's modules load; the check then takes it (`output`) or,
elsewhere, lists the index itself. Git writes the listing into an unnamed file, not a pipe: it
never waits for a reader, and the whole listing (10 MB at 100,000 pages) comes back in one read
instead of a loop of 32 KB reads.
"""

from __future__ import annotations

import os
import subprocess
from typing import IO, TYPE_CHECKING, Optional, Union

if TYPE_CHECKING:
    from pathlib import Path

# The engine's VAULT_DIR and LOCAL_ONLY_PATHS, spelled out (a test holds them equal) so that the
# listing starts before the engine loads.
SCOPE = ("EchoesVault", "EchoesVault/index.md", ".echoes-vault/state.json", ".echoes-vault/lock",
         ".echoes-vault/intent.json", ".echoes-vault/cache.json", ".opencode/echoes-state.json",
         ".codex/echoes-vault-state.json")
# Each entry comes as `<mode> <object id> <stage>\t<path>` and ends with NUL.
LS_FILES = ("ls-files", "-z", "--cached", "--stage", "--", *SCOPE)

# (git listing into the file, the file) or (None, why git cannot run).
Started = Union[tuple["subprocess.Popen[bytes]", IO[bytes]], tuple[None, str]]
_started: dict[str, Started] = {}


def start() -> None:
    """List, from now on, the index of the folder this process runs in: where pre-commit runs a
    hook, the repository root, the usual engine workspace. A check takes it if it looks there."""
    discard()
    try:
        folder = os.getcwd()
    except OSError:  # the folder is gone: the check says so
        return
    _started[os.path.realpath(folder)] = _start(folder)


def output(root: Path) -> tuple[Optional[bytes], Optional[str]]:
    """(the listing, None) of `LS_FILES` in the engine workspace `root`, from the listing started
    for it if there is one; (None, why) when git fails, as `engine.git_output` says it."""
    started = _started.pop(os.path.realpath(root), None)
    return _finish(started if started is not None else _start(str(root)))


def discard() -> None:
    """End the listings nobody took (a hook without a vault there, or with one elsewhere)."""
    for process, sink in _started.values():
        if process is not None and not isinstance(sink, str):
            process.kill()
            process.communicate()
            sink.close()
    _started.clear()


def _start(folder: str) -> Started:
    sink = _sink()
    try:
        return subprocess.Popen(["git", *LS_FILES], cwd=folder, stdout=sink,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL), sink
    except FileNotFoundError:
        sink.close()
        return None, "git is not installed or not on PATH"
    except (OSError, subprocess.SubprocessError) as exc:
        sink.close()
        return None, f"cannot run git: {exc}"


def _sink() -> IO[bytes]:
    """An unnamed file for git's output: in memory where the system has them (Linux)."""
    create = getattr(os, "memfd_create", None)
    if create is not None:
        return os.fdopen(create("echoes-lint-ls-files"), "w+b")
    import tempfile

    return tempfile.TemporaryFile()


def _finish(started: Started) -> tuple[Optional[bytes], Optional[str]]:
    process, sink = started
    if process is None or isinstance(sink, str):
        return None, str(sink)
    with sink:
        with process:
            try:
                # Only git's messages pass through a pipe: read until git ends (no 60 s poll).
                _none, errors = process.communicate(timeout=60)
            except (OSError, subprocess.SubprocessError) as exc:
                process.kill()
                process.wait()
                return None, f"cannot run git: {exc}"
        if process.returncode == 0:
            sink.seek(0)
            return sink.read(), None
    message = errors.decode("utf-8", "backslashreplace").strip()
    return None, message[:2000] or f"git {LS_FILES[0]} exited {process.returncode}"
