"""Helpers for the local-cache tests: run a protocol command with and without the cache and
compare what it prints."""

from __future__ import annotations

import binascii
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from helpers_writer import init_vault, page, runtime

from echoes_lint import engine

CACHE = Path(engine.CACHE_PATH)
ASIDE = Path(".echoes-vault/cache.json.aside")
# Values a writer draws at random or from the clock: they differ between any two runs.
VOLATILE = ("dailyLog", "lastStart", "lastSave")

Outcome = Tuple[int, Any]


def cache_layout(repo: Path) -> Tuple[Dict[str, Any], int, bytes]:
    """(the cache's last head, the offset of its line, its live entries lines joined by `,`)."""
    data = (repo / CACHE).read_bytes()
    at = data.rindex(b'\n{"format":', 0, len(data) - 1) + 1
    head: Dict[str, Any] = json.loads(data[at:])
    return head, at, b",".join(data[start:start + size] for start, size in head["spans"] if size)


def cache_record(repo: Path) -> Dict[str, Any]:
    """The cache's last head with its entries under "files" (every entries line, decoded)."""
    head, _at, files = cache_layout(repo)
    head["files"] = json.loads(b"{" + files + b"}")
    return head


def write_cache_record(repo: Path, record: Dict[str, Any]) -> None:
    """Write a `cache_record` back as the engine lays it out (one entries line, one head)."""
    head = dict(record)
    files = json.dumps(head.pop("files"))[1:-1].encode("utf-8")
    head["spans"] = [[0, len(files)]]
    head["filesBytes"], head["filesCrc32"] = len(files), binascii.crc32(files)
    (repo / CACHE).write_bytes(files + b"\n" + json.dumps(head).encode("utf-8") + b"\n")


def _scrub(value: Any, repo: Path) -> Any:
    if isinstance(value, dict):
        return {key: "<volatile>" if key in VOLATILE else _scrub(item, repo)
                for key, item in value.items() if key != "cache"}
    if isinstance(value, list):
        return [_scrub(item, repo) for item in value]
    if isinstance(value, str):
        return value.replace(str(repo.resolve()), "<workspace>")
    return value


def outcome(repo: Path, completed: subprocess.CompletedProcess[str]) -> Outcome:
    """(exit code, what the command printed) without the workspace path, the random or timed
    values of writers, and the `cache` report (the one key that may differ)."""
    text = completed.stdout if completed.returncode == 0 else completed.stderr
    try:
        value: Any = json.loads(text)
    except ValueError:  # Markdown (`start`, the card)
        value = text
    return completed.returncode, _scrub(value, repo)


def command(repo: Path, *args: str, payload: Optional[Any] = None) -> Outcome:
    return outcome(repo, runtime(repo, *args, payload=payload))


def without_cache(repo: Path, *args: str) -> Outcome:
    """A read-only command with the cache moved aside (then put back as it was: same file)."""
    present = os.path.lexists(repo / CACHE)
    if present:
        os.rename(repo / CACHE, repo / ASIDE)
    try:
        return command(repo, *args)
    finally:
        if present:
            os.rename(repo / ASIDE, repo / CACHE)


def read_only_agree(repo: Path, card: bool = False) -> Dict[str, Any]:
    """Assert that `status` (and, with `card`, its card) prints the same with and without the
    cache; returns the `cache` report of the run with it."""
    completed = runtime(repo, "status")
    assert completed.returncode == 0, completed.stderr
    assert outcome(repo, completed) == without_cache(repo, "status")
    if card:
        assert command(repo, "status", "--format", "card") == without_cache(
            repo, "status", "--format", "card")
    report: Dict[str, Any] = json.loads(completed.stdout)["cache"]
    return report


def writer_agrees(repo: Path, scratch: Path, *args: str, payload: Optional[Any] = None,
                  ) -> Outcome:
    """Run a writer in `repo` (with its cache) and in a copy without a cache; assert both print
    the same and leave the same index. Returns the outcome in `repo`."""
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(repo, scratch, symlinks=True)
    if os.path.lexists(scratch / CACHE):
        os.unlink(scratch / CACHE)
    ours = command(repo, *args, payload=payload)
    theirs = outcome(scratch, runtime(scratch, *args, payload=payload))
    assert ours == theirs, (ours, theirs)  # `outcome` put the same placeholder for both workspace paths
    index = Path("EchoesVault/index.md")
    assert _read(repo / index) == _read(scratch / index)
    return ours


def rewrite_keeping_stat(path: Path, data: bytes) -> None:
    """Write `data` (as long as what is there) and put the old mtime back: only ctime tells."""
    before = os.stat(path)
    assert len(data) == before.st_size
    path.write_bytes(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _read(path: Path) -> Optional[bytes]:
    return path.read_bytes() if path.is_file() else None


def upsert_payload(repo: Path, name: str, summary: str, status: str = "active") -> Dict[str, Any]:
    """An `upsert` of page `name`, with the hash of the page when it exists."""
    payload: Dict[str, Any] = {"filename": name, "content": page(summary, status)}
    path = repo / "EchoesVault" / "pages" / name
    if path.is_file() and not path.is_symlink():
        hashed = runtime(repo, "hash", name)
        if hashed.returncode == 0:
            payload["expectedSha256"] = json.loads(hashed.stdout)["sha256"]
    return payload


def init_cached_vault(repo: Path, pages: Dict[str, str]) -> None:
    """`pages` (name: text) and a daily entry written, then `init`, which caches them all."""
    folder = repo / "EchoesVault" / "pages"
    folder.mkdir(parents=True)
    for name, text in pages.items():
        (folder / name).write_text(text, encoding="utf-8")
    daily = repo / "EchoesVault/daily/2026-01-01"
    daily.mkdir(parents=True)
    (daily / "20260101T000000000000Z-session-a-0000000a.md").write_text(
        "### Session — then\n\nDone.\n", encoding="utf-8")
    time.sleep(0.05)  # the files are older than the lock `init` takes
    init_vault(repo)
