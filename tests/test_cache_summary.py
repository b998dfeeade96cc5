"""The cache's summary (issue 13): when every entry still matches its file and no other vault
Markdown file was read, `status` and `inspect` take the summary of what the engine derived from the
files instead of rebuilding a document per file; any change outside the engine (even a same-size
rewrite that keeps the mtime) makes them derive everything from the files again, with the same
output as without a cache."""

from __future__ import annotations

import datetime as _dt
import os
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest
from conftest import git
from helpers_cache import (
    CACHE,
    cache_layout,
    cache_record,
    command,
    read_only_agree,
    rewrite_keeping_stat,
    upsert_payload,
    without_cache,
    write_cache_record,
    writer_agrees,
)
from helpers_writer import init_vault, ok, page, runtime

from echoes_lint import engine

PAGES = Path("EchoesVault/pages")
CONFLICT = "<<<<<<< HEAD\na\n=======\nb\n>>>>>>> topic\n"


@pytest.fixture
def repo(git_repo: Path) -> Path:
    """A committed vault (a deprecated page, today's daily entry, a raw note with conflict
    markers) whose files are older than any writer's lock, with the cache `rebuild-index`
    wrote: every file has its entry, and the cache its summary."""
    pages = git_repo / PAGES
    pages.mkdir(parents=True)
    (pages / "alpha.md").write_text(page("Alpha."), encoding="utf-8")
    (pages / "beta.md").write_text(page("Beta.", "deprecated"), encoding="utf-8")
    (pages / "Gamma.md").write_text(page("Gamma."), encoding="utf-8")
    today = _dt.datetime.now(_dt.timezone.utc).date().isoformat()
    daily = git_repo / "EchoesVault/daily" / today
    daily.mkdir(parents=True)
    (daily / f"{today.replace('-', '')}T000000000000Z-session-a-0000000a.md").write_text(
        "### Session — then\n\nDone.\n### Session — later\n\nMore.\n", encoding="utf-8")
    raw = git_repo / "EchoesVault/raw"
    raw.mkdir(parents=True)
    (raw / "note.md").write_text(CONFLICT, encoding="utf-8")
    init_vault(git_repo)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "vault")
    past = time.time() - 100
    for folder, _dirs, files in os.walk(git_repo / "EchoesVault"):
        for name in files:
            os.utime(Path(folder) / name, (past, past))
    ok(runtime(git_repo, "rebuild-index"))
    return git_repo


def test_status_and_inspect_take_the_summary_when_nothing_changed(repo: Path) -> None:
    summary = cache_record(repo)["summary"]
    assert summary["pages"] == 3 and summary["daily"] == 1
    assert summary["deprecated"] == ["beta"] and summary["conflicts"] == ["raw/note.md"]
    report = read_only_agree(repo, card=True)
    # Five entries matched, in three folders (pages/, the day's, raw/) each matched whole by
    # its signature, so the entries were not even decoded; only the index and
    # AGENT_PROTOCOL.md, never cached, were read.
    assert report == {"path": ".echoes-vault/cache.json", "state": "valid", "reason": None,
                      "reusedEntries": 5, "readFiles": 2, "summaryUsed": True,
                      "matchedFolders": 3, "entriesDecoded": False}
    assert command(repo, "inspect") == without_cache(repo, "inspect")
    health = ok(runtime(repo, "status"))["health"]
    assert (health["todayEntries"], health["conflictMarkers"]) == (2, ["raw/note.md"])


def _same_size_flip(repo: Path) -> None:
    """One page, as many bytes, the same mtime (the same second): only its ctime tells."""
    path = repo / PAGES / "alpha.md"
    rewrite_keeping_stat(path, path.read_bytes().replace(b"summary:", b"summarx:"))


def _same_size_daily(repo: Path) -> None:
    path = next((repo / "EchoesVault/daily").rglob("*.md"))
    rewrite_keeping_stat(path, path.read_bytes().replace(b"### Session", b"xxx Session", 1))


def _new_page(repo: Path) -> None:
    (repo / PAGES / "delta.md").write_text(page("Delta."), encoding="utf-8")


def _deleted_page(repo: Path) -> None:
    (repo / PAGES / "Gamma.md").unlink()


def _renamed_page(repo: Path) -> None:
    os.rename(repo / PAGES / "Gamma.md", repo / PAGES / "gamma-renamed.md")


def _new_raw_note(repo: Path) -> None:
    (repo / "EchoesVault/raw/other.md").write_text(CONFLICT, encoding="utf-8")


