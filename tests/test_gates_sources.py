"""The full report's source lines of a whole-vault check are escaped as the paths and messages
are: a control character in a page, or in its name, stays one visible piece of one line, and
the lines of a page with nothing to escape are its own lines."""

from __future__ import annotations

from pathlib import Path

from helpers_check import PAGES, page, vault_repo, write

from echoes_lint.check import render_result
from echoes_lint.checker import run_checks


def test_source_lines_are_escaped_and_plain_lines_kept(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/colour.md", page("# C\n\n\x1b[31m[[nowhere]]\tred\u2028x\n"))
    write(repo, f"{PAGES}/bad\x1bname.md", page("# N\n\nSee [[lost]].\n"))
    write(repo, f"{PAGES}/plain.md", page("# P\n\nSee [[gone]] here.\n"))
    report = render_result(run_checks(repo), "full")
    assert "\x1b" not in report and "\u2028" not in report
    assert "\\x1b[31m[[nowhere]]\tred\\u2028x" in report  # a tab is kept, as in the text
    name = "EchoesVault/pages/bad\\x1bname.md"
    assert f"{name}:10:5: EV050" in report
    assert "See [[lost]]." in report.split(f"{name}:10:5: EV050", 1)[1]
    assert "See [[gone]] here." in report.split("plain.md:10:5: EV050", 1)[1]
