"""The local cache (issue 13): where it lives, who writes it, Git's racily-clean rule, every kind
of corrupt cache (ignored, reported, never trusted), a byte-identical index after incremental
writes, and gates that never read it."""

from __future__ import annotations

import binascii
import json
import os
import time
from pathlib import Path
from typing import Any, Callable, Dict

import pytest
from conftest import git, run_cli
from helpers_cache import (
    CACHE,
    cache_layout,
    cache_record,
    command,
    init_cached_vault,
    read_only_agree,
    upsert_payload,
    without_cache,
    write_cache_record,
)
from helpers_writer import INDEX, cli, ok, page, runtime, snapshot

from echoes_lint import engine

PAGES = Path("EchoesVault/pages")


@pytest.fixture
def repo(git_repo: Path) -> Path:
    """An initialised, committed vault of three pages (one deprecated, one invalid) and a daily
    entry, whose cache `init` wrote."""
    init_cached_vault(git_repo, {"alpha.md": page("Alpha."),
                                 "beta.md": page("Beta.", "deprecated")})
    pages = git_repo / PAGES
    # `init` refuses an invalid page: this one comes after, so the cache does not hold it.
    (pages / "broken.md").write_text("---\ntype: note\n---\n", encoding="utf-8")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "vault")
    return git_repo


def status(repo: Path) -> Dict[str, Any]:
    return ok(runtime(repo, "status"))


# --- place, ignore rules, local-only -----------------------------------------------------------


def test_the_cache_is_local_state_that_init_ignores_and_ev021_flags(repo: Path) -> None:
    assert (repo / CACHE).is_file()
    assert "/cache.json" in (repo / ".echoes-vault/.gitignore").read_text().splitlines()
    assert git(repo, "status", "--porcelain", "--ignored", "--", str(CACHE)) == \
        f"!! {CACHE}\n"
    assert engine.CACHE_PATH in engine.LOCAL_ONLY_PATHS
    git(repo, "add", "-f", str(CACHE))
    checked = run_cli("check", "--select", "EV021", "--output-format", "concise", cwd=repo)
    assert checked.returncode == 1
    assert f"{CACHE}:1:1: EV021" in checked.stdout


def test_status_uses_the_cache_reads_only_what_changed_and_never_writes(repo: Path) -> None:
    report = read_only_agree(repo, card=True)
    # Every page and daily file comes from the cache; the index and AGENT_PROTOCOL.md are read,
    # and so is the page written after `init`.
    assert report == {"path": ".echoes-vault/cache.json", "state": "valid", "reason": None,
                      "reusedEntries": 3, "readFiles": 3, "summaryUsed": False,
                      "matchedFolders": 1, "entriesDecoded": True}
    (repo / CACHE).unlink()
    before = snapshot(repo)
    assert status(repo)["cache"]["state"] == "missing"
    assert command(repo, "search", "Alpha")[0] == 0
    assert snapshot(repo) == before  # spec 12.5: read-only commands write nothing


def test_hydrate_reads_the_cache_but_writes_only_the_index_and_the_state(repo: Path) -> None:
    (repo / CACHE).unlink()
    (repo / INDEX).unlink()
    (repo / PAGES / "broken.md").unlink()
    ok(runtime(repo, "hydrate"))
    assert not (repo / CACHE).exists()  # spec 12.5.1: only index.md and state.json
    assert (repo / INDEX).is_file()


def test_writers_refresh_the_cache_under_the_lock(repo: Path) -> None:
    (repo / PAGES / "broken.md").unlink()
    (repo / CACHE).unlink()
    ok(runtime(repo, "upsert", "--payload", "-", payload=upsert_payload(repo, "gamma.md", "G.")))
    record = cache_record(repo)
    files = record["files"]
    # The page the writer itself just wrote is newer than its lock: it is read back, and
    # recorded, once the file system's clock has passed its times (the cache's stamp).
    assert sorted(files) == ["EchoesVault/daily/2026-01-01/20260101T000000000000Z-session-a-"
                             "0000000a.md", "EchoesVault/pages/alpha.md",
                             "EchoesVault/pages/beta.md", "EchoesVault/pages/gamma.md"]
    info = os.lstat(repo / PAGES / "gamma.md")
    assert max(info.st_mtime_ns, info.st_ctime_ns) < record["stamp"]
    assert json.loads(files["EchoesVault/pages/beta.md"][4])[2][:3] == ["note", "deprecated",
                                                                        "Beta."]
    assert not (repo / ".echoes-vault/lock").exists()


