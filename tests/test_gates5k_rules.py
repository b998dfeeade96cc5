"""The searches over every path or text at once (issue 13, the gates' fixed cost): the same
verdicts as the precise search of each one, for names made to catch case folding, non-ASCII
text, control characters and the Windows device names."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from echoes_lint import checker, engine
from echoes_lint.findings import Finding, Severity, replace
from echoes_lint.rules import names
from echoes_lint.rules.context import VAULT_PREFIX, Context, GitIndex


def test_a_name_suspect_only_by_its_case_is_found() -> None:
    for name in ("con.md", "Aux", "nUl.txt", "lpt1", "cOm3", "a/prn"):
        assert names._any_suspect([f"{VAULT_PREFIX}pages/{name}"])
    assert names._any_suspect([f"{VAULT_PREFIX}a<b"]) and names._any_suspect(["é/a\x01"])
    assert not names._any_suspect([f"{VAULT_PREFIX}pages/page-1.md", "é/ſ/ı"])


_VAULT = st.sampled_from([f"{VAULT_PREFIX}pages/a.md", f"{VAULT_PREFIX}pages/b.md",
                          f"{VAULT_PREFIX}daily/x.md", f"{VAULT_PREFIX}sub", VAULT_PREFIX[:-1],
                          ".echoes-vault/state.json", "AGENTS.md", "EchoesVaultX/a.md"])


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.frozensets(_VAULT), st.frozensets(_VAULT), st.lists(_VAULT, max_size=3))
def test_the_vault_paths_of_a_whole_vault_check_are_gits_and_the_disks(
        index: frozenset[str], files: frozenset[str], links: list[str]) -> None:
    scan = engine.Scan(Path("/nowhere"))
    scan.files = {path: (1, 0.0) for path in sorted(files)}
    scan.symlinks = links
    expected = {path for path in index if path.startswith(VAULT_PREFIX)} | files | {
        path for path in links if path.startswith(VAULT_PREFIX)}
    assert Context(scan, "", True, index).vault_paths() == expected
    listed = GitIndex((tuple(sorted(index)), frozenset()))  # an index a hook's context holds
    assert Context(scan, "", True, listed).vault_paths() == expected


@settings(max_examples=1000, deadline=None, derandomize=True)
@given(st.text(st.sampled_from(["a", " ", "~", "\t", "\n", "\x00", "\x1f", "\x7f", "\x80",
                                "\x9f", "é", "\u2028", "\udcff", "\xa0", "€"]), max_size=8))
def test_a_text_is_found_printable_as_printable_finds_it(text: str) -> None:
    # Its line breaks aside: a page's source lines are split on them before they are printed.
    flat = text.replace("\n", "")
    assert checker._as_printed(text) == (engine.printable(flat) == flat)


def test_a_finding_with_nothing_to_escape_is_kept_not_copied() -> None:
    plain = Finding("a.md", 1, 1, "EV050", "m", Severity.WARNING, "fix it")
    assert checker._printable_finding(plain) is plain
    escaped = checker._printable_finding(replace(plain, path="a\x1b.md"))
    assert escaped == replace(plain, path="a\\x1b.md")


def test_the_documents_rules_see_are_the_scans_without_the_index() -> None:
    scan = engine.Scan(Path("/nowhere"))
    for path, kind in ((f"{VAULT_PREFIX}pages/a.md", "page"), (f"{VAULT_PREFIX}index.md", "x"),
                       (f"{VAULT_PREFIX}daily/d.md", "daily"), (f"{VAULT_PREFIX}raw/r.md", "x")):
        engine.file_document(scan, engine.Document(path, "", None, []), kind)
    assert [document.path for document in Context(scan).documents()] == [
        f"{VAULT_PREFIX}pages/a.md", f"{VAULT_PREFIX}daily/d.md", f"{VAULT_PREFIX}raw/r.md"]
