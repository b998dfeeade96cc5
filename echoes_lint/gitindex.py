"""Git's index over the vault and the local-only paths, listed by one `git ls-files`.

A pre-commit hook starts the listing first (`start`), before it loads even the engine, so that
git reads a large index while the linter's modules load; the check then takes it (`output`) or,
elsewhere, lists the index itself. Git writes the listing into an unnamed file, not a pipe: it
never waits for a reader, and the whole listing (3 MB at 100,000 pages) comes back in one read
instead of a loop of 32 KB reads. Each entry is its path alone: the mode, read only to find
gitlinks, costs git ~50 ms more at 100,000 pages (`--format`), so it is asked for only when the
index file git reads does not prove that it holds no gitlink (`_Index`, opened before git
starts and proved while git lists; where the proof fails, the listing with the modes starts at
once, still before the hook's imports). The common index (ASCII, no gitlink) stays git's output,
undecoded, which a check searches (`Written`); any other comes out of one split, without a
slice per entry.
`check --staged` starts Git's staged diff the same way (`staged_diff`).
"""

from __future__ import annotations

import bisect
import itertools
import operator
import os
import sys

TYPE_CHECKING = False  # not `typing`'s: the listing starts before `typing` loads
if TYPE_CHECKING:
    import mmap
    import subprocess
    from pathlib import Path
    from typing import IO, Any, Optional, Union

# The engine's VAULT_DIR and LOCAL_ONLY_PATHS, spelled out (a test holds them equal) so that the
# listing starts before the engine loads.
SCOPE = ("EchoesVault", "EchoesVault/index.md", ".echoes-vault/state.json", ".echoes-vault/lock",
         ".echoes-vault/intent.json", ".echoes-vault/cache.json", ".opencode/echoes-state.json",
         ".codex/echoes-vault-state.json")
# SCOPE as Git's pathspec: the vault holds its index, which needs no pathspec of its own (git
# matches every index entry against each: one fewer is ~1 ms less at 100,000 pages).
PATHSPEC = tuple(path for path in SCOPE if not path.startswith(f"{SCOPE[0]}/"))
# Each entry comes as `<path>NUL` (the common listing).
LS_PATHS = ("ls-files", "-z", "--cached", "--", *PATHSPEC)
# Where the index git reads is (`GIT_INDEX_FILE`, which `git commit <paths>` sets for hooks, or
# the worktree's own), relative to the folder git runs in unless absolute.
INDEX_FILE = ("rev-parse", "--git-path", "index")
# When the index may hold a gitlink: each entry as `<path>NUL<mode>NUL` (`--format`: git 2.38
# and later).
LS_FILES = ("ls-files", "-z", "--cached", "--format=%(path)%x00%(objectmode)", "--", *PATHSPEC)
# Older git: each entry as `<mode> <object id> <stage>\t<path>NUL`.
LS_STAGE = ("ls-files", "-z", "--cached", "--stage", "--", *PATHSPEC)
# The staged changes, for `check --staged`: `:<old mode> <new mode> <old id> <new id> <status>`
# NUL `<path>` NUL.
DIFF_STAGED = ("diff", "--cached", "--raw", "-z", "--no-renames", "--no-abbrev", "--",
               *PATHSPEC)
GITLINK_MODE = "160000"
# A gitlink's mode as an index file holds it (a 32-bit big-endian field of each entry).
GITLINK_FIELD = int(GITLINK_MODE, 8).to_bytes(4, "big")
REGULAR = "\x00100644\x00"  # a regular file's mode between the NULs that end its path and it
if TYPE_CHECKING:
    # (paths in Git's order (sorted; an unmerged path once per stage), the gitlinks among them)
    Listing = tuple[tuple[str, ...], frozenset[str]]
    # A Listing, or the common index (ASCII paths, no gitlink: `<path>NUL` each) as text or as
    # git wrote it.
    Listed = Union[str, Listing, "Written"]
    # (git listing into the file (None: a pipe), the file) or (None, why git cannot run).
    Started = Union[tuple[Union[subprocess.Popen[bytes], "_Spawned"], Optional[IO[bytes]]],
                    tuple[None, str]]
    Buffer = Union[bytes, mmap.mmap]  # git's output, read or mapped
    # What EV030 folds of a listing (`survey`): the names of a folder, or the entries
    # `data[start:end]` of a folder below it at a level, to walk path by path.
    Fold = tuple[str, Union[list[str], tuple[int, int, int]]]
    Survey = list[Fold]

