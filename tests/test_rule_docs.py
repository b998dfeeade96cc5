"""Every rule has a documentation page generated from its metadata, and the outputs link to it.

`ECHOES_LINT_UPDATE_DOCS=1 pytest tests/test_rule_docs.py` rewrites docs/rules/ from the metadata
after a rule changes; without it, a page that differs from its rule fails the suite.
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import ROOT
from test_report import FINDINGS, make_input, validate_sarif

from echoes_lint.findings import RULES, Finding, Severity
from echoes_lint.report import render

DOCS = ROOT / "docs" / "rules"


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_page_is_generated_from_the_metadata(code: str) -> None:
    page = DOCS / f"{code}.md"
    expected = RULES[code].document()
    if os.environ.get("ECHOES_LINT_UPDATE_DOCS") == "1":
        DOCS.mkdir(parents=True, exist_ok=True)
        page.write_text(expected, encoding="utf-8")
    assert page.read_text(encoding="utf-8") == expected
    assert RULES[code].url.endswith(f"/docs/rules/{code}.md")


def test_no_page_without_a_rule() -> None:
    assert sorted(path.stem for path in DOCS.glob("*.md")) == sorted(RULES)


def test_readme_rule_table_links_every_rule_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for code in RULES:
        assert f"[{code}](docs/rules/{code}.md)" in readme, code


def test_json_carries_url_end_location_and_the_fix() -> None:
    items = json.loads(render("json", make_input()))
    by_code = {item["code"]: item for item in items}
    assert by_code["EV020"]["fix"] == {"applicability": "display-only", "edits": [],
                                       "message": "git rm --cached -- EchoesVault/index.md"}
    for item in items:
        assert item["url"] == RULES[item["code"]].url
        assert item["end_location"] == item["location"]


def test_json_statistics_count_per_rule() -> None:
    findings = [*FINDINGS, Finding("b.md", 3, 1, "EV001", "m", Severity.ERROR)]
    stats = json.loads(render("json", make_input(findings, statistics=True)))
    assert stats[0] == {"code": "EV001", "name": "conflict-marker", "severity": "error",
                        "count": 2}
    assert sum(item["count"] for item in stats) == len(findings)


def test_sarif_rules_carry_help_uri_and_markdown_help() -> None:
    log = validate_sarif(render("sarif", make_input()))
    for descriptor in log["runs"][0]["tool"]["driver"]["rules"]:
        rule = RULES[descriptor["id"]]
        assert descriptor["helpUri"] == rule.url
        assert descriptor["help"]["markdown"] == rule.document()
