"""EV010-EV019: the engine's frontmatter and text problems, one code per `Problem.kind`."""

from __future__ import annotations

from collections.abc import Iterator

from echoes_lint.findings import Finding
from echoes_lint.rules.conflicts import Covered, conflict_spans
from echoes_lint.rules.context import Context

CODES = frozenset({f"EV01{digit}" for digit in range(10)})

KIND_CODES = {
    "frontmatter-missing": "EV010",
    "frontmatter-unclosed": "EV011",
    "frontmatter-empty": "EV012",
    "frontmatter-key-syntax": "EV013",
    "frontmatter-duplicate-key": "EV014",
    "frontmatter-missing-key": "EV015",
    "frontmatter-empty-value": "EV016",
    "frontmatter-quoting": "EV017",
    "summary-invalid": "EV018",
    "invalid-text": "EV019",
    # A file the scan could not open (permissions, size) is as unusable as one that is not text.
    "unreadable": "EV019",
}

# How to fix, where the engine's own message does not already say it.
_HOW = {
    "EV010": "start the page with a `---` line, then `type`, `stack`, `status`, `summary` and "
             "a closing `---`",
    "EV014": "keep one of the two keys",
    "EV015": "add the key to the frontmatter",
    "EV018": "shorten the summary to one line of at most 160 characters",
}


def check(ctx: Context) -> Iterator[Finding]:
    for document in ctx.documents():
        if document.problem is not None:
            problem = document.problem
            hint = "; make it a readable regular file" if problem.kind == "unreadable" else ""
            yield ctx.finding(KIND_CODES[problem.kind], document.path, problem.line, problem.col,
                              problem.message + hint)
            continue
        if document.meta is None or not document.meta.problems:
            continue
        spans = Covered(conflict_spans(document.markers))
        for problem in document.meta.problems:
            # A conflict's own lines explain those problems; EV001/EV002 report the conflict.
            if problem.line in spans:
                continue
            code = KIND_CODES[problem.kind]
            how = _HOW.get(code)
            yield ctx.finding(code, document.path, problem.line, problem.col,
                              f"{problem.message}; {how}" if how else problem.message)