_started: dict[str, tuple[Started, Optional[_Index]]] = {}  # (listing, its proof) by folder
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
        _started[key] = _listing(folder)
    if staged and key not in _diffs:
        _diffs[key] = _start(folder, DIFF_STAGED)


def _listing(folder: str) -> tuple[Started, Optional[_Index]]:
    """Git listing the paths alone (`LS_PATHS`), and the index file that proves it holds no
    gitlink, opened before git starts and proved while git lists (at 100,000 pages the proof
    takes ~10 ms, which git's listing, ~20 ms, no longer waits for); else the listing with the
    modes (`LS_FILES`), started here too: before the hook's imports, not after them."""
    index = _Index.opened(folder)
    if index is not None:
        paths = _start(folder, LS_PATHS)
        index.named = _start(folder, INDEX_FILE)
        proved = False
        try:
            proved = index.proved()
        finally:
            if not proved:  # (or interrupted: no git started here outlives the proof)
                index.close()
                _end(paths)
        if proved:
            return paths, index
    return _start(folder, LS_FILES), None


def staged_diff(root: Path) -> tuple[Optional[bytes], Optional[str]]:
    """`engine.git_output` of `DIFF_STAGED` in `root`, from the one started there if any."""
    started = _diffs.pop(os.path.realpath(root), None)
    data, cause = _finish(started if started is not None else _start(str(root), DIFF_STAGED),
                          DIFF_STAGED)
    return None if data is None else bytes(data), cause  # read, not mapped: bytes already


def output(root: Path) -> tuple[Optional[Listed], Optional[str]]:
    """(the listing, None) of the index in the engine workspace `root`, from the listing started
    for it if there is one; (None, why) when git fails, as `engine.git_output` says it."""
    begun = _started.pop(os.path.realpath(root), None)
    started, index = _listing(str(root)) if begun is None else begun
    if index is not None:
        capitals = Capitals()
        clean = _searched(started, capitals)
        data, cause = _finish(started, LS_PATHS, mapped=True)
        if data is None:
            index.close()
            return None, cause
        if index.held():  # (after git's end: the file git read)
            if clean >= 0 and _search(data, clean, len(data), capitals) >= 0:
                return Written(data, capitals), None
            return (tuple(_decode(data)), frozenset()), None
        started = _start(str(root), LS_FILES)
    data, cause = _finish(started, LS_FILES, mapped=True)
    if data is not None:
        return _without_modes(data) or listed(text_of(data)), None
    # Git before 2.38 knows no --format (or it failed: the stages say whether it fails again).
    data, cause = _finish(_start(str(root), LS_STAGE), LS_STAGE)
    return (None, cause) if data is None else (_by_stage(_decode(data)), None)


