"""`ci`'s status report costs less at 5,000 pages and decides as before (issue 13).

- `build_index` takes the pages' stems once, for their identities and their rows (each pass
  over 5,000 names cost ~0.4 ms); its bytes and errors are the definition's (the property test
  of tests/test_gates_ci_facts.py).
- The report `ci` makes from its lean scan is the engine's inspect report of its own scan of
  the same tree, read whole or from the local cache's summary: deprecated pages (one of them
  invalid, so that no index can be built), conflict markers in a page, a daily file and
  AGENT_PROTOCOL.md (a file no cache entry holds).
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from helpers_cache import init_cached_vault
from helpers_check import PAGES, commit, page, write
from helpers_writer import runtime

from echoes_lint import ci, engine
from echoes_lint.checker import run_checks

_BLOCK = "<<<<<<< ours\na\n=======\nb\n>>>>>>> theirs\n"


def test_the_index_takes_the_page_stems_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    stems = engine._page_stems

    def counted(names: Any) -> Any:
        calls.append(len(names))
        return stems(names)

    monkeypatch.setattr(engine, "_page_stems", counted)
    meta = engine.parse_frontmatter("---\ntype: note\nstack: [python]\nstatus: active\n"
                                    "summary: One.\n---\n")
    pages = [(name, meta, meta.problems) for name in ("b.md", "A.md", "c.MD")]
    assert engine.build_index(pages) == engine.render_index(
        [(name, meta) for name, meta, _problems in pages])
    assert calls[0] == 3 and len(calls) == 2  # once here, once for `render_index` itself


def test_the_handed_stems_go_before_the_index_is_joined() -> None:
    """`build_index`'s stems (and lowered names) are freed before the text is joined, as they
    are when `_render_index` makes them itself: Python before 3.11 holds a call's arguments until
    it returns, so a tuple handed over stayed alive (+65% peak at 100,000 pages on 3.9/3.10)."""
    meta = engine.parse_frontmatter("---\ntype: note\nstack: [python]\nstatus: active\n"
                                    "summary: " + "S" * 60 + ".\n---\n")
    pages = [(f"page-number-{number:06d}-with-a-longish-slug.md", meta, meta.problems)
             for number in range(20000)]
    pairs = [(name, meta) for name, meta, _problems in pages]

    def peak(render: Any) -> int:
        gc.collect()
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            render()
            return tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()

    alone = peak(lambda: engine.render_index(pairs))
    assert peak(lambda: engine.build_index(pages)) < alone * 1.25


def _report(view: engine.Scan) -> str:
    return json.dumps(engine.inspect_report(engine.clone_view(view)), sort_keys=True)


@pytest.mark.parametrize("buildable", [True, False])
def test_ci_reports_what_inspect_reports_with_and_without_the_cache(tmp_path: Path,
                                                                    buildable: bool) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    init_cached_vault(repo, {"home.md": page("# Home\n"),
                             "old.md": page("# Old\n", status="deprecated")})
    protocol = repo / "EchoesVault/AGENT_PROTOCOL.md"
    protocol.write_text(protocol.read_text(encoding="utf-8") + "\n" + _BLOCK, encoding="utf-8")
    write(repo, "EchoesVault/daily/2026-01-02/entry.md", "### Session — a\n\n" + _BLOCK)
    if buildable:  # a writer caches every file: the cache's summary stands for them all
        assert runtime(repo, "rebuild-index").returncode == 0
    else:  # pages the cache has no entry for: one cannot be parsed, one is in conflict
        write(repo, f"{PAGES}/gone.md", "---\ntype: note\nstatus: deprecated\n---\n\n# Gone\n")
        write(repo, f"{PAGES}/marked.md", page("# Marked\n\n" + _BLOCK))
    commit(repo, "vault")
    gate = json.dumps(ci.status_report(run_checks(repo, guard=True).scan)[0], sort_keys=True)
    cache = engine.FileCache(repo)  # as the read-only commands read it
    cache.defer = True
    cached = engine.scan_workspace(repo, cache=cache, health=True)
    assert (cached.summary is not None) is buildable
    assert gate == _report(engine.scan_workspace(repo)) == _report(cached)
    report = json.loads(gate)
    health = report["health"]
    assert health["deprecatedSlugs"] == ["old"]
    assert health["conflictMarkers"] == ["AGENT_PROTOCOL.md", "daily/2026-01-02/entry.md",
                                         *([] if buildable else ["pages/marked.md"])]
    assert health["invalidFrontmatter"] == ([] if buildable else ["gone", "marked"])
    assert bool(health["indexBuildErrors"]) is not buildable
    assert (report["indexRefresh"]["sha256"] is None) is not buildable