def _stale_index(repo: Path) -> None:
    """Not a file the cache describes: the summary stands, its index rows no longer apply."""
    index = repo / "EchoesVault/index.md"
    index.write_text(index.read_text(encoding="utf-8") + "- [[ghost]]: \n- [[alpha]]: Again.\n",
                     encoding="utf-8")


EDITS: Dict[str, Callable[[Path], None]] = {
    "same-size page": _same_size_flip,
    "same-size daily": _same_size_daily,
    "new page": _new_page,
    "deleted page": _deleted_page,
    "renamed page": _renamed_page,
    "new raw note": _new_raw_note,
}


@pytest.mark.parametrize("kind", sorted(EDITS))
def test_a_change_outside_the_engine_is_seen_and_the_summary_set_aside(repo: Path,
                                                                      kind: str) -> None:
    before = ok(runtime(repo, "status"))
    EDITS[kind](repo)
    report = read_only_agree(repo, card=True)
    assert report["state"] == "valid" and not report["summaryUsed"]
    after = ok(runtime(repo, "status"))
    assert after["health"] != before["health"]
    if kind == "same-size page":
        return  # the page is invalid now: no writer runs
    # The next writer that reads every file leaves a summary of the vault as it is now.
    _age(repo)
    ok(runtime(repo, "rebuild-index"))
    assert read_only_agree(repo)["summaryUsed"]


def _age(repo: Path) -> None:
    past = time.time() - 50
    for folder, _dirs, files in os.walk(repo / "EchoesVault"):
        for name in files:
            if name != "index.md":
                os.utime(Path(folder) / name, (past, past))


def test_an_index_edited_by_hand_is_judged_from_its_own_rows(repo: Path) -> None:
    _stale_index(repo)
    report = read_only_agree(repo, card=True)
    assert report["summaryUsed"]  # the pages did not change: only the index rows are parsed
    health = ok(runtime(repo, "status"))["health"]
    assert health["indexOutOfDate"] == ["index.md"]
    assert health["duplicateIndexEntries"] == ["alpha"]
    assert health["emptyDescriptions"] == ["ghost"] and health["missingPages"] == ["ghost"]


def _summary(repo: Path, change: Callable[[Dict[str, Any]], None]) -> None:
    record = cache_record(repo)
    change(record["summary"])
    write_cache_record(repo, record)


@pytest.mark.parametrize("change", [
    lambda summary: summary.update(pages="three"),
    lambda summary: summary.pop("rows"),
    lambda summary: summary.update(deprecated=[1]),
    lambda summary: summary["days"].update(x="2"),
    lambda summary: summary["rows"].update(orphans=None),
], ids=["count", "missing key", "stem", "day", "rows"])
def test_a_malformed_summary_makes_the_whole_cache_ignored(repo: Path,
                                                           change: Callable[[Dict[str, Any]],
                                                                            None]) -> None:
    _summary(repo, change)
    report = read_only_agree(repo, card=True)
    assert report["state"] == "ignored" and report["reason"] == "its summary is malformed"
    assert report["reusedEntries"] == 0 and not report["summaryUsed"]


def test_a_summary_that_counts_other_files_is_not_taken(repo: Path) -> None:
    """A summary stands only for as many pages and daily files as the entries that matched."""
    _summary(repo, lambda summary: summary.update(pages=4, deprecated=[]))
    report = read_only_agree(repo)
    assert report["state"] == "valid" and not report["summaryUsed"]
    assert report["reusedEntries"] == 5


def test_writers_keep_the_summary_for_the_next_command(repo: Path, tmp_path: Path) -> None:
    """A writer whose walk took the summary (no document per page) splices its pages into the
    index, records the files it wrote and brings the summary up to date: each output and index
    equals a run without a cache, and the next `status` takes the summary again."""
    end = {"dailySummary": "- Done.", "pages": [upsert_payload(repo, "beta.md", "Beta again.")]}
    steps = [
        ("upsert", None, upsert_payload(repo, "delta.md", "Delta.")),
        ("upsert", None, upsert_payload(repo, "alpha.md", "Alpha, now deprecated.",
                                        "deprecated")),
        ("append", None, {"entry": "- A fact."}),
        ("end", "--confirm-explicit-user-end", end),
        ("start", None, None),
        ("upsert", None, upsert_payload(repo, "Straße.md", "Eszett.")),
    ]
    for number, (name, flag, payload) in enumerate(steps):
        args = [name, *([flag] if flag else []), *(["--payload", "-"] if payload else [])]
        if name == "end":  # its page hash is the page's as the previous steps left it
            payload = {**end, "pages": [upsert_payload(repo, "beta.md", "Beta again.")]}
        writer_agrees(repo, tmp_path / f"scratch-{number}", *args, payload=payload)
        report = read_only_agree(repo)
        assert report["summaryUsed"], (name, report)
        # The writer brought the signatures of the folders it wrote in up to date: every
        # folder matches whole, and the entries are not decoded.
        assert report["matchedFolders"] == 3 and not report["entriesDecoded"], (name, report)
    assert cache_record(repo)["summary"]["deprecated"] == ["alpha"]