class _Index:
    """The index file whose bytes proved that git's listing of the paths alone holds no
    gitlink, kept open while git lists. The proof holds for the file git read: the file was
    opened and its identity taken (`seen`) before git started, stays open (its inode number
    cannot be reused), and once git has ended its path still gives that identity (`held`);
    git replaces an index only by renaming a new file over it and never renames an old one
    back, so no other file was at the path meanwhile (an in-place write changes the size or
    times). The path is a guess, git's default (`GIT_INDEX_FILE`, which `git commit` sets for
    its hooks, else `.git/index`), which `held` accepts only if git names the same file
    (`INDEX_FILE`, started beside the listing: git lists without waiting for it). The bytes
    are proved after git starts (`proved`), from the file opened before: the same file."""

    __slots__ = ("descriptor", "name", "named", "path", "seen")

    def __init__(self, name: bytes, path: bytes, descriptor: int, seen: tuple[int, ...]) -> None:
        self.name, self.path, self.descriptor, self.seen = name, path, descriptor, seen
        self.named: Started = None, "not asked"

    @classmethod
    def opened(cls, folder: str) -> Optional[_Index]:
        """The index file git would read in `folder` by default, opened, if it is a regular file
        (opened without blocking: a FIFO is no proof) whose header `_proven` may prove; else
        None."""
        import stat

        name = os.fsencode(os.environ.get("GIT_INDEX_FILE") or os.path.join(".git", "index"))
        path = os.path.join(os.fsencode(folder), name)
        try:
            descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except (OSError, ValueError):  # (ValueError: a NUL in the name)
            return None
        try:
            seen = os.fstat(descriptor)  # (before git starts, and before the bytes are proved)
            if stat.S_ISREG(seen.st_mode) and os.read(descriptor, 8) in _PROVABLE:  # (at 0)
                return cls(name, path, descriptor, _identity(seen))
        except OSError:
            pass
        os.close(descriptor)
        return None

    def proved(self) -> bool:
        """Whether the file's bytes prove that git lists no gitlink from it (`_proven`)."""
        import mmap

        try:
            with mmap.mmap(self.descriptor, 0, access=mmap.ACCESS_READ) as index:
                return _proven(index)
        except (OSError, ValueError, OverflowError):  # (ValueError: empty)
            return False

    def held(self) -> bool:
        """Whether git names this file (`INDEX_FILE`) and the name still gives the file opened
        and unchanged; the file is closed then."""
        named, _cause = _finish(self.named, INDEX_FILE)
        self.named = None, "taken"
        try:
            return named == self.name + b"\n" and _identity(os.stat(self.path)) == self.seen
        except OSError:
            return False
        finally:
            self.close()

    def close(self) -> None:
        _end(self.named)
        if self.descriptor >= 0:
            os.close(self.descriptor)
            self.descriptor = -1


def _identity(status: os.stat_result) -> tuple[int, ...]:
    """What of a file's status changes when a rename puts another file at its path, or when it
    is written."""
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns


# The start of an index file `_proven` may prove: its signature, then a version git's format
# names.
_PROVABLE = (b"DIRC\0\0\0\2", b"DIRC\0\0\0\3", b"DIRC\0\0\0\4")


def _proven(index: Buffer) -> bool:
    """Whether the bytes of an index file prove that git lists no gitlink from it: a version
    git's format names (2, 3 or 4), no entry of a gitlink in the listing's scope that could
    sit where a gitlink's mode field is found (`_gitlink_at`; in version 4, whose entries
    `_gitlink_at` cannot place, no such field at all), and no extension that makes git list
    entries this file does not hold (`_extension_at`): those of a shared index (`link`: a
    split index), or those it expands from the trees of folders (`sdir`: a sparse index).
    The file is git's own, written on this machine (no clone carries one): the proof follows
    git's writer, and an index crafted against git's more lenient reader could mislead it."""
    if index[:8] not in _PROVABLE:
        return False
    import re

    # Searched by `re`, which skips to the rare first byte of each pattern in C: 2-3 times as
    # fast as `find`, which the frequent NULs of an index hold back (12 MB at 100,000 pages).
    # Each field found is checked: sizes, inode numbers, object ids hold its bytes by chance.
    if any(index[7] == 4 or _gitlink_at(index, found.end() - len(GITLINK_FIELD))
           for found in re.compile(_GITLINK_SEARCH).finditer(index)):
        return False
    # The extensions follow the entries, each of 64 bytes at least: not searched for there.
    extensions = 12 + 64 * int.from_bytes(index[8:12], "big")
    # A folder's name in the `TREE` extension may hold the names, too.
    chains: dict[int, bool] = {}
    return not any(_extension_at(index, found.start(), chains)
                   for signature in (b"link", b"sdir")  # (apart: `re` is slow on `link|sdir`)
                   for found in re.compile(signature).finditer(index, extensions))


