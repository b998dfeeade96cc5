"""`github`: workflow commands that GitHub Actions turns into annotations on the diff."""

from __future__ import annotations

from echoes_lint.findings import RULES
from echoes_lint.report._common import ReportInput, statistics_rows


def escape_data(text: str) -> str:
    """Escape a command's message as @actions/core `escapeData` does (`%` first, so once)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value as @actions/core `escapeProperty` does: `:` and `,` delimit."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _statistics(report: ReportInput) -> str:
    """One annotation per rule, at its severity, without a file: Actions lists them on the run's
    summary page (a count has no line to annotate)."""
    lines = []
    for code, count in statistics_rows(report.findings):
        rule = RULES[code]
        message = f"{code} {rule.name}: {count} finding{'s' if count > 1 else ''}"
        lines.append(f"::{rule.severity.value} title={escape_property(f'echoes-lint ({code})')}"
                     f"::{escape_data(message)}\n")
    return "".join(lines)


def render(report: ReportInput) -> str:
    if report.statistics:
        return _statistics(report)
    lines = []
    for finding in report.findings:
        properties = ",".join(
            f"{key}={escape_property(value)}"
            for key, value in (
                ("title", f"echoes-lint ({finding.code})"),
                ("file", finding.path),
                ("line", str(finding.line)),
                ("col", str(finding.col)),
            )
        )
        message = f"{finding.path}:{finding.line}:{finding.col}: {finding.code} {finding.message}"
        lines.append(f"::{finding.severity.value} {properties}::{escape_data(message)}\n")
    return "".join(lines)
