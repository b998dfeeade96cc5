"""The automatic fixes of `check --fix`, as pure functions from a file's text to one `Edit`.

Each returns None where an edit could change what the page means; the rule then reports the
finding with its manual fix only. Positions count lines of the newline-normalised text (what the
scan holds) and characters within a line, 1-based, as findings do.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from echoes_lint import engine
from echoes_lint.engine import _regex
from echoes_lint.findings import Edit

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    from typing import Callable, Optional

BANNER = "> [!warning] DEPRECATED"
# Any Obsidian callout of type warning (case-insensitive, foldable) titled DEPRECATED.
# Compiled on first use (`engine._regex`): most are for `check --fix` only.
_BANNER = _regex(r">\s*\[!warning\][-+]?\s*deprecated\b", re.IGNORECASE)
_BLANK_DELIMITER = _regex(r"---[ \t]+")
# Line breaks that `str.splitlines` honours besides `\n`: where they occur, engines number the
# frontmatter lines differently from an editor, so no line-based edit is offered.
_OTHER_BREAKS = _regex("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_FENCE = _regex(r" {0,3}(`{3,}|~{3,})")
# The start of a line that is not plain paragraph text at the top level: a quote, heading, list
# item, table, HTML, code fence, emphasis, link reference or another underline. Lines after one
# of these may be lazy continuations of a container, where `=======` is text, not an underline.
_NOT_PLAIN = _regex(r"[\s>#*+\-|<`~=_\[]|\d{1,9}[.)]")


# `_OTHER_BREAKS` in ASCII: each found by one scan in C, and the pattern is not compiled.
_ASCII_BREAKS = ("\v", "\f", "\x1c", "\x1d", "\x1e")


def lines_of(text: str) -> Optional[list[str]]:
    """The lines edits are counted in, or None when unusual line breaks make that ambiguous."""
    if (any(char in text for char in _ASCII_BREAKS) if text.isascii()
            else _OTHER_BREAKS.search(text)):
        return None
    return text.split("\n")


def body_start(meta: Optional[engine.PageMeta]) -> Optional[int]:
    """0-based index of the first line after the frontmatter (0 for a file without one), or
    None when a page's frontmatter is not closed (then nothing after it is surely the body)."""
    if meta is None:
        return 0
    return meta.close_line


def setext_underlines(lines: Sequence[str], first_body: int) -> Callable[[int], Optional[Edit]]:
    """EV002: for a bare `=======` on a given line, the edit that lengthens it when it underlines
    a plain paragraph, a setext heading that renders the same with any number of `=`; None after
    a blank line, a list, a quote or inside code, where the line is text and lengthening it would
    change that text. Code fences are found once, so a page of many separators stays linear."""
    fenced = _fenced(lines, first_body)

    def underline(number: int) -> Optional[Edit]:
        index = number - 1
        if index in fenced:
            return None
        start = index
        while start > first_body and lines[start - 1].strip():
            start -= 1
            if _NOT_PLAIN.match(lines[start]) or "|" in lines[start]:
                return None
        return Edit(number, 8, number, 8, "=") if start < index else None

    return underline


def _fenced(lines: Sequence[str], first_body: int) -> set[int]:
    """0-based indexes of the lines inside fenced code blocks (and of their fences)."""
    fenced: set[int] = set()
    fence: Optional[str] = None
    for index in range(first_body, len(lines)):
        line = lines[index]
        opened = _FENCE.match(line) if "```" in line or "~~~" in line else None
        if fence is None:
            if opened:
                fence = opened.group(1)
                fenced.add(index)
            continue
        fenced.add(index)
        if opened and opened.group(1).startswith(fence[0] * len(fence)) \
                and not line.strip().strip(fence[0]):
            fence = None
    return fenced


def byte_order_mark(text: str) -> Optional[Edit]:
    """EV010: a UTF-8 byte-order mark before the opening `---` (an encoding artefact)."""
    if text.startswith("\ufeff") and text[1:].lstrip().startswith("---"):
        return Edit(1, 1, 1, 2, "")
    return None


def delimiter_blanks(lines: Sequence[str], number: int) -> Optional[Edit]:
    """EV010/EV011: blanks after a `---` delimiter on line `number`."""
    line = lines[number - 1] if 0 < number <= len(lines) else ""
    if not _BLANK_DELIMITER.fullmatch(line):
        return None
    return Edit(number, 4, number, len(line) + 1, "")


def closing_with_blanks(lines: Sequence[str], opening: int) -> Optional[int]:
    """The 1-based line of the first `---` followed by blanks after the opening line: what YAML
    tools read as the closing delimiter of a block engines find unclosed."""
    for index in range(opening, len(lines)):
        if _BLANK_DELIMITER.fullmatch(lines[index]):
            return index + 1
    return None


def duplicate_line(lines: Sequence[str], number: int, first: int) -> Optional[Edit]:
    """EV014: delete line `number` when it repeats line `first` exactly and neither has
    indented lines after it (which would make their values differ)."""
    if not (0 < first < number < len(lines)) or lines[number - 1] != lines[first - 1]:
        return None
    if any(lines[line][:1].isspace() and lines[line].strip() for line in (first, number)):
        return None
    return Edit(number, 1, number + 1, 1, "")


def banner(lines: Sequence[str], first_body: int) -> tuple[int, Optional[Edit]]:
    """EV080: (line to report, the insertion of the banner, or None when the body begins with
    it). The banner goes before the first non-blank body line, followed by a blank line."""
    for index in range(first_body, len(lines)):
        if lines[index].strip():
            if _BANNER.match(lines[index].lstrip()):
                return index + 1, None
            return index + 1, Edit(index + 1, 1, index + 1, 1, f"{BANNER}\n\n")
    if first_body < len(lines):  # the text ends with a line break after the closing `---`
        return first_body + 1, Edit(first_body + 1, 1, first_body + 1, 1, f"\n{BANNER}\n")
    last = len(lines)
    end = len(lines[-1]) + 1
    return last, Edit(last, end, last, end, f"\n\n{BANNER}\n")


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """`text` with the edits applied; overlapping edits after the first are left out (the next
    pass of the fixer finds what is left)."""
    starts = [0]
    for line in text.split("\n")[:-1]:
        starts.append(starts[-1] + len(line) + 1)

    def offset(line: int, col: int) -> int:
        return min(starts[line - 1] + col - 1, len(text)) if line <= len(starts) else len(text)

    pieces: list[str] = []
    position = 0
    for edit in sorted(edits, key=lambda item: (item.line, item.col, item.end_line, item.end_col)):
        begin, end = offset(edit.line, edit.col), offset(edit.end_line, edit.end_col)
        if begin < position:
            continue
        pieces += [text[position:begin], edit.content]
        position = end
    pieces.append(text[position:])
    return "".join(pieces)
