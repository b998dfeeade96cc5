"""Issue 11: `--statistics` works with every output format, and `check` selects and excludes as
ruff does (`extend-select`, `extend-ignore`, `exclude`, `extend-exclude`, glob paths), while
`ci` keeps the workflow's protections against the repository's configuration."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, git, run_cli
from helpers_check import PAGES, commit, lint, parsed, vault_repo, write
from test_gates_config import codes as ci_codes
from test_gates_config import weakened  # noqa: F401  (a pull request that hides its conflict)
from test_help_findings import VALID
from test_report import FINDINGS, GOLDEN, make_input, validate_sarif

from echoes_lint import config
from echoes_lint.findings import Finding, Severity
from echoes_lint.report import render

# Two EV001 findings, so the counts are not all one.
COUNTED = sorted([*FINDINGS, Finding("b.md", 3, 1, "EV001", "m", Severity.ERROR)],
                 key=Finding.sort_key)
STATISTICS_GOLDEN = {"concise": "statistics-concise.txt", "full": "statistics-full.txt",
                     "json": "statistics.json", "github": "statistics-github.txt",
                     "sarif": "statistics-sarif.json"}


@pytest.mark.parametrize("fmt", list(STATISTICS_GOLDEN))
def test_statistics_golden(fmt: str) -> None:
    output = render(fmt, make_input(COUNTED, statistics=True))
    assert output.encode("utf-8") == (GOLDEN / STATISTICS_GOLDEN[fmt]).read_bytes()


def test_sarif_statistics_keep_the_results_for_code_scanning() -> None:
    log = validate_sarif(render("sarif", make_input(COUNTED, statistics=True)))
    run = log["runs"][0]
    assert run["results"] == json.loads(render("sarif", make_input(COUNTED)))["runs"][0]["results"]
    assert run["properties"]["statistics"] == json.loads(
        render("json", make_input(COUNTED, statistics=True)))


@pytest.fixture
def repo(git_repo: Path) -> Path:
    """Three broken pages: a missing key, a broken link, a long summary."""
    repo = vault_repo(git_repo)
    write(repo, f"{PAGES}/missing.md", VALID.replace("status: active\n", ""))
    write(repo, f"{PAGES}/link.md", VALID + "See [[nowhere]].\n")
    write(repo, f"{PAGES}/long.md", VALID.replace("A page.", "y" * 170))
    commit(repo, "broken pages")
    return repo


def test_statistics_through_the_cli_in_every_format(repo: Path) -> None:
    concise = lint(repo, "--statistics")
    assert concise.returncode == 1
    assert concise.stdout == ("  1  EV015  frontmatter-missing-key\n  1  EV018  summary-invalid\n"
                              "  1  EV050  broken-wikilink\n\nFound 2 errors and 1 warning.\n")
    assert lint(repo, "--statistics", "--output-format", "full").stdout == concise.stdout
    github = lint(repo, "--statistics", "--output-format", "github")
    assert github.returncode == 1
    assert github.stdout.splitlines() == [
        "::error title=echoes-lint (EV015)::EV015 frontmatter-missing-key: 1 finding",
        "::error title=echoes-lint (EV018)::EV018 summary-invalid: 1 finding",
        "::warning title=echoes-lint (EV050)::EV050 broken-wikilink: 1 finding"]
    sarif = validate_sarif(lint(repo, "--statistics", "--output-format", "sarif").stdout)
    assert len(sarif["runs"][0]["results"]) == 3
    assert [item["count"] for item in sarif["runs"][0]["properties"]["statistics"]] == [1, 1, 1]
    counted = json.loads(lint(repo, "--statistics", "--output-format", "json").stdout)
    assert [item["code"] for item in counted] == ["EV015", "EV018", "EV050"]


def found(repo: Path, *args: str) -> list[str]:
    return sorted(f"{path.rsplit('/', 1)[-1]}:{code}"
                  for path, _line, _col, code in parsed(lint(repo, *args).stdout))


ALL = ["link.md:EV050", "long.md:EV018", "missing.md:EV015"]


@pytest.mark.parametrize(("configured", "args", "expected"), [
    ("", (), ALL),
    ('select = ["EV01"]\nextend-select = ["EV05"]', (), ["link.md:EV050", "long.md:EV018",
                                                          "missing.md:EV015"]),
    ('select = ["EV015"]\nextend-select = ["EV05"]', (), ["link.md:EV050", "missing.md:EV015"]),
    ('select = ["EV015"]', ("--extend-select", "EV018"), ["long.md:EV018", "missing.md:EV015"]),
    # A selection on the command line replaces the configured one and its extension (ruff).
    ('select = ["EV015"]\nextend-select = ["EV05"]', ("--select", "EV018"), ["long.md:EV018"]),
    ('extend-ignore = ["EV05"]', (), ["long.md:EV018", "missing.md:EV015"]),
    ('ignore = ["EV015"]\nextend-ignore = ["EV05"]', (), ["long.md:EV018"]),
    ("", ("--extend-ignore", "EV015,EV018"), ["link.md:EV050"]),
    ('exclude = ["EchoesVault/pages/l*"]', (), ["missing.md:EV015"]),
    ('exclude = ["link.md"]\nextend-exclude = ["long.md"]', (), ["missing.md:EV015"]),
    # --exclude replaces the configured `exclude`; --extend-exclude adds to it.
    ('exclude = ["link.md"]', ("--exclude", "long.md"), ["link.md:EV050", "missing.md:EV015"]),
    ('exclude = ["link.md"]', ("--extend-exclude", "./long.md"), ["missing.md:EV015"]),
    ("", ("--exclude", f"{PAGES}/"), []),
])
def test_selection_and_exclusion_as_in_ruff(repo: Path, configured: str, args: tuple[str, ...],
                                            expected: list[str]) -> None:
    (repo / ".echoes-lint.toml").write_text(configured + "\n", encoding="utf-8")
    assert [item for item in found(repo, *args) if not item.endswith("EV022")] == expected


def test_an_explicit_file_is_excluded_too(repo: Path) -> None:
    (repo / ".echoes-lint.toml").write_text('exclude = ["missing.md"]\n', encoding="utf-8")
    assert found(repo, f"{PAGES}/missing.md") == []
    assert found(repo, f"{PAGES}/missing.md", "--exclude", "other.md") == ["missing.md:EV015"]


def test_glob_paths_on_the_command_line(repo: Path) -> None:
    assert found(repo, f"{PAGES}/l*.md") == ["link.md:EV050", "long.md:EV018"]
    assert found(repo, "EchoesVault/**/mis*.md") == ["missing.md:EV015"]
    missing = lint(repo, f"{PAGES}/zz*.md")
    assert missing.returncode == 2
    assert missing.stderr == f"echoes-lint: error: {PAGES}/zz*.md: no file or folder matches\n"


def test_a_glob_never_follows_a_link_loop(repo: Path) -> None:
    """`**` stays inside the tree: two links back to their parent would make a link-following
    glob (Python's `glob.glob`) run for ever; the timeout is the hang guard."""
    loops = repo / "loops" / "d"
    loops.mkdir(parents=True)
    (loops / "a").symlink_to("..")
    (loops / "b").symlink_to("..")
    assert found(repo, "EchoesVault/**/mis*.md") == ["missing.md:EV015"]
    completed = subprocess.run([sys.executable, "-m", "echoes_lint", "check", "loops/**/*.md"],
                               cwd=repo, capture_output=True, text=True, timeout=60, check=False)
    assert completed.returncode == 2, completed.stderr  # nothing there but the links


def test_unknown_codes_in_extensions_are_errors(repo: Path) -> None:
    (repo / ".echoes-lint.toml").write_text('extend-ignore = ["EV999"]\n', encoding="utf-8")
    refused = lint(repo)
    assert refused.returncode == 2 and "unknown rule code 'EV999'" in refused.stderr
    (repo / ".echoes-lint.toml").write_text('exclude = "pages"\n', encoding="utf-8")
    assert "`exclude` in" in lint(repo).stderr


def test_ci_keeps_protected_rules_against_extend_ignore_and_exclude(
        weakened: Path) -> None:  # noqa: F811
    """The pull request's configuration tries the new keys: `ci` still reports the conflict and
    the committed index; `check`, the repository's own run, honours them."""
    (weakened / ".echoes-lint.toml").write_text(
        'fail-on = "never"\nextend-ignore = ["EV0"]\nexclude = ["EchoesVault"]\n'
        'extend-exclude = ["*.md"]\n', encoding="utf-8")
    git(weakened, "commit", "-qam", "Hide it with the new keys")
    gate = run_cli("ci", cwd=weakened)
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert {"EV001", "EV020"} <= ci_codes(gate.stdout)
    assert lint(weakened).returncode == 0


def test_the_readme_documents_every_configuration_key_and_statistics() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for key in config._KEYS:
        assert f"| `{key}` |" in readme, key
    assert "runs[0].properties.statistics" in readme and "COMMAND --help" in readme
