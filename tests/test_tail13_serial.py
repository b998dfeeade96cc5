"""The serial tail of `ci` and `check` after the scan (issue 13): what no output needs is not
computed, and what is computed decides as before.

- The local index is compared with the rendered one as text, while the rendered text is at
  hand: neither `ci` (its note on a stale local index) nor `status` hashes the local index,
  and both judge a current, stale or missing one as before.
- `finish_scan` keys ASCII paths in C, and leaves a list in order as it is: no page's key is
  made one by one; the order is `page_sort_key`'s, ties kept as they came.
- The report's source lines: only the documents with findings are looked at (not every path
  of the vault), found by path unless a path shown holds a backslash (`printable`'s escape);
  their text is judged printable in C as `printable` judges it, and the lines are the same,
  plain or escaped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest
from conftest import write_page
from helpers_check import commit, page, vault_repo, write
from hypothesis import given, settings
from hypothesis import strategies as st

from echoes_lint import checker, ci, engine
from echoes_lint.checker import run_checks

INDEX = f"{engine.VAULT_DIR}/{engine.INDEX_FILE}"
STALE_NOTE = "note: EchoesVault/index.md is out of date"


def _hashed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the engine's two text digests are asked for from now on."""
    texts: list[str] = []

    def recorded(real: Callable[[str], str]) -> Callable[[str], str]:
        def digest(text: str) -> str:
            texts.append(text)
            return real(text)
        return digest

    monkeypatch.setattr(engine, "text_digest", recorded(engine.text_digest))
    monkeypatch.setattr(engine, "sha256_text", recorded(engine.sha256_text))
    return texts


def _rendered(repo: Path) -> str:
    return engine.build_index(engine.scan_index_pages(engine.scan_workspace(repo)))


def _ci_log(repo: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert ci.main(["--workspace", str(repo), "--summary", "false", "--fail-on", "never"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("local", ["current", "stale", "missing"])
def test_neither_ci_nor_status_hashes_the_local_index(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        local: str) -> None:
    repo = vault_repo(tmp_path / "repo")
    write_page(repo, "other.md", summary="Another page.")
    rendered = _rendered(repo)
    text = {"current": rendered, "stale": rendered + "- [[gone]]: Gone.\n", "missing": None}[local]
    if text is not None:
        write(repo, INDEX, text)
    hashed = _hashed(monkeypatch)
    log = _ci_log(repo, capsys)
    assert (STALE_NOTE in log) is (local == "stale")
    report = engine.inspect_report(engine.scan_workspace(repo))
    refresh, health = report["indexRefresh"], report["health"]
    assert refresh["sha256"] == engine.sha256_text(rendered)
    assert refresh["needsRefresh"] is (local != "current")
    assert health["indexOutOfDate"] == ([engine.INDEX_FILE] if local == "stale" else [])
    # The rendered index only, once by `ci`'s report, once by `status`'s, once above.
    assert [digested for digested in hashed if digested in (text, rendered)] == [rendered] * 3


_NAMES = st.sampled_from(["a.md", "A.md", "b.md", "B.md", "page-1.md", "Page-1.md", "é.md",
                          "e\u0301.md", "É.md", "ß.md", "SS.md", "ss.md", "z", "Z", "_.md", "~.md"])
_FOLDERS = st.sampled_from([f"{engine.VAULT_DIR}/pages/", f"{engine.VAULT_DIR}/daily/2026-01-02/",
                            f"{engine.VAULT_DIR}/Daily/", f"{engine.VAULT_DIR}/"])


@settings(max_examples=500, deadline=None, derandomize=True)
@given(st.lists(st.tuples(_FOLDERS, _NAMES), max_size=8), st.booleans())
def test_documents_are_sorted_as_page_sort_key_sorts_them(
        paths: list[tuple[str, str]], walked: bool) -> None:
    documents = [engine.Document(folder + name, None, None, []) for folder, name in paths]
    if walked:  # as the walk files them: by name
        documents.sort(key=lambda document: document.path)
    expected = sorted(documents, key=lambda document: engine.page_sort_key(document.path))
    engine._sort_documents(documents)
    assert list(map(id, documents)) == list(map(id, expected))  # ties (equal paths) kept


def test_a_scan_of_ascii_paths_makes_no_key_one_by_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = vault_repo(tmp_path / "repo")
    for name in ("b-page.md", "a-page.md", "Capital.md"):
        write_page(repo, name, summary="A page.")
    for day in ("2026-01-03", "2026-01-01", "2026-01-02"):  # the walk takes the last one first
        write(repo, f"{engine.VAULT_DIR}/daily/{day}/entry.md", "### Session — a\n")
    keyed: list[str] = []
    real = engine.page_sort_key
    monkeypatch.setattr(engine, "page_sort_key", lambda name: keyed.append(name) or real(name))
    scan = engine.scan_workspace(repo)
    assert keyed == []
    for group in (scan.pages, scan.daily, scan.other_markdown):
        paths = [document.path for document in group]
        assert paths == sorted(paths, key=real)
    assert [document.name for document in scan.pages] == [
        "a-page.md", "b-page.md", "Capital.md", "home.md"]


# Every character below U+3000 and some surrogates, alone and within text.
_CHARS = [chr(code) for code in [*range(0x3000), *range(0xD800, 0xE000, 7)]]


def test_a_text_is_judged_printable_as_printable_judges_it() -> None:
    for char in _CHARS:
        for text in (char, f"ab\n{char}c\n", f"é\n{char}", f"{char}\n"):
            flat = text.replace("\n", "")
            assert checker._as_printed(text) is (engine.printable(flat) == flat), repr(text)


@pytest.mark.parametrize("name", ["linked.md", "tab\there.md", "back\\slash.md"])
def test_the_source_lines_come_from_the_documents_with_findings_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    repo = vault_repo(tmp_path / "repo")
    body = "# P\n\nSee [[gone]] here.\tTabbed.\n"
    write(repo, f"{engine.VAULT_DIR}/pages/{name}", page(body))
    for number in range(20):
        write_page(repo, f"page-{number}.md", summary="A page.")
    commit(repo, "pages")
    result = run_checks(repo)
    shown = f"{engine.VAULT_DIR}/pages/{engine.printable(name)}"
    assert {finding.path for finding in result.findings} == {shown}
    judged: list[str] = []
    real = checker._as_printed
    monkeypatch.setattr(checker, "_as_printed", lambda text: judged.append(text) or real(text))
    assert result.sources() == {shown: engine.printable(page(body), keep="\t\n").split("\n")}
    assert judged == [page(body)]
