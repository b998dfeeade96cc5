"""EV030 case-collision: two vault paths that are one path after NFC and case folding.

A collision is reported at the level where it happens: `Assets/x.png` next to `assets/y.png` is
one folder collision, not one per file inside, while `pages/Alpha.md` next to `pages/alpha.md`
is a file collision.

Every path counts (a staged `Foo.md` collides with a committed `foo.md`), but few need folding.
Folding keeps each `/` and folds each name on its own, so names collide only with names in the
same folder, and a folder whose paths below it are lower-case ASCII (unchanged by folding) holds
no collision at any depth. The rule walks the sorted paths folder by folder, skipping each such
folder in a few passes in C, and folds only the names of the folders that remain. Below a few
levels (where a hostile tree could nest hundreds), it groups the rest in one linear pass instead,
so that no subtree is joined again at each level and no depth exhausts the stack.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from typing import Optional

from echoes_lint import engine, gitindex
from echoes_lint.findings import Finding
from echoes_lint.rules.context import VAULT_PREFIX, Context, GitIndex

CODES = frozenset({"EV030"})


def collisions(files: frozenset[str], order: Sequence[str] = (),
               within: bool = False) -> list[list[str]]:
    """Groups of two or more members of one folder (files, or the folders that hold `files`)
    whose names are one name after NFC and case folding: `engine.name_collisions` over every
    file and folder, split by folder. `order` may list most of `files`, sorted and each once
    (Git lists its index so): it saves sorting them; `within` says that its vault paths are
    known to be members of `files`."""
    paths = _sorted(files, order, within)
    # Every vault path is below `EchoesVault/`, alone at its level: start below it.
    top = VAULT_PREFIX if paths and paths[0].startswith(VAULT_PREFIX) \
        and paths[-1].startswith(VAULT_PREFIX) else ""
    groups: list[list[str]] = []
    _walk(paths, 0, len(paths), top, files, groups, 0)
    return groups


# Levels walked folder by folder (each joins its subtree once); deeper, one linear pass.
_WALKED_LEVELS = 6


def _walk(paths: list[str], start: int, end: int, folder: str, files: AbstractSet[str],
          groups: list[list[str]], level: int) -> None:
    """Add to `groups` the collisions below `folder`, whose paths are `paths[start:end]`, one
    member of the folder (a file, or a folder: a run of sorted paths) at a time."""
    names: set[str] = set()
    index = start
    while index < end:
        name, slash, _rest = paths[index][len(folder):].partition("/")
        names.add(name)
        if not slash:
            index += 1
            continue
        last = bisect.bisect_left(paths, f"{folder}{name}0", index, end)  # "0" follows "/"
        _below(paths, index, last, f"{folder}{name}/", files, groups, level + 1)
        index = last
    groups.extend([folder + name for name in group] for group in engine.name_collisions(names))


def _below(paths: list[str], start: int, end: int, folder: str, files: AbstractSet[str],
           groups: list[list[str]], level: int) -> None:
    """`_walk` of the folder `folder`, which starts each of `paths[start:end]`: skipped in a few
    passes in C when folding leaves its paths alone, and a folder of files alone (the common
    folder) checked in C."""
    joined = "\0".join(paths[start:end])
    count = end - start
    if _unchanged(joined, count, folder):
        return
    if joined.count("/") != count * folder.count("/"):  # a folder below
        if level < _WALKED_LEVELS:
            _walk(paths, start, end, folder, files, groups, level)
        else:
            _grouped(paths, start, end, folder, groups)
    elif not joined.isascii() or len(set(joined.lower().split("\0"))) != count:
        groups.extend([folder + name for name in group] for group in _flat(
            joined.replace(f"\0{folder}", "\0")[len(folder):].split("\0"), folder, files))
    # else ASCII folds by `lower`, and lowering keeps every name apart (the common case)


def _grouped(paths: list[str], start: int, end: int, folder: str,
             groups: list[list[str]]) -> None:
    """`_walk` of a deep folder in one pass: each path adds only the members it does not share
    with the path before it (a folder's paths are one run of the sorted paths), to folders
    known by number, so the work follows the paths' length, not their depth times it."""
    members: list[set[str]] = [set()]  # of each folder below `folder` (0: `folder` itself)
    parents: list[tuple[int, str]] = [(-1, "")]  # each folder's parent and name
    stack = [0]  # the folders of the last path
    previous: list[str] = []
    for path in paths[start:end]:
        *names, leaf = path[len(folder):].split("/")
        shared = 0
        while shared < min(len(names), len(previous)) and names[shared] == previous[shared]:
            shared += 1
        del stack[shared + 1:]
        for name in names[shared:]:
            members[stack[-1]].add(name)
            parents.append((stack[-1], name))
            members.append(set())
            stack.append(len(members) - 1)
        members[stack[-1]].add(leaf)
        previous = names
    for number, names_of in enumerate(members):
        found = engine.name_collisions(names_of) if len(names_of) > 1 else []
        if found:
            at, parts = number, []
            while at > 0:
                at, name = parents[at]
                parts.append(f"{name}/")
            prefix = folder + "".join(reversed(parts))
            groups.extend([prefix + name for name in group] for group in found)


def _flat(names: list[str], folder: str, files: AbstractSet[str]) -> list[list[str]]:
    """The collisions among `names`, the files of one folder: only names that folding changes
    can collide, with their folds."""
    changed = {name for name in itertools.chain(itertools.filterfalse(str.islower, names),
                                                itertools.filterfalse(str.isascii, names))
               if engine.fold_name(name) != name}
    return engine.name_collisions(changed.union(key for key in engine.fold_names(list(changed))
                                                if folder + key in files))


def _sorted(files: frozenset[str], order: Sequence[str], within: bool) -> list[str]:
    """`sorted(files)`, from the sorted vault part of `order` (distinct paths) when that is a
    part of `files`."""
    ordered = sorted(order)  # one pass when it is sorted already
    inside = ordered[bisect.bisect_left(ordered, VAULT_PREFIX):
                     bisect.bisect_left(ordered, f"{VAULT_PREFIX[:-1]}0")]
    if not (within or files.issuperset(inside)):
        return sorted(files)
    if len(inside) < len(files):
        inside.extend(files.difference(inside))
        inside.sort()  # two sorted runs: merged in one pass
    return inside


_UPPER = bytes(range(ord("A"), ord("Z") + 1))


def _unchanged(text: str, count: int, folder: str) -> bool:
    """Whether folding leaves every one of `count` paths below `folder` (their common start),
    joined in `text`, as it is: ASCII with no capital but those of `folder` itself. Counted in
    C, without a string per path."""
    if not text.isascii():
        return False
    data = text.encode("ascii")
    capitals = len(data) - len(data.translate(None, _UPPER))
    return capitals == count * (len(folder) - len(folder.encode().translate(None, _UPPER)))


# Every byte but the capitals and NUL: deleted, the capitals of each entry remain, then NUL NUL.
_NOT_CAPITAL = bytes(code for code in range(256) if code and code not in _UPPER)


def _listed_unchanged(text: str, start: int, end: int, folder: str, first: str = "") -> bool:
    """Whether folding keeps apart every two paths of the listing entries `text[start:end]`, all
    below `folder`, as lowering does: ASCII entries that keep below `folder`, of their capitals
    and the lower-case twins of those of `first` (the first path's part below it), what `first`
    keeps (the folder of a day's entries, `<stamp>-<slug>.md`: each stamp's `T` and `Z`, and no
    `t` or `z`). Two such paths that lowering makes one have their capitals and those twins at
    the same places, where they are then one and the same: lowering is one-to-one below
    `folder`. With no capital in `first`: folding leaves every path as it is (the twins of none
    kept). In C, a few entries at a time: a slice as large as a folder of 100,000 pages would
    take fresh memory, a page fault for each 4 KB, where these small ones reuse what the last
    one freed."""
    keep, below = _NOT_CAPITAL, first.encode("ascii")  # (the common listing is ASCII)
    twins = below.translate(None, keep).lower()  # of its capitals: each entry keeps them too
    keep = keep.translate(None, twins)
    unit = f"{folder}{first}".encode("ascii").translate(None, keep) + b"\0\0"
    while start < end:
        stop = end if end - start <= _CHUNK else _entry_end(text, start + _CHUNK)
        entries = text[start:stop]
        if not entries.isascii():
            return False
        kept = entries.encode("ascii").translate(None, keep)
        count, extra = divmod(len(kept), len(unit))
        if extra or kept != unit * count:
            return False
        start = stop
    return True


# Characters of the listing that `_listed_unchanged` checks at a time (below the size that
# allocators map afresh for each request).
_CHUNK = 1 << 16


def _entry_end(text: str, position: int) -> int:
    """Where the listing entry (`<path>NUL<mode>NUL`) holding `position` ends: after its mode,
    which a NUL and a digit start (no path starts with a digit: see `gitindex.SCOPE`)."""
    stop = text.index("\0", position) + 1
    return text.index("\0", stop) + 1 if text[stop:stop + 1].isdigit() else stop


def listed_collisions(index: GitIndex) -> Optional[list[list[str]]]:
    """`collisions` of the paths of Git's common listing (`index.text`), when they are all in
    the vault (else None): each folder is decided on its slice of the listing, in C, without a
    string per path where it can be (`_listed_walk`); the others are split off the listing and
    walked as `collisions` walks them."""
    text = index.text
    if text is None or (text and not (text.startswith(VAULT_PREFIX)
                                      and index.at(f"{VAULT_PREFIX[:-1]}0") == len(text))):
        return None
    groups: list[list[str]] = []
    if not _listed_walk(index, text, 0, len(text), VAULT_PREFIX, groups, 0):
        return None
    return groups


def _listed_walk(index: GitIndex, text: str, position: int, end: int, folder: str,
                 groups: list[list[str]], level: int) -> bool:
    """Add to `groups` the collisions below `folder`, whose entries are `text[position:end]`
    (each its path and its mode, digits, each ended by NUL). A folder below whose first path
    has no capital is skipped if folding leaves all its paths alone (`_listed_unchanged`); a
    folder of ASCII files alone (the date folders of daily entries: capitals in every name) if
    lowering keeps its names apart. False when the listing is not sorted (Git sorts its index)."""
    names: set[str] = set()
    while position < end:
        stop = text.index("\0", position)
        name, slash, rest = text[position + len(folder):stop].partition("/")
        names.add(name)
        if not slash:
            position = text.index("\0", stop + 1) + 1
            continue
        last = index.at(f"{folder}{name}0")  # "0" follows "/"
        if not position < last <= end:  # not sorted: never loop on it
            return False
        below, start = f"{folder}{name}/", position
        position = last
        if _listed_unchanged(text, start, last, below, rest):
            continue
        if "/" in rest and level + 1 < _WALKED_LEVELS and text.isascii():
            # The first path's folder holds a folder: walked on the listing (as below), without
            # a copy of its entries (the daily folder: 2 MB at 100,000 pages).
            if not _listed_walk(index, text, start, last, below, groups, level + 1):
                return False
            continue
        entries = text[start:last]
        depth = below.count("/")
        if entries.isascii() and "/" not in rest:
            # Files alone, ASCII (folded by `lower`)? A regular file's entry ends with `REGULAR`:
            # as many slashes as `depth` times the parts says that each part is one path (a
            # part of two or more holds their slashes) of a file of `below`.
            parts = entries.lower().split(gitindex.REGULAR)
            flat = not parts.pop() and entries.count("/") == len(parts) * depth
            if flat and len(set(parts)) == len(parts):
                continue
        if entries.isascii() and level + 1 < _WALKED_LEVELS and (
                "/" in rest or entries.count("/") != entries.count("\0") // 2 * depth):
            # A folder below (the first path's, or one whose path has more slashes).
            if not _listed_walk(index, text, last - len(entries), last, below, groups,
                                level + 1):
                return False
            continue
        paths = entries.split("\0")[:-1:2]
        _below(paths, 0, len(paths), below, index, groups, level + 1)
    groups.extend([folder + name for name in group] for group in engine.name_collisions(names))
    return True


def check(ctx: Context) -> Iterator[Finding]:
    files = ctx.vault_paths()
    groups = listed_collisions(files) if isinstance(files, GitIndex) else None
    if groups is None:
        index = ctx.index
        listed = index.listed if isinstance(index, GitIndex) else ctx.scan.git.tracked
        # The index is the set of the listing: as large when Git listed no path twice (an
        # unmerged path is listed once per stage).
        order = listed if len(index) == len(listed) else ()
        # Only a gitlink takes a vault path of the index out of `files` (its files are another
        # repository's).
        groups = collisions(files.frozen() if isinstance(files, GitIndex) else frozenset(files),
                            order, within=not ctx.gitlinks)
    for members in groups:
        yield from _report(ctx, files, members)


def _report(ctx: Context, files: AbstractSet[str], members: Iterable[str]) -> Iterator[Finding]:
    # Anchor on a committed member, so that the new name is the one blamed.
    members = sorted(members, key=lambda member: (member in files and ctx.is_new(member), member))
    anchor = members[0]
    anchor_new = anchor in files and ctx.is_new(anchor)
    for member in members[1:]:
        kind = "file" if member in files else "folder"
        new = "new " if kind == "file" and not anchor_new and ctx.is_new(member) else ""
        yield ctx.finding(
            "EV030", member, 1, 1,
            f"{new}{kind} `{ctx.path(member)}` collides with `{ctx.path(anchor)}`: the names are "
            "equal after Unicode NFC normalisation and case folding, so they are one path on "
            "macOS and Windows; rename or merge one of them")