# `GITLINK_FIELD` as a pattern (none of its bytes is special), found by its third byte (rare in
# an index), then the bytes around it.
_GITLINK_SEARCH = GITLINK_FIELD[2:] + b"(?<=" + GITLINK_FIELD + b")"
# The object id's size in each hash function git knows (SHA-1, SHA-256): an entry's and the
# checksum's that ends the file.
_ID_SIZES = (20, 32)
_LONG_NAME = 0xFFF  # an entry's name length field when the name is that long or longer
_EXTENDED = 0x4000  # an entry's flag: 2 more bytes of flags follow


def _gitlink_at(index: Buffer, mode: int) -> bool:
    """Whether a version 2 or 3 entry whose mode field is at `mode` could be a gitlink in the
    listing's scope: the mode and 3 more fields of 4 bytes, the object id, the flags (2 or 4
    bytes), then the path, which ends with NUL and whose length the flags' low 12 bits give."""
    for size in _ID_SIZES:
        flags_at = mode + 16 + size
        flags = int.from_bytes(index[flags_at:flags_at + 2], "big")
        start = flags_at + (4 if flags & _EXTENDED else 2)
        end = index.find(b"\0", start)
        length = flags & _LONG_NAME
        if end >= 0 and (end - start == length or length == _LONG_NAME <= end - start) \
                and _in_scope(index[start:end]):
            return True
    return False


# The pathspec, lowered: `GIT_ICASE_PATHSPECS` makes git match it whatever the case.
_SCOPE_LOWER = tuple(path.lower().encode("ascii") for path in PATHSPEC)


def _in_scope(path: bytes) -> bool:
    """Whether git's listing may hold `path`: a pathspec, below one (a folder), or a folder
    above one (git matches a gitlink as a folder). The index holds paths from the top of the
    repository and git applies the pathspec in the folder it runs in (a vault in `docs/`), so
    every part of `path` that starts after a slash is tried too."""
    lower = path.lower()
    starts = [0, *(at + 1 for at, byte in enumerate(lower) if byte == 0x2F)]
    return any(tail == each or tail.startswith(each + b"/") or each.startswith(tail + b"/")
               for tail in (lower[start:] for start in starts) for each in _SCOPE_LOWER)


def _extension_at(index: Buffer, position: int, chains: dict[int, bool]) -> bool:
    """Whether an extension could start at `position`: each extension is a 4-byte signature,
    its 4-byte size and that many bytes, and the last is followed by the checksum alone, so
    the chain from a real one lands on the checksum. `chains`: that answer for each position
    walked already (each is walked once: linear in the file)."""
    walked = []
    ends = {len(index) - size for size in _ID_SIZES}
    while position not in chains and position not in ends and position + 8 <= max(ends):
        walked.append(position)
        position += 8 + int.from_bytes(index[position + 4:position + 8], "big")
    landed = chains.get(position, position in ends)
    chains.update(dict.fromkeys(walked, landed))
    return landed


def text_of(data: Buffer) -> str:
    """Git's output as text."""
    # One decode of the whole listing is os.fsdecode of each path: NUL ends every entry.
    return str(data, sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())


def fields(text: str) -> list[str]:
    """The fields of git's output as text, each ended by NUL."""
    items = text.split("\0")
    items.pop()
    return items


def _decode(data: Buffer) -> list[str]:
    return fields(text_of(data))


def listed(text: str) -> Listed:
    """The listing of `LS_FILES`: its paths and gitlinks; as the common index (`<path>NUL`
    each) when it holds ASCII paths alone and no gitlink, for a check to search (the index
    file proved nothing, but the listing does)."""
    paths, gitlinks = by_format(text)
    return (paths, gitlinks) if gitlinks or not text.isascii() else "\0".join((*paths, ""))


def _without_modes(data: Buffer) -> Optional[Written]:
    """`listed` of `LS_FILES`'s output where it is the common index (ASCII, regular files
    alone), made in C from the bytes: the modes cut out, no decode, no string per path (at
    100,000 pages about half the time of `listed`). None for any other listing."""
    listing = bytes(data)
    if not listing.isascii():
        return None
    paths = listing.replace(REGULAR.encode("ascii"), b"\0")
    if 2 * paths.count(b"\0") != listing.count(b"\0"):  # (see `by_format`)
        return None
    capitals = Capitals()
    _search(paths, 0, len(paths), capitals)
    return Written(paths, capitals)


