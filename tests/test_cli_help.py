"""`echoes-lint` explains itself: bare, with --help, and per command."""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli

from echoes_lint import engine


def test_bare_command_prints_the_usage_not_a_json_error(tmp_path: Path) -> None:
    for args in ((), ("--workspace", str(tmp_path))):
        result = run_cli(*args, cwd=tmp_path)
        assert result.returncode == 2
        assert result.stdout == ""
        assert result.stderr.startswith("usage: echoes-lint ")
        assert "Tool commands:" in result.stderr and '"ok": false' not in result.stderr


def test_help_lists_protocol_and_tool_commands(tmp_path: Path) -> None:
    result = run_cli("--help", cwd=tmp_path)
    assert result.returncode == 0
    for name in engine.COMMANDS:  # each protocol command with its one-line description
        assert f"\n  {name:<17} {engine.COMMAND_SUMMARIES[name]}\n" in result.stdout


def test_help_describes_every_tool_command_in_one_line(tmp_path: Path) -> None:
    from echoes_lint.cli import TOOL_COMMANDS, TOOL_SUMMARIES

    assert set(TOOL_SUMMARIES) == set(TOOL_COMMANDS)
    shown = run_cli("--help", cwd=tmp_path).stdout
    tools = shown.split("Tool commands:\n", 1)[1]
    for name in TOOL_COMMANDS:
        assert f"  {name:<23} {TOOL_SUMMARIES[name]}\n" in tools, name
