"""`github`: workflow commands that GitHub Actions turns into annotations on the diff."""

from __future__ import annotations

from echoes_lint.report._common import ReportInput


def escape_data(text: str) -> str:
    """Escape a command's message as @actions/core `escapeData` does (`%` first, so once)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value as @actions/core `escapeProperty` does: `:` and `,` delimit."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: ReportInput) -> str:
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
