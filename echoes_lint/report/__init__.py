"""Output formats of `echoes-lint check`, modelled on ruff's `--output-format`.

Every reporter is a pure function from a `ReportInput` to the exact text to print, so that the
same findings give the same bytes on every supported Python.
"""

from __future__ import annotations

from echoes_lint.report._common import ReportInput, summary_line

TYPE_CHECKING = False  # not `typing`'s: this module is on every gate's path
if TYPE_CHECKING:
    from typing import Callable

# format -> the module (of this package) whose `render` writes it, imported only when a report
# in that format is written: a run loads one or two reporters, never all five.
FORMATS: dict[str, str] = {
    "concise": "concise",
    "full": "full",
    "json": "json_report",
    "github": "github",
    "sarif": "sarif",
}


def render(fmt: str, report_input: ReportInput) -> str:
    """Render findings in the named format; raise ValueError for an unknown name."""
    try:
        module = FORMATS[fmt]
    except KeyError:
        raise ValueError(
            f"unknown output format {fmt!r}; expected one of: {', '.join(FORMATS)}"
        ) from None
    # `__import__`, not `importlib`'s: a console script or hook has not loaded that (~0.3 ms).
    reporter: Callable[[ReportInput], str] = __import__(
        f"{__name__}.{module}", fromlist=["render"]).render
    return reporter(report_input)


__all__ = ["FORMATS", "ReportInput", "render", "summary_line"]
