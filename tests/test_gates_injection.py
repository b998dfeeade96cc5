"""Issue 10 item 3: hostile file names and page text cannot inject GitHub workflow commands into
the log of the Action, break its Markdown summary or its outputs.

The Action runs for real (helpers_action) on a fresh clone of a repository whose committed page
names hold line breaks, `::`, `|`, backticks, ESC and the legacy `##[` form; the log is then read
the way the runner reads it."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import run_cli, write_page
from helpers_action import ActionRunner, commit_all, fresh_clone, healthy_vault
from test_action import runner  # noqa: F401  (the session's installed action)

HOSTILE_NAMES = (
    "a\n::error file=evil.md::injected.md",
    "b\r::add-mask::hunter2.md",
    "c\n::stop-commands::pwned.md",
    "d|pipe`tick`.md",
    "e\x1b[31mred\x07.md",
    "f ##[add-mask]legacy.md",
    "g\u2028line.md",
)


def runner_commands(log: str) -> list[tuple[str, str, str]]:
    """(command, properties, data) of every workflow command a runner would act on.

    Lines end at \\n, \\r or \\r\\n; a trimmed line starting with `::NAME ...::` is a command,
    and so is `##[NAME ...]` anywhere in a line (the legacy form). Between
    `::stop-commands::TOKEN` and `::TOKEN::` nothing is a command."""
    found: list[tuple[str, str, str]] = []
    stopped: str | None = None
    for raw in re.split(r"\r\n|\r|\n", log):
        line = raw.strip()
        parsed = None
        end = line.find("::", 2)
        if line.startswith("::") and end >= 0:
            name, _, properties = line[2:end].partition(" ")
            parsed = (name, properties, line[end + 2:])
        elif "##[" in raw and "]" in raw[raw.index("##["):]:
            start = raw.index("##[")
            close = raw.index("]", start)
            name, _, properties = raw[start + 3:close].partition(" ")
            parsed = (name, properties, raw[close + 1:])
        if parsed is None:
            continue
        if stopped is not None:
            if parsed[0] == stopped:
                stopped = None
            continue
        if parsed[0] == "stop-commands":
            stopped = parsed[2]
            continue
        found.append(parsed)
    return found


def properties(text: str) -> dict[str, str]:
    unescape = {"%0D": "\r", "%0A": "\n", "%3A": ":", "%2C": ",", "%25": "%"}
    return {key: re.sub(r"%(?:0D|0A|3A|2C|25)", lambda m: unescape[m.group()], value)
            for key, value in (item.split("=", 1) for item in text.split(",") if item)}


def test_hostile_names_and_text_cannot_inject_workflow_commands(
        runner: ActionRunner, git_repo: Path, tmp_path: Path) -> None:  # noqa: F811
    healthy_vault(git_repo)
    for name in HOSTILE_NAMES:
        (git_repo / "EchoesVault" / "pages" / name).write_text("no frontmatter\n",
                                                              encoding="utf-8")
    # Page text quoted in the log: a broken link on a line that also holds commands.
    write_page(git_repo, "quoted.md", body="# Q\n\n[[nowhere]] ##[add-mask]hunter2\n"
                                           "::add-mask::hunter2\n")
    commit_all(git_repo, "Hostile names")
    run = runner.run(fresh_clone(git_repo, tmp_path / "checkout"))
    assert run.returncode == 1, run.stdout + run.stderr

    commands = runner_commands(run.stdout)
    assert commands, run.stdout
    assert {name for name, _props, _data in commands} <= {"error", "warning", "notice"}, commands
    for _name, props, data in commands:
        assert "hunter2" not in data or "%" in data or data.startswith("EchoesVault/"), data
        file = properties(props).get("file")
        assert file is None or file.startswith("EchoesVault/"), props
        assert file != "evil.md"
    # Each hostile page is one annotation on one (escaped) path.
    files = {properties(props).get("file") for _name, props, _data in commands}
    assert "EchoesVault/pages/a\\n::error file=evil.md::injected.md" in files
    assert "EchoesVault/pages/e\\x1b[31mred\\x07.md" in files
    assert "\x1b" not in run.stdout and "\x07" not in run.stdout

    # The summary: one table row per finding, three cells each, no raw control characters.
    rows = [line for line in run.summary.split("\n") if line.startswith("| `EV")]
    assert len(rows) >= len(HOSTILE_NAMES) + 1
    for row in rows:
        assert len(re.split(r"(?<!\\)\|", row)) == 5, row
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f\u2028]", run.summary), run.summary
    assert run.outputs["integrity"] == "attention"
    assert int(run.outputs["error-count"]) >= len(HOSTILE_NAMES)



def test_an_error_quoting_the_repository_cannot_inject_a_command(git_repo: Path,
                                                                 tmp_path: Path) -> None:
    """A configuration key is quoted by the error that refuses it: it stays on one line and,
    under Actions, inside a stop-commands block."""
    healthy_vault(git_repo)
    (git_repo / ".echoes-lint.toml").write_text('"x\\n::error::forged ##[error]x" = 1\n',
                                                encoding="utf-8")
    commit_all(git_repo, "A hostile key")
    checkout = fresh_clone(git_repo, tmp_path / "checkout")
    completed = run_cli("ci", cwd=checkout, env={"GITHUB_ACTIONS": "true"})
    assert completed.returncode == 2
    lines = completed.stderr.splitlines()
    assert lines[0].startswith("::stop-commands::echoes-lint-") and len(lines) == 3
    token = lines[0].split("::")[2]
    assert lines[1].startswith("echoes-lint: error: ") and "x\\n::error::forged" in lines[1]
    assert lines[2] == f"::{token}::"