def _searched(started: Started, capitals: Optional[Capitals] = None) -> int:
    """How many bytes at the start of the output of the listing `started` are ASCII alone (-1
    when one is not: not the common listing), and (into `capitals`) their capitals: searched
    while git still writes them, where the hook would otherwise wait for git doing nothing (at
    100,000 pages the search of the whole output costs ~2 ms after git ends, the capitals as
    much)."""
    process, sink = started
    if not isinstance(process, _Spawned) or sink is None or isinstance(sink, str):
        return 0
    clean = 0
    # Until git ends, or `_finish`'s hang guard (60 s from the first wait) ends it.
    while not process.ended(0.001) and process.left(60) > 0:
        clean = _search(sink.fileno(), clean, os.fstat(sink.fileno()).st_size, capitals)
        if clean < 0:
            return clean  # (not searched again once git ends)
    return clean


def _search(output: Union[int, Buffer], clean: int, written: int,
            capitals: Optional[Capitals] = None) -> int:
    """How many of the `written` bytes at the start of the file `output` (or of the output
    itself), of which `clean` are known to, are ASCII alone; -1 when one is not. The capitals
    of those searched go into `capitals`."""
    while clean < written:
        stop = min(written, clean + _PART)
        part = os.pread(output, stop - clean, clean) if isinstance(output, int) \
            else output[clean:stop]
        if not part.isascii():
            return -1
        if not part:  # a file cut short under it: search it no further
            return clean
        if capitals is not None:
            capitals.add(clean, part)
        clean += len(part)
    return clean


# Bytes of git's output searched at a time (small enough to reuse the memory of the last).
_PART = 1 << 16


def by_format(entries: str) -> Listing:
    """The listing of `LS_FILES`: a path, then its mode, each ended by NUL."""
    # An index without gitlinks most often holds regular files only: split at each `NUL 100644
    # NUL`, the listing gives the paths alone, without a string per mode. No path is `100644`
    # (each starts with a path of SCOPE), so the parts are the paths when they are half as many
    # as the NULs.
    paths = entries.split(REGULAR)
    if not paths.pop() and 2 * len(paths) == entries.count("\0"):
        return tuple(paths), frozenset()
    return _by_fields(fields(entries))


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


# --- The survey: what EV030 folds of the common listing, found without the engine -----------

VAULT_PREFIX = f"{SCOPE[0]}/"
# Levels walked folder by folder (each joins its subtree once); deeper, one linear pass
# (`rules.collisions`).
WALKED_LEVELS = 6
UPPER = bytes(range(ord("A"), ord("Z") + 1))
# Every byte but the capitals and NUL: deleted, the capitals of each entry remain, then NUL.
_NOT_CAPITAL = bytes(code for code in range(256) if code and code not in UPPER)
# Characters of the listing that `_listed_unchanged` checks at a time (below the size that
# allocators map afresh for each request).
_CHUNK = 1 << 16


class Capitals:
    """The capitals and NULs of git's output (what `_listed_unchanged` keeps of a folder whose
    first path has none: the pages), taken part by part as the output is searched
    (`_search`), so that a folder's are joined, not translated, after git ends."""

    def __init__(self) -> None:
        self.bounds = [0]  # where each part starts, then where the last ends
        self.parts: list[bytes] = []

    def add(self, start: int, searched: bytes) -> None:
        """Keep the capitals of the output's bytes `searched`, from `start`: a part next to the
        last, or else the first of a new run (a search started over)."""
        if start != self.bounds[-1]:
            self.bounds, self.parts = [start], []
        self.parts.append(searched.translate(None, _NOT_CAPITAL))
        self.bounds.append(start + len(searched))

    def of(self, data: Buffer, start: int, end: int) -> Optional[bytes]:
        """The capitals and NULs of `data[start:end]`, from the parts it holds whole and its
        two ends; None when it holds no part whole, or more than a part at either end."""
        first = bisect.bisect_left(self.bounds, start)
        last = bisect.bisect_right(self.bounds, end) - 1
        if first >= last or self.bounds[first] - start > _PART or end - self.bounds[last] > _PART:
            return None
        return b"".join((data[start:self.bounds[first]].translate(None, _NOT_CAPITAL),
                         *self.parts[first:last],
                         data[self.bounds[last]:end].translate(None, _NOT_CAPITAL)))


