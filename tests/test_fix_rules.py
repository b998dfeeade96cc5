"""Issue 12: every fixable rule through the real CLI on a real repository. For each: the page
before and after `check --fix`, the finding gone, a second `--fix` that changes nothing, and a
`--diff` that is exactly that change (it applies with `git apply` and changes nothing itself)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import git
from helpers_check import PAGES, commit, lint, parsed, vault_repo, write

FRONT = "---\ntype: note\nstack: []\nstatus: active\nsummary: S\n---\n"
DEPRECATED = "---\ntype: note\nstack: []\nstatus: deprecated\nsummary: Old way.\n---\n"
BANNER = "> [!warning] DEPRECATED\n\n"

# (code, name, text before, text after --fix)
FIXABLE = [
    ("EV002", "setext.md", f"{FRONT}\nTitle\n=======\n\nText.\n",
     f"{FRONT}\nTitle\n========\n\nText.\n"),
    ("EV002", "two-lines.md", f"{FRONT}\nA title over\ntwo lines\n=======\n",
     f"{FRONT}\nA title over\ntwo lines\n========\n"),
    ("EV010", "bom.md", "\ufeff" + FRONT + "\nBody.\n", FRONT + "\nBody.\n"),
    ("EV010", "opening-blanks.md", "--- \t\n" + FRONT[4:] + "\nBody.\n", FRONT + "\nBody.\n"),
    ("EV011", "closing-blanks.md", FRONT[:-4] + "---  \n\nBody.\n", FRONT + "\nBody.\n"),
    ("EV014", "duplicate.md", FRONT[:-4] + "type: note\n---\n\nBody.\n", FRONT + "\nBody.\n"),
    ("EV080", "deprecated.md", f"{DEPRECATED}\n# Old way\n", f"{DEPRECATED}\n{BANNER}# Old way\n"),
    ("EV080", "deprecated-empty.md", DEPRECATED, f"{DEPRECATED}\n{BANNER[:-1]}"),
    ("EV080", "deprecated-no-newline.md", DEPRECATED[:-1], f"{DEPRECATED}\n{BANNER[:-1]}"),
]


def fixed_repo(tmp_path: Path, name: str, text: str) -> Path:
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/{name}", text)
    commit(repo, "page")
    return repo


@pytest.mark.parametrize(("code", "name", "before", "after"), FIXABLE,
                         ids=[case[1] for case in FIXABLE])
def test_fix_applies_the_edit_once_and_diff_shows_exactly_it(
        tmp_path: Path, code: str, name: str, before: str, after: str) -> None:
    repo = fixed_repo(tmp_path, name, before)
    path = repo / PAGES / name
    checked = lint(repo)
    assert checked.returncode == (1 if code != "EV080" else 0), checked.stdout
    assert code in [found[3] for found in parsed(checked.stdout)]

    # --diff changes nothing, exits 1 and prints a patch that turns `before` into `after`.
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy)
    diff = lint(repo, "--diff")
    assert diff.returncode == 1, diff.stderr
    assert diff.stdout.startswith(f"--- {PAGES}/{name}\n+++ {PAGES}/{name}\n@@ ")
    assert path.read_bytes() == before.encode("utf-8")
    (copy / "fix.patch").write_text(diff.stdout, encoding="utf-8")
    git(copy, "apply", "-p0", "fix.patch")
    assert (copy / PAGES / name).read_bytes() == after.encode("utf-8")

    fixed = lint(repo, "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert path.read_bytes() == after.encode("utf-8")
    assert parsed(fixed.stdout) == []
    assert "fixed, 0 remaining)." in fixed.stdout
    assert parsed(lint(repo).stdout) == []

    again = lint(repo, "--fix")
    assert (again.returncode, again.stdout) == (0, "All checks passed!\n")
    assert path.read_bytes() == after.encode("utf-8")
    nothing = lint(repo, "--diff")
    assert (nothing.returncode, nothing.stdout) == (0, "")


def test_the_diff_of_a_setext_underline_is_one_line(tmp_path: Path) -> None:
    repo = fixed_repo(tmp_path, "setext.md", f"{FRONT}\nTitle\n=======\n")
    assert lint(repo, "--diff").stdout == (
        f"--- {PAGES}/setext.md\n+++ {PAGES}/setext.md\n"
        "@@ -6,4 +6,4 @@\n ---\n \n Title\n-=======\n+========\n")


# A bare `=======` where lengthening it would change the text it renders (or where it is not
# Markdown at all): no automatic fix, the page stays as it is.
UNFIXABLE_SEPARATORS = {
    "after-blank": f"{FRONT}\nText.\n\n=======\n",
    "first-body-line": f"{FRONT}=======\n",
    "in-fence": f"{FRONT}\n```\ncode\n=======\n```\n",
    "after-list": f"{FRONT}\n- item\n=======\n",
    "after-quote": f"{FRONT}\n> quoted\n=======\n",
    "after-table": f"{FRONT}\na | b\n=======\n",
    "indented-paragraph": f"{FRONT}\n    code\n=======\n",
    "daily-first-line": "=======\n",
}


@pytest.mark.parametrize("case", sorted(UNFIXABLE_SEPARATORS))
def test_a_separator_that_is_text_is_never_fixed(tmp_path: Path, case: str) -> None:
    relative = ("EchoesVault/raw/notes.md" if case.startswith("daily")
                else f"{PAGES}/sep.md")
    repo = vault_repo(tmp_path / "repo")
    write(repo, relative, UNFIXABLE_SEPARATORS[case])
    commit(repo, "page")
    result = lint(repo, "--fix")
    assert result.returncode == 1
    assert [found[3] for found in parsed(result.stdout)] == ["EV002"]
    assert (repo / relative).read_text(encoding="utf-8") == UNFIXABLE_SEPARATORS[case]
    assert lint(repo, "--diff").stdout == ""


def test_a_separator_under_a_paragraph_after_a_fence_is_fixed(tmp_path: Path) -> None:
    text = f"{FRONT}\n```\n=======\n```\n\nTitle\n=======\n"
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/fence.md", text)
    commit(repo, "page")
    result = lint(repo, "--fix")
    # The fenced line is code: it stays (and is still reported); the underline is lengthened.
    assert parsed(result.stdout) == [(f"{PAGES}/fence.md", 9, 1, "EV002")]
    assert (repo / PAGES / "fence.md").read_text(encoding="utf-8") == \
        text[:-8] + "========\n"


def test_a_duplicate_key_with_another_value_is_not_dropped(tmp_path: Path) -> None:
    text = FRONT[:-4] + "type: decision\n---\n"
    repo = fixed_repo(tmp_path, "dup.md", text)
    result = lint(repo, "--fix")
    assert result.returncode == 1
    assert [found[3] for found in parsed(result.stdout)] == ["EV014"]
    assert (repo / PAGES / "dup.md").read_text(encoding="utf-8") == text


def test_a_deprecated_page_with_its_banner_has_no_finding(tmp_path: Path) -> None:
    repo = fixed_repo(tmp_path, "old.md", f"{DEPRECATED}\n> [!WARNING]- Deprecated\n> Use new.\n")
    assert lint(repo, "--select", "EV080").stdout == "All checks passed!\n"


def test_crlf_pages_keep_their_line_breaks(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    path = repo / PAGES / "crlf.md"
    path.write_bytes(f"{DEPRECATED}\n# Old\n".replace("\n", "\r\n").encode("utf-8"))
    commit(repo, "page")
    assert lint(repo, "--fix").returncode == 0
    assert path.read_bytes() == f"{DEPRECATED}\n{BANNER}# Old\n".replace("\n", "\r\n").encode()


def test_mixed_line_breaks_are_left_alone(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    path = repo / PAGES / "mixed.md"
    data = f"{DEPRECATED}\n# Old\n".replace("\n", "\r\n", 2).encode("utf-8")
    path.write_bytes(data)
    commit(repo, "page")
    result = lint(repo, "--fix")
    assert result.returncode == 1
    assert "mixed line endings" in result.stderr
    assert path.read_bytes() == data


def test_fixes_reach_a_fixed_point_in_one_run(tmp_path: Path) -> None:
    # A byte-order mark hides blanks on both delimiters and a repeated key; the page is also
    # deprecated without its banner, which only shows once the frontmatter is valid.
    before = ("\ufeff---  \ntype: note\nstack: []\nstatus: deprecated\nstatus: deprecated\n"
              "summary: Old.\n--- \n\n# Old\n")
    after = ("---\ntype: note\nstack: []\nstatus: deprecated\nsummary: Old.\n---\n\n"
             f"{BANNER}# Old\n")
    repo = fixed_repo(tmp_path, "many.md", before)
    shown = lint(repo, "--fix", "--show-fixes")
    assert shown.returncode == 0, shown.stdout
    assert (repo / PAGES / "many.md").read_text(encoding="utf-8") == after
    assert shown.stdout == (
        "Fixed 4 errors and 1 warning:\n"
        f"- {PAGES}/many.md:\n"
        "    2 × EV010 (frontmatter-missing)\n"
        "    1 × EV011 (frontmatter-unclosed)\n"
        "    1 × EV014 (frontmatter-duplicate-key)\n"
        "    1 × EV080 (deprecated-page-banner)\n"
        "\n"
        "Found 4 errors and 1 warning (5 fixed, 0 remaining).\n")
    assert lint(repo, "--fix").stdout == "All checks passed!\n"


def test_a_page_fix_rebuilds_the_index_when_the_pages_make_one(tmp_path: Path) -> None:
    repo = fixed_repo(tmp_path, "setext.md", f"{FRONT}\nTitle\n=======\n")
    index = repo / "EchoesVault" / "index.md"
    assert not index.exists()
    assert lint(repo, "--fix").returncode == 0
    assert "- [[setext]]: S\n" in index.read_text(encoding="utf-8")
    assert "- [[home]]: Start here.\n" in index.read_text(encoding="utf-8")


def test_a_page_fix_keeps_the_old_index_while_another_page_is_invalid(tmp_path: Path) -> None:
    repo = fixed_repo(tmp_path, "setext.md", f"{FRONT}\nTitle\n=======\n")
    write(repo, f"{PAGES}/broken.md", "no frontmatter\n")
    write(repo, "EchoesVault/index.md", "# old index\n")
    commit(repo, "broken page")
    result = lint(repo, "--fix")
    assert result.returncode == 1
    assert [found[3] for found in parsed(result.stdout)] == ["EV010"]
    assert (repo / PAGES / "setext.md").read_text(encoding="utf-8").endswith("========\n")
    assert (repo / "EchoesVault/index.md").read_text(encoding="utf-8") == "# old index\n"


def test_page_fixes_follow_the_selection(tmp_path: Path) -> None:
    repo = fixed_repo(tmp_path, "quiet.md", f"{DEPRECATED}\n# Old\n")
    write(repo, f"{PAGES}/setext.md", f"{FRONT}\nTitle\n=======\n")
    commit(repo, "pages")
    assert lint(repo, "--fix", "--ignore", "EV080,EV002").stdout == "All checks passed!\n"
    assert (repo / PAGES / "quiet.md").read_text(encoding="utf-8") == f"{DEPRECATED}\n# Old\n"
    assert (repo / PAGES / "setext.md").read_text(encoding="utf-8").endswith("\n=======\n")
    result = lint(repo, "--fix", "--select", "EV080")
    assert result.stdout == "Found 1 warning (1 fixed, 0 remaining).\n"
    assert (repo / PAGES / "setext.md").read_text(encoding="utf-8").endswith("\n=======\n")
