"""The input every reporter takes, and the text the human-readable formats share."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from echoes_lint.findings import RULES, Finding, Record, Severity

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    from typing import Any


class ReportInput(Record):
    """Everything a reporter may show. Reporters only format: they never read files or sort.

    `findings` are sorted by the caller (normally by `Finding.sort_key`); `sources` maps a
    workspace-relative path to the file's lines without newlines (`full` quotes from them);
    `color` only affects the human formats (`concise`, `full`); `statistics` asks every format
    for counts per rule instead of findings (sarif keeps its results and adds the counts);
    `workspace_uri` is the `file://` URI of the workspace root, for SARIF
    `originalUriBaseIds`; `fixed` is what `check --fix` fixed: counted in the summary line,
    listed with `show_fixes`.
    """

    __slots__ = _FIELDS = ("findings", "tool_version", "sources", "color", "statistics",
                           "workspace_uri", "fixed", "show_fixes")

    def __init__(self, findings: Sequence[Finding], tool_version: str,
                 sources: Mapping[str, list[str]] | None = None, color: bool = False,
                 statistics: bool = False, workspace_uri: str | None = None,
                 fixed: Sequence[Finding] = (), show_fixes: bool = False) -> None:
        self.findings, self.tool_version = findings, tool_version
        self.sources: Mapping[str, list[str]] = {} if sources is None else sources
        self.color, self.statistics, self.workspace_uri = color, statistics, workspace_uri
        self.fixed, self.show_fixes = fixed, show_fixes


_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_SEVERITY_COLOR = {Severity.ERROR: "\x1b[31m", Severity.WARNING: "\x1b[33m"}


def bold(text: str, color: bool) -> str:
    return f"{_BOLD}{text}{_RESET}" if color else text


def paint(text: str, severity: Severity, color: bool) -> str:
    """Red for errors, yellow for warnings."""
    return f"{_SEVERITY_COLOR[severity]}{text}{_RESET}" if color else text


def location(finding: Finding, color: bool) -> str:
    return f"{bold(finding.path, color)}:{finding.line}:{finding.col}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def summary_line(findings: Sequence[Finding], fixed: Sequence[Finding] = ()) -> str:
    """`Found 3 errors and 1 warning.`, or `All checks passed!` when there is nothing. After
    `--fix`, the findings before it with ruff's `(2 fixed, 2 remaining)`."""
    found = _counted([*findings, *fixed])
    if not found:
        return "All checks passed!"
    counts = f" ({len(fixed)} fixed, {len(findings)} remaining)" if fixed else ""
    return f"Found {found}{counts}."


def _counted(findings: Sequence[Finding]) -> str:
    """`3 errors and 1 warning`, or "" for none."""
    errors = sum(1 for finding in findings if finding.severity is Severity.ERROR)
    warnings = len(findings) - errors
    return " and ".join(_plural(count, noun) for count, noun
                        in ((errors, "error"), (warnings, "warning")) if count)


def fixes_table(fixed: Sequence[Finding]) -> str:
    """ruff's `--show-fixes` block: per file, how many findings of each rule were fixed."""
    if not fixed:
        return "No errors fixed.\n"
    per_file: dict[str, Counter[str]] = {}
    for finding in fixed:
        per_file.setdefault(finding.path, Counter())[finding.code] += 1
    lines = [f"Fixed {_counted(fixed)}:\n"]
    for path in sorted(per_file):
        lines.append(f"- {path}:\n")
        lines += [f"    {count} × {code} ({RULES[code].name})\n"
                  for code, count in sorted(per_file[path].items())]
    return "".join(lines)


def statistics_rows(findings: Sequence[Finding]) -> list[tuple[str, int]]:
    """(code, number of findings) per code, most frequent first, then by code."""
    counts = Counter(finding.code for finding in findings)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def statistics_items(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    """The statistics as JSON objects: code, name, severity and count (ruff's json layout)."""
    return [{"code": code, "name": RULES[code].name, "severity": RULES[code].severity.value,
             "count": count} for code, count in statistics_rows(findings)]


def statistics_table(findings: Sequence[Finding]) -> str:
    """One `  COUNT  CODE  name` row per code, most frequent first, then by code."""
    rows = statistics_rows(findings)
    width = len(str(rows[0][1])) if rows else 1
    return "".join(f"  {count:>{width}}  {code}  {RULES[code].name}\n" for code, count in rows)


def with_summary(body: str, findings: Sequence[Finding], fixed: Sequence[Finding] = (),
                 show_fixes: bool = False) -> str:
    """Append the summary line, separated from a non-empty body by one blank line (and, with
    `show_fixes`, the fixes before it)."""
    if show_fixes:
        body = f"{body}\n{fixes_table(fixed)}" if body else fixes_table(fixed)
    summary = summary_line(findings, fixed) + "\n"
    return f"{body}\n{summary}" if body else summary
