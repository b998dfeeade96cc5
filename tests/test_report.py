"""Reporters of `echoes-lint check`: golden outputs, GitHub escaping and SARIF schema validity."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from echoes_lint.findings import RULES, Finding, Severity, replace
from echoes_lint.report import FORMATS, ReportInput, render
from echoes_lint.report.github import escape_data, escape_property

HERE = Path(__file__).parent
GOLDEN = HERE / "golden" / "report"
SARIF_SCHEMA = HERE / "data" / "sarif-schema-2.1.0.json"

E, W = Severity.ERROR, Severity.WARNING
STRASSE = "EchoesVault/pages/Straße.md"
PERCENT = "EchoesVault/pages/100% done, really.md"

# An error and a warning, a non-ASCII path, a path with a space, `%` and `,`, messages with `:`
# and `,`, a fix, a path missing from `sources` and a source line with a tab before the column.
FINDINGS = sorted(
    [
        Finding(STRASSE, 12, 6, "EV050",
                "Broken wikilink [[Missing Page]]: no page, asset or alias matches", W),
        Finding(STRASSE, 10, 1, "EV001",
                "Unresolved conflict block (ours: HEAD, theirs: feature/x)", E),
        Finding(PERCENT, 1, 1, "EV010", "Page does not begin with a `---` frontmatter block", E),
        Finding("EchoesVault/index.md", 1, 1, "EV020", "`EchoesVault/index.md` is tracked", E,
                fix="git rm --cached -- EchoesVault/index.md"),
    ],
    key=Finding.sort_key,
)
SOURCES = {
    STRASSE: ["---", "type: note", "stack: []", "status: draft", "summary: Street names", "---",
              "", "# Straße", "", "<<<<<<< HEAD", "Grüße aus Köln", "See:\t[[Missing Page]]"],
    PERCENT: ["# 100% done", "", "No frontmatter here."],
}
WORKSPACE_URI = "file:///home/dev/my%20vault"


def make_input(findings: list[Finding] = FINDINGS, **changes: Any) -> ReportInput:
    base = ReportInput(findings, "0.1.0", SOURCES, workspace_uri=WORKSPACE_URI)
    return replace(base, **changes)


def validate_sarif(text: str) -> dict[str, Any]:
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    log: dict[str, Any] = json.loads(text)
    jsonschema.Draft4Validator(schema).validate(log)
    return log


def test_registry_names() -> None:
    assert list(FORMATS) == ["concise", "full", "json", "github", "sarif"]


@pytest.mark.parametrize(
    ("fmt", "golden"),
    [
        ("concise", "concise.txt"),
        ("full", "full.txt"),
        ("json", "json.json"),
        ("github", "github.txt"),
        ("sarif", "sarif.json"),
    ],
)
def test_golden(fmt: str, golden: str) -> None:
    output = render(fmt, make_input())
    assert output.encode("utf-8") == (GOLDEN / golden).read_bytes()
    assert render(fmt, make_input()) == output


def test_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown output format 'text'"):
        render("text", make_input())


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ("concise", "All checks passed!\n"),
        ("full", "All checks passed!\n"),
        ("json", "[]\n"),
        ("github", ""),
    ],
)
def test_no_findings(fmt: str, expected: str) -> None:
    assert render(fmt, make_input([])) == expected
    assert render(fmt, make_input([], statistics=True, color=True)) == expected


def test_no_findings_sarif() -> None:
    log = validate_sarif(render("sarif", make_input([])))
    assert log["runs"][0]["results"] == []
    assert len(log["runs"][0]["tool"]["driver"]["rules"]) == len(RULES)


@pytest.mark.parametrize(
    ("severities", "summary"),
    [
        ([E], "Found 1 error."),
        ([W, W], "Found 2 warnings."),
        ([E, W], "Found 1 error and 1 warning."),
        ([E, E, W, W], "Found 2 errors and 2 warnings."),
    ],
)
def test_summary_plurals(severities: list[Severity], summary: str) -> None:
    findings = [Finding("a.md", 1, 1, "EV001", "m", severity) for severity in severities]
    assert render("concise", make_input(findings)).endswith(f"\n\n{summary}\n")


def test_concise_color() -> None:
    colored = render("concise", make_input(color=True))
    assert "\x1b[1mEchoesVault/index.md\x1b[0m:1:1: \x1b[31mEV020\x1b[0m `Echoes" in colored
    assert f"\x1b[1m{STRASSE}\x1b[0m:12:6: \x1b[33mEV050\x1b[0m Broken" in colored
    assert "\x1b" not in render("concise", make_input(color=False))
    assert "\x1b" in render("full", make_input(color=True))
    assert "\x1b" not in render("full", make_input(color=False))


def test_statistics() -> None:
    findings = (
        [Finding("a.md", line, 1, "EV001", "m", E) for line in range(1, 13)]
        + [Finding("b.md", line, 1, "EV050", "m", W) for line in range(1, 4)]
        + [Finding("c.md", line, 1, "EV010", "m", E) for line in range(1, 4)]
    )
    expected = (
        "  12  EV001  conflict-marker\n"
        "   3  EV010  frontmatter-missing\n"
        "   3  EV050  broken-wikilink\n"
        "\n"
        "Found 15 errors and 3 warnings.\n"
    )
    assert render("concise", make_input(findings, statistics=True)) == expected
    assert render("full", make_input(findings, statistics=True)) == expected


def test_full_skips_snippet_for_line_out_of_range() -> None:
    finding = Finding(PERCENT, 99, 1, "EV010", "m", E)
    assert render("full", make_input([finding])) == (
        f"{PERCENT}:99:1: EV010 [error] m\n"
        f"  = help: {RULES['EV010'].fix}\n"
        "\n"
        "Found 1 error.\n"
    )


def test_github_escape_data() -> None:
    assert escape_data("100% done\r\nnext: a, b") == "100%25 done%0D%0Anext: a, b"
    assert escape_data("%0A") == "%250A"


def test_github_escape_property() -> None:
    assert escape_property("dir/a:b,c%d\r\ne.md") == "dir/a%3Ab%2Cc%25d%0D%0Ae.md"
    assert escape_property("%3A") == "%253A"


def test_github_multiline_message_stays_one_command() -> None:
    finding = Finding("x,y:z.md", 2, 3, "EV050", "line one\nline two: 50%", W)
    assert render("github", make_input([finding])) == (
        "::warning title=echoes-lint (EV050),file=x%2Cy%3Az.md,line=2,col=3::"
        "x,y:z.md:2:3: EV050 line one%0Aline two: 50%25\n"
    )


def test_sarif_valid_against_official_schema() -> None:
    log = validate_sarif(render("sarif", make_input()))
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == sorted(rule["id"] for rule in rules)
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        # jsonschema checks `uri-reference` only with optional packages, so check RFC 3986 here.
        assert re.fullmatch(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-F]{2})+", uri), uri
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": WORKSPACE_URI + "/"}}


def test_sarif_without_workspace_uri() -> None:
    log = validate_sarif(render("sarif", make_input(workspace_uri=None)))
    assert "originalUriBaseIds" not in log["runs"][0]
