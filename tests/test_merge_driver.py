"""The frontmatter-aware merge driver: the pure three-way frontmatter merge, then real merges
run by Git through the driver that `install-merge-driver` configured."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pytest
from conftest import git, page_text, run_cli
from helpers_merge import (
    PAGE,
    commit_on,
    driven_vault,
    edit_main,
    git_run,
    unmerged_paths,
    vault_with_page,
)

from echoes_lint import engine
from echoes_lint.merge.driver import (
    Markers,
    Page,
    classify,
    merge_frontmatter,
    run_driver,
    split_page,
)

LONG_SUMMARY = "Token validation " + "x" * 150  # 167 characters

# ---------------------------------------------------------------------------------------------
# The pure frontmatter merge
# ---------------------------------------------------------------------------------------------


def page(*lines: str, body: str = "\n# Body\n") -> Page:
    split = split_page("\n".join(["---", *lines, "---"]) + "\n" + body)
    assert split is not None
    return split


BASE = ("type: note", "stack: [python]", "status: active", "summary: Original.")


def merged(base: Optional[Page], ours: Page, theirs: Page, style: str = "merge") -> list[str]:
    return merge_frontmatter(base, ours, theirs, Markers(style=style)).lines


def test_classify_names_which_side_changed() -> None:
    assert classify("a", "a", "a") == "unchanged"
    assert classify("a", "b", "a") == "ours"
    assert classify("a", "a", "b") == "theirs"
    assert classify("a", "b", "b") == "same"
    assert classify("a", "b", "c") == "conflict"
    assert classify("a", None, "a") == "ours"
    assert classify(None, "b", "c") == "conflict"


def test_one_side_changes_are_taken_and_identical_changes_taken_once() -> None:
    ours = page("type: note", "stack: [python, go]", "status: done", "summary: Original.")
    theirs = page("type: guide", "stack: [python]", "status: done", "summary: Original.")
    result = merge_frontmatter(page(*BASE), ours, theirs, Markers())
    assert result.conflicts == []
    assert result.lines == ["type: guide", "stack: [python, go]", "status: done",
                            "summary: Original."]


def test_key_order_follows_ours_and_keys_new_on_theirs_follow() -> None:
    ours = page("summary: Original.", "status: active", "owner: ana", "type: note",
                "stack: [python]")
    theirs = page(*BASE, "tags: [auth]", "area: security")
    assert merged(page(*BASE), ours, theirs) == [
        "summary: Original.", "status: active", "owner: ana", "type: note", "stack: [python]",
        "tags: [auth]", "area: security"]


def test_different_changes_to_one_key_conflict_with_standard_markers() -> None:
    ours = page("type: note", "stack: [python]", "status: active", "summary: Ours.")
    theirs = page("type: note", "stack: [python]", "status: done", "summary: Theirs.")
    result = merge_frontmatter(page(*BASE), ours, theirs,
                               Markers("ours:p.md", "base:p.md", "theirs:p.md"))
    assert result.conflicts == ["summary"]
    assert result.lines == ["type: note", "stack: [python]", "status: done",
                            "<<<<<<< ours:p.md", "summary: Ours.", "=======",
                            "summary: Theirs.", ">>>>>>> theirs:p.md"]


def test_diff3_conflicts_show_the_base_side() -> None:
    ours = page("type: note", "stack: [python]", "status: active", "summary: Ours.")
    theirs = page("type: note", "stack: [python]", "status: active", "summary: Theirs.")
    assert merged(page(*BASE), ours, theirs, style="zdiff3")[3:] == [
        "<<<<<<< ours", "summary: Ours.", "||||||| base", "summary: Original.", "=======",
        "summary: Theirs.", ">>>>>>> theirs"]


def test_deletion_on_one_side_wins_over_no_change_but_conflicts_with_a_change() -> None:
    base = page(*BASE, "owner: ana", "area: auth")
    ours = page(*BASE, "owner: bob", "area: auth")
    theirs = page(*BASE)
    result = merge_frontmatter(base, ours, theirs, Markers())
    assert result.conflicts == ["owner"]
    assert "area: auth" not in result.lines
    assert result.lines[-4:] == ["<<<<<<< ours", "owner: bob", "=======", ">>>>>>> theirs"]


def test_a_summary_over_the_limit_is_never_auto_merged() -> None:
    ours = page("type: note", "stack: [python, go]", "status: active", "summary: Original.")
    theirs = page("type: note", "stack: [python]", "status: active", f"summary: {LONG_SUMMARY}")
    assert engine.decode_summary(LONG_SUMMARY)[1] is not None
    result = merge_frontmatter(page(*BASE), ours, theirs, Markers())
    assert result.conflicts == ["summary"]
    assert result.lines[1] == "stack: [python, go]"
    assert f"summary: {LONG_SUMMARY}" in result.lines
    assert "<<<<<<< ours" in result.lines


def test_a_multi_line_summary_is_never_auto_merged() -> None:
    theirs = page("type: note", "stack: [python]", "status: active", "summary: First line",
                  "  and a second line.")
    result = merge_frontmatter(page(*BASE), page(*BASE), theirs, Markers())
    assert result.conflicts == ["summary"]


def test_deleting_a_required_key_is_a_conflict_not_an_invalid_page() -> None:
    theirs = page("type: note", "stack: [python]", "summary: Original.")
    result = merge_frontmatter(page(*BASE), page(*BASE), theirs, Markers())
    assert result.conflicts == ["status"]


def test_comments_and_list_values_merge_as_part_of_their_key() -> None:
    base = page("# kept", "type: note", "stack:", "  - python", "status: active",
                "summary: Original.")
    ours = page("# kept", "type: note", "stack:", "  - python", "  - go", "status: active",
                "summary: Original.")
    theirs = page("# changed", "type: note", "stack:", "  - python", "status: done",
                  "summary: Original.")
    assert merged(base, ours, theirs) == ["# changed", "type: note", "stack:", "  - python",
                                          "  - go", "status: done", "summary: Original."]


def test_pages_without_usable_frontmatter_are_not_split() -> None:
    assert split_page("# No frontmatter\n") is None
    assert split_page("---\ntype: a\ntype: b\n---\n") is None
    assert split_page("---\ntype: note\n") is None


def _driver_files(tmp_path: Path, base: str, ours: str, theirs: str) -> tuple[Path, Path, Path]:
    paths = []
    for name, text in (("O", base), ("A", ours), ("B", theirs)):
        path = tmp_path / name
        path.write_bytes(text.encode("utf-8"))
        paths.append(path)
    return paths[0], paths[1], paths[2]


def test_crlf_pages_stay_crlf(tmp_path: Path) -> None:
    base = page_text("Original.", status="active")
    ours = page_text("Original.", status="done")
    theirs = page_text("Theirs.", status="active")
    o, a, b = _driver_files(tmp_path, base, ours.replace("\n", "\r\n"), theirs)
    result, clean, _notes = run_driver(o, a, b, Markers(), tmp_path)
    assert clean
    assert result == page_text("Theirs.", status="done").replace("\n", "\r\n").encode()


def test_a_side_without_frontmatter_falls_back_to_a_plain_line_merge(tmp_path: Path) -> None:
    base = page_text("Original.", body="# T\n\nOne.\nTwo.\n")
    ours = page_text("Original.", body="# T\n\nOne (ours).\nTwo.\n")
    theirs = "# T\n\nOne.\nTwo (theirs).\n"
    o, a, b = _driver_files(tmp_path, base, ours, theirs)
    result, clean, notes = run_driver(o, a, b, Markers(), tmp_path)
    assert not clean
    assert "merged as plain text" in notes[0]
    assert result.decode().count("<<<<<<< ours") == 1


# ---------------------------------------------------------------------------------------------
# Real merges through Git
# ---------------------------------------------------------------------------------------------


def merge(repo: Path, branch: str) -> tuple[int, str]:
    completed = git_run(repo, "merge", "--no-edit", branch)
    return completed.returncode, completed.stdout + completed.stderr


@pytest.fixture
def repo(git_repo: Path) -> Path:
    return driven_vault(git_repo)


def test_git_merges_different_keys_of_one_page_cleanly_through_the_driver(repo: Path) -> None:
    # Adjacent lines: Git's own line merge would report a conflict here.
    commit_on(repo, "feature", ("status: active", "status: done"))
    edit_main(repo, ("stack: [python]", "stack: [python, go]"))
    status, output = merge(repo, "feature")
    assert status == 0, output
    text = (repo / PAGE).read_text(encoding="utf-8")
    assert "stack: [python, go]\nstatus: done\n" in text
    assert engine.validate_page_text(text)[1] == []
    assert unmerged_paths(repo) == set()
    assert git(repo, "rev-parse", "--verify", "-q", "HEAD^2")


def test_without_the_driver_the_same_edits_conflict(git_repo: Path) -> None:
    vault_with_page(git_repo)
    commit_on(git_repo, "feature", ("status: active", "status: done"))
    edit_main(git_repo, ("stack: [python]", "stack: [python, go]"))
    assert merge(git_repo, "feature")[0] == 1


def test_different_summaries_conflict_in_the_frontmatter(repo: Path) -> None:
    commit_on(repo, "feature", ("summary: Original summary.", "summary: Theirs."),
              ("status: active", "status: done"))
    edit_main(repo, ("summary: Original summary.", "summary: Ours."))
    status, output = merge(repo, "feature")
    assert status != 0
    assert "frontmatter conflict in `summary`" in output
    assert (repo / PAGE).read_text(encoding="utf-8") == (
        "---\ntype: note\nstack: [python]\nstatus: done\n"
        "<<<<<<< HEAD\nsummary: Ours.\n=======\nsummary: Theirs.\n>>>>>>> feature\n"
        "---\n\n# Auth\n\nLine one.\nLine two.\nLine three.\nLine four.\n")
    assert unmerged_paths(repo) == {PAGE}


def test_body_edits_on_different_lines_merge(repo: Path) -> None:
    commit_on(repo, "feature", ("Line four.", "Line four, theirs."))
    edit_main(repo, ("Line one.", "Line one, ours."))
    assert merge(repo, "feature")[0] == 0
    assert "Line one, ours.\nLine two.\nLine three.\nLine four, theirs.\n" in \
        (repo / PAGE).read_text(encoding="utf-8")


def test_body_edits_on_the_same_line_conflict_with_markers_and_labels(repo: Path) -> None:
    commit_on(repo, "feature", ("Line two.", "Line two, theirs."),
              ("status: active", "status: done"))
    edit_main(repo, ("Line two.", "Line two, ours."))
    status, output = merge(repo, "feature")
    assert status != 0
    assert "body conflict" in output
    text = (repo / PAGE).read_text(encoding="utf-8")
    assert "<<<<<<< HEAD\nLine two, ours.\n=======\nLine two, theirs.\n" \
           ">>>>>>> feature\n" in text
    assert "status: done\n" in text


def test_a_merge_that_would_take_a_summary_over_160_characters_is_a_conflict(repo: Path) -> None:
    commit_on(repo, "feature", ("summary: Original summary.", f"summary: {LONG_SUMMARY}"))
    edit_main(repo, ("status: active", "status: done"))
    status, output = merge(repo, "feature")
    assert status != 0, output
    text = (repo / PAGE).read_text(encoding="utf-8")
    assert f"<<<<<<< HEAD\nsummary: Original summary.\n=======\n" \
           f"summary: {LONG_SUMMARY}\n>>>>>>> feature\n" in text
    assert unmerged_paths(repo) == {PAGE}


def test_merge_conflict_style_diff3_adds_the_base_to_frontmatter_conflicts(repo: Path) -> None:
    git(repo, "config", "merge.conflictStyle", "diff3")
    commit_on(repo, "feature", ("summary: Original summary.", "summary: Theirs."))
    edit_main(repo, ("summary: Original summary.", "summary: Ours."))
    assert merge(repo, "feature")[0] != 0
    assert f"summary: Ours.\n||||||| base:{PAGE}\nsummary: Original summary.\n=======\n" in \
        (repo / PAGE).read_text(encoding="utf-8")


def test_pages_added_on_both_branches_merge_key_by_key(repo: Path) -> None:
    new = "EchoesVault/pages/new.md"
    for branch, status in (("feature", "done"), ("other", "active")):
        git(repo, "checkout", "-q", "-b", branch, "main")
        (repo / new).write_text(page_text("Same summary.", status=status), encoding="utf-8")
        git(repo, "add", new)
        git(repo, "commit", "-q", "-m", branch)
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "other")
    status, output = merge(repo, "feature")
    assert status != 0, output
    text = (repo / new).read_text(encoding="utf-8")
    assert "summary: Same summary.\n" in text
    assert "<<<<<<< HEAD\nstatus: active\n=======\nstatus: done\n" in text


def test_driver_usage_errors_exit_2_without_a_traceback(tmp_path: Path) -> None:
    completed = run_cli("merge-driver", "only-one-file", cwd=tmp_path)
    assert completed.returncode == 2
    assert "Traceback" not in completed.stderr
    missing = run_cli("merge-driver", "O", "A", "B", "page.md", cwd=tmp_path)
    assert missing.returncode == 2
    assert "cannot read a merge input" in missing.stderr
