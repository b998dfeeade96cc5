"""The cache after a change made outside the engine (issue 13, "the cliff"): the writer that
meets the change derives from the files, then leaves a cache whose summary describes the vault
as it left it (the files it wrote included), so that `status` and the writer after it take the
summary again, the next writer matching every folder on Git's word and stat'ing only the files
the cache lists. Before, such a writer left no cache until hundreds of entries had changed, and
every later command built every document. Outputs equal those without a cache throughout."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Dict

import pytest
from conftest import git
from helpers_cache import cache_layout, read_only_agree, upsert_payload, writer_agrees
from helpers_writer import cli, ok, page
from test_gitsrc_cache import committed_vault

PAGES = Path("EchoesVault/pages")


def _edit(repo: Path) -> None:
    with open(repo / PAGES / "alpha.md", "a", encoding="utf-8") as handle:
        handle.write("\nOne more line.\n")


def _add(repo: Path) -> None:
    (repo / PAGES / "added.md").write_text(page("Added outside."), encoding="utf-8")


def _delete(repo: Path) -> None:
    (repo / PAGES / "beta.md").unlink()


def _rename(repo: Path) -> None:
    os.rename(repo / PAGES / "beta.md", repo / PAGES / "renamed.md")


def _checkout(repo: Path) -> None:
    """Another commit checked out: one page changed, one added (a `git pull` does the same)."""
    git(repo, "checkout", "-q", "-b", "other")
    (repo / PAGES / "Gamma.md").write_text(page("Gamma on the other branch."), encoding="utf-8")
    (repo / PAGES / "other.md").write_text(page("Only on the other branch."), encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "other")
    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-q", "other")


def _upgrade(repo: Path) -> None:
    """`upgrade` over a page that lost its summary: it completes it from the page's row in the
    legacy index (spec 15), writing the page itself (as `init` and `migrate` do)."""
    text = page("First summary.")
    (repo / PAGES / "alpha.md").write_text(text.replace("summary: First summary.\n", ""),
                                           encoding="utf-8")
    assert ok(cli(repo, "upgrade"))["indexRefresh"]["migratedSummaries"] == ["alpha.md"]


CHANGES: Dict[str, Callable[[Path], None]] = {
    "edit": _edit, "add": _add, "delete": _delete, "rename": _rename, "checkout": _checkout,
    "upgrade": _upgrade,
}


def _upsert(repo: Path, scratch: Path, name: str) -> Dict[str, Any]:
    """An `upsert` of a new page that prints what it prints without a cache; the head it left."""
    writer_agrees(repo, scratch, "upsert", "--payload", "-",
                  payload=upsert_payload(repo, name, f"Written as {name}."))
    return cache_layout(repo)[0]


def _summary_stands(repo: Path) -> None:
    """`status` takes the summary, matching every folder whole without decoding an entry and
    reading only the two files never cached (the index and AGENT_PROTOCOL.md)."""
    report = read_only_agree(repo, card=True)
    assert report["summaryUsed"] and not report["entriesDecoded"], report
    assert report["readFiles"] == 2, report


@pytest.fixture
def repo(git_repo: Path) -> Path:
    return committed_vault(git_repo)


@pytest.mark.parametrize("kind", sorted(CHANGES))
def test_the_writer_after_an_outside_change_leaves_a_cache_the_next_commands_take(
        repo: Path, tmp_path: Path, kind: str) -> None:
    CHANGES[kind](repo)
    first = _upsert(repo, tmp_path / "first", "first.md")
    _summary_stands(repo)
    # Every folder holding entries is recorded for Git's word, pages/ (walked entry by entry
    # after the change) included, with as many entries as it holds files.
    record = first["git"]
    assert record is not None
    assert record["dirs"][PAGES.as_posix()] == len(os.listdir(repo / PAGES))
    assert set(record["dirs"]) == set(first["dirs"])
    second = _upsert(repo, tmp_path / "second", "second.md")
    # The writer after it took every file Git vouched for without a stat: only those the
    # first one listed under `check` (untracked, racy for Git, written, changed) were stat'ed,
    # and a page deleted outside, which Git reports until the deletion is committed, is
    # listed as gone (no line), not as a reason to stat the folder's every file.
    checked: Dict[str, int] = {}
    for path, line in record["check"].items():
        folder = path.rpartition("/")[0]
        checked[folder] = checked.get(folder, 0) + bool(line)
    if kind in ("delete", "rename"):
        assert record["check"]["EchoesVault/pages/beta.md"] == ""
    assert second["gitMatched"] == sum(count - checked.get(folder, 0)
                                       for folder, count in record["dirs"].items())
    assert second["gitMatched"] >= 2
    # It appended the entry of the page it wrote, nothing else: no file was read afresh.
    data = (repo / ".echoes-vault/cache.json").read_bytes()
    start, size = second["spans"][-1]
    assert data[start:start + size].count(b'"EchoesVault/') == 1
    assert b'"EchoesVault/pages/second.md"' in data[start:start + size]
    _summary_stands(repo)


def test_a_status_after_an_outside_change_stays_on_the_slow_path_until_a_writer_runs(
        repo: Path, tmp_path: Path) -> None:
    """Read-only commands never write the cache (spec 12.5): each `status` after the change
    derives from the files again, until a writer (here `start`, which writes no page) brings
    the summary to the vault as it is."""
    _edit(repo)
    for _run in range(2):
        report = read_only_agree(repo)
        assert not report["summaryUsed"] and report["entriesDecoded"], report
    writer_agrees(repo, tmp_path / "start", "start")
    _summary_stands(repo)
