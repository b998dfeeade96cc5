"""EV001 conflict-marker and EV002 bare-separator-line, from the engine's marker grouping."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence

from echoes_lint import engine
from echoes_lint.findings import Finding
from echoes_lint.rules.context import Context

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


def check(ctx: Context) -> Iterator[Finding]:
    for document in ctx.documents():
        if not document.markers:
            continue
        blocks, bare = engine.conflict_blocks(document.markers)
        for block in blocks:
            yield ctx.finding("EV001", document.path, block.first_line, 1,
                              f"{_describe(block)}; {_FIX_HINT}")
        for line in bare:
            yield ctx.finding(
                "EV002", document.path, line, 1,
                "a line that is exactly `=======` is read as a Git conflict marker by every "
                "protocol engine, which then refuses the file; use an ATX heading (`# Title`) "
                "or an underline of another length (`========`)",
            )