def _entries_line(repo: Path) -> bytes:
    return cache_layout(repo)[2]


def test_a_writer_adds_its_entries_to_the_line_it_read_and_the_last_one_counts(
        repo: Path) -> None:
    """A writer that took the summary writes the entries line back as it read it, with the
    entries of the files it wrote after it: a page written twice has three entries there, and
    the last is the one a walk that decodes the entries uses."""
    for summary in ("Alpha two.", "Alpha three."):
        ok(runtime(repo, "upsert", "--payload", "-",
                   payload=upsert_payload(repo, "alpha.md", summary)))
    assert _entries_line(repo).count(b'"EchoesVault/pages/alpha.md"') == 3
    record = cache_record(repo)
    assert (record["stale"], record["entries"]) == (2, 5)
    os.utime(repo / PAGES / "Gamma.md")  # pages/ no longer matches whole: entries are decoded
    report = read_only_agree(repo, card=True)
    assert report == {"path": ".echoes-vault/cache.json", "state": "valid", "reason": None,
                      "reusedEntries": 4, "readFiles": 3, "summaryUsed": False,
                      "matchedFolders": 2, "entriesDecoded": True}


def test_replaced_entries_are_dropped_once_there_are_enough(repo: Path) -> None:
    """Each write of an existing page leaves its old entry in the line; once more than
    CACHE_MIN_CHANGES are stale (at this size), the writer encodes every entry once again."""
    stale = []
    for number in range(engine.CACHE_MIN_CHANGES + 2):
        ok(runtime(repo, "upsert", "--payload", "-",
                   payload=upsert_payload(repo, "alpha.md", f"Alpha {number:02d}.")))
        stale.append(cache_record(repo)["stale"])
    assert max(stale) == engine.CACHE_MIN_CHANGES and 0 in stale, stale
    assert _entries_line(repo).count(b'"EchoesVault/pages/alpha.md"') == stale[-1] + 1
    report = read_only_agree(repo)
    assert report["summaryUsed"] and not report["entriesDecoded"]


def test_a_writer_whose_index_was_edited_derives_from_the_files(repo: Path,
                                                                tmp_path: Path) -> None:
    _stale_index(repo)
    writer_agrees(repo, tmp_path / "scratch", "upsert", "--payload", "-",
                  payload=upsert_payload(repo, "delta.md", "Delta."))
    read_only_agree(repo)


def test_a_writer_refuses_a_colliding_name_as_without_the_summary(repo: Path,
                                                                  tmp_path: Path) -> None:
    for name in ("ALPHA.md", "gamma.md", "BETA.md"):
        outcome = writer_agrees(repo, tmp_path / f"scratch-{name}", "upsert", "--payload", "-",
                                payload=upsert_payload(repo, name, "Other."))
        assert outcome[0] == 2 and "collides" in outcome[1]["error"], outcome


@pytest.mark.parametrize("names", [
    ["alpha.md", "beta.md"],
    ["a]b.md", "c.md"],
    ["x[[y.md", "Straße.md", "\u212a.md"],
])
def test_the_rows_of_a_table_are_the_rows_a_full_parse_finds(names: List[str]) -> None:
    metas = [engine.parse_frontmatter(page(f"Summary [[{n}]] {n}", status)) for n, status in
             zip(names, ["active", "deprecated", "active"])]
    entries = sorted(zip(names, metas), key=lambda entry: engine.page_sort_key(entry[0]))
    rendered = engine.render_index(entries)
    table = engine.IndexTable([n for n, _m in entries], [engine.index_row(n, m) for n, m in entries],
                              [], lambda: [])
    assert table.render() == rendered
    assert engine.table_row_facts(table, rendered) == engine.index_row_facts(rendered, names)


