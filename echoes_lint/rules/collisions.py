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

from echoes_lint import engine, gitindex
from echoes_lint.findings import Finding
from echoes_lint.rules.context import VAULT_PREFIX, Context, GitIndex

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    from typing import Optional

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
        if level < gitindex.WALKED_LEVELS:
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


def _unchanged(text: str, count: int, folder: str) -> bool:
    """Whether folding leaves every one of `count` paths below `folder` (their common start),
    joined in `text`, as it is: ASCII with no capital but those of `folder` itself. Counted in
    C, without a string per path."""
    if not text.isascii():
        return False
    data = text.encode("ascii")
    upper = gitindex.UPPER
    capitals = len(data) - len(data.translate(None, upper))
    return capitals == count * (len(folder) - len(folder.encode().translate(None, upper)))


def listed_collisions(index: GitIndex) -> Optional[list[list[str]]]:
    """`collisions` of the paths of Git's common listing (`index.text`), when they are all in
    the vault (else None): the names and folders that its survey (`GitIndex.survey`: folders
    decided on their slices of the listing, in C) leaves to fold, folded as `collisions` folds
    them."""
    folds = index.survey()
    if folds is None:
        return None
    groups: list[list[str]] = []
    for folder, fold in folds:
        if isinstance(fold, list):
            groups.extend([folder + name for name in group]
                          for group in engine.name_collisions(fold))
        else:
            start, end, level = fold
            paths = index.part(start, end).split("\0")[:-1]
            _below(paths, 0, len(paths), folder, index, groups, level)
    return groups


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
