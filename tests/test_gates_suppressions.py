"""Issue 10 item 7: a suppression comment never hides what `status` counts as an issue, and a
comment that silences nothing (EV043) or names no rule (EV044) is itself reported. Parsing the
comments is linear in the line length."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli
from helpers_check import PAGES, located, page, vault_repo, write
from helpers_gates import run_guarded

COMMENT = "<!-- echoes-lint-disable-next-line {} -->\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return vault_repo(tmp_path / "repo")


def test_conflict_markers_and_broken_frontmatter_cannot_be_silenced(repo: Path) -> None:
    body = (COMMENT.format("EV001") + "<<<<<<< ours\nmine\n=======\ntheirs\n>>>>>>> theirs\n"
            + COMMENT.format("") + "=======\n")
    write(repo, f"{PAGES}/conflicted.md", page(body=body))
    write(repo, f"{PAGES}/broken.md", COMMENT.format("EV010") + "no frontmatter\n")
    found = located(repo, ignore=["EV022"])
    assert (f"{PAGES}/conflicted.md", 9, 1, "EV001") in found
    assert (f"{PAGES}/conflicted.md", 15, 1, "EV002") in found
    assert (f"{PAGES}/conflicted.md", 8, 1, "EV043") in found
    assert (f"{PAGES}/conflicted.md", 14, 1, "EV043") in found
    assert (f"{PAGES}/broken.md", 1, 1, "EV010") in found
    completed = run_cli("check", "--ignore", "EV022", cwd=repo)
    assert completed.returncode == 1
    assert "cannot silence EV001: `status` counts it as an issue" in completed.stdout


def test_unused_and_unknown_codes_are_reported_where_the_comment_is(repo: Path) -> None:
    body = (COMMENT.format("EV050") + "No link here.\n"
            + COMMENT.format("EV05O, EV050") + "See [[nowhere]].\n"
            + COMMENT.format("EV050") + "See [[gone]].\n")
    write(repo, f"{PAGES}/notes.md", page(body=body))
    assert located(repo, ignore=["EV022"]) == [(f"{PAGES}/notes.md", 8, 1, "EV043"),
                                                (f"{PAGES}/notes.md", 10, 1, "EV044")]
    # A check of a few rules cannot tell whether a comment for another rule is stale.
    assert located(repo, select=["EV001", "EV043"]) == []


def test_suppression_parsing_is_linear(repo: Path) -> None:
    """8,000 unclosed comment openings on one line of 7.5 MB, then a broken link under it: a
    lazy regular expression rescans the rest of the line from every opening (minutes); a linear
    scan does not. The timeout is a hang guard, not a measurement."""
    opening = "<!-- echoes-lint-disable-next-line EV050 " + "-" * 900
    line = opening * 8000 + "\n"
    write(repo, f"{PAGES}/many.md", page(body=line + "[[nowhere]]\n" + (
        "<!-- echoes-lint-disable-next-line EV050 -->" * 8000) + "\n[[gone]]\n"))
    completed = run_guarded("check", "--select", "EV050", cwd=repo)
    assert completed.returncode == 0, completed.stdout
    assert "many.md:9:1: EV050" in completed.stdout
    assert "[[gone]]" not in completed.stdout and ":11:" not in completed.stdout
