"""`echoes-lint resolve` during real merges, rebases, cherry-picks and worktree merges."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import git, run_cli
from helpers_merge import (
    PAGE,
    commit_on,
    edit_main,
    git_run,
    install_driver,
    resolve,
    unmerged_paths,
    vault_with_page,
)

from echoes_lint import engine


def resolve_json(repo: Path, *args: str) -> Any:
    status, output = resolve(repo, "--output-format", "json", *args)
    assert status in (0, 1)
    return json.loads(output)


def remove_markers(path: Path, keep: str) -> None:
    """Resolve every block of `path` to the single line `keep`."""
    text = path.read_text(encoding="utf-8")
    path.write_text(re.sub(r"<{7} .*?\n>{7} [^\n]*\n", keep + "\n", text, flags=re.S),
                    encoding="utf-8")


@pytest.fixture
def summary_conflict(git_repo: Path) -> Path:
    """A merge stopped by the driver: both branches changed `summary`, theirs also `status`."""
    vault_with_page(git_repo)
    install_driver(git_repo)
    commit_on(git_repo, "feature", ("summary: Original summary.", "summary: Theirs."),
              ("status: active", "status: done"))
    edit_main(git_repo, ("summary: Original summary.", "summary: Ours."))
    assert git_run(git_repo, "merge", "--no-edit", "feature").returncode != 0
    return git_repo


def test_resolve_reports_the_conflicted_page_and_key(summary_conflict: Path) -> None:
    status, output = resolve(summary_conflict)
    assert status == 0
    lines = output.splitlines()
    assert lines[0] == "merge in progress; 1 vault file to resolve."
    assert f"{PAGE}: unmerged, changed on both sides; frontmatter `status` changed on theirs " \
           "only; frontmatter `summary` changed differently on both sides" in lines
    assert f"{PAGE}:5:1: conflict in the frontmatter (`summary`), lines 5-9: " \
           f"ours (HEAD) line 6; theirs (feature) line 8" in lines
    # Parse errors caused by the markers themselves are not repeated as frontmatter problems.
    assert "frontmatter-key-syntax" not in output
    assert "git add" not in output


def test_resolve_json_lists_blocks_sides_and_keys(summary_conflict: Path) -> None:
    report = resolve_json(summary_conflict)
    assert report["ok"] is False
    assert report["operation"] == "merge"
    [page] = report["files"]
    assert (page["path"], page["kind"], page["stages"], page["clean"]) == (PAGE, "page",
                                                                         [1, 2, 3], False)
    assert page["frontmatter"] == [
        {"key": "status", "change": "theirs", "description": "changed on theirs only"},
        {"key": "summary", "change": "conflict", "description": "changed differently on both sides"},
    ]
    assert page["body"] is None
    [block] = page["blocks"]
    assert block == {
        "firstLine": 5, "lastLine": 9, "complete": True, "region": "frontmatter",
        "keys": ["summary"],
        "ours": {"label": "HEAD", "firstLine": 6, "lastLine": 6},
        "base": None,
        "theirs": {"label": "feature", "firstLine": 8, "lastLine": 8},
    }
    assert report["stageCommands"] == []


def test_resolve_check_fails_until_markers_are_gone_then_passes(summary_conflict: Path) -> None:
    status, output = resolve(summary_conflict, "--check")
    assert status == 1
    assert "1 vault file to resolve" in output
    remove_markers(summary_conflict / PAGE, "summary: Both summaries, reconciled.")
    status, output = resolve(summary_conflict, "--check")
    assert status == 0, output
    assert "every conflicted vault file is resolved" in output
    assert "### EchoesVault · " in output
    assert output.endswith(f"Resolved; stage with:\n  git add -- {PAGE}\n"
                           "Then continue with: git merge --continue\n")
    # It printed the command; it did not run it.
    assert unmerged_paths(summary_conflict) == {PAGE}


def test_resolve_check_fails_on_invalid_frontmatter_without_markers(summary_conflict: Path) -> None:
    remove_markers(summary_conflict / PAGE, "summary: " + "x" * 161)
    status, output = resolve(summary_conflict, "--check")
    assert status == 1
    assert f"{PAGE}:5:10: `summary` has 161 characters; the limit is 160" in output
    assert "git add" not in output


def test_a_file_name_needing_quotes_gets_a_quoted_git_add(git_repo: Path) -> None:
    name = "EchoesVault/pages/it's here.md"
    vault_with_page(git_repo)
    git(git_repo, "mv", PAGE, name)
    git(git_repo, "commit", "-q", "-m", "rename")
    commit_on(git_repo, "feature", ("Line two.", "Line two, theirs."), path=name)
    edit_main(git_repo, ("Line two.", "Line two, ours."), path=name)
    assert git_run(git_repo, "merge", "--no-edit", "feature").returncode != 0
    remove_markers(git_repo / name, "Line two, both.")
    status, output = resolve(git_repo, "--check")
    assert status == 0, output
    assert f"  git add -- {engine.shell_quote(name)}\n" in output
    assert "'EchoesVault/pages/it'\"'\"'s here.md'" in output


@pytest.mark.parametrize("style", ["diff3", "zdiff3"])
def test_diff3_and_zdiff3_blocks_are_read_with_their_base(git_repo: Path, style: str) -> None:
    vault_with_page(git_repo)
    git(git_repo, "config", "merge.conflictStyle", style)
    commit_on(git_repo, "feature", ("Line two.\nLine three.", "Line 2.\nCommon.\nLine three."))
    edit_main(git_repo, ("Line two.\nLine three.", "Line II.\nCommon.\nLine three."))
    assert git_run(git_repo, "merge", "--no-edit", "feature").returncode != 0
    text = (git_repo / PAGE).read_text(encoding="utf-8")
    assert "|||||||" in text
    [block] = resolve_json(git_repo)["files"][0]["blocks"]
    lines = text.split("\n")
    assert block["region"] == "body"
    assert block["complete"] is True
    assert lines[block["firstLine"] - 1] == "<<<<<<< HEAD"
    assert lines[block["base"]["firstLine"] - 2].startswith("||||||| ")
    assert lines[block["base"]["firstLine"] - 1:block["base"]["lastLine"]] == ["Line two."]
    assert lines[block["lastLine"] - 1] == ">>>>>>> feature"
    ours = lines[block["ours"]["firstLine"] - 1:block["ours"]["lastLine"]]
    theirs = lines[block["theirs"]["firstLine"] - 1:block["theirs"]["lastLine"]]
    # zdiff3 moves the line both sides added (`Common.`) out of the block; diff3 keeps it.
    assert (ours, theirs) == ((["Line II."], ["Line 2."]) if style == "zdiff3"
                              else (["Line II.", "Common."], ["Line 2.", "Common."]))
    assert resolve(git_repo, "--check")[0] == 1
    # The linter groups the same markers through the same engine function: one EV001 per block.
    lint = run_cli("check", "--select", "EV001", cwd=git_repo)
    assert lint.returncode == 1
    [finding] = [line for line in lint.stdout.splitlines() if " EV001 " in line]
    assert finding.startswith(f"{PAGE}:{block['firstLine']}:1: EV001 ")


def test_a_rebase_stopped_on_a_page_conflict_is_detected_like_a_merge(git_repo: Path) -> None:
    vault_with_page(git_repo)
    commit_on(git_repo, "feature", ("Line one.", "Line one, feature."))
    edit_main(git_repo, ("Line one.", "Line one, main."))
    git(git_repo, "checkout", "-q", "feature")
    assert git_run(git_repo, "rebase", "main").returncode != 0
    report = resolve_json(git_repo)
    assert report["operation"] == "rebase"
    [page] = report["files"]
    assert (page["path"], page["stages"], page["body"]) == (PAGE, [1, 2, 3],
                                                            "changed differently on both sides")
    assert [block["region"] for block in page["blocks"]] == ["body"]
    assert resolve(git_repo, "--check")[0] == 1


def test_a_cherry_pick_conflict_in_a_linked_worktree_is_detected(git_repo: Path,
                                                                 tmp_path: Path) -> None:
    vault_with_page(git_repo)
    commit_on(git_repo, "feature", ("Line one.", "Line one, feature."))
    git(git_repo, "branch", "other")
    worktree = tmp_path / "worktree"
    git(git_repo, "worktree", "add", "-q", str(worktree), "other")
    edit_main(worktree, ("Line one.", "Line one, other."))
    assert git_run(worktree, "cherry-pick", "feature").returncode != 0
    report = resolve_json(worktree)
    assert report["operation"] == "cherry-pick"
    assert [f["path"] for f in report["files"]] == [PAGE]
    # The main work tree is not in the middle of anything.
    assert resolve_json(git_repo)["operation"] is None


def test_modify_delete_conflicts_say_which_side_deleted(git_repo: Path) -> None:
    vault_with_page(git_repo)
    git(git_repo, "checkout", "-q", "-b", "feature")
    git(git_repo, "rm", "-q", PAGE)
    git(git_repo, "commit", "-q", "-m", "delete")
    git(git_repo, "checkout", "-q", "main")
    edit_main(git_repo, ("Line one.", "Line one, main."))
    assert git_run(git_repo, "merge", "--no-edit", "feature").returncode != 0
    status, output = resolve(git_repo)
    assert status == 0
    assert f"{PAGE}: unmerged, changed on ours, deleted on theirs" in output
    assert output.endswith(f"Resolved; stage with:\n  git add -- {PAGE}\n"
                           "Then continue with: git merge --continue\n")
    (git_repo / PAGE).unlink()
    assert resolve(git_repo)[1].endswith(f"  git rm -- {PAGE}\nThen continue with: "
                                         "git merge --continue\n")


def test_markers_left_in_a_committed_daily_entry_are_found_without_a_merge(
        git_repo: Path) -> None:
    vault_with_page(git_repo)
    daily = git_repo / "EchoesVault/daily/2026-01-02/20260102T030405000000Z-session-0a1b2c3d.md"
    daily.parent.mkdir(parents=True)
    daily.write_text("### Session\n<<<<<<< HEAD\nA\n=======\nB\n>>>>>>> topic\n", encoding="utf-8")
    status, output = resolve(git_repo, "--check")
    assert status == 1
    assert output.splitlines()[:2] == [
        "no merge, rebase, cherry-pick or revert in progress; 1 vault file to resolve.",
        f"{daily.relative_to(git_repo).as_posix()}:2:1: conflict in the body, lines 2-6: "
        "ours (HEAD) line 3; theirs (topic) line 5",
    ]


def test_a_clean_repository_passes_and_a_non_repository_is_an_error(git_repo: Path,
                                                                     tmp_path: Path) -> None:
    vault_with_page(git_repo)
    status, output = resolve(git_repo, "--check")
    assert status == 0
    assert output.startswith("no merge, rebase, cherry-pick or revert in progress; "
                             "no vault conflicts.\n")
    assert "Nothing to stage." in output
    outside = tmp_path / "plain"
    outside.mkdir()
    completed = run_cli("resolve", cwd=outside)
    assert completed.returncode == 2
    assert "not inside a Git work tree" in completed.stderr


def test_resolve_check_hydrates_an_initialised_vault_and_prints_its_card(git_repo: Path) -> None:
    assert run_cli("init", cwd=git_repo).returncode == 0
    vault_with_page(git_repo)
    install_driver(git_repo)
    commit_on(git_repo, "feature", ("summary: Original summary.", "summary: Theirs."))
    edit_main(git_repo, ("summary: Original summary.", "summary: Ours."))
    assert git_run(git_repo, "merge", "--no-edit", "feature").returncode != 0
    index = git_repo / "EchoesVault" / "index.md"
    index.unlink()
    assert resolve(git_repo, "--check")[0] == 1
    assert not index.exists()
    remove_markers(git_repo / PAGE, "summary: Reconciled summary.")
    status, output = resolve(git_repo, "--check")
    assert status == 0, output
    assert "\n### EchoesVault · Healthy\n" in output
    assert "- [[auth]]: Reconciled summary.\n" in index.read_text(encoding="utf-8")
    report = resolve_json(git_repo, "--check")
    assert (report["ok"], report["hydrate"], report["integrity"]) == (
        True, {"ran": True, "error": None}, "healthy")


def test_a_binary_asset_conflict_does_not_block_the_check_but_is_explained(
        git_repo: Path) -> None:
    vault_with_page(git_repo)
    asset = "EchoesVault/assets/diagram.png"
    (git_repo / asset).write_bytes(b"\x89PNG\0base")
    git(git_repo, "add", asset)
    git(git_repo, "commit", "-q", "-m", "asset")
    git(git_repo, "checkout", "-q", "-b", "feature")
    (git_repo / asset).write_bytes(b"\x89PNG\0theirs")
    git(git_repo, "commit", "-q", "-a", "-m", "theirs")
    git(git_repo, "checkout", "-q", "main")
    (git_repo / asset).write_bytes(b"\x89PNG\0ours")
    git(git_repo, "commit", "-q", "-a", "-m", "ours")
    assert git_run(git_repo, "merge", "--no-edit", "feature").returncode != 0
    status, output = resolve(git_repo, "--check")
    assert status == 0, output
    assert f"{asset}: unmerged, changed on both sides; not text, so Git kept our version; " \
           f"take theirs with `git checkout --theirs -- {asset}`" in output
    assert output.endswith(f"  git add -- {asset}\nThen continue with: git merge --continue\n")


def test_a_failing_hydrate_is_reported_never_turned_into_success(git_repo: Path) -> None:
    vault_with_page(git_repo, runtime=True)
    (git_repo / "EchoesVault" / "index.md").mkdir()
    status, output = resolve(git_repo, "--check")
    assert status == 2
    assert "hydrate failed: EchoesVault/index.md must be a regular file" in output