class Written:
    """Git's common listing (`LS_PATHS`: ASCII paths, no gitlink) as git wrote it, and its
    `capitals`. Left undecoded: at 100,000 pages the decode costs more (fresh memory for 3 MB)
    than the few searches of a one-file hook."""

    __slots__ = ("capitals", "data")

    def __init__(self, data: Buffer, capitals: Optional[Capitals] = None) -> None:
        self.data, self.capitals = data, capitals


def survey(data: Union[str, Buffer], capitals: Optional[Capitals] = None) -> Optional[Survey]:
    """What EV030 folds to find the collisions of the paths of Git's common listing `data`
    (ASCII paths, no gitlink; as text, or as git wrote it), in order: the names of each
    folder walked, and the entries of each folder it cannot decide in C; None when a path is
    outside the vault or the listing is not sorted (Git sorts its index). Each folder is
    decided on its part of the listing, without a string per path where it can be
    (`_listed_walk`), on the bytes git wrote without a decode of them (or on their text)."""
    zero = _marks(data)[2]
    top = VAULT_PREFIX if isinstance(data, str) else VAULT_PREFIX.encode("ascii")
    if data and not (data[:len(top)] == top and at(data, top[:-1] + zero) == len(data)):
        return None
    folds: Survey = []
    return folds if _listed_walk(data, 0, len(data), top, folds, 0, capitals) else None


def _marks(data: Union[str, Buffer]) -> tuple[Any, Any, Any]:
    """The slash, the NUL and the zero of a listing as `data` holds it, text or bytes."""
    return ("/", "\0", "0") if isinstance(data, str) else (b"/", b"\0", b"0")


def _listed_walk(data: Any, position: int, end: int, folder: Any, folds: Survey,
                 level: int, capitals: Optional[Capitals] = None) -> bool:
    """Add to `folds` what to fold below `folder`, whose entries are `data[position:end]` (each
    a path ended by NUL; `folder` text or bytes as `data`). A folder below whose first path has
    no capital is skipped if folding leaves all its paths alone (`_listed_unchanged`); a folder
    of files alone (the date folders of daily entries: capitals in every name) if lowering
    (ASCII folds so) keeps its names apart. False when the listing is not sorted."""
    slash, nul, zero = _marks(data)
    names = set()
    while position < end:
        stop = _ended(data, nul, position)
        name, slash_found, rest = data[position + len(folder):stop].partition(slash)
        names.add(name)
        if not slash_found:
            position = stop + 1
            continue
        last = at(data, folder + name + zero)  # "0" follows "/"
        if not position < last <= end:  # not sorted: never loop on it
            return False
        below, start = folder + name + slash, position
        position = last
        if _listed_unchanged(data, start, last, below, rest, capitals):
            continue
        if slash in rest and level + 1 < WALKED_LEVELS:
            # The first path's folder holds a folder: walked on the listing (as below), without
            # a copy of its entries (the daily folder: 2 MB at 100,000 pages).
            if not _listed_walk(data, start, last, below, folds, level + 1, capitals):
                return False
            continue
        entries = data[start:last]
        depth = below.count(slash)
        if slash not in rest:
            # Files alone? As many slashes as `depth` times the paths says that each is a file
            # of `below`.
            parts = entries.lower().split(nul)
            flat = not parts.pop() and entries.count(slash) == len(parts) * depth
            if flat and len(set(parts)) == len(parts):
                continue
        if level + 1 < WALKED_LEVELS and (
                slash in rest or entries.count(slash) != entries.count(nul) * depth):
            # A folder below (the first path's, or one whose path has more slashes).
            if not _listed_walk(data, start, last, below, folds, level + 1, capitals):
                return False
            continue
        folds.append((_str(below), (start, last, level + 1)))
    if len(names) > 1:  # (one name collides with none)
        folds.append((_str(folder), [_str(name) for name in names]))
    return True


