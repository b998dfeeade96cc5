"""Pure protocol rules of the engine: names, frontmatter, summaries, markers, index, hashing."""

from __future__ import annotations

import hashlib
import unicodedata
from pathlib import Path

import pytest

from echoes_lint import engine

GOLDEN = Path(__file__).parent / "golden"


def meta_of(text: str) -> engine.PageMeta:
    return engine.parse_frontmatter(text)


def kinds(text: str) -> list[tuple[str, int, int]]:
    return [(p.kind, p.line, p.col) for p in meta_of(text).problems]


VALID = "---\ntype: note\nstack: [python]\nstatus: active\nsummary: A page.\n---\n\n# Body\n"


# --- page names (spec 7.1) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        ("auth", "auth.md"),
        ("auth.md", "auth.md"),
        ("  auth.md  ", "auth.md"),
        ("auth.md.md", "auth.md.md"),
        (unicodedata.normalize("NFD", "Émile"), "Émile.md"),
        ("Straße", "Straße.md"),
    ],
)
def test_page_names_are_normalised_to_nfc_with_one_md_suffix(requested: str, expected: str) -> None:
    assert engine.normalize_page_name(requested) == expected


@pytest.mark.parametrize(
    "requested", ["", "   ", ".md", "a/b", "a\\b", "..", "a..b", ".hidden", "tab\there", 42, None]
)
def test_unsafe_page_names_are_refused(requested: object) -> None:
    with pytest.raises(engine.VaultError):
        engine.normalize_page_name(requested)


@pytest.mark.parametrize(
    "names",
    [
        ["Straße", "STRASSE"],
        [unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "CAFÉ")],
        ["Alpha", "ALPHA"],
    ],
)
def test_names_collide_after_nfc_and_casefold(names: list[str]) -> None:
    assert engine.name_collisions(names) == [sorted(names)]


def test_distinct_names_do_not_collide() -> None:
    assert engine.name_collisions(["alpha", "alpha-2", "strasse-x", "beta"]) == []


def test_lower_would_miss_sharp_s_but_fold_name_does_not() -> None:
    assert "Straße".lower() != "STRASSE".lower()
    assert engine.fold_name("Straße") == engine.fold_name("STRASSE")


# --- frontmatter (spec 7.2) --------------------------------------------------------------------


def test_valid_page_parses_with_values() -> None:
    meta = meta_of(VALID)
    assert meta.valid
    assert (meta.type, meta.status, meta.summary) == ("note", "active", "A page.")
    assert meta.open_line == 1 and meta.close_line == 6 and meta.body_start == 7


def test_leading_blank_lines_and_extra_fields_are_accepted() -> None:
    text = "\n\n---\ntype: note\nowner: team-a\nstack:\n  - python\n  - sql\nstatus: Active\n" \
           "summary: 'It''s fine'\n# a comment\n---\nbody\n"
    meta = meta_of(text)
    assert meta.valid, meta.problems
    assert meta.status == "active"
    assert meta.summary == "It's fine"
    assert meta.fields["owner"].raw == "team-a"
    assert "stack" in meta.fields and meta.notes == ()


