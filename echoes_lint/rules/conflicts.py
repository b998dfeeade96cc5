"""EV001 conflict-marker and EV002 bare-separator-line, from the engine's marker grouping."""

from __future__ import annotations

import bisect
import functools
import itertools
import sys
from collections.abc import Iterable, Iterator, Sequence

from echoes_lint import engine
from echoes_lint.findings import SAFE, Edit, Finding, replace
from echoes_lint.rules import edits
from echoes_lint.rules.context import Context, limited

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    from typing import Callable, Optional

    from echoes_lint.rules.context import Yielded

CODES = frozenset({"EV001", "EV002"})

_FIX_HINT = "reconcile both sides, delete every marker line, then run `echoes-lint resolve --check`"


def conflict_spans(markers: Sequence[tuple[int, str]]) -> list[tuple[int, int]]:
    """(first, last) line ranges inside conflict blocks or on bare separators: whatever they say
    is not the page's frontmatter until the conflict is resolved. An unclosed block runs to the
    end of the file."""
    blocks, bare = engine.conflict_blocks(markers)
    spans = [(line, line) for line in bare]
    for block in blocks:
        present = [x for x in (block.start, block.base, block.separator, block.end) if x is not None]
        last = max(present) if block.start is None or block.end is not None else sys.maxsize
        spans.append((block.first_line, last))
    return spans


class Covered:
    """Whether a line lies inside any of some (first, last) spans, by binary search: a page with
    thousands of conflict blocks and as many problems must not compare every pair."""

    def __init__(self, spans: Iterable[tuple[int, int]]) -> None:
        ordered = sorted(spans)
        self._firsts = [first for first, _last in ordered]
        # The furthest line any span starting at or before this one reaches.
        self._reach = list(itertools.accumulate((last for _first, last in ordered), max))

    def __contains__(self, line: int) -> bool:
        position = bisect.bisect_right(self._firsts, line) - 1
        return position >= 0 and self._reach[position] >= line


def _describe(block: engine.ConflictBlock) -> str:
    if block.start is None:
        kind = "`>>>>>>>`" if block.end is not None else "`|||||||`"
        return f"stray conflict marker {kind} without an opening `<<<<<<<` line"
    base = f" with a diff3 base section at line {block.base}" if block.base is not None else ""
    if block.end is None:
        return f"conflict block{base} opened here is never closed by a `>>>>>>>` line"
    if block.separator is None:
        return f"conflict block{base} (lines {block.start}-{block.end}) has no `=======` separator"
    return f"unresolved Git conflict block{base} (lines {block.start}-{block.end})"


_BARE = ("a line that is exactly `=======` is read as a Git conflict marker by every protocol "
         "engine, which then refuses the file; use an ATX heading (`# Title`) or an underline "
         "of another length (`========`)")


def check(ctx: Context) -> Iterator[Yielded]:
    for document in ctx.documents():
        if not document.markers:
            continue
        blocks, bare = engine.conflict_blocks(document.markers)
        yield from limited(blocks, functools.partial(_block_finding, ctx, document.path))
        lines = edits.lines_of(document.text or "") if bare else None
        first_body = edits.body_start(document.meta)
        underline = (edits.setext_underlines(lines, first_body)
                     if lines is not None and first_body is not None else None)
        yield from limited(bare, functools.partial(_bare_finding, ctx, document.path, underline))


def _block_finding(ctx: Context, path: str, block: engine.ConflictBlock) -> Finding:
    return ctx.finding("EV001", path, block.first_line, 1, f"{_describe(block)}; {_FIX_HINT}")


def _bare_finding(ctx: Context, path: str,
                  underline: Optional[Callable[[int], Optional[Edit]]], line: int) -> Finding:
    finding = ctx.finding("EV002", path, line, 1, _BARE)
    edit = underline(line) if underline is not None else None
    if edit is None:
        return finding
    return replace(finding, edit=edit, applicability=SAFE,
                               fix="lengthen the setext underline to `========`")
