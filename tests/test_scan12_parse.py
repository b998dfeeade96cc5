"""The per-page parse of a whole-vault scan (issue 13) decides exactly as the general parser.

- A plain block is read in one pass: keys, the blanks in front of a value (every kind of
  Unicode blank, and line breaks other than `\\n`), trailing blanks, repeated and empty keys
  give the `PageMeta` the general parser gives.
- A plain page reads its fields only when asked (a scan never asks), and they are then the
  general parser's.
- A summary is taken as written exactly when collapsing its whitespace would not change it.
- A page's `PageMeta` has slots, no attribute dictionary.
"""

from __future__ import annotations

import random
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from echoes_lint import engine

_BLANKS = ("", " ", "  ", "\t", "\x1f", "\xa0", "\u3000", "\u2009", "\x0b", "\x0c", "\x1c", "\x85",
           "\u2028", "\r")
_KEYS = ("type", "stack", "status", "summary", "tags", "Type", "x-y_1")
_VALUES = ("note", "", "[python]", "[python", "{a: b}", "{a", "'note'", '"note"', "|", ">", "A page.",
           "A  page.", "A\tpage.", "A\xa0page.", "x\x7fy", "=======", "<<<<<<< ours", "- [[p]]: y",
           "Ünïcode", "a" * 161, "Deprecated", "[[p]]")


def _plain_block(rng: random.Random) -> str:
    """A page that is mostly plain and valid, a few of its lines varied: the plain path is
    taken for many of them."""

    def blank(rare: float) -> str:
        return rng.choice(_BLANKS) if rng.random() < rare else " "

    lines = [f"{key}:{blank(0.1)}{value}{blank(0.1).strip(' ')}" for key, value in
             (("type", "note"), ("stack", "[python]"), ("status", "active"), ("summary", "A page."))]
    for _ in range(rng.randrange(3)):
        line = f"{rng.choice(_KEYS)}:{blank(0.5)}{rng.choice(_VALUES)}{blank(0.5).strip(' ')}"
        if rng.random() < 0.5:
            lines[rng.randrange(4)] = line
        else:
            lines.append(line)
    rng.shuffle(lines)
    ending = rng.choice(("\n---\n",) * 6 + ("\n---\n# T\n", "\n--- \n", "\n---", "\n"))
    return "---\n" + "\n".join(lines) + ending + rng.choice(("", "", "body\n", "=======\n"))


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(st.randoms(use_true_random=False))
def test_a_plain_block_is_read_as_the_general_parser_reads_it(rng: random.Random) -> None:
    text = _plain_block(rng)
    meta = engine.parse_frontmatter(text)
    general = engine._parse_frontmatter(text)
    assert meta == general  # fields (lines, columns, values) included
    assert meta.fields == general.fields


def test_a_plain_page_reads_its_fields_only_when_asked() -> None:
    text = "---\ntype: note\nstack:\t[python] \nstatus: Active\nsummary:  A page. \ntags: a\n---\n"
    meta = engine._plain_page(text)
    assert meta is not None and isinstance(meta._fields, str)  # the block, not yet fields
    assert (meta.type, meta.status, meta.summary, meta.close_line) == ("note", "active", "A page.", 7)
    assert meta.fields == engine._parse_frontmatter(text).fields
    assert meta.fields["stack"] == ("stack", 3, 8, "[python]") and isinstance(meta._fields, dict)
    meta.fields = {}
    assert meta.fields == {}


def test_a_summary_is_its_own_normal_form_exactly_when_collapsing_keeps_it() -> None:
    samples = ["A page.", "A  page.", "A\tpage.", "Ünï cøde", "x\x7fy", "a\u200bb", "a\xa0b", "a b c"]
    samples += [f"a{chr(code)}b" for code in range(sys.maxunicode + 1)
                if chr(code).isspace() and chr(code) not in "\n\r"]
    for sample in samples:
        value, error = engine.decode_summary(sample)
        assert error is None and value == engine.normalize_summary(sample)
        assert value is sample or value != sample  # the page's own string when unchanged


def test_a_page_meta_holds_no_attribute_dictionary() -> None:
    """One PageMeta a page of a scan: slots, not a `__dict__` (about 100 bytes less each)."""
    for text in ("---\ntype: note\nstack: [a]\nstatus: active\nsummary: A page.\n---\n", "no block"):
        meta = engine.parse_frontmatter(text)
        assert not hasattr(meta, "__dict__")
        assert meta == engine._parse_frontmatter(text)
