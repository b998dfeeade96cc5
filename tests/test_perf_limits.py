"""No read limit is smaller than what the engine itself writes for a vault it accepts (issue 13).

The index grows with the vault: its read limit is derived from the number of pages and the
longest row the renderer can produce. Pages, daily entries and adapter guides the engine writes
stay within the page read limit once their headings, injected summaries or blocks are added.
"""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

from conftest import page_text
from helpers_writer import INDEX, PAGES, cli, init_vault, ok, refused

from echoes_lint import engine

LIMIT = engine.MAX_TEXT_BYTES


def test_no_index_row_is_longer_than_its_bound() -> None:
    # The bound's premise: per UTF-16 unit of a name, the canonical decomposition (never shorter
    # than NFC) takes at most 9 UTF-8 bytes.
    widest = max(len(unicodedata.normalize("NFD", chr(code)).encode("utf-8"))
                 / (len(chr(code).encode("utf-16-le")) // 2)
                 for code in range(sys.maxunicode + 1) if not 0xD800 <= code <= 0xDFFF)
    assert widest <= 9
    meta = engine.parse_frontmatter(page_text("\U0001F600" * 160, status="deprecated"))
    assert meta.summary is not None and meta.deprecated
    # U+0958 is one unit and 6 bytes in NFC; U+0CCB is 3 bytes in NFC, 9 in NFD.
    for stem in ("\u0958" * 255, "\u0ccb" * 255, "a" * 255):
        rendered = engine.render_index([(f"{stem}.md", meta)]).encode("utf-8")
        row = rendered[len(engine.INDEX_HEADER.encode("utf-8")) + 1:]
        assert len(row) <= engine.INDEX_ROW_MAX_BYTES
        assert len(rendered) <= engine.index_size_limit(1)


def _pages(repo: Path, count: int, summary: str = "A page.", stem: str = "page") -> None:
    for number in range(count):
        (repo / PAGES / f"{number:05d}-{stem}.md").write_text(
            page_text(summary, status="deprecated"), encoding="utf-8")


def test_the_scan_reads_an_index_exactly_at_its_limit(git_repo: Path) -> None:
    init_vault(git_repo)
    pages = LIMIT // engine.INDEX_ROW_MAX_BYTES + 1  # the first count whose bound passes 8 MiB
    _pages(git_repo, pages)
    limit = engine.index_size_limit(pages)
    assert limit > LIMIT
    index = git_repo / INDEX
    for size, readable in ((limit, True), (limit + 1, False)):
        index.write_bytes(b"x" * size)
        scan = engine.scan_workspace(git_repo, git=False)
        assert (scan.index_text is not None) is readable
        assert (str(INDEX.as_posix()) in scan.unreadable) is not readable


def test_a_vault_whose_index_passes_8_mib_stays_healthy(git_repo: Path) -> None:
    init_vault(git_repo)
    # 870-byte rows: 9,700 pages give an index of about 8.4 MB.
    _pages(git_repo, 9_700, "\U0001F600" * 160, "a" * 200)
    ok(cli(git_repo, "rebuild-index"))
    assert (git_repo / INDEX).stat().st_size > LIMIT
    _index_is_current(git_repo, 9_700)
    ok(cli(git_repo, "upsert", "--payload", "-",
           payload={"filename": "new.md", "content": page_text("One more.")}))
    assert cli(git_repo, "start").returncode == 0
    ok(cli(git_repo, "end", "--confirm-explicit-user-end", "--payload", "-",
           payload={"dailySummary": "Saved.", "pages": [
               {"filename": "other.md", "content": page_text("Another.")}]}))
    assert ok(cli(git_repo, "rebuild-index"))["pageCount"] == 9_702
    _index_is_current(git_repo, 9_702)


def _index_is_current(repo: Path, pages: int) -> None:
    health = ok(cli(repo, "status"))["health"]
    assert health["unreadableFiles"] == [] and health["indexOutOfDate"] == []
    assert health["indexBuildErrors"] == [] and health["indexTopics"] == pages


def test_every_writer_replaces_an_index_over_the_limit(git_repo: Path) -> None:
    # An index left by a larger vault (another branch, pages deleted) may pass the limit of the
    # pages there are now: it is replaced, never a reason to refuse.
    init_vault(git_repo)
    _pages(git_repo, 3)
    index = git_repo / INDEX
    for command, payload in ((("rebuild-index",), None),
                             (("upsert", "--payload", "-"),
                              {"filename": "new.md", "content": page_text("New.")}),
                             (("start",), None)):
        index.write_bytes(b"- [[x]]: y\n" * (engine.index_size_limit(4) // 10))
        completed = cli(git_repo, *command, payload=payload)
        assert completed.returncode == 0, completed.stderr
        assert index.read_text(encoding="utf-8").startswith(engine.INDEX_HEADER)


def test_an_entry_whose_heading_would_pass_the_limit_is_refused(git_repo: Path) -> None:
    init_vault(git_repo)
    message = refused(cli(git_repo, "append", "--payload", "-",
                          payload={"entry": "x" * (LIMIT - 10)}))
    assert "heading is larger than 8 MiB" in message
    assert not (git_repo / "EchoesVault" / "daily").exists() or not any(
        (git_repo / "EchoesVault" / "daily").rglob("*.md"))


def test_a_page_whose_injected_summary_would_pass_the_limit_is_refused(git_repo: Path) -> None:
    init_vault(git_repo)
    content = "---\ntype: note\nstack: [python]\nstatus: active\n---\n\n"
    content += "x" * (LIMIT - len(content) - 10) + "\n"
    message = refused(cli(git_repo, "upsert", "--payload", "-", payload={
        "filename": "big.md", "content": content, "indexDescription": "A big page."}))
    assert "larger than 8 MiB" in message
    assert not (git_repo / PAGES / "big.md").exists()


def test_a_legacy_page_too_large_for_its_summary_is_not_migrated() -> None:
    text = "---\ntype: note\nstack: [python]\nstatus: active\n---\n\n"
    text += "x" * (LIMIT - len(text) - 10) + "\n"
    document = engine.document_from_bytes("EchoesVault/pages/big.md", text.encode(), page=True)
    migrated, errors = engine.plan_summary_migrations([document], "- [[big]]: A big page.\n")
    assert migrated == {} and "larger than 8 MiB once its summary is added" in errors["big.md"]


def test_a_guide_the_block_would_push_past_the_limit_is_left_alone(git_repo: Path) -> None:
    guide = git_repo / "AGENTS.md"
    guide.write_bytes(b"# Guide\n" + b"x" * (LIMIT - 20) + b"\n")
    before = guide.read_bytes()
    result = init_vault(git_repo)
    assert "AGENTS.md" in result["agentAdapters"]["adapterConflicts"]
    assert guide.read_bytes() == before