def _str(name: Union[str, bytes]) -> str:
    return name if isinstance(name, str) else name.decode("ascii")


def _listed_unchanged(data: Union[str, Buffer], start: int, end: int,
                      folder: Union[str, bytes], first: Union[str, bytes] = b"",
                      capitals: Optional[Capitals] = None) -> bool:
    """Whether folding keeps apart every two paths of the listing entries `data[start:end]`,
    all below `folder`, as lowering does: ASCII entries that keep below `folder`, of their
    capitals and the lower-case twins of those of `first` (the first path's part below it),
    what `first` keeps (the folder of a day's entries, `<stamp>-<slug>.md`: each stamp's `T`
    and `Z`, and no `t` or `z`). Two such paths that lowering makes one have their capitals and
    those twins at the same places, where they are then one and the same: lowering is
    one-to-one below `folder`. With no capital in `first`: folding leaves every path as it is
    (the twins of none kept). In C, a few entries at a time: a slice as large as a folder of
    100,000 pages would take fresh memory, a page fault for each 4 KB, where these small ones
    reuse what the last one freed. `capitals` (of the common listing `data`, as git wrote it):
    with no capital in `first`, what each entry keeps is joined from them."""
    below = _bytes(first)  # (the common listing is ASCII)
    twins = below.translate(None, _NOT_CAPITAL).lower()  # of its capitals: each entry keeps them
    keep = _NOT_CAPITAL.translate(None, twins)
    unit = (_bytes(folder) + below).translate(None, keep) + b"\0"
    kept = None if twins or capitals is None or isinstance(data, str) else \
        capitals.of(data, start, end)
    if kept is not None:
        return not len(kept) % len(unit) and kept == unit * (len(kept) // len(unit))
    while start < end:
        stop = end if end - start <= _CHUNK else _ended(data, _marks(data)[1], start + _CHUNK) + 1
        entries = data[start:stop]
        if not entries.isascii():
            return False
        kept = _bytes(entries).translate(None, keep)
        count, extra = divmod(len(kept), len(unit))
        if extra or kept != unit * count:
            return False
        start = stop
    return True


def _bytes(part: Union[str, bytes]) -> bytes:
    return part.encode("ascii") if isinstance(part, str) else part


def at(text: Union[str, Buffer], key: Union[str, bytes]) -> int:
    """Where in the common listing `text` the first entry whose path is `key` or sorts after it
    starts (the length of `text` if none): a binary search over the offsets, each step aligned
    on the start of the entry it falls in. `text` and `key` are both text, or both bytes (`text`
    may be mapped: then only the pages the search reads are read)."""
    listing: Any = text
    nul = _marks(text)[1]
    low, high = 0, len(listing)  # each the start of an entry, or the end
    while low < high:
        # The start of the entry holding the middle offset (`low`'s when no NUL ends one there).
        start = listing.rfind(nul, low, (low + high) // 2) + 1 or low
        end = _ended(listing, nul, start)
        if listing[start:end] < key:
            low = end + 1
        else:
            high = start
    return low


def _ended(listing: Any, nul: Any, start: int) -> int:
    """Where the NUL that ends the field at `start` is (a mapping has no `index`)."""
    end: int = listing.find(nul, start)
    if end < 0:
        raise ValueError("a listing entry not ended by NUL")
    return end


def discard() -> None:
    """End the listings nobody took (a hook without a vault there, or with one elsewhere)."""
    for started, index in _started.values():
        _end(started)
        if index is not None:
            index.close()
    for started in _diffs.values():
        _end(started)
    _started.clear()
    _diffs.clear()


def _end(started: Started) -> None:
    """End the git `started`, its output unread."""
    process, sink = started
    if process is not None:
        process.kill()
        process.communicate()
    if sink is not None and not isinstance(sink, str):
        sink.close()


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