def test_double_quoted_values_follow_json() -> None:
    meta = meta_of(VALID.replace("summary: A page.", 'summary: "Tokens \\u2014 \\"JWT\\""'))
    assert meta.summary == 'Tokens — "JWT"'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("# Title\n", [("frontmatter-missing", 1, 1)]),
        ("", [("frontmatter-missing", 1, 1)]),
        ("\ufeff" + VALID, [("frontmatter-missing", 1, 1)]),
        ("---\ntype: note\n", [("frontmatter-unclosed", 1, 1)]),
        ("---\n\n---\n", [("frontmatter-empty", 1, 1)]),
        (VALID.replace("type: note", "2type: note"), [("frontmatter-missing-key", 1, 1)]),
        (VALID.replace("status: active", "status: active\nstatus: done"),
         [("frontmatter-duplicate-key", 5, 1)]),
        (VALID.replace("stack: [python]\n", ""), [("frontmatter-missing-key", 1, 1)]),
        (VALID.replace("type: note", "type:"), [("frontmatter-empty-value", 2, 6)]),
        (VALID.replace("stack: [python]", "stack:"), [("frontmatter-empty-value", 3, 7)]),
        (VALID.replace("summary: A page.", 'summary: "open'), [("frontmatter-quoting", 5, 10)]),
        (VALID.replace("summary: A page.", 'summary: "two\\nlines"'), [("summary-invalid", 5, 10)]),
        (VALID.replace("summary: A page.", "summary: ''"), [("frontmatter-empty-value", 5, 10)]),
        (VALID.replace("summary: A page.", "summary:\n  block"), [("frontmatter-empty-value", 5, 9)]),
        (VALID.replace("summary: A page.", "summary:"), [("frontmatter-empty-value", 5, 9)]),
        (VALID.replace("stack: [python]", "stack:\n# comment\nnext: 1"),
         [("frontmatter-empty-value", 3, 7)]),
    ],
)
def test_each_frontmatter_rule_reports_kind_line_and_column(
    text: str, expected: list[tuple[str, int, int]]
) -> None:
    assert kinds(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (VALID.replace("type: note", "type: note\n2type: note"), [("frontmatter-ignored-line", 3, 1)]),
        (VALID.replace("type: note", "type: note\ndue date: 2026-12-01"),
         [("frontmatter-ignored-line", 3, 1)]),
        (VALID.replace("---\ntype", "---\n  lost: 1\ntype"), [("frontmatter-ignored-line", 2, 3)]),
        (VALID.replace("type: note", "type: note\n\u00a0x: 1"), [("frontmatter-ignored-line", 3, 1)]),
        (VALID.replace("stack: [python]", "stack: [python]\n- stray"),
         [("frontmatter-ignored-line", 4, 1)]),
        (VALID.replace("type: note", "type: [a, b]"), [("frontmatter-non-scalar", 2, 7)]),
        (VALID.replace("summary: A page.", "summary: >-\n  folded"),
         [("frontmatter-non-scalar", 5, 10)]),
        (VALID.replace("summary: A page.", "summary: 'it's'"), [("frontmatter-single-quote", 5, 10)]),
        (VALID.replace("summary: A page.", "summary: 'open"), [("frontmatter-single-quote", 5, 10)]),
        (VALID.replace("summary: A page.", "summary: A page\n  continued"),
         [("frontmatter-scalar-continuation", 6, 3)]),
        (VALID.replace("type: note", 'type: ""'), [("frontmatter-empty-scalar", 2, 7)]),
        (VALID.replace("stack: [python]", "stack: [python"), [("stack-unclosed", 3, 8)]),
        (VALID.replace("summary: A page.", "summary: - [[p]]: A page."),
         [("summary-index-row", 5, 10)]),
        (VALID, []),
    ],
)
def test_what_engines_accept_but_tools_misread_is_a_located_note(
    text: str, expected: list[tuple[str, int, int]]
) -> None:
    meta = meta_of(text)
    assert meta.valid, meta.problems
    assert [(n.kind, n.line, n.col) for n in meta.notes] == expected


def test_problems_name_the_key() -> None:
    (problem,) = meta_of(VALID.replace("type: note", "type:")).problems
    assert problem.key == "type"
    assert "`type`" in problem.message


@pytest.mark.parametrize(("length", "valid"), [(160, True), (161, False)])
def test_summary_length_boundary(length: int, valid: bool) -> None:
    summary = "é" * length
    meta = meta_of(VALID.replace("A page.", summary))
    assert meta.valid is valid
    if not valid:
        assert meta.problems[0].kind == "summary-invalid"
        assert "161 characters" in meta.problems[0].message


def test_summary_length_counts_collapsed_whitespace() -> None:
    summary = "a" * 100 + "      " + "b" * 59
    assert meta_of(VALID.replace("A page.", summary)).summary == "a" * 100 + " " + "b" * 59


def test_validate_page_text_reports_conflict_markers() -> None:
    text = VALID + "<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> topic\n"
    _meta, problems = engine.validate_page_text(text)
    assert [(p.kind, p.line) for p in problems] == [("conflict-marker", 9)]


# --- text and markers --------------------------------------------------------------------------


def test_decode_text_normalises_newlines() -> None:
    assert engine.decode_text(b"a\r\nb\rc\n") == ("a\nb\nc\n", None)


def test_decode_text_locates_invalid_utf8() -> None:
    text, problem = engine.decode_text(b"---\nsummary: caf\xe9\n")
    assert text is None and problem is not None
    assert (problem.kind, problem.line, problem.col) == ("invalid-text", 2, 13)


def test_decode_text_reads_nul_bytes_and_nul_position_locates_them() -> None:
    text, problem = engine.decode_text(b"ok\nab\0c")
    assert text == "ok\nab\0c" and problem is None
    assert engine.nul_position(text) == (2, 3)
    assert engine.nul_position("ok") is None


def test_crlf_page_hashes_like_its_lf_twin() -> None:
    crlf, _ = engine.decode_text(VALID.replace("\n", "\r\n").encode())
    lf, _ = engine.decode_text(VALID.encode())
    assert crlf is not None and lf is not None
    assert engine.sha256_text(crlf) == engine.sha256_text(lf)
    assert engine.sha256_text(lf) == hashlib.sha256(VALID.encode()).hexdigest()


