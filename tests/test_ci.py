"""`echoes-lint ci` run directly: what it writes for GitHub Actions, its Markdown, its options."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import git, run_cli, write_page
from helpers_action import commit_all, fresh_clone, healthy_vault, parse_output_file

from echoes_lint import ci
from echoes_lint.findings import Finding, Severity


def actions_env(tmp_path: Path) -> dict[str, str]:
    """The variables a runner gives a step, with empty files to write to."""
    output, summary = tmp_path / "output", tmp_path / "summary"
    output.write_text("", encoding="utf-8")
    summary.write_text("", encoding="utf-8")
    return {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary)}


def read(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


@pytest.fixture
def broken_link_checkout(git_repo: Path, tmp_path: Path) -> Path:
    """A fresh clone whose only problem is a warning (EV050)."""
    healthy_vault(git_repo)
    write_page(git_repo, "gamma.md", body="# Gamma\n\nSee [[nowhere]].\n")
    commit_all(git_repo, "A broken link")
    return fresh_clone(git_repo, tmp_path / "checkout")


def test_outside_github_actions_it_prints_the_report_and_writes_nothing(
        broken_link_checkout: Path) -> None:
    completed = run_cli("ci", cwd=broken_link_checkout)
    assert completed.returncode == 0, completed.stderr
    assert "EchoesVault/pages/gamma.md:10:5: EV050 [warning]" in completed.stdout
    assert "  10 | See [[nowhere]]." in completed.stdout
    assert "\n::" not in completed.stdout
    assert completed.stdout.endswith("echoes-lint ci: passed (fail-on error).\n")
    assert git(broken_link_checkout, "status", "--porcelain", "--ignored") == ""


def test_under_github_actions_it_annotates_and_writes_summary_and_outputs(
        broken_link_checkout: Path, tmp_path: Path) -> None:
    env = actions_env(tmp_path)
    completed = run_cli("ci", cwd=broken_link_checkout, env=env)
    assert completed.returncode == 0, completed.stderr
    assert "\n::warning title=echoes-lint (EV050),file=EchoesVault/pages/gamma.md,line=10,col=5::" \
        in completed.stdout
    assert read(env["GITHUB_OUTPUT"]) == (
        "integrity=healthy\nissue-count=0\nerror-count=0\nwarning-count=1\n")
    summary = read(env["GITHUB_STEP_SUMMARY"])
    assert summary.startswith("### EchoesVault · Healthy\n")
    assert "**Lint findings**: Found 1 warning.\n" in summary
    assert "| `EV050` broken-wikilink | `EchoesVault/pages/gamma.md:10` |" in summary
    assert "Fix commands" not in summary


def test_configured_fail_on_is_the_default_and_the_option_wins(broken_link_checkout: Path
                                                                ) -> None:
    (broken_link_checkout / ".echoes-lint.toml").write_text('fail-on = "warning"\n',
                                                            encoding="utf-8")
    strict = run_cli("ci", cwd=broken_link_checkout)
    assert strict.returncode == 1
    assert "echoes-lint ci: failed (fail-on warning): 1 warning." in strict.stdout
    relaxed = run_cli("ci", "--fail-on", "error", cwd=broken_link_checkout)
    assert relaxed.returncode == 0, relaxed.stdout


def test_summary_table_escapes_pipes_and_html(git_repo: Path, tmp_path: Path) -> None:
    healthy_vault(git_repo)
    (git_repo / "EchoesVault" / "pages" / "<b>a|b.md").write_text("no frontmatter\n",
                                                                   encoding="utf-8")
    commit_all(git_repo, "An awkward name")
    env = actions_env(tmp_path)
    completed = run_cli("ci", cwd=fresh_clone(git_repo, tmp_path / "checkout"), env=env)
    assert completed.returncode == 1
    summary = read(env["GITHUB_STEP_SUMMARY"])
    rows = [line for line in summary.split("\n") if line.startswith("| `EV")]
    assert len(rows) == 2
    for row in rows:  # exactly three cells: every other pipe is escaped
        assert len(re.split(r"(?<!\\)\|", row)) == 5, row
        assert "`EchoesVault/pages/<b>a\\|b.md:1`" in row
        assert "<" not in re.sub(r"`[^`]*`", "", row), row  # HTML only inside code spans
    assert "contains '&lt;'" in rows[1]


def test_output_values_with_a_line_break_use_the_heredoc_form(git_repo: Path,
                                                              tmp_path: Path) -> None:
    healthy_vault(git_repo)
    checkout = fresh_clone(git_repo, tmp_path / "checkout")
    env = actions_env(tmp_path)
    completed = run_cli("ci", "--sarif", "out/two\nlines.sarif", cwd=checkout, env=env)
    assert completed.returncode == 0, completed.stderr
    written = read(env["GITHUB_OUTPUT"])
    assert "sarif-file<<ECHOES_LINT_" in written
    sarif = checkout / "out" / "two\nlines.sarif"
    assert sarif.is_file()
    assert parse_output_file(written) == {"integrity": "healthy", "issue-count": "0",
                                          "error-count": "0", "warning-count": "0",
                                          "sarif-file": str(sarif)}


def test_output_lines_delimiter_never_occurs_in_the_value() -> None:
    value = "a\nECHOES_LINT_\nb"
    text = ci.output_lines("name", value)
    delimiter = text.split("\n", 1)[0].split("<<", 1)[1]
    assert delimiter not in value and delimiter.startswith("ECHOES_LINT_")
    assert parse_output_file(text) == {"name": value}
    assert ci.output_lines("name", "plain") == "name=plain\n"


@pytest.mark.parametrize(("args", "message"), [
    (["--args=--args=EV001"], "--args cannot contain --args"),
    (["--args", "--select 'EV001"], "--args: cannot split"),
    (["--args=--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["--select", "EV999"], "unknown rule code 'EV999'"),
    (["--summary", "maybe"], "expected true or false, got 'maybe'"),
    (["--workspace", "no/such/dir"], "workspace is not a directory: no/such/dir"),
])
def test_usage_errors_exit_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    completed = run_cli("ci", *args, cwd=tmp_path)
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert completed.stderr.startswith("echoes-lint: error: ")
    assert message in completed.stderr and completed.stderr.count("\n") == 1


def test_findings_table_stops_within_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    findings = [Finding(f"EchoesVault/pages/p{number:03}.md", 1, 1, "EV010", "no frontmatter",
                        Severity.ERROR) for number in range(100)]
    row = ci.findings_table(findings[:1]).split("\n")[2] + "\n"
    assert row == "| `EV010` frontmatter-missing | `EchoesVault/pages/p000.md:1` | no frontmatter |\n"
    monkeypatch.setattr(ci, "SUMMARY_TABLE_BUDGET", len(row) * 30)
    table = ci.findings_table(findings)
    assert table.count("| `EV010` frontmatter-missing |") == 30
    assert table.endswith("| `EchoesVault/pages/p029.md:1` | no frontmatter |\n"
                          "\n70 more findings are listed in the log.\n")
