"""EV030 case-collision: two vault paths that are one path after NFC and case folding.

A collision is reported at the level where it happens: `Assets/x.png` next to `assets/y.png` is
one folder collision, not one per file inside, while `pages/Alpha.md` next to `pages/alpha.md`
is a file collision.
"""

from __future__ import annotations

from collections.abc import Iterator

from echoes_lint import engine
from echoes_lint.findings import Finding
from echoes_lint.rules.context import Context

CODES = frozenset({"EV030"})


def _folders(paths: frozenset[str]) -> set[str]:
    """Every folder that holds one of `paths`, at any depth."""
    folders: set[str] = set()
    for path in {path.rpartition("/")[0] for path in paths}:  # one pass per folder, not file
        folder = path
        while folder and folder not in folders:
            folders.add(folder)
            folder = folder.rpartition("/")[0]
    return folders


def check(ctx: Context) -> Iterator[Finding]:
    files = ctx.vault_paths()
    for group in engine.name_collisions([*files, *_folders(files)]):
        # Members in different folders collide because their folders do; that is reported once.
        by_parent: dict[str, list[str]] = {}
        for member in group:
            by_parent.setdefault(member.rpartition("/")[0], []).append(member)
        for members in by_parent.values():
            if len(members) > 1:
                yield from _report(ctx, files, members)


def _report(ctx: Context, files: frozenset[str], members: list[str]) -> Iterator[Finding]:
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
