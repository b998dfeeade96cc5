"""Git's index over the vault and the local-only paths, listed by one `git ls-files`.

A pre-commit hook starts the listing first (`start`), before it loads even the engine, so that
git reads a large index while the linter's modules load; the check then takes it (`output`) or,
elsewhere, lists the index itself. Git writes the listing into an unnamed file, not a pipe: it
never waits for a reader, and the whole listing (6 MB at 100,000 pages) comes back in one read
instead of a loop of 32 KB reads. Each entry is its path and its mode (gitlinks are the only
mode a check needs). The common index (ASCII, no gitlink) stays that text, which a check
searches (`listed`); any other comes out of one split, without a slice per entry.
`check --staged` starts Git's staged diff the same way (`staged_diff`).
"""

from __future__ import annotations

import itertools
import operator
import os
import sys

TYPE_CHECKING = False  # not `typing`'s: the listing starts before `typing` loads
if TYPE_CHECKING:
    import mmap
    import subprocess
    from pathlib import Path
    from typing import IO, Optional, Union

# The engine's VAULT_DIR and LOCAL_ONLY_PATHS, spelled out (a test holds them equal) so that the
# listing starts before the engine loads. No entry starts with a digit, so neither does any path
# listed: `GitIndex.at` tells a path from a mode by its first character.
SCOPE = ("EchoesVault", "EchoesVault/index.md", ".echoes-vault/state.json", ".echoes-vault/lock",
         ".echoes-vault/intent.json", ".echoes-vault/cache.json", ".opencode/echoes-state.json",
         ".codex/echoes-vault-state.json")
# Each entry comes as `<path>NUL<mode>NUL` (`--format`: git 2.38 and later).
LS_FILES = ("ls-files", "-z", "--cached", "--format=%(path)%x00%(objectmode)", "--", *SCOPE)
# Older git: each entry as `<mode> <object id> <stage>\t<path>NUL`.
LS_STAGE = ("ls-files", "-z", "--cached", "--stage", "--", *SCOPE)
# The staged changes, for `check --staged`: `:<old mode> <new mode> <old id> <new id> <status>`
# NUL `<path>` NUL.
DIFF_STAGED = ("diff", "--cached", "--raw", "-z", "--no-renames", "--no-abbrev", "--", *SCOPE)
GITLINK_MODE = "160000"
GITLINK = f"\0{GITLINK_MODE}\0"  # a gitlink's mode between the NULs that end its path and it
REGULAR = "\x00100644\x00"  # a regular file's mode between the NULs that end its path and it
if TYPE_CHECKING:
    # (paths in Git's order (sorted; an unmerged path once per stage), the gitlinks among them)
    Listing = tuple[tuple[str, ...], frozenset[str]]
    # A Listing, or the common index as Git listed it (`listed`).
    Listed = Union[str, Listing]
    # (git listing into the file (None: a pipe), the file) or (None, why git cannot run).
    Started = Union[tuple[Union[subprocess.Popen[bytes], "_Spawned"], Optional[IO[bytes]]],
                    tuple[None, str]]
    Buffer = Union[bytes, mmap.mmap]  # git's output, read or mapped

_started: dict[str, Started] = {}
_diffs: dict[str, Started] = {}


def start(folder: Optional[str] = None, staged: bool = False) -> None:
    """List, from now on, the index of `folder` (default: the folder this process runs in:
    where pre-commit runs a hook, the repository root, the usual engine workspace), and with
    `staged` its staged changes too, unless they run already. A check takes them if it looks
    there."""
    try:
        folder = os.getcwd() if folder is None else folder
    except OSError:  # the folder is gone: the check says so
        return
    key = os.path.realpath(folder)
    if key not in _started:
        discard()
        _started[key] = _start(folder, LS_FILES)
    if staged and key not in _diffs:
        _diffs[key] = _start(folder, DIFF_STAGED)


def staged_diff(root: Path) -> tuple[Optional[bytes], Optional[str]]:
    """`engine.git_output` of `DIFF_STAGED` in `root`, from the one started there if any."""
    started = _diffs.pop(os.path.realpath(root), None)
    data, cause = _finish(started if started is not None else _start(str(root), DIFF_STAGED),
                          DIFF_STAGED)
    return None if data is None else bytes(data), cause  # read, not mapped: bytes already


def output(root: Path) -> tuple[Optional[Listed], Optional[str]]:
    """(the listing, None) of the index in the engine workspace `root`, from the listing started
    for it if there is one; (None, why) when git fails, as `engine.git_output` says it."""
    started = _started.pop(os.path.realpath(root), None)
    if started is None:
        started = _start(str(root), LS_FILES)
    clean = _searched(started)
    data, cause = _finish(started, LS_FILES, mapped=True)
    if data is not None:
        return listed(_text(data), clean), None
    # Git before 2.38 knows no --format (or it failed: the stages say whether it fails again).
    data, cause = _finish(_start(str(root), LS_STAGE), LS_STAGE)
    return (None, cause) if data is None else (_by_stage(_decode(data)), None)


