"""The faster paths of the whole-vault gates (issue 13) decide exactly as the general ones.

- A plain page is decided without the general frontmatter parser, with the same `PageMeta`
  (fields, lines, columns, decision) the general parser gives, over generated pages that mix
  plain blocks with every kind of damage.
"""

from __future__ import annotations

import random

from helpers_parity import KEY_LINES, random_page
from hypothesis import given, settings
from hypothesis import strategies as st

from echoes_lint import engine

PLAIN = ("type: note", "stack: [python]", "status: active", "summary: A page.")


@settings(max_examples=600, deadline=None, derandomize=True)
@given(st.randoms(use_true_random=False))
def test_a_page_is_decided_as_the_general_parser_decides_it(rng: random.Random) -> None:
    data = random_page(rng)
    text = data.decode("utf-8", "replace")
    for candidate in (text, engine.decode_text(data)[0] or text):
        assert engine.parse_frontmatter(candidate) == engine._parse_frontmatter(candidate)


# Each line of the corpus that a required key starts: one of them replaces its plain line.
_VARIANTS = [(index, line) for index, plain in enumerate(PLAIN) for line in KEY_LINES
             if line.lstrip().startswith(plain.split(":")[0])]


@settings(max_examples=800, deadline=None, derandomize=True)
@given(st.sampled_from(_VARIANTS), st.booleans(),
       st.lists(st.sampled_from(KEY_LINES), max_size=2), st.randoms(use_true_random=False),
       st.sampled_from(("", "\n", "\n\n", "  \n", "\ttext\n", "=======\n", "x\x0cy\n",
                        "a\u2028b\n", "---\n", " =======")),
       st.sampled_from(("\n", "\n", "\n", "\r\n", "\x0b", "\x85")))
def test_plain_blocks_are_decided_as_the_general_parser_decides_them(
        variant: tuple[int, str], varied: bool, extra: list[str], rng: random.Random, body: str,
        separator: str) -> None:
    lines = list(PLAIN)
    if varied:
        lines[variant[0]] = variant[1]
    lines += extra
    rng.shuffle(lines)
    block = "---\n" + separator.join(lines) + "\n---\n"
    for text in (block + body, block.rstrip("\n") + body, block + "# T\n" + body):
        assert engine.parse_frontmatter(text) == engine._parse_frontmatter(text)


def test_the_common_page_takes_the_plain_path() -> None:
    """The fast path must not silently turn into the fallback for the pages it exists for."""
    text = "---\n" + "\n".join(PLAIN) + "\ntags: [a, b]\n---\n\n# Page\n"
    meta = engine._plain_page(text)
    assert meta is not None and meta == engine._parse_frontmatter(text)
    assert (meta.type, meta.status, meta.summary, meta.close_line) == (
        "note", "active", "A page.", 7)
