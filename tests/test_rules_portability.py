"""EV032-EV034 and EV070-EV078: what protocol engines accept (like the reference engine) but
other tools may misread. The engine indexes these pages; the linter and the hooks refuse them.

Each rule has a page that triggers it, at an exact line and column, and its fixed twin that
passes; `PORTABILITY_CASES` is shared with the real pre-commit test in test_precommit_hooks.py.
Pages written with `page()` have their frontmatter keys on lines 2-5 and their body from line 8.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from helpers_check import PAGES, commit, located, page, vault_repo, write

from echoes_lint import engine
from echoes_lint.checker import run_checks
from echoes_lint.findings import RULES, Severity

TYPE = "type: note"
SUMMARY = "summary: A page."
# (code, file name, failing text, (line, col), fixed name, fixed text)
PORTABILITY_CASES = [
    ("EV070", "meeting.md", page().replace(TYPE, f"{TYPE}\ndue date: 2026-12-01"), (3, 1),
     "meeting.md", page().replace(TYPE, f"{TYPE}\ndue_date: 2026-12-01")),
    ("EV071", "cont.md", page().replace(SUMMARY, "summary: First line\n  and second"), (6, 3),
     "cont.md", page().replace(SUMMARY, "summary: First line and second")),
    ("EV072", "folded.md", page().replace(SUMMARY, "summary: >\n  Folded text."), (5, 10),
     "folded.md", page().replace(SUMMARY, "summary: Folded text.")),
    ("EV073", "quote.md", page().replace(SUMMARY, "summary: 'it's'"), (5, 10),
     "quote.md", page().replace(SUMMARY, "summary: 'it''s'")),
    ("EV074", "empty.md", page().replace(TYPE, 'type: ""'), (2, 7),
     "empty.md", page()),
    ("EV075", "stack.md", page().replace("stack: [python]", "stack: [python"), (3, 8),
     "stack.md", page()),
    ("EV076", "row.md", page().replace(SUMMARY, "summary: - [[row]]: Legacy text."), (5, 10),
     "row.md", page().replace(SUMMARY, "summary: Legacy text.")),
    ("EV077", "zero.md", page(body="# T\0itle\n"), (8, 4),
     "zero.md", page()),
    ("EV078", "trailing.md", page(body="# Title\n=======   \n"), (9, 1),
     "trailing.md", page(body="# Title\n")),
    ("EV032", ".draft.md", page(), (1, 1), "draft.md", page()),
    ("EV033", "Notes.MD", page(), (1, 1), "Notes.md", page()),
    ("EV034", "a..b.md", page(), (1, 1), "a-b.md", page()),
]
CODES = [case[0] for case in PORTABILITY_CASES]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return vault_repo(tmp_path / "repo")


def findings_in(repo: Path, relative: str) -> list[tuple[int, int, str]]:
    return [(line, col, code) for path, line, col, code in located(repo, ignore=["EV022"])
            if path == relative]


@pytest.mark.parametrize(("code", "name", "text", "position", "fixed_name", "fixed"),
                         PORTABILITY_CASES, ids=CODES)
def test_rule_reports_its_line_and_column_and_the_fix_passes(
        repo: Path, code: str, name: str, text: str, position: tuple[int, int],
        fixed_name: str, fixed: str) -> None:
    path = write(repo, f"{PAGES}/{name}", text)
    assert findings_in(repo, f"{PAGES}/{name}") == [(*position, code)]
    # The engine decides as the reference engine does: it indexes every page but EV078's.
    pages = engine.scan_index_pages(engine.scan_workspace(repo, git=False))
    if code == "EV078":
        with pytest.raises(engine.VaultError, match="conflict markers"):
            engine.build_index(pages)
    else:
        assert f"- [[{engine.page_stem(name)}]]" in engine.build_index(pages)
    path.unlink()
    write(repo, f"{PAGES}/{fixed_name}", fixed)
    assert findings_in(repo, f"{PAGES}/{fixed_name}") == []


def test_every_new_rule_is_documented_with_a_severity() -> None:
    for code in CODES:
        rule = RULES[code]
        assert rule.explanation and rule.summary
        assert rule.severity is (Severity.WARNING if code == "EV074" else Severity.ERROR)
    assert "EV013" not in RULES  # retired: engines ignore such lines (EV070)


@pytest.mark.parametrize(("name", "target"), [(".draft.md", "draft.md"), ("Notes.MD", "Notes.md"),
                                              (".Both.Md", "Both.md")])
def test_name_rules_give_the_exact_rename(repo: Path, name: str, target: str) -> None:
    write(repo, f"{PAGES}/{name}", page())
    commit(repo, "page")
    (finding,) = [f for f in run_checks(repo).findings if f.path == f"{PAGES}/{name}"]
    assert finding.fix == f"git mv -- {engine.shell_quote(f'{PAGES}/{name}')} {PAGES}/{target}"


def test_unaddressable_names_say_why(repo: Path) -> None:
    write(repo, f"{PAGES}/tab\tname.md", page())
    write(repo, f"{PAGES}/a..b.md", page())
    messages = {f.path: f.message for f in run_checks(repo, select=["EV034"]).findings}
    # Finding paths are printable: the tab is shown escaped.
    assert "control characters" in messages[f"{PAGES}/tab\\tname.md"]
    assert "'..'" in messages[f"{PAGES}/a..b.md"]


def test_a_non_nfc_upper_suffix_page_is_one_ev033_finding(repo: Path) -> None:
    name = unicodedata.normalize("NFD", "Résumé.MD")
    write(repo, f"{PAGES}/{name}", page())
    assert findings_in(repo, f"{PAGES}/{name}") == [(1, 1, "EV033")]


def test_ignored_lines_name_the_key_and_suggest_one(repo: Path) -> None:
    extra = '"quoted key": v\nx.y: 1\n- item\nowner : me'
    write(repo, f"{PAGES}/keys.md", page().replace(TYPE, f"{TYPE}\n{extra}"))
    found = [f for f in run_checks(repo, select=["EV070"]).findings if f.path.endswith("keys.md")]
    assert [(f.line, f.col) for f in found] == [(3, 1), (4, 1), (5, 1), (6, 1)]
    assert "`quoted_key`" in found[0].message and "`x_y`" in found[1].message
    assert "list item" in found[2].message and "space before `:`" in found[3].message


def test_problems_inside_a_conflict_are_left_to_ev001(repo: Path) -> None:
    text = page().replace(TYPE, f"<<<<<<< HEAD\n{TYPE}\ndue date: 1\n=======\n{TYPE}\n>>>>>>> b")
    write(repo, f"{PAGES}/merge.md", text)
    assert [code for _line, _col, code in findings_in(repo, f"{PAGES}/merge.md")] == ["EV001"]
