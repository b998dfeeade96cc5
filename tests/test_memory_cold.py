"""Memory of the cold paths (issue 13): what the full walk, the index renderer and a rebuild's
cache comparison no longer build must not change a decision. The index of pages given out of
index order, row facts taken without parsing the index back, a protocol command's documents
without text or frontmatter fields, and a rebuild that compares the old cache as it walks."""

from __future__ import annotations

import datetime
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Sequence, Tuple

import pytest
from conftest import git
from helpers_cache import CACHE, cache_record, init_cached_vault, read_only_agree
from helpers_writer import PAGES, ok, page, runtime
from hypothesis import given, settings
from hypothesis import strategies as st

from echoes_lint import engine

Entry = Tuple[str, engine.PageMeta, Sequence[engine.Problem]]

# Stems whose index order differs from their code-point order: case, accents (precomposed and
# combining), digits, and names that collide once case-folded.
STEMS = st.text(alphabet=["a", "B", "b", "ä", "Ä", "\u0308", "é", "1", "-", "_", "Z"],
                min_size=1, max_size=4)


def _entries(stems: Sequence[str], deprecated: int = 3) -> List[Entry]:
    entries: List[Entry] = []
    for number, stem in enumerate(stems):
        meta, problems = engine.validate_page_text(
            page(f"Summary {number}.", "deprecated" if number % deprecated == 0 else "active"))
        entries.append((f"{stem}.md", meta, problems))
    return entries


def _built(entries: Sequence[Entry]) -> str:
    try:
        return engine.build_index(entries)
    except engine.VaultError as exc:
        return f"error: {exc}"


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(STEMS, unique=True, max_size=12), st.randoms(use_true_random=False))
def test_the_index_of_pages_in_any_order_is_the_index_of_pages_in_index_order(
        stems: List[str], shuffler: random.Random) -> None:
    """The renderer takes no sort key per row when pages come in index order (a scan's do);
    in any other order it sorts them, and the bytes (or the collision error) are the same."""
    ordered = sorted(_entries(stems), key=lambda entry: engine.page_sort_key(entry[0]))
    shuffled = list(ordered)
    shuffler.shuffle(shuffled)
    assert _built(shuffled) == _built(ordered)
    assert _built(list(reversed(ordered))) == _built(ordered)


def test_a_shuffled_index_is_sorted_case_folded_then_by_name() -> None:
    entries = _entries(["b", "A", "a\u0308", "B1", "c"], deprecated=10)
    rendered = engine.build_index(list(reversed(entries)))
    rows = rendered.split("\n")[engine.INDEX_HEADER.count("\n") + 1:-1]
    assert [row.split("]]")[0][4:] for row in rows] == ["A", "b", "B1", "c", "ä"]
    assert rendered.endswith("\n") and rendered.startswith(engine.INDEX_HEADER + "\n")


@pytest.mark.parametrize("stems", [
    ["plain", "other"],
    ["with]bracket", "plain"],          # a row that does not parse back to its stem
    ["line\nbreak", "plain"],           # a row over two lines: no topic for either line
    [],
])
def test_row_facts_of_a_fresh_index_are_those_of_the_index_parsed_back(stems: List[str]) -> None:
    entries = _entries(stems)
    names = [name for name, _meta, _problems in entries]
    rendered = engine.build_index(entries)
    assert engine.rendered_row_facts(names, rendered) == engine.index_row_facts(rendered, names)


@pytest.fixture
def repo(git_repo: Path) -> Path:
    """An initialised, committed vault of twenty pages and a daily entry, cached by `init`."""
    init_cached_vault(git_repo, {
        f"page-{number:02d}.md": page(f"Page {number}.",
                                      "deprecated" if number % 7 == 0 else "active")
        for number in range(20)})
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "vault")
    return git_repo


def test_a_scan_without_a_cache_keeps_no_page_text_or_fields_and_reports_the_same(
        repo: Path) -> None:
    """A protocol command's full walk (no usable cache) keeps of each page what an entry of
    the cache would give: no text, no frontmatter fields or notes, and the same report."""
    os.unlink(repo / CACHE)
    cache = engine.FileCache(repo)
    scan = engine.scan_workspace(repo, cache=cache)
    assert cache.state == "missing" and len(scan.pages) == 20
    assert all(document.text is None and document.meta is not None
               and document.meta.fields == {} and document.meta.notes == ()
               for document in scan.pages)
    assert scan.index_text is not None  # the index is read for its text
    gated = engine.scan_workspace(repo)  # a gate's walk keeps what its rules read
    assert all(document.text and document.meta and document.meta.fields
               for document in gated.pages)
    assert engine.inspect_report(scan) == engine.inspect_report(gated)


