"""The rules of `echoes-lint check`, one small module per family.

Each family is a pure function of a `Context` (the engine's `Scan` plus the Git snapshot) that
yields `Finding`s; `FAMILIES` lists them with the codes they can produce, so that a check with a
narrow `--select` runs only the families it needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from echoes_lint.findings import Finding, replace
from echoes_lint.rules import (
    collisions,
    conflicts,
    daily,
    deprecation,
    frontmatter,
    gates,
    links,
    marker,
    mergedriver,
    names,
    symlinks,
    tracked,
)
from echoes_lint.rules.context import MAX_PER_FILE, Context, More

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    from echoes_lint.rules.context import Yielded

Family = tuple[frozenset[str], Callable[[Context], Iterable[Finding]]]


def capped(findings: Iterable[Yielded]) -> Iterator[Finding]:
    """The first `MAX_PER_FILE` findings of each (file, code), then one `... and K more` finding
    of the same code and severity at the first one left out."""
    counts: dict[tuple[str, str], int] = {}
    first_omitted: dict[tuple[str, str], Finding] = {}
    for item in findings:
        finding, weight = (item.first, item.count) if isinstance(item, More) else (item, 1)
        key = (finding.path, finding.code)
        before = counts.get(key, 0)
        counts[key] = before + weight
        if before >= MAX_PER_FILE or weight > 1:
            first_omitted.setdefault(key, finding)
        else:
            yield finding
    for key, finding in first_omitted.items():
        more = counts[key] - MAX_PER_FILE
        yield replace(
            finding, fix=None, edit=None, command=None, applicability=None,
            message=f"and {more} more {finding.code} finding{'s' if more != 1 else ''} in this "
                    f"file from here on (only the first {MAX_PER_FILE} are listed)")


def _capped(check: Callable[[Context], Iterable[Yielded]]) -> Callable[[Context], Iterator[Finding]]:
    return lambda ctx: capped(check(ctx))


FAMILIES: tuple[Family, ...] = tuple((codes, _capped(check)) for codes, check in (
    (conflicts.CODES, conflicts.check),
    (frontmatter.CODES, frontmatter.check),
    (tracked.CODES, tracked.check),
    (collisions.CODES, collisions.check),
    (names.CODES, names.check),
    (symlinks.CODES, symlinks.check),
    (marker.CODES, marker.check),
    (links.CODES, links.check),
    (daily.CODES, daily.check),
    (gates.CODES, gates.check),
    (mergedriver.CODES, mergedriver.check),
    (deprecation.CODES, deprecation.check),
))

# Facts about the repository as a whole: reported whatever files a hook passes.
REPOSITORY_CODES = frozenset({"EV020", "EV021", "EV030", "EV041", "EV045", "EV046"})
# Rules that need Git (beyond knowing where the repository root is).
GIT_CODES = frozenset({"EV020", "EV021", "EV022", "EV030", "EV031", "EV032", "EV033", "EV046",
                       "EV060", *mergedriver.CODES})

__all__ = ["FAMILIES", "GIT_CODES", "MAX_PER_FILE", "REPOSITORY_CODES", "Context", "Family",
           "capped"]
