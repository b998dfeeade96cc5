"""`json`: a JSON array with one object per finding, in ruff's field layout."""

from __future__ import annotations

import json

from echoes_lint.report._common import ReportInput


def render(report: ReportInput) -> str:
    items = [
        {
            "code": finding.code,
            "name": finding.name,
            "severity": finding.severity.value,
            "message": finding.message,
            "fix": finding.fix,
            "filename": finding.path,
            "location": {"row": finding.line, "column": finding.col},
        }
        for finding in report.findings
    ]
    return json.dumps(items, indent=2, ensure_ascii=False) + "\n"