def test_a_folder_holding_a_file_without_an_entry_is_matched_entry_by_entry(
        repo: Path, tmp_path: Path) -> None:
    """pages/ with a file that is no page never matches its signature: its entries are decoded
    and matched one by one, the summary still stands, and a writer that decoded them writes
    every entry again with those of the files it wrote, so the next command takes it too."""
    (repo / PAGES / "notes.txt").write_text("Not a page.\n", encoding="utf-8")
    _age(repo)
    ok(runtime(repo, "rebuild-index"))
    report = read_only_agree(repo)
    assert report["summaryUsed"] and report["entriesDecoded"] and report["matchedFolders"] == 2
    writer_agrees(repo, tmp_path / "scratch", "upsert", "--payload", "-",
                  payload=upsert_payload(repo, "delta.md", "Delta."))
    report = read_only_agree(repo)
    assert report["summaryUsed"] and report["reusedEntries"] == 6, report


def test_entries_damaged_in_place_are_seen_without_decoding_them(repo: Path) -> None:
    """Bytes of the entries line changed in place (same length, as a bad sector would) are seen
    by the head's checksum, although the summary path never decodes that line: the cache is
    reported ignored, and a writer replaces it instead of carrying the damage forward."""
    data = (repo / CACHE).read_bytes()
    (repo / CACHE).write_bytes(b"\xff" * 8 + data[8:])
    report = read_only_agree(repo, card=True)
    assert report["state"] == "ignored" and "corrupt" in report["reason"], report
    ok(runtime(repo, "upsert", "--payload", "-", payload=upsert_payload(repo, "delta.md",
                                                                        "Delta.")))
    assert b"\xff" not in (repo / CACHE).read_bytes()
    assert read_only_agree(repo)["state"] == "valid"


def test_a_folder_that_misses_its_signature_is_not_stat_again(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pages/ with one page touched outside the engine misses its signature: the walk matches
    its entries one by one with the stats the signature check took, not a second stat each."""
    os.utime(repo / PAGES / "Gamma.md")
    given: List[bool] = []
    defer_page = engine.FileCache.defer_page

    def counted(self: engine.FileCache, entry: os.DirEntry[str], relative: str,
                kind: str = "page", info: Any = None) -> bool:
        given.append(info is not None)
        return defer_page(self, entry, relative, kind, info)

    monkeypatch.setattr(engine.FileCache, "defer_page", counted)
    report, cache = engine.cached_inspection(repo)
    # The day's folder and raw/ matched whole; Gamma.md is read, beside the two uncached files.
    assert cache.matched_folders == 2 and cache.read == 3
    assert given == [True, True, True]  # each page came with the stat already taken
    assert report == without_cache_inspection(repo)


def without_cache_inspection(repo: Path) -> Dict[str, Any]:
    (repo / CACHE).unlink()
    return engine.cached_inspection(repo)[0]


def test_a_writer_that_took_the_summary_appends_to_the_file_it_read(repo: Path) -> None:
    """The entries of the files a writer wrote go to the end of the cache with a new head: the
    file it read stays as it was (same inode, same bytes before the new segment), and the next
    command takes the summary from the new head without decoding any entries line."""
    before, inode = (repo / CACHE).read_bytes(), os.lstat(repo / CACHE).st_ino
    ok(runtime(repo, "upsert", "--payload", "-",
               payload=upsert_payload(repo, "delta.md", "Delta.")))
    after = (repo / CACHE).read_bytes()
    assert after.startswith(before) and len(after) > len(before)
    assert os.lstat(repo / CACHE).st_ino == inode
    head = cache_record(repo)
    assert len(head["spans"]) == 2 and "EchoesVault/pages/delta.md" in head["files"]
    report = read_only_agree(repo, card=True)
    assert report["summaryUsed"] and not report["entriesDecoded"], report


@pytest.mark.parametrize("torn", [b'"EchoesVault/pages/x.md":[1,2', b'"a":1\n{"format":"echo'])
def test_an_append_torn_by_a_crash_leaves_the_head_before_it(repo: Path, torn: bytes) -> None:
    """A segment cut short (its entries line, or its head) is never taken: readers take the
    last complete head, which describes the file as it was, and the next writer writes every
    entry once again instead of appending after the torn bytes."""
    ok(runtime(repo, "upsert", "--payload", "-",
               payload=upsert_payload(repo, "delta.md", "Delta.")))
    with open(repo / CACHE, "ab") as handle:
        handle.write(torn)
    report = read_only_agree(repo, card=True)
    assert report["state"] == "valid" and report["summaryUsed"], report
    ok(runtime(repo, "upsert", "--payload", "-",
               payload=upsert_payload(repo, "epsilon.md", "Epsilon.")))
    data = (repo / CACHE).read_bytes()
    assert torn not in data and len(cache_record(repo)["spans"]) == 1
    assert read_only_agree(repo)["summaryUsed"]
