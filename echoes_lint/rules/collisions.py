"""EV030 case-collision: two vault paths that are one path after NFC and case folding.

A collision is reported at the level where it happens: `Assets/x.png` next to `assets/y.png` is
one folder collision, not one per file inside, while `pages/Alpha.md` next to `pages/alpha.md`
is a file collision.

Every path counts (a staged `Foo.md` collides with a committed `foo.md`), but few need folding.
Folding keeps each `/` and folds each name on its own, so names collide only with names in the
same folder, and a folder whose paths below it are lower-case ASCII (unchanged by folding) holds
no collision at any depth. The rule walks the sorted paths folder by folder, skipping each such
folder in a few passes in C, and folds only the names of the folders that remain.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator, Sequence

from echoes_lint import engine
from echoes_lint.findings import Finding
from echoes_lint.rules.context import VAULT_PREFIX, Context

CODES = frozenset({"EV030"})


def _folders(paths: Iterable[str]) -> set[str]:
    """Every folder that holds one of `paths`, at any depth."""
    folders: set[str] = set()
    for path in {path.rpartition("/")[0] for path in paths}:  # one pass per folder, not file
        folder = path
        while folder and folder not in folders:
            folders.add(folder)
            folder = folder.rpartition("/")[0]
    return folders


def collisions(files: frozenset[str], order: Sequence[str] = ()) -> list[list[str]]:
    """Groups of two or more members of one folder (files, or the folders that hold `files`)
    whose names are one name after NFC and case folding: `engine.name_collisions` over every
    file and folder, split by folder. `order` may list most of `files`, sorted and each once
    (Git lists its index so): it saves sorting them."""
    paths = _sorted(files, order)
    # Every vault path is below `EchoesVault/`, alone at its level: start below it.
    top = VAULT_PREFIX if paths and paths[0].startswith(VAULT_PREFIX) \
        and paths[-1].startswith(VAULT_PREFIX) else ""
    groups: list[list[str]] = []
    names: set[str] = set()
    index = 0
    while index < len(paths):  # each name below `top`: a file, or a folder of sorted paths
        name, slash, _rest = paths[index][len(top):].partition("/")
        names.add(name)
        if not slash:
            index += 1
            continue
        folder = f"{top}{name}/"
        end = bisect.bisect_left(paths, f"{top}{name}0", index)  # "0" follows "/"
        if not _unchanged(paths[index:end], folder):
            groups.extend(_below(paths[index:end], folder, files))
        index = end
    groups.extend([top + name for name in group] for group in engine.name_collisions(names))
    return groups


def _sorted(files: frozenset[str], order: Sequence[str]) -> list[str]:
    """`sorted(files)`, from the sorted vault part of `order` (distinct paths) when that is a
    part of `files`."""
    ordered = sorted(order)  # one pass when it is sorted already
    inside = ordered[bisect.bisect_left(ordered, VAULT_PREFIX):
                     bisect.bisect_left(ordered, f"{VAULT_PREFIX[:-1]}0")]
    if not files.issuperset(inside):
        return sorted(files)
    if len(inside) < len(files):
        inside.extend(files.difference(inside))
        inside.sort()  # two sorted runs: merged in one pass
    return inside


_UPPER = bytes(range(ord("A"), ord("Z") + 1))


def _unchanged(paths: list[str], folder: str) -> bool:
    """Whether folding leaves every path below `folder` (their common start) as it is: ASCII
    with no capital but those of `folder` itself. Counted in C, without a string per path."""
    text = "\0".join(paths)
    if not text.isascii():
        return False
    data = text.encode("ascii")
    capitals = len(data) - len(data.translate(None, _UPPER))
    return capitals == len(paths) * (len(folder) - len(folder.encode().translate(None, _UPPER)))


def _below(paths: list[str], folder: str, files: frozenset[str]) -> list[list[str]]:
    """The collisions below `folder`, whose paths are `paths` (`folder` starts each)."""
    text = "\0".join(paths).replace(f"\0{folder}", "\0")[len(folder):]
    rests = text.split("\0")
    if "/" in text:
        members: set[str] = {*rests, *_folders(rests)}
    else:  # one folder of files: only names that folding changes can collide, with their folds
        changed = {name for name in itertools.chain(itertools.filterfalse(str.islower, rests),
                                                    itertools.filterfalse(str.isascii, rests))
                   if engine.fold_name(name) != name}
        members = changed.union(key for key in engine.fold_names(list(changed))
                                if folder + key in files)
    return [siblings for group in engine.name_collisions(members)
            for siblings in _by_parent(folder, group)]


def _by_parent(folder: str, group: list[str]) -> list[list[str]]:
    """Members in different folders collide because their folders do; that is reported once."""
    by_parent: dict[str, list[str]] = {}
    for member in group:
        by_parent.setdefault(member.rpartition("/")[0], []).append(folder + member)
    return [siblings for siblings in by_parent.values() if len(siblings) > 1]


def check(ctx: Context) -> Iterator[Finding]:
    files = ctx.vault_paths()
    # The index is the set of the listing: as large when Git listed no path twice (an unmerged
    # path is listed once per stage).
    order = ctx.scan.git.tracked if len(ctx.index) == len(ctx.scan.git.tracked) else ()
    for members in collisions(files, order):
        yield from _report(ctx, files, members)


def _report(ctx: Context, files: frozenset[str], members: Iterable[str]) -> Iterator[Finding]:
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
