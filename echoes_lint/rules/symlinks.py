"""EV040 symlink-in-vault: engines refuse to read or write through symbolic links."""

from __future__ import annotations

from collections.abc import Iterator

from echoes_lint.findings import Finding
from echoes_lint.rules.context import Context

CODES = frozenset({"EV040"})


def check(ctx: Context) -> Iterator[Finding]:
    for relative in ctx.scan.symlinks:
        yield ctx.finding(
            "EV040", relative, 1, 1,
            f"`{ctx.path(relative)}` is a symbolic link; engines refuse to read or write through "
            "links, so replace it with a regular file or folder holding the content")
