"""The walk hands the durable files to `check-ignore` (`IgnoreFeed`) a batch at a time, not a
write per folder (issue 13): many small folders (a daily folder holds a dozen files) go in a few
writes, each of `FEED_BATCH` files at least but the last, every file exactly once, and the
answer is the one asking every file at the end gives. Behaviour only, never how long anything
takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers_check import PAGES, page, vault_repo, write
from test_rt7_ignore_feed import _asked_at_the_end, _everything_at_the_end

from echoes_lint import engine


@pytest.mark.parametrize("batch", [engine.FEED_BATCH, 7])
def test_small_folders_are_handed_over_a_batch_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int) -> None:
    repo = vault_repo(tmp_path / "repo")
    for number in range(12):
        write(repo, f"{PAGES}/page-{number:02d}.md", page())
    for day in range(20):
        for entry in range(3):
            write(repo, f"EchoesVault/daily/2026-01-{day + 1:02d}/e{entry}.md", "### Session — x\n")
    write(repo, ".gitignore", "page-0*.md\nEchoesVault/daily/2026-01-1*/e1.md\n")
    monkeypatch.setattr(engine, "FEED_BATCH", batch)
    writes: list[list[str]] = []
    feed = engine.IgnoreFeed.feed

    def fed(self: engine.IgnoreFeed, paths: list[str]) -> Any:
        writes.append(list(paths))
        return feed(self, paths)

    monkeypatch.setattr(engine.IgnoreFeed, "feed", fed)
    calls = _asked_at_the_end(monkeypatch)
    scan = engine.scan_workspace(repo)
    daily = [path for path in scan.durable or () if path.startswith("EchoesVault/daily/")]
    assert len(daily) == 60
    # Every durable file of the folders handed over once, in writes of `batch` at least but
    # the last: 20 daily folders in a few writes, not 20.
    handed = [path for paths in writes for path in paths]
    assert sorted(handed) == sorted(path for path in scan.durable or ()
                                    if path not in engine.DURABLE_PROTOCOL_FILES)
    assert all(len(paths) >= batch for paths in writes[:-1])
    assert len(writes) <= -(-len(handed) // batch) + 1 and len(writes) < 20
    [(left, _held)] = calls
    assert set(left) <= set(engine.DURABLE_PROTOCOL_FILES)
    ignored = set(scan.git.ignored) & set(scan.durable or ())
    assert ignored == _everything_at_the_end(repo)
    assert f"{PAGES}/page-03.md" in ignored and "EchoesVault/daily/2026-01-12/e1.md" in ignored
