"""`full`: each finding with its source line, a caret under the column and a help line."""

from __future__ import annotations

from echoes_lint.findings import RULES, Finding
from echoes_lint.report._common import (
    ReportInput,
    location,
    paint,
    statistics_table,
    with_summary,
)


def _snippet(finding: Finding, lines: list[str], color: bool) -> list[str]:
    if not 1 <= finding.line <= len(lines):
        return []
    text = lines[finding.line - 1]
    gutter = " " * len(str(finding.line))
    # Keep the line's own tabs in the padding so the caret lands under the column in a terminal.
    before = text[: finding.col - 1].ljust(finding.col - 1)
    padding = "".join(char if char == "\t" else " " for char in before)
    source = f"  {finding.line} |" + (f" {text}" if text else "")
    caret = f"  {gutter} | {padding}{paint('^', finding.severity, color)}"
    return [source, caret]


def _block(finding: Finding, report: ReportInput) -> str:
    header = (
        f"{location(finding, report.color)}: "
        f"{paint(finding.code, finding.severity, report.color)} "
        f"[{finding.severity.value}] {finding.message}"
    )
    lines = [header]
    source = report.sources.get(finding.path)
    if source is not None:
        lines += _snippet(finding, source, report.color)
    lines.append(f"  = help: {finding.fix or RULES[finding.code].fix}")
    return "".join(line + "\n" for line in lines)


def render(report: ReportInput) -> str:
    if report.statistics:
        return with_summary(statistics_table(report.findings), report.findings, report.fixed,
                            report.show_fixes)
    body = "\n".join(_block(finding, report) for finding in report.findings)
    return with_summary(body, report.findings, report.fixed, report.show_fixes)
