"""Rules about file contents: conflict markers, frontmatter, links and daily files.

Each rule has a file that triggers it, at an exact line and column, and one that does not.
Pages written with `page()` have their body from line 8 on.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git
from helpers_check import PAGES, commit, located, page, vault_repo, write

from echoes_lint.checker import run_checks


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return vault_repo(tmp_path / "repo")


def content(repo: Path) -> list[tuple[str, int, int, str]]:
    """Findings of a whole-vault check, except EV022 (the new files here are not committed)."""
    return located(repo, ignore=["EV022"])


def only(repo: Path, relative: str) -> list[tuple[int, int, str]]:
    """(line, col, code) of the findings in one file."""
    return [(line, col, code) for path, line, col, code in content(repo) if path == relative]


# --- EV001 conflict-marker ---------------------------------------------------------------------

DIFF3 = "<<<<<<< HEAD\nours\n||||||| base\nbase\n=======\ntheirs\n>>>>>>> feature\n"


def test_conflict_block_with_diff3_base_is_one_ev001_at_its_first_line(repo: Path) -> None:
    write(repo, f"{PAGES}/merge.md", page(body="# Merge\n\n" + DIFF3))
    assert only(repo, f"{PAGES}/merge.md") == [(10, 1, "EV001")]
    message = run_checks(repo, select=["EV001"]).findings[0].message
    assert "diff3 base section at line 12" in message
    assert "lines 10-16" in message


def test_unclosed_block_and_stray_closing_marker_are_each_reported(repo: Path) -> None:
    write(repo, f"{PAGES}/open.md", page(body="<<<<<<< HEAD\nours\n=======\ntheirs\n"))
    write(repo, f"{PAGES}/stray.md", page(body="text\n>>>>>>> feature\n"))
    assert only(repo, f"{PAGES}/open.md") == [(8, 1, "EV001")]
    assert only(repo, f"{PAGES}/stray.md") == [(9, 1, "EV001")]
    messages = {f.path: f.message for f in run_checks(repo, select=["EV001"]).findings}
    assert "never closed" in messages[f"{PAGES}/open.md"]
    assert "without an opening" in messages[f"{PAGES}/stray.md"]


def test_conflicts_in_daily_entries_and_agent_protocol_are_reported(repo: Path) -> None:
    daily = "EchoesVault/daily/2026-01-05/20260105T093000123456Z-session-1a2b3c4d.md"
    write(repo, daily, "### Session — 2026-01-05T10:30:00+01:00\n\n" + DIFF3)
    write(repo, "EchoesVault/AGENT_PROTOCOL.md", "# Protocol\n" + DIFF3)
    assert only(repo, daily) == [(3, 1, "EV001")]
    assert only(repo, "EchoesVault/AGENT_PROTOCOL.md") == [(2, 1, "EV001")]


def test_marker_lookalikes_and_the_generated_index_are_not_conflicts(repo: Path) -> None:
    write(repo, f"{PAGES}/fine.md", page(body="<<<<<<<< eight\n======= text\na >>>>>>> b\n"))
    write(repo, "EchoesVault/index.md", DIFF3)  # ignored and regenerated: not linted
    assert content(repo) == []


def test_conflict_inside_frontmatter_reports_only_the_conflict(repo: Path) -> None:
    text = ("---\ntype: note\n<<<<<<< HEAD\nsummary: Ours.\n=======\nsummary: Theirs.\n"
            ">>>>>>> branch\nstack: []\nstatus: active\n---\n\n# Page\n")
    write(repo, f"{PAGES}/fm.md", text)
    write(repo, f"{PAGES}/top.md", "<<<<<<< HEAD\n" + page() + "=======\n" + page()
          + ">>>>>>> branch\n")
    assert only(repo, f"{PAGES}/fm.md") == [(3, 1, "EV001")]
    assert only(repo, f"{PAGES}/top.md") == [(1, 1, "EV001")]


# --- EV002 bare-separator-line -----------------------------------------------------------------


def test_setext_underline_of_seven_equals_is_ev002(repo: Path) -> None:
    write(repo, f"{PAGES}/setext.md", page(body="Heading\n=======\n\nText.\n"))
    assert only(repo, f"{PAGES}/setext.md") == [(9, 1, "EV002")]
    assert "`# Title`" in run_checks(repo, select=["EV002"]).findings[0].message


def test_bare_separator_counts_even_inside_a_code_fence(repo: Path) -> None:
    # Engines read every line, so a fenced `=======` breaks the page all the same.
    write(repo, f"{PAGES}/fenced.md", page(body="```\n=======\n```\n"))
    assert only(repo, f"{PAGES}/fenced.md") == [(9, 1, "EV002")]


def test_other_underlines_are_not_ev002(repo: Path) -> None:
    write(repo, f"{PAGES}/ok.md", page(body="Heading\n========\n\nOther\n======\n"))
    assert content(repo) == []


# --- EV010-EV019 frontmatter engines refuse ---------------------------------------------------

FRONTMATTER_CASES = [
    ("EV010", "# No frontmatter\n", (1, 1)),
    ("EV010", "\ufeff---\ntype: note\nstack: []\nstatus: active\nsummary: S\n---\n", (1, 1)),
    ("EV011", "---\ntype: note\nstack: []\n", (1, 1)),
    ("EV012", "\n---\n---\n# Empty\n", (2, 1)),
    ("EV014", "---\ntype: note\nstack: []\nstatus: active\nsummary: S\ntype: other\n---\n",
     (6, 1)),
    ("EV015", "---\ntype: note\nstack: []\nsummary: S\n---\n", (1, 1)),
    ("EV016", "---\ntype:\nstack: []\nstatus: active\nsummary: S\n---\n", (2, 6)),
    ("EV017", '---\ntype: note\nstack: []\nstatus: active\nsummary: "unterminated\n---\n',
     (5, 10)),
    ("EV018", "---\ntype: note\nstack: []\nstatus: active\nsummary: " + "x" * 161 + "\n---\n",
     (5, 10)),
]


@pytest.mark.parametrize(("code", "text", "position"), FRONTMATTER_CASES,
                         ids=[f"{case[0]}-{index}" for index, case in
                              enumerate(FRONTMATTER_CASES)])
def test_frontmatter_problem_has_its_code_line_and_column(
        repo: Path, code: str, text: str, position: tuple[int, int]) -> None:
    write(repo, f"{PAGES}/bad.md", text)
    assert only(repo, f"{PAGES}/bad.md") == [(*position, code)]


def test_invalid_utf8_is_ev019_and_nul_is_ev077_in_pages_and_daily_entries(repo: Path) -> None:
    (repo / PAGES / "binary.md").write_bytes(b"---\ntype: note\n\xff\n")
    daily = repo / "EchoesVault/daily/2026-01-05/20260105T093000123456Z-session-1a2b3c4d.md"
    daily.parent.mkdir(parents=True)
    daily.write_bytes(b"### Session\n\nok \x00 nul\n")
    (repo / PAGES / "zero.md").write_bytes(page().replace("# Title", "# T\0itle").encode())
    assert only(repo, f"{PAGES}/binary.md") == [(3, 1, "EV019")]
    assert only(repo, str(daily.relative_to(repo))) == [(3, 4, "EV077")]
    assert only(repo, f"{PAGES}/zero.md") == [(8, 4, "EV077")]


def test_valid_frontmatter_variants_have_no_findings(repo: Path) -> None:
    write(repo, f"{PAGES}/quoted.md",
          "---\ntype: 'it''s'\nstack:\n  - python\nstatus: \"Active\"\n"
          "summary: \"A \\\"quoted\\\" word\"\nowner: team\n---\n\n# Quoted\n")
    write(repo, f"{PAGES}/limit.md", page(summary="x" * 160))
    assert content(repo) == []


# --- EV050 broken-wikilink ---------------------------------------------------------------------

LINKS = """See [[home]], [[Home|the start]], [[home#Section]] and [[home.md]].
Broken [[nowhere]] here.
Embed ![[diagram.png]] and ![[pic.png|200]].
`[[in-code]]` and ``a `[[double]]` b`` are code.
```markdown
[[in-fence]]
```
~~~
[[tilde-fence]]
~~~
| cell | [[home\\|alias]] |
[[#local-heading]] and [[strasse]] and [[pages/home]].
"""


def test_wikilinks_resolve_like_obsidian_and_broken_ones_are_warnings(repo: Path) -> None:
    write(repo, f"{PAGES}/Straße.md", page())
    write(repo, "EchoesVault/assets/pic.png", "png")
    write(repo, f"{PAGES}/links.md", page(body=LINKS, related='"[[ghost]]"'))
    findings = [f for f in run_checks(repo, select=["EV050"]).findings
                if f.path == f"{PAGES}/links.md"]
    assert [(f.line, f.col, f.code, f.severity.value) for f in findings] == [
        (10, 8, "EV050", "warning"),
        (11, 7, "EV050", "warning"),
    ]
    assert "there is no `EchoesVault/pages/nowhere.md`" in findings[0].message
    assert "embeds a file that is not in the vault" in findings[1].message


def test_links_in_daily_entries_are_checked(repo: Path) -> None:
    daily = "EchoesVault/daily/2026-01-05/20260105T093000123456Z-scratchpad-1a2b3c4d.md"
    write(repo, daily, "### Scratchpad — 2026-01-05T10:30:00+01:00\n\n- See [[home]], [[gone]].\n")
    assert only(repo, daily) == [(3, 17, "EV050")]


def test_link_to_a_page_created_in_the_same_commit_resolves_in_hook_mode(repo: Path) -> None:
    write(repo, f"{PAGES}/new.md", page(body="[[other]] and [[missing]]\n"))
    write(repo, f"{PAGES}/other.md", page())
    git(repo, "add", "-A")
    assert located(repo, paths=[f"{PAGES}/new.md"]) == [(f"{PAGES}/new.md", 8, 15, "EV050")]


# --- EV060 shared-daily-file -------------------------------------------------------------------


def test_new_date_level_daily_file_is_ev060(repo: Path) -> None:
    write(repo, "EchoesVault/daily/2026-01-05.md", "### Session\n")
    assert only(repo, "EchoesVault/daily/2026-01-05.md") == [(1, 1, "EV060")]


def test_committed_legacy_daily_file_is_fine_until_a_change_is_staged(repo: Path) -> None:
    legacy = "EchoesVault/daily/2025-12-31.md"
    write(repo, legacy, "### Session\n")
    commit(repo, "legacy")
    write(repo, "EchoesVault/daily/2026-01-05/20260105T093000123456Z-session-1a2b3c4d.md",
          "### Session\n")
    assert located(repo) == [("EchoesVault/daily/2026-01-05/"
                              "20260105T093000123456Z-session-1a2b3c4d.md", 1, 1, "EV022")]
    with (repo / legacy).open("a", encoding="utf-8") as handle:
        handle.write("- one more line\n")
    git(repo, "add", legacy)
    assert only(repo, legacy) == [(1, 1, "EV060")]
    assert "staged change" in run_checks(repo, select=["EV060"]).findings[0].message
