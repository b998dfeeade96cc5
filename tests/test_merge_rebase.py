"""Issue 11: conflict labels carry the names Git gives, and `resolve` ends with the command that
continues the operation, explaining which side is "ours" during a rebase. Real rebases,
merges and cherry-picks that really conflict, completed end to end."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

from conftest import git, run_cli
from helpers_merge import (
    PAGE,
    commit_on,
    edit_main,
    git_run,
    install_driver,
    replace,
    resolve,
    unmerged_paths,
    vault_with_page,
)

from echoes_lint.merge.install import driver_command


def summary_conflict(repo: Path) -> None:
    vault_with_page(repo)
    install_driver(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "driver attribute")
    commit_on(repo, "feature", ("summary: Original summary.", "summary: Theirs."))
    edit_main(repo, ("summary: Original summary.", "summary: Ours."))


def reconcile(repo: Path, summary: str) -> None:
    """Replace the summary conflict block of the page by one summary line."""
    text = (repo / PAGE).read_text(encoding="utf-8")
    replace(repo / PAGE, text[text.index("<<<<<<<"):text.index("---\n\n")],
            f"summary: {summary}\n")


def short(repo: Path, rev: str) -> str:
    return git(repo, "rev-parse", "--short=7", rev).strip()


def test_a_rebase_conflict_is_resolved_end_to_end(git_repo: Path) -> None:
    summary_conflict(git_repo)
    onto, replayed = short(git_repo, "main"), short(git_repo, "feature")
    git(git_repo, "checkout", "-q", "feature")
    assert git_run(git_repo, "rebase", "main").returncode != 0
    text = (git_repo / PAGE).read_text(encoding="utf-8")
    # Git's own labels: HEAD is the branch rebased onto, theirs the commit being replayed.
    assert "<<<<<<< HEAD\nsummary: Ours.\n=======\nsummary: Theirs.\n" \
           f">>>>>>> {replayed} (edit on feature)\n" in text
    status, output = resolve(git_repo)
    assert status == 0
    assert output.splitlines()[:2] == [
        "rebase in progress; 1 vault file to resolve.",
        'During a rebase the sides are swapped: "ours" (HEAD) is the branch you rebase onto '
        f'({onto}) with the commits replayed so far, "theirs" is your commit from feature being '
        f"replayed ({replayed}).",
    ]
    assert "rebase --continue" not in output  # not before the vault is resolved
    reconcile(git_repo, "Ours, then theirs.")
    status, output = resolve(git_repo, "--check")
    assert status == 0, output
    assert output.endswith(f"Resolved; stage with:\n  git add -- {PAGE}\n"
                           "Then continue with: git rebase --continue\n")
    git(git_repo, "add", "--", PAGE)
    completed = subprocess.run(["git", "rebase", "--continue"], cwd=git_repo, capture_output=True,
                               text=True, check=False, env={**os.environ, "GIT_EDITOR": "true"})
    assert completed.returncode == 0, completed.stderr
    assert resolve(git_repo)[1].startswith("no merge, rebase, cherry-pick or revert in progress")
    assert git(git_repo, "rev-parse", "feature~1").strip() == \
        git(git_repo, "rev-parse", "main").strip()
    assert "summary: Ours, then theirs.\n" in git(git_repo, "show", f"feature:{PAGE}")


def test_merge_markers_name_head_and_the_merged_branch(git_repo: Path) -> None:
    summary_conflict(git_repo)
    git(git_repo, "branch", "-m", "feature", "topic/new-auth")
    assert git_run(git_repo, "merge", "--no-edit", "topic/new-auth").returncode == 1
    text = (git_repo / PAGE).read_text(encoding="utf-8")
    assert "<<<<<<< HEAD\nsummary: Ours.\n=======\nsummary: Theirs.\n>>>>>>> topic/new-auth\n" \
        in text
    assert "ours:" not in text and "theirs:" not in text


def expand(command: str, values: dict[str, str]) -> str:
    """The command line as Git 2.44 and later runs it: %P %S %X %Y shell-quoted, %% one %."""
    quoted = {"P", "S", "X", "Y"}
    return re.sub(r"%(.)", lambda match: "%" if match.group(1) == "%" else
                  shlex.quote(values[match.group(1)]) if match.group(1) in quoted else
                  values.get(match.group(1), match.group(0)), command)


def test_branch_names_git_passes_as_placeholders_become_the_labels(git_repo: Path) -> None:
    """Git 2.44 and later expand %S %X %Y; this Git may be older, so the test expands the
    recorded command line as such a Git does and runs it through sh in a real conflict."""
    summary_conflict(git_repo)
    git(git_repo, "config", "merge.conflictStyle", "diff3")
    sides = {}
    for name, revision in (("O", "feature~1"), ("A", "main"), ("B", "feature")):
        sides[name] = f".merge_file_{name}"
        (git_repo / sides[name]).write_text(git(git_repo, "show", f"{revision}:{PAGE}"))
    names = {"P": PAGE, "L": "7", "S": "merged common ancestors", "X": "main's HEAD",
             "Y": "topic/$(touch pwned) `x`"}
    command = expand(driver_command(), {**sides, **names})
    completed = subprocess.run(["sh", "-c", command], cwd=git_repo, capture_output=True,
                               text=True, check=False, env={**os.environ, "GITHEAD_0": "no"})
    assert completed.returncode == 1, completed.stderr
    merged = (git_repo / sides["A"]).read_text(encoding="utf-8")
    assert "<<<<<<< main's HEAD\nsummary: Ours.\n||||||| merged common ancestors\n" \
           "summary: Original summary.\n=======\nsummary: Theirs.\n" \
           ">>>>>>> topic/$(touch pwned) `x`\n" in merged
    assert not (git_repo / "pwned").exists()


def test_an_older_git_leaves_the_placeholders_and_the_labels_follow_git_merge(
        git_repo: Path) -> None:
    summary_conflict(git_repo)
    assert git_run(git_repo, "merge", "--no-edit", "feature").returncode == 1
    paths = []
    for stage in (1, 2, 3):
        path = git_repo.parent / f"stage{stage}"
        path.write_text(git(git_repo, "show", f":{stage}:{PAGE}"))
        paths.append(str(path))
    run = run_cli("merge-driver", "--names", "%S", "%X", "%Y", *paths, PAGE, cwd=git_repo,
                  env={"GITHEAD_0123456789abcdef0123456789abcdef01234567": "feature"})
    assert run.returncode == 1
    assert "<<<<<<< HEAD\n" in Path(paths[1]).read_text(encoding="utf-8")
    assert ">>>>>>> feature\n" in Path(paths[1]).read_text(encoding="utf-8")


def test_cherry_pick_guidance_ends_with_its_continue_command(git_repo: Path) -> None:
    summary_conflict(git_repo)
    assert git_run(git_repo, "cherry-pick", "feature").returncode != 0
    reconcile(git_repo, "Both.")
    status, output = resolve(git_repo, "--check")
    assert status == 0, output
    assert output.endswith("Then continue with: git cherry-pick --continue\n")


def test_conflicts_outside_the_vault_are_counted_before_continuing(git_repo: Path) -> None:
    summary_conflict(git_repo)
    git(git_repo, "checkout", "-q", "feature")
    (git_repo / "notes.txt").write_text("theirs\n")
    git(git_repo, "add", "notes.txt")
    git(git_repo, "commit", "-q", "-m", "notes on feature")
    git(git_repo, "checkout", "-q", "main")
    (git_repo / "notes.txt").write_text("ours\n")
    git(git_repo, "add", "notes.txt")
    git(git_repo, "commit", "-q", "-m", "notes on main")
    assert git_run(git_repo, "merge", "--no-edit", "feature").returncode == 1
    assert unmerged_paths(git_repo) == {PAGE, "notes.txt"}
    reconcile(git_repo, "Both.")
    status, output = resolve(git_repo, "--check")
    assert status == 0, output
    assert output.endswith("Then resolve the 1 other conflicted file outside the vault and run: "
                           "git merge --continue\n")
