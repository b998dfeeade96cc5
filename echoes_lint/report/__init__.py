"""Output formats of `echoes-lint check`, modelled on ruff's `--output-format`.

Every reporter is a pure function from a `ReportInput` to the exact text to print, so that the
same findings give the same bytes on every supported Python.
"""

from __future__ import annotations

from typing import Callable

from echoes_lint.report import concise, full, github, json_report, sarif
from echoes_lint.report._common import ReportInput, summary_line

FORMATS: dict[str, Callable[[ReportInput], str]] = {
    "concise": concise.render,
    "full": full.render,
    "json": json_report.render,
    "github": github.render,
    "sarif": sarif.render,
}


def render(fmt: str, report_input: ReportInput) -> str:
    """Render findings in the named format; raise ValueError for an unknown name."""
    try:
        reporter = FORMATS[fmt]
    except KeyError:
        raise ValueError(
            f"unknown output format {fmt!r}; expected one of: {', '.join(FORMATS)}"
        ) from None
    return reporter(report_input)


__all__ = ["FORMATS", "ReportInput", "render", "summary_line"]
