"""EV080 deprecated-page-banner: a deprecated page's body begins with the banner (spec 7.5)."""

from __future__ import annotations

from collections.abc import Iterator

from echoes_lint.findings import SAFE, Finding, replace
from echoes_lint.rules import edits
from echoes_lint.rules.context import Context

CODES = frozenset({"EV080"})


def check(ctx: Context) -> Iterator[Finding]:
    for document in ctx.scan.pages:
        meta = document.meta
        # `meta.deprecated` and `meta.valid`, without two calls for each of the other pages.
        if meta is None or meta.status != "deprecated" or meta.problems \
                or meta.close_line is None:
            continue
        lines = edits.lines_of(document.text or "")
        if lines is None:
            continue
        line, edit = edits.banner(lines, meta.close_line)
        if edit is None:
            continue
        fix = f"insert `{edits.BANNER}` as the first line of the body"
        finding = ctx.finding(
            "EV080", document.path, line, 1,
            f"the page has `status: deprecated`, but its body does not begin with "
            f"`{edits.BANNER}` (spec 7.5); {fix}, and link to the replacement page", fix)
        yield replace(finding, edit=edit, applicability=SAFE)
