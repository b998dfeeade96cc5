"""Issue 10 item 9, merge side: a real `git merge` of a page whose 100,000 frontmatter keys
changed differently on both branches goes through the merge driver and `resolve` under a hang
guard (the quadratic driver took minutes), with bounded messages."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import git, load_json
from helpers_linear import GUARD_SECONDS, frontmatter_sides, run_guarded
from helpers_merge import PAGE, install_driver, unmerged_paths

from echoes_lint.rules import MAX_PER_FILE

KEYS = 100_000


def test_a_merge_of_100000_conflicting_frontmatter_keys(git_repo: Path) -> None:
    base, ours, theirs = frontmatter_sides(KEYS)
    page = git_repo / PAGE
    page.parent.mkdir(parents=True)
    page.write_text(base, encoding="utf-8")
    install_driver(git_repo)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "base")
    git(git_repo, "checkout", "-q", "-b", "feature")
    page.write_text(theirs, encoding="utf-8")
    git(git_repo, "commit", "-q", "-a", "-m", "theirs")
    git(git_repo, "checkout", "-q", "main")
    page.write_text(ours, encoding="utf-8")
    git(git_repo, "commit", "-q", "-a", "-m", "ours")

    merged = subprocess.run(["git", "merge", "--no-edit", "feature"], cwd=git_repo,
                            capture_output=True, text=True, timeout=GUARD_SECONDS, check=False)
    assert merged.returncode == 1, merged.stderr
    assert "frontmatter conflict in `k0`, `k1`, " in merged.stderr
    assert f"`k19` and {KEYS - 20} more keys\n" in merged.stderr
    assert len(merged.stderr) < 5_000
    text = page.read_text(encoding="utf-8")
    assert text.count("\n<<<<<<< HEAD\n") == KEYS
    assert "\n<<<<<<< HEAD\nk7: 1\n=======\nk7: 2\n>>>>>>> feature\n" in text
    assert unmerged_paths(git_repo) == {PAGE}

    resolved = run_guarded("resolve", cwd=git_repo)
    assert resolved.returncode == 0, resolved.stderr
    assert f"{KEYS - MAX_PER_FILE} more frontmatter keys changed" in resolved.stdout
    assert f"{PAGE}: and {KEYS - MAX_PER_FILE} more conflict blocks after line " in \
        resolved.stdout
    assert len(resolved.stdout) < 100_000
    report = load_json(run_guarded("resolve", "--output-format", "json", cwd=git_repo).stdout)
    (entry,) = report["files"]
    assert (len(entry["frontmatter"]), entry["moreFrontmatter"]) == (
        MAX_PER_FILE, KEYS - MAX_PER_FILE)
    assert entry["frontmatter"][0] == {"key": "k0", "change": "conflict",
                                       "description": "changed differently on both sides"}
