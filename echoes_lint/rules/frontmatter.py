"""EV010-EV019: what makes engines refuse a page (the engine's `PageMeta.problems`), one code
per `Problem.kind`. EV070-EV078: what engines accept but other tools may misread (the engine's
`PageMeta.notes` and text facts)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from echoes_lint import engine
from echoes_lint.findings import SAFE, Edit, Finding, replace
from echoes_lint.rules import edits
from echoes_lint.rules.conflicts import Covered, conflict_spans
from echoes_lint.rules.context import Context

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    from typing import Optional

KIND_CODES = {
    "frontmatter-missing": "EV010",
    "frontmatter-unclosed": "EV011",
    "frontmatter-empty": "EV012",
    "frontmatter-duplicate-key": "EV014",
    "frontmatter-missing-key": "EV015",
    "frontmatter-empty-value": "EV016",
    "frontmatter-quoting": "EV017",
    "summary-invalid": "EV018",
    "invalid-text": "EV019",
    # A file the scan could not open (permissions, size) is as unusable as one that is not text.
    "unreadable": "EV019",
    "frontmatter-ignored-line": "EV070",
    "frontmatter-scalar-continuation": "EV071",
    "frontmatter-non-scalar": "EV072",
    "frontmatter-single-quote": "EV073",
    "frontmatter-empty-scalar": "EV074",
    "stack-unclosed": "EV075",
    "summary-index-row": "EV076",
}
BINARY = "EV077"
FIXABLE = ("EV010", "EV011", "EV014")  # delimiters spoiled by a byte-order mark or blanks, a repeated key
TRIMMED_MARKER = "EV078"
CODES = frozenset({*KIND_CODES.values(), BINARY, TRIMMED_MARKER})

# How to fix, where the engine's own message does not already say it.
_HOW = {
    "EV010": "start the page with a `---` line, then `type`, `stack`, `status`, `summary` and "
             "a closing `---`",
    "EV014": "keep one of the two keys",
    "EV018": "shorten the summary to one line of at most 160 characters",
    "EV071": "put the whole value on the key's line",
    "EV072": "write the value as one plain or quoted string on the key's line",
    "EV075": "close the bracket, e.g. `stack: [python]`",
}


def check(ctx: Context) -> Iterator[Finding]:
    for document in ctx.documents():
        if document.problem is not None:
            problem = document.problem
            hint = "; make it a readable regular file" if problem.kind == "unreadable" else ""
            yield ctx.finding(KIND_CODES[problem.kind], document.path, problem.line, problem.col,
                              problem.message + hint)
            continue
        text = document.text
        nul = engine.nul_position(text) if text and "\0" in text else None
        if nul is not None:
            yield ctx.finding(BINARY, document.path, *nul,
                              "NUL byte: Git treats the file as binary (no diff, no merge); "
                              "remove it, binary content belongs in assets/")
        if document.meta is not None and (document.meta.problems or document.meta.notes):
            yield from _page(ctx, document, document.meta)


def _page(ctx: Context, document: engine.Document, meta: engine.PageMeta) -> Iterator[Finding]:
    spans = Covered(conflict_spans(document.markers))
    lines: Optional[list[str]] = None
    marker_lines = {line for line, _kind in document.markers}
    for problem in (*meta.problems, *meta.notes):
        if problem.kind == "conflict-marker":
            # EV001/EV002 report marker lines; only trimming can make one they cannot see.
            if problem.line not in marker_lines:
                yield ctx.finding(TRIMMED_MARKER, document.path, problem.line, problem.col,
                                  "this line is a Git conflict marker once the page is trimmed "
                                  "(engines trim surrounding whitespace), so engines refuse the "
                                  "page; delete the line")
            continue
        # A conflict's own lines explain those problems; EV001/EV002 report the conflict.
        if problem.line in spans:
            continue
        code = KIND_CODES[problem.kind]
        if problem.fix is not None:  # the message already asks "did you mean ...?"
            yield ctx.finding(code, document.path, problem.line, problem.col, problem.message,
                              f"replace the line with `{problem.fix}`")
            continue
        how = _how(code, problem.key)
        finding = ctx.finding(code, document.path, problem.line, problem.col,
                              f"{problem.message}; {how}" if how else problem.message, how)
        if code not in FIXABLE:
            yield finding
            continue
        if lines is None:  # split once per page, and only for a fixable problem
            lines = edits.lines_of(document.text or "") or []
        edit = _edit(code, problem, document.text or "", lines, meta) if lines else None
        yield finding if edit is None else replace(
            finding, edit=edit[0], applicability=SAFE, fix=edit[1])


def _how(code: str, key: Optional[str]) -> Optional[str]:
    """How to fix a finding, where the engine's own message does not already say it."""
    if code == "EV015" and key is not None:
        example = "[]" if key == "stack" else "<value>"
        return f"add the line `{key}: {example}` before the closing `---`"
    return _HOW.get(code)


def _edit(code: str, problem: engine.Problem, text: str, lines: Sequence[str],
          meta: engine.PageMeta) -> Optional[tuple[Edit, str]]:
    """The safe edit for a delimiter spoiled by a byte-order mark or blanks, or a key repeated
    verbatim, with the fix it applies; None for every other problem."""
    if code == "EV010":
        mark = edits.byte_order_mark(text)
        if mark is not None:
            return mark, "remove the byte-order mark"
        opening = edits.delimiter_blanks(lines, problem.line)
        return (opening, "delete the blanks after `---`") if opening else None
    if code == "EV011":
        closing = edits.closing_with_blanks(lines, problem.line)
        edit = edits.delimiter_blanks(lines, closing) if closing else None
        return (edit, "delete the blanks after `---`") if edit else None
    if code == "EV014" and problem.key in meta.fields:
        edit = edits.duplicate_line(lines, problem.line, meta.fields[problem.key].line)
        return (edit, "delete the repeated line") if edit else None
    return None
