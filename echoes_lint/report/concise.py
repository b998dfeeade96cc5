"""`concise`: one `path:line:col: CODE message` line per finding, like ruff's default output."""

from __future__ import annotations

from echoes_lint.report._common import (
    ReportInput,
    location,
    paint,
    statistics_table,
    with_summary,
)


def render(report: ReportInput) -> str:
    if report.statistics:
        return with_summary(statistics_table(report.findings), report.findings, report.fixed,
                            report.show_fixes)
    body = "".join(
        f"{location(finding, report.color)}: "
        f"{paint(finding.code, finding.severity, report.color)} {finding.message}\n"
        for finding in report.findings
    )
    return with_summary(body, report.findings, report.fixed, report.show_fixes)
