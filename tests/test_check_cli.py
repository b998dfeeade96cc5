"""`echoes-lint check` and `echoes-lint rule` as a user runs them: options, formats, exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from conftest import ROOT, git, init_repo, make_vault, run_cli, write_page
from helpers_check import PAGES, commit, lint, page, parsed, vault_repo, write

from echoes_lint.findings import RULES

SARIF_SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A committed vault with one error (EV002) and one warning (EV050) in `notes.md`."""
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/notes.md", page(body="Heading\n=======\n\nSee [[nowhere]].\n"))
    commit(repo, "notes")
    return repo


ERROR = (f"{PAGES}/notes.md", 9, 1, "EV002")
WARNING = (f"{PAGES}/notes.md", 11, 5, "EV050")


def fix_notes(repo: Path, body: str = "# Heading\n\nSee [[home]].\n") -> None:
    write(repo, f"{PAGES}/notes.md", page(body=body))
    commit(repo, "fix notes")


# --- exit codes --------------------------------------------------------------------------------


def test_clean_vault_exits_0_and_says_so(repo: Path) -> None:
    fix_notes(repo)
    result = lint(repo)
    assert (result.returncode, result.stdout, result.stderr) == (0, "All checks passed!\n", "")


def test_errors_exit_1_with_concise_lines(repo: Path) -> None:
    result = lint(repo)
    assert result.returncode == 1
    assert parsed(result.stdout) == [ERROR, WARNING]
    assert result.stdout.endswith("\nFound 1 error and 1 warning.\n")


def test_warnings_alone_pass_unless_fail_on_warning(repo: Path) -> None:
    fix_notes(repo, body="# Heading\n\nSee [[nowhere]].\n")
    assert lint(repo).returncode == 0
    assert lint(repo, "--fail-on", "warning").returncode == 1
    never = lint(repo, "--fail-on", "never", "--select", "EV050")
    assert never.returncode == 0 and "EV050" in never.stdout


def test_exit_zero_reports_but_passes(repo: Path) -> None:
    result = lint(repo, "--exit-zero")
    assert result.returncode == 0
    assert parsed(result.stdout) == [ERROR, WARNING]


@pytest.mark.parametrize(("args", "message"), [
    (["--select", "EV999"], "unknown rule code 'EV999' in --select"),
    (["--ignore", "XX"], "unknown rule code 'XX' in --ignore"),
    (["--output-format", "xml"], "invalid choice: 'xml'"),
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["EchoesVault/pages/missing.md"], "EchoesVault/pages/missing.md: no such file or directory"),
    (["--vault-dir", "docs"], "must name the `EchoesVault` folder"),
    (["--vault-dir", "docs/EchoesVault"], "no vault at 'docs/EchoesVault'"),
    (["--staged", f"{PAGES}/notes.md"], "--staged checks what is staged and takes no paths"),
])
def test_usage_errors_exit_2_with_one_line_on_stderr(repo: Path, args: list[str],
                                                     message: str) -> None:
    result = lint(repo, *args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("echoes-lint: error: ")
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_repository_without_a_vault_is_a_usage_error(git_repo: Path) -> None:
    result = lint(git_repo)
    assert result.returncode == 2
    assert "no vault at 'EchoesVault'" in result.stderr


# --- selection ---------------------------------------------------------------------------------


def test_select_and_ignore_take_codes_prefixes_and_comma_lists(repo: Path) -> None:
    assert parsed(lint(repo, "--select", "EV05").stdout) == [WARNING]
    assert parsed(lint(repo, "--select", "EV002,EV050", "--ignore", "EV0").stdout) == []
    assert parsed(lint(repo, "--ignore", "ev050").stdout) == [ERROR]
    assert parsed(lint(repo, "--select", "EV001", "--select", "EV002").stdout) == [ERROR]


# --- output formats ----------------------------------------------------------------------------


def test_full_format_quotes_the_line_and_gives_help(repo: Path) -> None:
    result = lint(repo, "--output-format", "full")
    assert result.returncode == 1
    assert f"{PAGES}/notes.md:9:1: EV002 [error] a line that is exactly" in result.stdout
    assert "  9 | =======\n" in result.stdout
    assert "  = help: " in result.stdout


def test_json_format_lists_every_finding(repo: Path) -> None:
    result = lint(repo, "--output-format", "json")
    items = json.loads(result.stdout)
    assert [(i["filename"], i["location"]["row"], i["location"]["column"], i["code"])
            for i in items] == [ERROR, WARNING]
    assert [i["severity"] for i in items] == ["error", "warning"]


def test_sarif_output_is_valid_sarif_2_1_0(repo: Path) -> None:
    result = lint(repo, "--output-format", "sarif")
    log = json.loads(result.stdout)
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)
    assert {r["ruleId"] for r in log["runs"][0]["results"]} == {"EV002", "EV050"}