def test_a_file_not_older_than_the_writer_s_lock_is_not_cached(repo: Path) -> None:
    """Git's racily-clean rule: an mtime in the same tick as (here: after) the cache's stamp
    means the file may change unseen within that tick, so it is read again every time."""
    (repo / PAGES / "broken.md").unlink()
    future = time.time() + 3600
    os.utime(repo / PAGES / "alpha.md", (future, future))
    ok(runtime(repo, "rebuild-index"))
    record = cache_record(repo)
    assert "EchoesVault/pages/alpha.md" not in record["files"]
    assert "EchoesVault/pages/beta.md" in record["files"]
    assert all(entry[1] < record["stamp"] and entry[2] < record["stamp"]
               for entry in record["files"].values())


# --- corrupt, foreign and hostile caches --------------------------------------------------------


def _truncated(repo: Path) -> None:
    data = (repo / CACHE).read_bytes()
    (repo / CACHE).write_bytes(data[:len(data) // 2])


def _garbage(repo: Path) -> None:
    (repo / CACHE).write_bytes(b"\x00\xff not json at all")


def _foreign(repo: Path) -> None:
    record = cache_record(repo)
    record["engineVersion"] = "9.9.9"
    write_cache_record(repo, record)


def _other_build(repo: Path) -> None:
    record = cache_record(repo)
    record["engineSha256"] = "0" * 64  # same version number, another engine file
    write_cache_record(repo, record)


def _newer_format(repo: Path) -> None:
    record = cache_record(repo)
    record["version"] = engine.CACHE_VERSION + 1
    write_cache_record(repo, record)


def _wrong_types(repo: Path) -> None:
    """Entries that still match their files' stat, with facts of the wrong type: one of them
    claims the deprecated page is valid with a summary that is a number."""
    record = cache_record(repo)
    entry = record["files"]["EchoesVault/pages/beta.md"]
    entry[4] = json.dumps([None, None, ["note", "active", 42, 1, 6, 5, []]])
    write_cache_record(repo, record)


def _not_an_entry(repo: Path) -> None:
    """The first page's entry is no entry at all: the walk still meets the pages after it."""
    record = cache_record(repo)
    first = min(path for path in record["files"] if path.startswith(f"{PAGES}/"))
    record["files"][first] = "bogus"
    write_cache_record(repo, record)


def _entries_cut(repo: Path) -> None:
    """The head intact, the entries line shorter than the head says (a torn write)."""
    data = (repo / CACHE).read_bytes()
    end = data.index(b"\n")
    (repo / CACHE).write_bytes(data[:end - 1] + data[end:])


def _head_cut(repo: Path) -> None:
    """The last byte of the head, its newline, missing: no head line is complete."""
    (repo / CACHE).write_bytes((repo / CACHE).read_bytes()[:-1])


def _span_past_head(repo: Path) -> None:
    """The head says the entries line runs into the head (longer than it is)."""
    head, _at, files = cache_layout(repo)
    head["spans"][0][1] += 1
    (repo / CACHE).write_bytes(files + b"\n" + json.dumps(head).encode("utf-8") + b"\n")


def _spans_overlap(repo: Path) -> None:
    """The same entries line named twice (overlapping spans), with a checksum that fits."""
    head, _at, files = cache_layout(repo)
    head["spans"] = [head["spans"][0], head["spans"][0]]
    head["filesBytes"] = 2 * len(files)
    head["filesCrc32"] = binascii.crc32(files, binascii.crc32(files))
    (repo / CACHE).write_bytes(files + b"\n" + json.dumps(head).encode("utf-8") + b"\n")


def _spans_too_many(repo: Path) -> None:
    """More entries lines than a writer ever leaves (empty ones, in order, each before the head,
    with a checksum that fits): the head is refused before any line is read."""
    head, _at, files = cache_layout(repo)
    extra = engine.CACHE_MAX_SPANS
    head["spans"] = [*head["spans"], *([len(files) + 1 + at, 0] for at in range(extra))]
    (repo / CACHE).write_bytes(files + b"\n" * (extra + 1) + json.dumps(head).encode("utf-8")
                               + b"\n")


def _entries_garbage(repo: Path) -> None:
    """The entries line as long as the head says, but not JSON: its checksum sees it."""
    data = (repo / CACHE).read_bytes()
    end = data.index(b"\n")
    (repo / CACHE).write_bytes(b"\xff" * end + data[end:])


def _folder_not_text(repo: Path) -> None:
    record = cache_record(repo)
    record["dirs"]["EchoesVault/pages"] = 5
    write_cache_record(repo, record)


def _folder_delta_malformed(repo: Path) -> None:
    """A folder's signature as a writer on Git's word leaves it, with a line not text."""
    record = cache_record(repo)
    record["dirs"]["EchoesVault/pages"] = [record["dirs"]["EchoesVault/pages"], [], [5]]
    write_cache_record(repo, record)


def _git_record_malformed(repo: Path) -> None:
    """A Git record whose folder counts are not numbers."""
    record = cache_record(repo)
    record["git"] = {"index": [1, 2, 3, 4], "dirs": {"EchoesVault/pages": "all"}, "check": {}}
    write_cache_record(repo, record)


def _git_checks_too_many(repo: Path) -> None:
    """A Git record naming more files to stat than a writer ever leaves."""
    record = cache_record(repo)
    record["git"] = {"index": [1, 2, 3, 4], "dirs": {}, "check": {
        f"EchoesVault/pages/p{number}.md": "p/1/2/3/4"
        for number in range(engine.CACHE_GIT_CHECKS + 1)}}
    write_cache_record(repo, record)


def _deep(repo: Path) -> None:
    (repo / CACHE).write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")


def _tracked(repo: Path) -> None:
    git(repo, "add", "-f", str(CACHE))


def _symlink(repo: Path) -> None:
    (repo / CACHE).unlink()
    os.symlink("state.json", repo / CACHE)


def _directory(repo: Path) -> None:
    (repo / CACHE).unlink()
    (repo / CACHE).mkdir()


def _fifo(repo: Path) -> None:
    (repo / CACHE).unlink()
    os.mkfifo(repo / CACHE)


def _huge(repo: Path) -> None:
    with open(repo / CACHE, "r+b") as handle:  # sparse: nothing is written to disk
        handle.truncate(engine.CACHE_MAX_BYTES + 1)


CORRUPTIONS: Dict[str, tuple[Callable[[Path], None], str, bool]] = {
    # kind: (make it, words of the reason, whether a writer replaces it)
    "truncated": (_truncated, "not JSON", True),
    "garbage": (_garbage, "not JSON", True),
    "foreign engine": (_foreign, "engine 9.9.9", True),
    "other build": (_other_build, "another build", True),
    "newer format": (_newer_format, f"cache version {engine.CACHE_VERSION + 1}", True),
    "wrong types": (_wrong_types, "is malformed", True),
    "not an entry": (_not_an_entry, "is malformed", True),
    "nested too deeply": (_deep, "not JSON", True),
    "entries line cut": (_entries_cut, "not JSON", True),
    "entries line not JSON": (_entries_garbage, "not JSON", True),
    "head line cut": (_head_cut, "not JSON", True),
    "entries line shorter than its span": (_span_past_head, "not JSON", True),
    "entries lines overlapping": (_spans_overlap, "not JSON", True),
    "more entries lines than a writer leaves": (_spans_too_many, "not those of a cache", True),
    "folder signature not text": (_folder_not_text, "not those of a cache", True),
    "folder signature delta malformed": (_folder_delta_malformed, "not those of a cache", True),
    "Git record malformed": (_git_record_malformed, "Git record is malformed", True),
    "Git record checking too many files": (_git_checks_too_many, "Git record is malformed",
                                           True),
    "tracked by Git": (_tracked, "tracked by Git", False),
    "symlink": (_symlink, "symbolic link", False),
    "directory": (_directory, "must be a regular file", False),
    "fifo": (_fifo, "must be a regular file", False),
    "huge": (_huge, "larger than 256 MiB", True),
}


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_a_corrupt_cache_is_ignored_reported_and_never_trusted(repo: Path, kind: str) -> None:
    corrupt, reason, replaced = CORRUPTIONS[kind]
    corrupt(repo)
    report = read_only_agree(repo, card=True)
    assert report["state"] == "ignored" and reason in report["reason"], report
    assert report["reusedEntries"] == 0 or kind == "wrong types"
    before = os.lstat(repo / CACHE)
    # A writer decides from the files, and replaces only a regular file it may replace.
    upserted = command(repo, "upsert", "--payload", "-",
                       payload=upsert_payload(repo, "gamma.md", "Gamma."))
    assert upserted[0] == 2 and "broken.md" in upserted[1]["error"]
    (repo / PAGES / "broken.md").unlink()
    ok(runtime(repo, "upsert", "--payload", "-", payload=upsert_payload(repo, "gamma.md", "G.")))
    after = os.lstat(repo / CACHE)
    if replaced:
        assert status(repo)["cache"]["state"] == "valid"
    else:
        assert (after.st_ino, after.st_mode, after.st_mtime_ns) == (
            before.st_ino, before.st_mode, before.st_mtime_ns)
        assert status(repo)["cache"]["state"] == "ignored"
    read_only_agree(repo)


def test_a_cache_from_another_checkout_matches_no_file(repo: Path, tmp_path: Path) -> None:
    """A cache copied or committed elsewhere names files by path, size and times, but their
    inodes and change times are this checkout's own: nothing of it is used."""
    clone = tmp_path / "clone"
    git(repo, "clone", "-q", str(repo), str(clone))
    (clone / PAGES / "broken.md").unlink()
    ok(cli(clone, "init"))
    (clone / CACHE).write_bytes((repo / CACHE).read_bytes())
    report = read_only_agree(clone)
    assert report["state"] == "valid" and report["reusedEntries"] == 0


# --- the index -----------------------------------------------------------------------------------


def test_incremental_writes_leave_the_index_a_full_rebuild_writes(repo: Path) -> None:
    (repo / PAGES / "broken.md").unlink()
    for number in range(40):
        (repo / PAGES / f"page-{number:02d}.md").write_text(
            page(f"Page {number}.", "deprecated" if number % 7 == 0 else "active"),
            encoding="utf-8")
    ok(runtime(repo, "rebuild-index"))
    names = ["page-03.md", "Zeta.md", "page-03.md", "alpha.md", "Ärger.md"]
    for number, name in enumerate(names):
        ok(runtime(repo, "upsert", "--payload", "-",
                   payload=upsert_payload(repo, name, f"Rewritten {number}.")))
        assert status(repo)["cache"]["reusedEntries"] > 40
    ok(runtime(repo, "end", "--confirm-explicit-user-end", "--payload", "-", payload={
        "dailySummary": "- Done.", "pages": [upsert_payload(repo, "page-10.md", "End.")]}))
    ok(runtime(repo, "append", "--payload", "-", payload={"entry": "- Note."}))
    incremental = (repo / INDEX).read_bytes()
    documents = engine.read_pages(repo)  # every page read and parsed, no cache
    assert incremental == engine.build_index(engine.prospective_pages(documents, {})).encode()
    (repo / CACHE).unlink()
    ok(runtime(repo, "rebuild-index"))
    assert (repo / INDEX).read_bytes() == incremental
    assert without_cache(repo, "status") == command(repo, "status")


# --- the gates -------------------------------------------------------------------------------


def test_gates_never_read_the_cache(repo: Path) -> None:
    """A forged cache whose entry matches the invalid page's stat but calls it valid: the
    protocol commands of this checkout trust their own cache, `check` reads the file."""
    record = cache_record(repo)
    info = os.stat(repo / PAGES / "broken.md")
    record["stamp"] = max(info.st_mtime_ns, info.st_ctime_ns) + 1
    record["files"]["EchoesVault/pages/broken.md"] = [
        info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino,
        json.dumps([None, None, ["note", "active", "Forged.", 1, 3, 2, None]])]
    write_cache_record(repo, record)
    # The protocol commands trust an entry that matches (a local file, like Git's index)...
    assert status(repo)["health"]["invalidFrontmatter"] == []
    # ... the gates read the page: the repository is hostile to them.
    checked = run_cli("check", "--output-format", "concise", cwd=repo)
    assert checked.returncode == 1
    assert "EchoesVault/pages/broken.md" in checked.stdout


def test_a_fix_keeps_the_cache_it_walked_and_a_writer_that_never_walked_keeps_it_whole(
        repo: Path) -> None:
    """`check --fix` writes through the writers' cache; a writer that read no page through the
    cache (nothing to record) leaves its entries alone instead of emptying the file."""
    (repo / PAGES / "broken.md").unlink()
    for number in range(20):  # more entries than a writer rewrites the cache for
        (repo / PAGES / f"p{number}.md").write_text(page(f"P{number}."), encoding="utf-8")
    time.sleep(0.05)  # older than the lock of the writer that records them
    ok(runtime(repo, "rebuild-index"))
    before = cache_record(repo)["files"]
    assert "EchoesVault/pages/alpha.md" in before and len(before) > 20
    (repo / PAGES / "gamma.md").write_text(page("Gamma.", "deprecated"), encoding="utf-8")
    fixed = run_cli("check", "--fix", "--select", "EV080", cwd=repo)
    assert fixed.stdout == "Found 2 warnings (2 fixed, 0 remaining).\n", fixed.stderr  # beta too
    after = cache_record(repo)["files"]
    assert after["EchoesVault/pages/alpha.md"] == before["EchoesVault/pages/alpha.md"]
    lock = repo / engine.LOCK_PATH
    lock.write_text("held by this test\n", encoding="utf-8")  # a writer's stamp is its lock's
    try:
        cache = engine.FileCache(repo).open(writer=True)
        assert cache.fresh_stamp and cache.fresh == {}
        cache.save()  # a writer that walked nothing: the file stays as it was
    finally:
        lock.unlink()
    assert cache_record(repo)["files"] == after


def test_a_writer_never_creates_a_cache_the_ignore_rules_miss(repo: Path) -> None:
    """A vault whose `.echoes-vault/.gitignore` an older engine wrote (no cache rule): the cache
    would be committed by the next `git add -A`, so writers do not create it until `upgrade`."""
    (repo / PAGES / "broken.md").unlink()
    (repo / CACHE).unlink()
    rules = repo / ".echoes-vault/.gitignore"
    rules.write_text(rules.read_text(encoding="utf-8").replace("/cache.json\n", ""),
                     encoding="utf-8")
    ok(runtime(repo, "upsert", "--payload", "-", payload=upsert_payload(repo, "gamma.md", "G.")))
    assert not (repo / CACHE).exists()
    ok(runtime(repo, "upgrade"))  # the rules again, and with them the cache
    assert "/cache.json" in rules.read_text(encoding="utf-8").splitlines()
    ok(runtime(repo, "upsert", "--payload", "-", payload=upsert_payload(repo, "delta.md", "D.")))
    assert (repo / CACHE).is_file()
