"""The rules of `echoes-lint check`, one small module per family.

Each family is a pure function of a `Context` (the engine's `Scan` plus the Git snapshot) that
yields `Finding`s; `FAMILIES` lists them with the codes they can produce, so that a check with a
narrow `--select` runs only the families it needs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Callable

from echoes_lint.findings import Finding
from echoes_lint.rules import (
    collisions,
    conflicts,
    daily,
    frontmatter,
    links,
    marker,
    names,
    symlinks,
    tracked,
)
from echoes_lint.rules.context import Context

Family = tuple[frozenset[str], Callable[[Context], Iterable[Finding]]]

FAMILIES: tuple[Family, ...] = (
    (conflicts.CODES, conflicts.check),
    (frontmatter.CODES, frontmatter.check),
    (tracked.CODES, tracked.check),
    (collisions.CODES, collisions.check),
    (names.CODES, names.check),
    (symlinks.CODES, symlinks.check),
    (marker.CODES, marker.check),
    (links.CODES, links.check),
    (daily.CODES, daily.check),
)

# Facts about the repository as a whole: reported whatever files a hook passes.
REPOSITORY_CODES = frozenset({"EV020", "EV021", "EV030", "EV041"})
# Rules that need Git (beyond knowing where the repository root is).
GIT_CODES = frozenset({"EV020", "EV021", "EV022", "EV030", "EV031", "EV032", "EV033", "EV060"})

__all__ = ["FAMILIES", "GIT_CODES", "REPOSITORY_CODES", "Context", "Family"]
