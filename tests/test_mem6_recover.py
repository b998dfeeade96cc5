"""The write that meets a change made outside the engine, lighter at its peak (issue 13: every
command under 300 MB at 100,000 pages). Its walk stats every file of the folder whose signature
no longer matches (pages/ after one page was edited): a stat is ~670 bytes, 70 MB at 100,000
pages. Here: a writer's walk keeps each file's signature line instead, and nothing of that
listing is held once the walk settles; the outputs stay those without a cache. Memory itself is
measured by the benchmark, never here: the tests count the stats the walk can reach."""

from __future__ import annotations

import io
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Set

import pytest
from conftest import git
from helpers_cache import read_only_agree, upsert_payload, writer_agrees
from helpers_writer import page
from test_gitsrc_cache import committed_vault

from echoes_lint import engine

PAGES = Path("EchoesVault/pages")
_LINE = re.compile(r"extra-\d\d\.md/\d+/\d+/\d+/\d+\Z")  # `engine._signature_line`
EXTRA = 30  # pages more than the fixture's three: a listing held shows as at least so many stats


def _stats(*roots: object, lines: bool = False) -> int:
    """The `os.stat_result`s reachable from `roots` through containers and the cache's
    attributes (a stat holds only numbers: the collector does not track it, so it is found
    by walking what holds it); `lines`: the extra pages' signature lines too, outside the
    cache (whose entries keep theirs)."""
    seen: Set[int] = set()
    pending: List[object] = list(roots)
    found = 0
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, os.stat_result) or (
                lines and isinstance(item, str) and _LINE.match(item)):
            found += 1
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            pending.extend(item)
        elif isinstance(item, engine.FileCache) and not lines:
            pending.append(vars(item))
    return found


@pytest.fixture
def edited(git_repo: Path, tmp_path: Path) -> Path:
    """A committed, cached vault of 33 pages, one of them then edited outside the engine."""
    repo = committed_vault(git_repo)
    for number in range(EXTRA):
        (repo / PAGES / f"extra-{number:02}.md").write_text(page(f"Extra {number:02}."),
                                                            encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "more")
    writer_agrees(repo, tmp_path / "record", "append", "--payload", "-",
                  payload={"entry": "- Recorded."})
    with open(repo / PAGES / "alpha.md", "a", encoding="utf-8") as handle:
        handle.write("\nOne more line.\n")
    return repo


def test_the_recovering_walk_holds_no_stat_of_the_folder_it_walks(
        edited: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the writer walks pages/ entry by entry (its signature did not match), what it
    took from `match_folder` is each file's signature line, not its stat; when the walk
    settles, neither the cache nor the walk's frame holds a stat or a line of that listing. Before,
    `listed` held a stat per page during the walk, and the walk's `known` kept them all
    alive through `settle` and the decoding of the entries, the writer's peak at 100,000."""
    seen: Dict[str, Any] = {}
    match_folder, settle = engine.FileCache.match_folder, engine.FileCache.settle

    def matching(cache: engine.FileCache, scan: engine.Scan, relative_dir: str,
                 directory: str) -> bool:
        matched = match_folder(cache, scan, relative_dir, directory)
        if relative_dir == PAGES.as_posix():
            seen["matched"] = matched
            seen["listed"] = len(cache.listed[1])
            seen["listing"] = _stats(cache)
        return matched

    def settling(cache: engine.FileCache, scan: engine.Scan) -> None:
        walk = sys._getframe(1).f_locals
        seen["settle"] = _stats(cache, walk) + _stats(walk, lines=True)
        settle(cache, scan)

    monkeypatch.setattr(engine.FileCache, "match_folder", matching)
    monkeypatch.setattr(engine.FileCache, "settle", settling)
    out, err = io.BytesIO(), io.BytesIO()
    payload = json.dumps(upsert_payload(edited, "delta.md", "Delta.")).encode("utf-8")
    code = engine.run(["--workspace", str(edited), "upsert", "--payload", "-"],
                      io.BytesIO(payload), out, err)
    assert code == 0, err.getvalue()
    assert json.loads(out.getvalue())["action"] == "created"
    # pages/ was stat'ed file by file and did not match: its listing was kept for the walk.
    assert seen["matched"] is False and seen["listed"] >= EXTRA, seen
    assert seen["listing"] < EXTRA and seen["settle"] < EXTRA, seen
    # The cache it left is taken by `status` (the same output as without a cache).
    report = read_only_agree(edited, card=True)
    assert report["summaryUsed"] and not report["entriesDecoded"], report


def test_a_readers_walk_still_takes_the_stats_it_records(edited: Path) -> None:
    """`status` after the change (no writer yet) records sizes and times from the stats its
    folder match took: the same output as without a cache, every file stat'ed once."""
    report = read_only_agree(edited)
    assert not report["summaryUsed"] and report["entriesDecoded"], report


def test_the_index_of_the_recovering_writer_is_the_one_a_rebuild_writes(
        edited: Path, tmp_path: Path) -> None:
    """The writer that meets the change renders the index of every page (`_render_index`, no
    pair a page): the bytes a `rebuild-index` without a cache writes, and the next writer
    splices its row into them."""
    writer_agrees(edited, tmp_path / "first", "upsert", "--payload", "-",
                  payload=upsert_payload(edited, "delta.md", "Delta."))
    writer_agrees(edited, tmp_path / "second", "upsert", "--payload", "-",
                  payload=upsert_payload(edited, "Echo.md", "Echo."))
    index = (edited / "EchoesVault/index.md").read_bytes()
    assert index.count(b"\n- [[") == EXTRA + 5
    writer_agrees(edited, tmp_path / "rebuild", "rebuild-index")
    assert (edited / "EchoesVault/index.md").read_bytes() == index
