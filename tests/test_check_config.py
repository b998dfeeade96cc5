"""Configuration (`[tool.echoes-lint]`, `.echoes-lint.toml`) and inline suppression comments."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git, make_vault, write_page
from helpers_check import PAGES, commit, lint, located, page, parsed, vault_repo, write

from echoes_lint.config import Config, ConfigError, load_config

BROKEN = "Heading\n=======\n\nSee [[nowhere]].\n"
ERROR = (f"{PAGES}/notes.md", 9, 1, "EV002")
WARNING = (f"{PAGES}/notes.md", 11, 5, "EV050")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/notes.md", page(body=BROKEN))
    commit(repo, "notes")
    return repo


def configure(repo: Path, table: str, file: str = "pyproject.toml") -> None:
    """Write `table` as the tool table of pyproject.toml, or as `.echoes-lint.toml` itself."""
    if file == "pyproject.toml":
        table = "[project]\nname = 'demo'\n\n[tool.echoes-lint]\n" + table
    write(repo, file, table)


# --- configuration -----------------------------------------------------------------------------


def test_defaults_without_a_configuration(repo: Path) -> None:
    write(repo, "pyproject.toml", "[project]\nname = 'demo'\n")
    assert load_config(repo) == Config()


def test_pyproject_select_ignore_and_fail_on(repo: Path) -> None:
    configure(repo, 'ignore = ["EV050"]\n')
    assert parsed(lint(repo).stdout) == [ERROR]
    configure(repo, 'select = ["EV05"]\nfail-on = "warning"\n')
    result = lint(repo)
    assert (result.returncode, parsed(result.stdout)) == (1, [WARNING])
    configure(repo, 'fail-on = "never"\n')
    assert lint(repo).returncode == 0


def test_command_line_select_replaces_and_ignore_adds(repo: Path) -> None:
    configure(repo, 'select = ["EV05"]\nignore = ["EV001"]\n')
    assert parsed(lint(repo, "--select", "EV0").stdout) == [ERROR, WARNING]
    assert parsed(lint(repo, "--select", "EV0", "--ignore", "EV002").stdout) == [WARNING]


def test_per_file_ignores_match_paths_and_bare_file_names(repo: Path) -> None:
    configure(repo, '[tool.echoes-lint.per-file-ignores]\n"EchoesVault/pages/*.md" = ["EV002"]\n')
    assert parsed(lint(repo).stdout) == [WARNING]
    configure(repo, '[tool.echoes-lint.per-file-ignores]\n"notes.md" = ["EV05"]\n')
    assert parsed(lint(repo).stdout) == [ERROR]
    configure(repo, '[tool.echoes-lint.per-file-ignores]\n"other.md" = ["EV0"]\n')
    assert parsed(lint(repo).stdout) == [ERROR, WARNING]


def test_dedicated_file_wins_over_pyproject_and_config_option_over_both(repo: Path,
                                                                        tmp_path: Path) -> None:
    configure(repo, 'ignore = ["EV050"]\n')
    configure(repo, 'ignore = ["EV002"]\n', file=".echoes-lint.toml")
    assert parsed(lint(repo).stdout) == [WARNING]
    explicit = tmp_path / "strict.toml"
    explicit.write_text('select = ["EV001"]\n', encoding="utf-8")
    assert parsed(lint(repo, "--config", str(explicit)).stdout) == []


def test_vault_dir_from_the_configuration(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    make_vault(repo / "docs")
    write_page(repo / "docs", "a.md", body="Title\n=======\n")
    configure(repo, 'vault-dir = "docs/EchoesVault"\n')
    git(repo, "add", "-A")
    assert parsed(lint(repo).stdout) == [("docs/EchoesVault/pages/a.md", 9, 1, "EV002")]


@pytest.mark.parametrize(("table", "message"), [
    ('selct = ["EV001"]\n', "unknown key `selct`"),
    ('select = ["EV1"]\n', "unknown rule code 'EV1' in `select`"),
    ('ignore = "EV001"\n', "`ignore` in [tool.echoes-lint]"),
    ('fail-on = "sometimes"\n', "`fail-on` in [tool.echoes-lint]"),
    ('vault-dir = ""\n', "`vault-dir` in [tool.echoes-lint]"),
    ('[tool.echoes-lint.per-file-ignores]\n"*.md" = ["EV9"]\n', "unknown rule code 'EV9'"),
    ("select = [\n", "is not valid TOML"),
])
def test_configuration_mistakes_are_usage_errors(repo: Path, table: str, message: str) -> None:
    configure(repo, table)
    result = lint(repo)
    assert result.returncode == 2
    assert result.stderr.startswith("echoes-lint: error: ")
    assert message in result.stderr
    assert str(repo / "pyproject.toml") in result.stderr
    with pytest.raises(ConfigError):
        load_config(repo)


def test_missing_explicit_configuration_is_a_usage_error(repo: Path) -> None:
    result = lint(repo, "--config", "nowhere.toml")
    assert (result.returncode, result.stderr) == (
        2, "echoes-lint: error: configuration file not found: nowhere.toml\n")


# --- inline suppression ------------------------------------------------------------------------


def test_disable_next_line_with_codes_silences_only_those_codes(repo: Path) -> None:
    body = ("<!-- echoes-lint-disable-next-line EV050 -->\n"
            "Heading\n=======\n\n"
            "<!-- echoes-lint-disable-next-line EV002, EV050 -->\n"
            "See [[nowhere]] and [[gone]].\n"
            "[[unsilenced]]\n")
    write(repo, f"{PAGES}/notes.md", page(body=body))
    # The codes that silenced nothing are reported where their comment is (EV043).
    assert located(repo, ignore=["EV022"]) == [(f"{PAGES}/notes.md", 8, 1, "EV043"),
                                                (f"{PAGES}/notes.md", 10, 1, "EV002"),
                                                (f"{PAGES}/notes.md", 12, 1, "EV043"),
                                                (f"{PAGES}/notes.md", 14, 1, "EV050")]


def test_disable_next_line_without_codes_silences_everything_on_that_line(repo: Path) -> None:
    body = "Heading\n<!-- echoes-lint-disable-next-line -->\nSee [[nowhere]].\n\n[[gone]]\n"
    write(repo, f"{PAGES}/notes.md", page(body=body))
    assert located(repo, ignore=["EV022"]) == [(f"{PAGES}/notes.md", 12, 1, "EV050")]
