"""`echoes-lint` explains itself: bare, with --help, and per command."""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli


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
    assert "init, migrate, upgrade" in result.stdout and "check, rule, ci" in result.stdout
