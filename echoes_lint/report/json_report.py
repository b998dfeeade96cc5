"""`json`: a JSON array with one object per finding, in ruff's field layout.

With `--statistics`, one object per rule instead: code, name, severity and count.
"""

from __future__ import annotations

import json

from echoes_lint.findings import RULES, Finding
from echoes_lint.report._common import ReportInput, statistics_items

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    from typing import Any, Optional


def _fix(finding: Finding) -> Optional[dict[str, Any]]:
    """ruff's fix object: `safe` or `unsafe` when `check --fix` applies it (with the edit, when
    it is one; a Git command has none), `display-only` for a fix a person applies."""
    if finding.fix is None:
        return None
    edits = []
    if finding.edit is not None:
        edit = finding.edit
        edits.append({"content": edit.content,
                      "location": {"row": edit.line, "column": edit.col},
                      "end_location": {"row": edit.end_line, "column": edit.end_col}})
    return {"applicability": finding.applicability or "display-only", "message": finding.fix,
            "edits": edits}


def _item(finding: Finding) -> dict[str, Any]:
    # A finding is a position, not a range: its end is where it starts.
    location = {"row": finding.line, "column": finding.col}
    return {
        "code": finding.code,
        "name": finding.name,
        "severity": finding.severity.value,
        "message": finding.message,
        "fix": _fix(finding),
        "url": RULES[finding.code].url,
        "filename": finding.path,
        "location": location,
        "end_location": dict(location),
    }


def render(report: ReportInput) -> str:
    items = (statistics_items(report.findings) if report.statistics
             else [_item(f) for f in report.findings])
    return json.dumps(items, indent=2, ensure_ascii=False) + "\n"