def test_github_format_writes_workflow_commands(repo: Path) -> None:
    lines = lint(repo, "--output-format", "github").stdout.splitlines()
    assert lines[0].startswith(
        f"::error title=echoes-lint (EV002),file={PAGES}/notes.md,line=9,col=1::")
    assert lines[1].startswith("::warning ")


def test_output_file_gets_the_report_and_stdout_stays_empty(repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    result = lint(repo, "--output-format", "json", "-o", str(target))
    assert (result.returncode, result.stdout) == (1, "")
    assert len(json.loads(target.read_text(encoding="utf-8"))) == 2


def test_statistics_counts_per_rule(repo: Path) -> None:
    result = lint(repo, "--statistics")
    assert result.returncode == 1
    assert "  1  EV002  bare-separator-line\n" in result.stdout
    assert "  1  EV050  broken-wikilink\n" in result.stdout


@pytest.mark.parametrize(("args", "env", "colored"), [
    ([], {}, False),
    (["--color", "always"], {}, True),
    (["--color", "always"], {"NO_COLOR": "1"}, True),
    ([], {"FORCE_COLOR": "1"}, True),
    ([], {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
    (["--color", "never"], {"FORCE_COLOR": "1"}, False),
])
def test_color_follows_the_option_no_color_and_force_color(
        repo: Path, args: list[str], env: dict[str, str], colored: bool) -> None:
    result = lint(repo, *args, env=env)
    assert ("\x1b[" in result.stdout) is colored


# --- what is checked ---------------------------------------------------------------------------


def test_named_files_limit_file_findings_but_not_repository_facts(repo: Path) -> None:
    write(repo, f"{PAGES}/other.md", "# no frontmatter\n")
    write(repo, "EchoesVault/index.md", "# index\n")
    git(repo, "add", "-A", "-f")
    result = lint(repo, f"{PAGES}/other.md")
    assert parsed(result.stdout) == [("EchoesVault/index.md", 1, 1, "EV020"),
                                     (f"{PAGES}/other.md", 1, 1, "EV010")]


def test_folder_paths_and_paths_outside_the_vault(repo: Path) -> None:
    write(repo, "README.md", "# readme\n")
    write(repo, "EchoesVault/daily/2026-01-05.md", "log\n")
    commit(repo, "more")
    assert parsed(lint(repo, "README.md").stdout) == []
    assert parsed(lint(repo, "EchoesVault/pages").stdout) == [ERROR, WARNING]
    assert parsed(lint(repo, ".").stdout) == parsed(lint(repo).stdout)


def test_paths_are_relative_to_the_current_directory(repo: Path) -> None:
    pages = repo / PAGES
    result = lint(repo, "notes.md", cwd=pages)
    assert parsed(result.stdout) == [ERROR, WARNING]
    assert parsed(run_cli("--workspace", str(repo), "check", cwd=repo.parent).stdout) == [
        ERROR, WARNING]


def test_staged_mode_reads_the_index_not_the_working_tree(repo: Path) -> None:
    write(repo, f"{PAGES}/notes.md", page(body="<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n"))
    git(repo, "add", f"{PAGES}/notes.md")
    fixed = page(body="# Fixed\n")
    write(repo, f"{PAGES}/notes.md", fixed)  # fixed on disk, conflict still staged
    staged = lint(repo, "--staged")
    assert (staged.returncode, parsed(staged.stdout)) == (1, [(f"{PAGES}/notes.md", 8, 1, "EV001")])
    assert parsed(lint(repo).stdout) == []


def test_monorepo_vault_dir_prefixes_paths_and_fix_commands(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "mono")
    make_vault(repo / "docs")
    write_page(repo / "docs", "home.md")
    write(repo, "docs/EchoesVault/index.md", "# index\n")
    git(repo, "add", "-A", "-f")
    result = lint(repo, "--vault-dir", "docs/EchoesVault", "--output-format", "json")
    (item,) = json.loads(result.stdout)
    assert (item["filename"], item["code"]) == ("docs/EchoesVault/index.md", "EV020")
    assert item["fix"]["message"] == "git rm --cached -- docs/EchoesVault/index.md"
    from_subfolder = lint(repo, "--vault-dir", "docs/EchoesVault", cwd=repo / "docs")
    assert parsed(from_subfolder.stdout) == [("docs/EchoesVault/index.md", 1, 1, "EV020")]


def test_outside_git_the_folder_is_the_workspace(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    make_vault(folder)
    write_page(folder, "a.md", body="Title\n=======\n")
    result = lint(folder)
    assert parsed(result.stdout) == [(f"{PAGES}/a.md", 9, 1, "EV002")]
    assert parsed(lint(folder, f"{PAGES}/a.md").stdout) == [(f"{PAGES}/a.md", 9, 1, "EV002")]
    staged = lint(folder, "--staged")
    assert (staged.returncode, staged.stderr) == (
        2, "echoes-lint: error: --staged needs a Git repository\n")


def test_check_never_writes(repo: Path) -> None:
    write(repo, "EchoesVault/index.md", "# stale\n")
    before = git(repo, "status", "--porcelain", "--ignored")
    stamp = {p: p.stat().st_mtime_ns for p in (repo / "EchoesVault").rglob("*") if p.is_file()}
    lint(repo)
    assert git(repo, "status", "--porcelain", "--ignored") == before
    assert {p: p.stat().st_mtime_ns for p in (repo / "EchoesVault").rglob("*")
            if p.is_file()} == stamp


# --- echoes-lint rule --------------------------------------------------------------------------


def test_rule_explains_a_code_or_a_name(repo: Path) -> None:
    by_code = run_cli("rule", "EV030", cwd=repo)
    assert by_code.returncode == 0
    assert by_code.stdout.startswith("# EV030 case-collision (error)\n\n")
    assert "Straße.md" in by_code.stdout
    assert run_cli("rule", "case-collision", cwd=repo).stdout == by_code.stdout


def test_rule_all_lists_every_rule_and_unknown_rule_is_exit_2(repo: Path) -> None:
    listed = run_cli("rule", "--all", cwd=repo)
    assert [line.split()[0] for line in listed.stdout.splitlines()] == list(RULES)
    unknown = run_cli("rule", "EV999", cwd=repo)
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("echoes-lint: error: unknown rule 'EV999'")


# --- the example vault and the benchmark -------------------------------------------------------


def test_example_vault_output_is_the_one_its_readme_shows(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "copy")
    shutil.copytree(ROOT / "examples", repo / "examples")
    commit(repo, "examples")
    readme = (ROOT / "examples" / "README.md").read_text(encoding="utf-8")
    shown = readme.split("```text\n", 1)[1].split("```", 1)[0]
    result = lint(repo, "--vault-dir", "examples/demo/EchoesVault")
    assert (result.returncode, result.stdout) == (1, shown)
    assert len({code for *_rest, code in parsed(result.stdout)}) >= 6




def test_benchmark_runs_on_a_tiny_vault() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_check.py"), "--pages", "3",
         "--repeat", "1"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "echoes-lint check (whole vault)" in result.stdout
    assert "echoes-lint-hook <one staged page>" in result.stdout