def test_a_rebuild_leaves_an_unchanged_cache_and_rewrites_a_changed_one(repo: Path) -> None:
    """`rebuild-index` compares each old entry with the fresh one as it walks: the cache stays
    untouched when all are equal, and is rewritten when one changed, appeared or is gone."""
    ok(runtime(repo, "rebuild-index"))
    before = os.stat(repo / CACHE)
    data = (repo / CACHE).read_bytes()
    ok(runtime(repo, "rebuild-index"))
    after = os.stat(repo / CACHE)
    assert (repo / CACHE).read_bytes() == data
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    # A page changed outside the engine: its entry follows.
    (repo / PAGES / "page-03.md").write_text(page("Changed, and longer than it was."),
                                             encoding="utf-8")
    time.sleep(0.05)
    ok(runtime(repo, "rebuild-index"))
    files = cache_record(repo)["files"]
    assert files["EchoesVault/pages/page-03.md"][0] == os.stat(
        repo / PAGES / "page-03.md").st_size
    read_only_agree(repo)
    # A page deleted: every other entry is equal, the old one is gone all the same.
    (repo / PAGES / "page-04.md").unlink()
    ok(runtime(repo, "rebuild-index"))
    files = cache_record(repo)["files"]
    assert "EchoesVault/pages/page-04.md" not in files and len(files) == 20
    read_only_agree(repo)


def test_resolve_s_scan_keeps_only_the_texts_it_may_report(repo: Path) -> None:
    """`resolve` scans with a lean reader: the texts of files with markers, invalid pages and
    unmerged paths stay (it reports them), the others go, and the health report is the same."""
    from echoes_lint.merge import resolve

    (repo / PAGES / "page-01.md").write_text(
        page("Conflicted.") + "<<<<<<< ours\nA\n=======\nB\n>>>>>>> theirs\n", encoding="utf-8")
    (repo / PAGES / "broken.md").write_text("---\ntype: note\n---\n", encoding="utf-8")
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    (repo / "EchoesVault/daily" / today).mkdir(parents=True, exist_ok=True)
    (repo / "EchoesVault/daily" / today / f"{today.replace('-', '')}T000000000000Z-s-0000000b.md"
     ).write_text("### Session — now\n\nDone.\n\n### Scratchpad — later\n\nMore.\n",
                  encoding="utf-8")  # today's entries: the health report counts them
    unmerged = "EchoesVault/pages/page-02.md"
    lean = engine.scan_workspace(repo, cache=resolve._LeanReader(repo, frozenset([unmerged])))
    kept = sorted(document.path for document in lean.pages if document.text is not None)
    assert kept == ["EchoesVault/pages/broken.md", "EchoesVault/pages/page-01.md", unmerged]
    assert lean.index_text is not None
    full = engine.scan_workspace(repo)
    assert engine.inspect_report(lean) == engine.inspect_report(full)
    assert engine.inspect_report(lean)["health"]["todayEntries"] == 2
    assert [(report.path, report.clean) for report in resolve.collect(repo, lean)] == [
        (report.path, report.clean) for report in resolve.collect(repo, full)]


def test_a_settled_page_keeps_the_attribute_table_its_class_shares() -> None:
    """Before Python 3.11 a `page_problems` set after `__init__` gave each page's document a
    dict of its own (360 bytes instead of 144 on 3.9, ~20 MB at 100,000 pages); the engine's
    first Document sets it, so every page's document shares the class's table. Checked in a
    fresh process, as a command runs: the table is the process's, and documents other tests
    made in this one may have split it already."""
    code = ("import sys; from echoes_lint import engine\n"
            "fresh = engine.Document('a.md', None, None, [])\n"
            "settled = engine.Document('b.md', None, None, [])\n"
            "engine._settle(settled, 'page')\n"
            "assert settled.__dict__['page_problems'] == []\n"
            "print(sys.getsizeof(settled.__dict__), sys.getsizeof(fresh.__dict__))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    settled_size, fresh_size = done.stdout.split()
    assert settled_size == fresh_size
