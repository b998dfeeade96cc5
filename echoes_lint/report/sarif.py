"""`sarif`: a SARIF 2.1.0 log for GitHub code scanning and other SARIF viewers."""

from __future__ import annotations

import json
from urllib.parse import quote

from echoes_lint.findings import RULES, Finding
from echoes_lint.report._common import ReportInput, statistics_items

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    from typing import Any

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/echoes-lint/echoes-lint"
SRCROOT = "%SRCROOT%"

# Every rule, sorted by code, so a code's ruleIndex does not depend on what was found.
_RULE_CODES = sorted(RULES)
_RULE_INDEX = {code: index for index, code in enumerate(_RULE_CODES)}


def _descriptor(code: str) -> dict[str, Any]:
    rule = RULES[code]
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.explanation},
        "helpUri": rule.url,
        "help": {"text": rule.document(), "markdown": rule.document()},
        "defaultConfiguration": {"level": rule.severity.value},
    }


def _fixes(finding: Finding) -> list[dict[str, Any]]:
    """SARIF `fixes` (§3.55) for a fix that is an edit of the file; Git commands have none."""
    edit = finding.edit
    if edit is None:
        return []
    region = {"startLine": edit.line, "startColumn": edit.col, "endLine": edit.end_line,
              "endColumn": edit.end_col}
    return [{
        "description": {"text": finding.fix or ""},
        "artifactChanges": [{
            "artifactLocation": {"uri": quote(finding.path), "uriBaseId": SRCROOT},
            "replacements": [{"deletedRegion": region,
                              "insertedContent": {"text": edit.content}}],
        }],
    }]


def _result(finding: Finding) -> dict[str, Any]:
    result = {
        "ruleId": finding.code,
        "ruleIndex": _RULE_INDEX[finding.code],
        "level": finding.severity.value,
        "message": {"text": finding.message},
        "locations": [
            {
                "physicalLocation": {
                    # A relative URI reference: spaces, `%` and non-ASCII are percent-encoded
                    # as UTF-8, `/` is kept.
                    "artifactLocation": {"uri": quote(finding.path), "uriBaseId": SRCROOT},
                    "region": {"startLine": finding.line, "startColumn": finding.col},
                }
            }
        ],
    }
    fixes = _fixes(finding)
    if fixes:
        result["fixes"] = fixes
    return result


def render(report: ReportInput) -> str:
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "echoes-lint",
                "informationUri": INFORMATION_URI,
                "version": report.tool_version,
                "rules": [_descriptor(code) for code in _RULE_CODES],
            }
        },
        # Finding columns count Unicode characters (Python string indices), not UTF-16 units.
        "columnKind": "unicodeCodePoints",
    }
    if report.workspace_uri is not None:
        # SARIF §3.14.14: a base URI must end with a slash or relative URIs resolve one level up.
        base = report.workspace_uri.rstrip("/") + "/"
        run["originalUriBaseIds"] = {SRCROOT: {"uri": base}}
    run["results"] = [_result(finding) for finding in report.findings]
    if report.statistics:
        # The results stay: code scanning closes every alert a log without them omits.
        run["properties"] = {"statistics": statistics_items(report.findings)}
    log = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