def _text(data: Buffer) -> str:
    # One decode of the whole listing is os.fsdecode of each path: NUL ends every entry.
    return str(data, sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())


def _decode(data: Buffer) -> list[str]:
    items = _text(data).split("\0")
    items.pop()  # every entry ends with NUL
    return items


def listed(entries: str, clean: int = 0) -> Listed:
    """The listing of `LS_FILES`; for the common index, Git's output itself: ASCII paths (so
    Git's order, by bytes, is Python's) and no gitlink. A check searches that text
    (`rules.context.GitIndex`) instead of making a string of every path. `clean`: how many
    bytes at the start of git's output are known to hold no gitlink (`_searched`)."""
    if entries.isascii() and entries.find(GITLINK, max(0, clean - len(GITLINK) + 1)) < 0:
        return entries  # (no path is a mode, so the gitlinks are the entries of that mode)
    return by_format(entries)


def _searched(started: Started) -> int:
    """How many bytes at the start of the output of the listing `started` hold no gitlink
    entry (none when one is found): searched while git still writes them, where the hook
    would otherwise wait for git doing nothing (at 100,000 pages the search of the whole
    output costs ~2 ms after git ends)."""
    process, sink = started
    if not isinstance(process, _Spawned) or sink is None or isinstance(sink, str):
        return 0
    needle, clean = GITLINK.encode("ascii"), 0
    # Until git ends, or `_finish`'s hang guard (60 s from the first wait) ends it.
    while not process.ended(0.001) and process.left(60) > 0:
        written = os.fstat(sink.fileno()).st_size
        while written - clean >= len(needle):
            start = max(0, clean - len(needle) + 1)
            part = os.pread(sink.fileno(), min(written, start + _PART) - start, start)
            if needle in part:
                return 0
            if len(part) < len(needle):  # a file cut short under it: search it no further
                return clean
            clean = start + len(part)
    return clean


# Bytes of git's output searched at a time (small enough to reuse the memory of the last).
_PART = 1 << 16


def by_format(entries: str) -> Listing:
    """The listing of `LS_FILES`: a path, then its mode, each ended by NUL."""
    # The common index holds regular files only: split at each `NUL 100644 NUL`, the listing
    # gives the paths alone, without a string per mode. No path is `100644` (each starts with
    # a path of SCOPE), so the parts are the paths when they are half as many as the NULs.
    paths = entries.split(REGULAR)
    if not paths.pop() and 2 * len(paths) == entries.count("\0"):
        return tuple(paths), frozenset()
    items = entries.split("\0")
    items.pop()
    return _by_fields(items)


def _by_fields(items: list[str]) -> Listing:
    """`by_format` of the listing split at each NUL: paths and modes in turn."""
    paths, modes = items[::2], items[1::2]
    gitlinks = frozenset(path for path, mode in zip(paths, modes) if mode == GITLINK_MODE) \
        if GITLINK_MODE in modes else frozenset()
    return tuple(paths), gitlinks


def _by_stage(records: list[str]) -> Listing:
    """The listing of `LS_STAGE`."""
    if not records:
        return (), frozenset()
    # The mode and the stage have fixed widths and the object id one length per repository
    # (SHA-1 or SHA-256), so every path starts at the same column.
    start = records[0].find("\t") + 1
    paths = tuple(map(operator.itemgetter(slice(start, None)), records))
    return paths, frozenset(itertools.compress(
        paths, map(operator.methodcaller("startswith", f"{GITLINK_MODE} "), records)))


def discard() -> None:
    """End the listings nobody took (a hook without a vault there, or with one elsewhere)."""
    for process, sink in (*_started.values(), *_diffs.values()):
        if process is not None:
            process.kill()
            process.communicate()
        if sink is not None and not isinstance(sink, str):
            sink.close()
    _started.clear()
    _diffs.clear()


def _start(folder: str, args: tuple[str, ...]) -> Started:
    sink = _sink()
    try:
        if sink is not None and _spawnable(sink):
            return _Spawned(folder, args, sink), sink
        import subprocess

        try:
            return subprocess.Popen(["git", *args], cwd=folder, stderr=subprocess.PIPE,
                                    stdout=subprocess.PIPE if sink is None else sink,
                                    stdin=subprocess.DEVNULL), sink
        except subprocess.SubprocessError as exc:
            cause = f"cannot run git: {exc}"
    except FileNotFoundError:
        cause = "git is not installed or not on PATH"
    except OSError as exc:
        cause = f"cannot run git: {exc}"
    if sink is not None:
        sink.close()
    return None, cause


def _spawnable(sink: IO[bytes]) -> bool:
    """Whether `_Spawned` may run git into `sink`; else `subprocess.Popen` does, which copes
    with what posix_spawn's file actions cannot: a standard stream closed, so that `sink` is
    fd 0, 1 or 2 (the file actions would open /dev/null over it), or SIGCHLD ignored, so
    that the system reaps git itself and its status is lost to `waitpid`."""
    if not hasattr(os, "posix_spawnp") or sink.fileno() <= 2:
        return False
    import signal

    return signal.getsignal(signal.SIGCHLD) is not signal.SIG_IGN


