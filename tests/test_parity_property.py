"""Properties of reference-compatible page handling, over generated frontmatter, pages and names.

- The engine never raises on any bytes: reading, parsing and building the index either work or
  report a problem (`VaultError` for the index), whatever a file holds.
- Whatever the index build accepts, `hash` hashes and the writers (`upsert`, `end`) accept, with
  the same index row: a page an agent can read, it can write back.
- Every page the index lists is readable by `start` and `search` (end to end, through the
  installed runtime, on a few examples).

Pure functions run in-process for speed; the end-to-end examples run the runtime.
"""

from __future__ import annotations

import contextlib
import json
import random
import re

import pytest
from helpers_parity import (
    ENGINE_FILE,
    KEY_LINES,
    STEMS,
    SUFFIXES,
    make_workspace,
    random_name,
    random_page,
    run_runtime,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from echoes_lint import engine

FAST = settings(max_examples=300, deadline=None, derandomize=True)
END_TO_END = settings(max_examples=6, deadline=None, derandomize=True)

frontmatter = st.lists(st.sampled_from(KEY_LINES), max_size=10)
names = st.builds(lambda stem, suffix: stem + suffix, st.sampled_from(STEMS),
                  st.sampled_from(SUFFIXES)).filter(lambda name: name != ".")
bodies = st.text(max_size=60)


def _page(lines: list[str], body: str, separator: str) -> str:
    return separator.join(["---", *lines, "---", body])


def _entry(name: str, text: str) -> engine.PageEntry:
    document = engine.document_from_bytes(f"EchoesVault/pages/{name}", text.encode(), page=True)
    return name, document.meta, document.page_problems


def _index(name: str, text: str) -> str | None:
    try:
        return engine.build_index([_entry(name, text)])
    except engine.VaultError:
        return None


@FAST
@given(st.binary(max_size=300), names)
def test_any_bytes_are_read_without_raising(data: bytes, name: str) -> None:
    document = engine.document_from_bytes(f"EchoesVault/pages/{name}", data, page=True)
    assert (document.text is None) == (document.problem is not None)
    with contextlib.suppress(engine.VaultError):
        engine.build_index([(name, document.meta, document.page_problems)])


@FAST
@given(st.randoms(use_true_random=False))
def test_random_damaged_pages_parse_without_raising(rng: random.Random) -> None:
    text, _problem = engine.decode_text(random_page(rng))
    if text is not None:
        meta = engine.parse_frontmatter(text)
        assert meta.valid == (meta.summary is not None)
        for fact in (*meta.problems, *meta.notes):
            assert fact.line >= 1 and fact.col >= 1


@FAST
@given(frontmatter, bodies, st.sampled_from(["\n", "\r\n", "\u2028"]))
def test_what_the_index_accepts_hash_and_writers_accept(lines: list[str], body: str,
                                                        separator: str) -> None:
    raw = _page(lines, body, separator)
    text, _problem = engine.decode_text(raw.encode())
    assert text is not None
    index = _index("page.md", text)
    if index is None:
        return
    # `hash` is the SHA-256 of the text as read, and `upsert`/`end` store what they accept.
    assert engine.sha256_text(text) == engine.sha256_text(raw.replace("\r\n", "\n"))
    filename, stored = engine.prepare_page_text({"filename": "page.md", "content": text})
    assert filename == "page.md" and stored == text.strip() + "\n"
    # ... and the page they write indexes to the same row, alone or replacing the old page.
    assert _index("page.md", stored) == index
    old = engine.document_from_bytes("EchoesVault/pages/page.md", text.encode(), page=True)
    assert engine.build_index(engine.prospective_pages([old], {"page.md": stored})) == index


@FAST
@given(names, frontmatter)
def test_writers_accept_every_indexed_page_whose_name_they_can_address(name: str,
                                                                       lines: list[str]) -> None:
    text = _page(lines, "# Body\n", "\n")
    if _index(name, text) is None:
        return
    try:
        filename = engine.normalize_page_name(name)
    except engine.VaultError:
        # Documented: writers refuse hidden names and control characters (README).
        assert name.startswith(".") or re.search(r"[\x00-\x1f]", name)
        return
    assert engine.prepare_page_text({"filename": name, "content": text})[0] == filename


@END_TO_END
@given(st.randoms(use_true_random=False))
def test_every_indexed_page_is_readable_by_start_search_and_hash(
        tmp_path_factory: pytest.TempPathFactory, rng: random.Random) -> None:
    generated = {name: random_page(rng) + f"\nfind-me {number}\n".encode()
                 for number, name in enumerate(random_name(rng) for _ in range(6))}
    # Keep what the index build accepts, one file per page identity, so that it lists them all.
    pages = {}
    for name, data in generated.items():
        text = engine.decode_text(data)[0]
        if engine.is_page_file_name(name) and text is not None and _index(name, text) and not any(
                engine.stem_identity(name) == engine.stem_identity(other) for other in pages):
            pages[name] = data
    workspace = make_workspace(tmp_path_factory.mktemp("vault"), ENGINE_FILE, pages)
    assert run_runtime(workspace, "rebuild-index").returncode == 0
    index = (workspace / "EchoesVault" / engine.INDEX_FILE).read_text(encoding="utf-8")
    assert len(engine.parse_index_rows(index)) == len(pages)
    started = run_runtime(workspace, "start")
    assert started.returncode == 0, started.stderr
    assert index.rstrip() in started.stdout.decode()
    found = run_runtime(workspace, "search", "find-me", "--limit", "500")
    assert found.returncode == 0, found.stderr
    files = {result["file"] for result in json.loads(found.stdout)["results"]}
    assert files == {f"EchoesVault/pages/{name}" for name in pages}
    for name, data in pages.items():
        if engine.nfc(name) == name and not name.startswith(".") and name.endswith(".md"):
            hashed = run_runtime(workspace, "hash", name)
            assert json.loads(hashed.stdout)["sha256"] == engine.sha256_text(
                engine.decode_text(data)[0] or "")
