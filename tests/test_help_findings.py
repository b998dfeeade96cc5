"""Issue 11: findings a user can act on. A miswritten required key is one finding at its line,
quoting it and naming the line to write; every finding's `help:` is a fix, never the title."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import git, write_page
from helpers_check import PAGES, lint, parsed, vault_repo, write
from helpers_gates import run_guarded
from helpers_writer import cli, init_vault, refused
from test_help_commands import echoes_lint

from echoes_lint.findings import RULES

VALID = "---\ntype: note\nstack: []\nstatus: active\nsummary: A page.\n---\n# T\n"

# (the miswritten line replacing a valid one, the line engines read, the line to write)
MISWRITTEN = [
    ("status active", "status: active", "status: active"),
    ("status=active", "status: active", "status: active"),
    ("status = active", "status: active", "status: active"),
    ("status : active", "status: active", "status: active"),
    ("Status: active", "status: active", "status: active"),
    ('"status": active', "status: active", "status: active"),
    ("'summary': A page.", "summary: A page.", "summary: A page."),
    ("summary=A page.", "summary: A page.", "summary: A page."),
    ("TYPE: note", "type: note", "type: note"),
    ("stack []", "stack: []", "stack: []"),
]


@pytest.fixture
def repo(git_repo: Path) -> Path:
    return vault_repo(git_repo)


@pytest.mark.parametrize(("written", "valid", "fix"), MISWRITTEN)
def test_a_miswritten_required_key_is_one_finding_that_quotes_the_line_and_names_the_fix(
        repo: Path, written: str, valid: str, fix: str) -> None:
    text = VALID.replace(valid, written)
    number = text.split("\n").index(written) + 1
    write(repo, f"{PAGES}/bad.md", text)
    result = lint(repo, f"{PAGES}/bad.md", "--select", "EV01,EV07")
    assert parsed(result.stdout) == [(f"{PAGES}/bad.md", number, 1, "EV015")]
    key = fix.split(":")[0]
    assert f"required key `{key}` is missing: " in result.stdout
    assert f"`{written}`" in result.stdout and f"did you mean `{fix}`?" in result.stdout
    full = lint(repo, f"{PAGES}/bad.md", "--select", "EV01,EV07", "--output-format", "full").stdout
    assert f"  = help: replace the line with `{fix}`\n" in full
    # The suggestion is certain: writing it makes the page valid.
    write(repo, f"{PAGES}/bad.md", text.replace(written, fix))
    assert lint(repo, f"{PAGES}/bad.md").returncode == 0


def test_an_indented_key_under_no_key_is_suggested_without_its_indentation(repo: Path) -> None:
    write(repo, f"{PAGES}/bad.md", VALID.replace("status: active\n", "").replace(
        "---\ntype", "---\n  status: active\ntype"))
    result = lint(repo, f"{PAGES}/bad.md", "--select", "EV01,EV07")
    assert parsed(result.stdout) == [(f"{PAGES}/bad.md", 2, 3, "EV015")]
    assert "skip the indented line `status: active`; did you mean `status: active`?" \
        in result.stdout


@pytest.mark.parametrize(("valid", "written"), [
    ("summary: A page.", "summary text: A page."),  # `summary: text: A page.`? a guess
    ("status: active", "status"),                    # no value to keep
    ("status: active", "status:"),                   # an empty value is EV016, not a lost key
    ("status: active", "stat: active"),              # another key
    ("status: active", "- status: active"),          # a list item
])
def test_no_suggestion_where_it_would_be_a_guess(repo: Path, valid: str, written: str) -> None:
    write(repo, f"{PAGES}/bad.md", VALID.replace(valid, written))
    output = lint(repo, f"{PAGES}/bad.md", "--select", "EV01,EV07").stdout
    assert "did you mean" not in output and parsed(output)


def test_the_engine_refuses_an_upsert_with_the_same_suggestion(git_repo: Path) -> None:
    init_vault(git_repo)
    message = refused(cli(git_repo, "upsert", "--payload", "-", payload={
        "filename": "bad.md", "content": VALID.replace("status: active", "status active")}))
    assert "line 4: required key `status` is missing: engines skip the line `status active`; " \
           "did you mean `status: active`?" in message


def test_ignored_lines_are_quoted(repo: Path) -> None:
    write(repo, f"{PAGES}/odd.md", VALID.replace("type: note", "type: note\nowner : me"))
    output = lint(repo, f"{PAGES}/odd.md", "--select", "EV070").stdout
    assert "engines ignore the frontmatter line `owner : me`: a space before `:`; write " \
           "`owner: me`" in output
    # Only a missing required key gets "replace the line": here the rule's fix is the help.
    write(repo, f"{PAGES}/odd.md", VALID.replace("type: note", "type: note\ndue date: 1"))
    full = lint(repo, f"{PAGES}/odd.md", "--select", "EV070", "--output-format", "full").stdout
    assert f"  = help: {RULES['EV070'].fix}\n" in full and "replace the line" not in full


def test_every_rule_has_a_fix_and_a_how_to_fix_section() -> None:
    for rule in RULES.values():
        assert rule.fix.strip() and rule.fix != rule.summary, rule.code
        availability = f"\n{rule.fix_availability}\n" if rule.fix_availability else ""
        assert rule.document().endswith(f"\n## How to fix\n\n{rule.fix}\n{availability}")
        assert "\nFix:" not in rule.explanation, rule.code  # said once, in its section


def test_full_help_is_the_findings_fix_or_the_rules_never_its_title(repo: Path) -> None:
    """A vault with one finding of many rules: each `help:` line is a fix."""
    write(repo, f"{PAGES}/bad.md", VALID.replace("status: active", "status active"))
    write(repo, f"{PAGES}/marks.md", VALID + "\n=======\n")
    write(repo, f"{PAGES}/links.md", VALID + "\nSee [[nowhere]].\n")
    write(repo, f"{PAGES}/long.md", VALID.replace("A page.", "x" * 170))
    write(repo, f"{PAGES}/dup.md", VALID.replace("type: note", "type: note\ntype: other"))
    write(repo, "EchoesVault/daily/2026-01-01.md", "# Legacy\n")
    write_page(repo, "untracked.md")
    (repo / "EchoesVault" / "index.md").write_text("# index\n", encoding="utf-8")
    git(repo, "add", "-f", "EchoesVault/index.md")
    full = lint(repo, "--output-format", "full").stdout
    headers = re.findall(r"^\S.*?: (EV\d{3}) \[", full, re.MULTILINE)
    helps = re.findall(r"^  = help: (.*)$", full, re.MULTILINE)
    assert len(headers) == len(helps) >= 8
    assert {"EV002", "EV014", "EV015", "EV018", "EV020", "EV022", "EV050", "EV060"} <= set(headers)
    for code, text in zip(headers, helps):
        assert text != RULES[code].summary, code
    assert f"  = help: {RULES['EV060'].fix}" in full  # no fix of its own: the rule's
    assert "  = help: git rm --cached -- EchoesVault/index.md" in full  # its own exact fix


def test_the_help_through_echoes_lint_names_the_rule_fix(repo: Path) -> None:
    shown = echoes_lint(repo, "rule", "EV015")
    assert shown.returncode == 0 and f"## How to fix\n\n{RULES['EV015'].fix}\n" in shown.stdout


def test_many_skipped_lines_with_missing_keys_stay_linear(tmp_path: Path) -> None:
    """Every required key missing and 200,000 skipped lines that each name a key: looking for a
    miswritten key reads each line once per missing key (a quadratic search took far longer than
    the hang guard)."""
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/hostile.md", "---\n" + "note x\n" * 200_000 + "status active\n---\n")
    completed = run_guarded("check", f"{PAGES}/hostile.md", "--select", "EV015", cwd=repo)
    assert [item[1:] for item in parsed(completed.stdout)] == \
        [(1, 1, "EV015")] * 3 + [(200_002, 1, "EV015")]