def _sink() -> Optional[IO[bytes]]:
    """An unnamed file for git's output: in memory where the system has them (Linux), else a
    temporary file; None (a pipe, then) where neither can be made."""
    try:
        create = getattr(os, "memfd_create", None)
        if create is not None:
            return os.fdopen(create("echoes-lint-git"), "w+b")
        import tempfile

        return tempfile.TemporaryFile()
    except OSError:
        return None


def _finish(started: Started, args: tuple[str, ...],
            mapped: bool = False) -> tuple[Optional[Buffer], Optional[str]]:
    """Git's output and None, or None and why git failed. `mapped`: the output may come as the
    file itself, mapped into memory (not copied into fresh pages: at 6 MB the copy's page
    faults cost more than decoding it)."""
    import subprocess

    process, sink = started
    if process is None or isinstance(sink, str):
        return None, str(sink)
    output: Optional[Buffer]
    with process:
        try:
            # With the listing in a file, only git's messages pass through a pipe: read until
            # git ends.
            output, errors = process.communicate(timeout=60)
        except (OSError, subprocess.SubprocessError) as exc:
            process.kill()
            process.wait()
            output, errors = None, f"cannot run git: {exc}".encode()
        finally:
            if sink is not None:
                if process.returncode == 0:
                    output = _read(sink, mapped)
                sink.close()
    if process.returncode == 0 and output is not None:
        return output, None
    message = errors.decode("utf-8", "backslashreplace").strip()
    return None, message[:2000] or f"git {args[0]} exited {process.returncode}"


def _read(sink: IO[bytes], mapped: bool) -> Buffer:
    """The whole file: mapped when `mapped` and the system can map it, else read."""
    if mapped:
        import mmap

        try:
            # The mapping outlives the file's descriptor; it holds what git wrote, which has ended.
            return mmap.mmap(sink.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # empty (ValueError), or no mapping here: read it
            pass
    sink.seek(0)
    return sink.read()


class _Spawned:
    """A git started by `os.posix_spawnp` (POSIX): the hook starts it before `subprocess` loads
    (~4 ms at each start, which git's listing of a large index waits for otherwise). Its output
    goes to `sink`, its messages through a pipe. What `_finish` and `discard` use of
    `subprocess.Popen`, with the same meaning."""

    def __init__(self, folder: str, args: tuple[str, ...], sink: IO[bytes]) -> None:
        import signal

        self.returncode: Optional[int] = None
        self._since: Optional[float] = None  # when something first waited for git
        self._errors, errors = os.pipe()
        try:
            # posix_spawn cannot change the folder: `-C` runs git as if started in `folder`.
            # SIGPIPE and SIGXFSZ back to their defaults, as `subprocess` does for its children.
            self.pid = os.posix_spawnp("git", ["git", "-C", folder, *args], os.environ,
                                       file_actions=[
                                           (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                                           (os.POSIX_SPAWN_DUP2, sink.fileno(), 1),
                                           (os.POSIX_SPAWN_DUP2, errors, 2)],
                                       setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
        except BaseException:
            os.close(self._errors)
            raise
        finally:
            os.close(errors)

    def __enter__(self) -> _Spawned:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._close()
        self.wait()

    def communicate(self, timeout: Optional[float] = None) -> tuple[None, bytes]:
        """(None, git's messages) once git has ended; `subprocess.TimeoutExpired` when it has
        not closed its messages within `timeout` seconds of the first wait for it (`ended`
        included). No sleep: git's end wakes the wait."""
        import select

        chunks = []
        waiting = select.poll()
        waiting.register(self._errors, select.POLLIN)
        while self._errors >= 0:
            left = None if timeout is None else max(0.0, self.left(timeout))
            if not waiting.poll(None if left is None else left * 1000):
                import subprocess

                raise subprocess.TimeoutExpired("git", timeout or 0.0)
            chunk = os.read(self._errors, 65536)
            if not chunk:  # git closed its messages: it has ended
                self._close()
            chunks.append(chunk)
        self.wait()
        return None, b"".join(chunks)

    def ended(self, timeout: float) -> bool:
        """Whether git has closed its messages within `timeout` seconds (or has written one:
        the caller waits in `communicate` then)."""
        self.left(0)  # the wait starts
        if self._errors < 0:
            return True
        import select

        waiting = select.poll()
        waiting.register(self._errors, select.POLLIN)
        return bool(waiting.poll(timeout * 1000))

    def left(self, timeout: float) -> float:
        """Seconds left of `timeout`, counted from the first wait for git."""
        import time

        now = time.monotonic()
        if self._since is None:
            self._since = now
        return self._since + timeout - now

    def wait(self) -> int:
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            import contextlib
            import signal

            with contextlib.suppress(ProcessLookupError):  # reaped already: nothing to end
                os.kill(self.pid, signal.SIGKILL)

    def _close(self) -> None:
        if self._errors >= 0:
            os.close(self._errors)
            self._errors = -1