def test_marker_lines_follow_the_protocol_regex() -> None:
    text = "<<<<<<< HEAD\n<<<<<<<x\n=======\n======= \n>>>>>>>\n||||||| base\n========\n"
    assert engine.marker_lines(text) == [(1, "<"), (3, "="), (5, ">"), (6, "|")]


def test_conflict_blocks_group_two_and_three_way_conflicts() -> None:
    two_way = "<<<<<<< HEAD\na\n=======\nb\n>>>>>>> topic\n"
    diff3 = "<<<<<<< HEAD\na\n||||||| base\no\n=======\nb\n>>>>>>> topic\n"
    blocks, bare = engine.conflict_blocks(engine.marker_lines(two_way + diff3))
    assert bare == []
    assert blocks == [engine.ConflictBlock(1, None, 3, 5), engine.ConflictBlock(6, 8, 10, 12)]


def test_bare_separator_outside_a_block_is_told_apart() -> None:
    text = "Title\n=======\n\n<<<<<<< HEAD\na\n"
    blocks, bare = engine.conflict_blocks(engine.marker_lines(text))
    assert bare == [2]
    assert blocks == [engine.ConflictBlock(4, None, None, None)]
    assert engine.has_protocol_conflict(engine.marker_lines("Title\n=======\n"))


# --- index (spec 8) ----------------------------------------------------------------------------


def golden_pages() -> list[tuple[str, engine.PageMeta]]:
    def page(status: str, summary: str) -> engine.PageMeta:
        return meta_of(f"---\ntype: t\nstack: []\nstatus: {status}\nsummary: {summary}\n---\n")

    return [
        ("zeta.md", page("active", '"Zeta \\u2014 unicode \\u2713"')),
        (unicodedata.normalize("NFD", "Émile.md"), page("active", "Accented   name.")),
        ("Zebra.md", page("active", "Stripes.")),
        ("gamma.md", page("deprecated", "Deprecated: use alpha.")),
        ("Beta.md", page("Deprecated", "Old approach.")),
        ("alpha.md", page("active", "First   page  with\tspaces")),
        ("a-b.md", page("active", "Dash name.")),
    ]


def test_index_bytes_match_the_golden_file() -> None:
    rendered = engine.render_index(golden_pages())
    assert rendered.encode("utf-8") == (GOLDEN / "index_mixed.md").read_bytes()


def test_index_is_independent_of_input_order() -> None:
    pages = golden_pages()
    assert engine.render_index(pages) == engine.render_index(list(reversed(pages)))


def test_empty_index_is_the_exact_header() -> None:
    assert engine.render_index([]) == (
        "# EchoesVault Index\n\n<!-- Generated by EchoesVault. Do not edit manually. -->\n\n"
        "This registry tracks all structured pages in the project knowledge vault.\n\n## Pages\n"
    )


def test_build_index_is_all_or_nothing_and_names_the_page() -> None:
    good = meta_of(VALID)
    bad = meta_of("# no frontmatter\n")
    with pytest.raises(engine.VaultError, match=r"broken\.md: line 1"):
        engine.build_index([("good.md", good, []), ("broken.md", bad, list(bad.problems))])


def test_build_index_refuses_colliding_names() -> None:
    good = meta_of(VALID)
    with pytest.raises(engine.VaultError, match="collide"):
        engine.build_index([("Alpha.md", good, []), ("alpha.md", good, [])])


def test_parse_index_rows_reads_rows_back() -> None:
    rows = engine.parse_index_rows(engine.render_index(golden_pages()))
    assert rows[0] == ("a-b", "Dash name.")
    assert ("Beta", "DEPRECATED — Old approach.") in rows


# --- agents and versions -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("Codex", "codex"), ("Claude Code", "claude-code"), ("..My/Agent!..", "my-agent"),
     ("x" * 60, "x" * 40), ("a.b_c-d", "a.b_c-d")],
)
def test_agent_names_are_normalised(raw: str, expected: str) -> None:
    assert engine.normalize_agent_name(raw) == expected


@pytest.mark.parametrize("raw", ["", "   ", "!!!", 5])
def test_bad_agent_names_are_refused(raw: object) -> None:
    with pytest.raises(engine.VaultError):
        engine.normalize_agent_name(raw)


def test_engine_declares_versions_in_the_form_other_engines_read() -> None:
    source = Path(engine.__file__).read_text(encoding="utf-8")
    version = engine.declared_version(source, "ENGINE_VERSION")
    assert version is not None and version > (1, 1, 1)
    assert engine.declared_version(source, "PROTOCOL_VERSION") == (1, 0, 0)


def test_marker_problem_accepts_only_the_exact_protocol() -> None:
    assert engine.marker_problem(dict(engine.MARKER_VALUE)) is None
    assert "protocolVersion" in (engine.marker_problem({**engine.MARKER_VALUE,
                                                        "protocolVersion": "1.1.0"}) or "")
    assert engine.marker_problem([]) is not None
