"""Issue 10 item 9: every rule and `resolve` stay linear in the size of a page, and a page with
hundreds of thousands of findings prints a bounded report. Each hostile page (below the 8 MiB
limit) goes through the real CLI under a hang guard; the sizes are ones where the quadratic
code took far longer than the guard."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git, load_json
from helpers_check import PAGES, commit, page, parsed, vault_repo, write
from helpers_linear import (
    frontmatter_conflicts,
    inline_code,
    link_lines,
    run_guarded,
    separators,
)

from echoes_lint import engine
from echoes_lint.rules import MAX_PER_FILE

HOSTILE = f"{PAGES}/hostile.md"


def hostile_repo(tmp_path: Path, text: str) -> Path:
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/ok.md", page())
    write(repo, HOSTILE, text)
    commit(repo, "hostile page")
    return repo


def test_two_hundred_thousand_link_lines_check_clean(tmp_path: Path) -> None:
    repo = hostile_repo(tmp_path, link_lines(200_000))
    completed = run_guarded("check", cwd=repo)
    assert (completed.returncode, completed.stdout) == (0, "All checks passed!\n")


def test_links_between_many_inline_code_spans_are_found_at_their_column(tmp_path: Path) -> None:
    text = inline_code(120_000)
    repo = hostile_repo(tmp_path, text)
    completed = run_guarded("check", cwd=repo)
    line = text.split("\n")[7]
    assert parsed(completed.stdout) == [(HOSTILE, 8, line.index("[[missing]]") + 1, "EV050")]


def summary_of(findings: list[tuple[str, int, int, str]], output: str, code: str,
               total: int) -> None:
    """The first MAX_PER_FILE findings of `code`, then one that counts the rest."""
    assert [item[3] for item in findings].count(code) == MAX_PER_FILE + 1
    assert f" {code} and {total - MAX_PER_FILE} more {code} findings in this file from here on " \
           f"(only the first {MAX_PER_FILE} are listed)\n" in output


def test_nine_hundred_thousand_separators_give_a_capped_report(tmp_path: Path) -> None:
    repo = hostile_repo(tmp_path, separators(900_000))
    for args in (("check",), ("check", HOSTILE)):
        completed = run_guarded(*args, cwd=repo)
        assert completed.returncode == 1
        findings = parsed(completed.stdout)
        assert findings[:2] == [(HOSTILE, 8, 1, "EV002"), (HOSTILE, 9, 1, "EV002")]
        summary_of(findings, completed.stdout, "EV002", 900_000)
        assert len(completed.stdout) < 50_000
    # The staged snapshot, one separator longer than the file on disk.
    (repo / HOSTILE).write_bytes((repo / HOSTILE).read_bytes() + b"=======\n")
    git(repo, "add", HOSTILE)
    (repo / HOSTILE).write_bytes(b"")
    staged = run_guarded("check", "--staged", cwd=repo)
    summary_of(parsed(staged.stdout), staged.stdout, "EV002", 900_001)


def test_twenty_thousand_conflict_blocks_in_frontmatter(tmp_path: Path) -> None:
    repo = hostile_repo(tmp_path, frontmatter_conflicts(20_000))
    completed = run_guarded("check", cwd=repo)
    assert completed.returncode == 1
    findings = parsed(completed.stdout)
    summary_of(findings, completed.stdout, "EV001", 20_000)
    assert findings[0] == (HOSTILE, 3, 1, "EV001")
    resolved = run_guarded("resolve", cwd=repo)
    assert resolved.returncode == 0, resolved.stderr
    lines = resolved.stdout.splitlines()
    assert lines[1] == f"{HOSTILE}:3:1: conflict in the frontmatter (`key0`), lines 3-7: " \
                       "ours (ours) line 4; theirs (theirs) line 6"
    assert f"{HOSTILE}: and {20_000 - MAX_PER_FILE} more conflict blocks after line " \
           f"{3 + 5 * (MAX_PER_FILE - 1)}" in lines
    assert len(resolved.stdout) < 50_000


def test_resolve_caps_bare_separators_in_both_formats(tmp_path: Path) -> None:
    repo = hostile_repo(tmp_path, separators(900_000))
    concise = run_guarded("resolve", cwd=repo)
    assert f"{HOSTILE}: and {900_000 - MAX_PER_FILE} more bare `=======` lines after line " \
           f"{7 + MAX_PER_FILE}\n" in concise.stdout
    report = load_json(run_guarded("resolve", "--output-format", "json", cwd=repo).stdout)
    (entry,) = report["files"]
    assert (len(entry["bareSeparators"]), entry["moreBareSeparators"]) == (
        MAX_PER_FILE, 900_000 - MAX_PER_FILE)


@pytest.mark.parametrize("staged", [False, True])
def test_check_and_check_staged_share_the_engine_size_limit(tmp_path: Path,
                                                           staged: bool) -> None:
    repo = vault_repo(tmp_path / "repo")
    big = page(body="x" * 64 + "\n") + ("y" * 1023 + "\n") * (engine.MAX_TEXT_BYTES // 1024)
    write(repo, HOSTILE, big)
    git(repo, "add", HOSTILE)
    completed = run_guarded("check", *(["--staged"] if staged else []), cwd=repo)
    assert completed.returncode == 1
    assert f"{HOSTILE}:1:1: EV019 cannot read file: file is larger than 8 MiB; make it a " \
           "readable regular file\n" in completed.stdout
