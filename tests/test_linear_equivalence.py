"""The linear rewrites decide exactly what the straightforward algorithms decided: each is
compared with a plain, obviously correct (and quadratic) version on generated inputs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from helpers_check import PAGES, commit, page, parsed, vault_repo, write
from helpers_linear import run_guarded
from hypothesis import given, settings
from hypothesis import strategies as st

from echoes_lint import engine
from echoes_lint.rules import MAX_PER_FILE
from echoes_lint.rules.conflicts import Covered
from echoes_lint.rules.links import links, mask_inline_code

BOUNDED = settings(max_examples=300, deadline=None, derandomize=True)
_REFERENCE_MARKER = re.compile(r"^(?:(<{7}|>{7}|\|{7})(?: .*)?|(={7}))$")


def plain_mask(line: str) -> str:
    """Pair each backtick run with the next run of the same length, searching from scratch."""
    runs = [(m.start(), m.end()) for m in re.finditer(r"`+", line)]
    index = 0
    while index < len(runs):
        start, end = runs[index]
        closing: Optional[int] = next((j for j in range(index + 1, len(runs))
                                       if runs[j][1] - runs[j][0] == end - start), None)
        if closing is None:
            index += 1
            continue
        line = line[:start] + " " * (runs[closing][1] - start) + line[runs[closing][1]:]
        index = closing + 1
    return line


def plain_markers(text: str) -> list[tuple[int, str]]:
    """Every line on its own against the protocol's marker pattern."""
    return [(number, line[0]) for number, line in enumerate(text.split("\n"), 1)
            if _REFERENCE_MARKER.match(line)]


LINES = st.sampled_from(["<<<<<<<", "<<<<<<< ours", "<<<<<<<<", "=======", "========",
                         " =======", "=======\r", ">>>>>>>", ">>>>>>> b x", ">>>>>>>x",
                         "|||||||", "||||||| base", "", "a", "[[x]] `y`", "- [[a|b]]",
                         "``[[c]]`` `", "![[img.png]]", "text [[p#h]] ` [[q]]"])


@BOUNDED
@given(st.text(alphabet="`a[] !x", max_size=60))
def test_inline_code_masking_matches_the_plain_pairing(line: str) -> None:
    assert mask_inline_code(line) == plain_mask(line)


@BOUNDED
@given(st.lists(LINES, max_size=30))
def test_marker_lines_match_a_line_by_line_match(lines: list[str]) -> None:
    text = "\n".join(lines)
    assert engine.marker_lines(text) == plain_markers(text)


@BOUNDED
@given(st.lists(LINES, max_size=30), st.integers(min_value=1, max_value=10))
def test_links_are_found_on_the_lines_a_line_by_line_search_finds(lines: list[str],
                                                                   first: int) -> None:
    text = "\n".join(line.replace("`", "") for line in lines)  # the no-code fast path
    expected = [(number, match.start() + (0 if match.start() and line[match.start() - 1] == "!"
                                          else 1), match.group(1))
                for number, line in enumerate(text.split("\n"), 1) if number >= first
                for match in re.finditer(r"\[\[([^\[\]\n]*)\]\]", line)]
    assert [(link.line, link.col, link.inner) for link in links(text, first)] == expected


@BOUNDED
@given(st.lists(st.tuples(st.integers(1, 40), st.integers(0, 10)), max_size=12),
       st.integers(0, 60))
def test_covered_answers_like_a_scan_of_every_span(spans: list[tuple[int, int]],
                                                   line: int) -> None:
    pairs = [(first, first + length) for first, length in spans]
    assert (line in Covered(pairs)) == any(first <= line <= last for first, last in pairs)


def test_broken_links_beyond_the_cap_are_counted_not_listed(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/links.md", page(body="[[gone]]\n" * 1000 + "[[home]]\n"))
    commit(repo)
    completed = run_guarded("check", cwd=repo)
    findings = parsed(completed.stdout)
    assert len(findings) == MAX_PER_FILE + 1
    assert findings[-1] == (f"{PAGES}/links.md", 8 + MAX_PER_FILE, 1, "EV050")
    assert f"EV050 and {1000 - MAX_PER_FILE} more EV050 findings in this file from here on " \
           f"(only the first {MAX_PER_FILE} are listed)\n" in completed.stdout
