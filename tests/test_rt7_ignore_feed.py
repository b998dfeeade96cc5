"""`check-ignore` handed the durable files while the walk finds them (issue 13, status and
inspect at 5,000 pages): Git matches them beside the walk, so that only the protocol files are
left to ask once it is done, and the answer is the one asking every file at the end gives,
with the cache or without, however many files are ignored (a full pipe never blocks the walk).
Behaviour only: what is asked when, never how long anything takes."""

from __future__ import annotations

import gc
import subprocess
import weakref
from pathlib import Path
from typing import Any, Optional

import pytest
from conftest import git, init_repo
from helpers_cache import init_cached_vault
from helpers_check import PAGES, page, vault_repo, write
from helpers_writer import runtime

from echoes_lint import engine


def _asked_at_the_end(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], int]]:
    """(paths, bytes held) of every `git_ignored` call: what is left once the walk is done."""
    calls: list[tuple[list[str], int]] = []
    real = engine.git_ignored

    def spy(started: Any, paths: Any, held: bytes = b"") -> Any:
        calls.append((list(paths), len(held)))
        return real(started, paths, held)

    monkeypatch.setattr(engine, "git_ignored", spy)
    return calls


def _everything_at_the_end(repo: Path) -> set[str]:
    durable = engine.scan_workspace(repo, git=False).durable or ()
    asked = subprocess.run(["git", "check-ignore", "--no-index", "--stdin", "-z"], cwd=repo,
                           input="\0".join(durable).encode() + b"\0", capture_output=True,
                           check=False).stdout.decode().split("\0")
    return {path for path in asked if path}


def _scan(repo: Path, cached: bool) -> engine.Scan:
    cache: Optional[engine.FileCache] = None
    if cached:
        cache = engine.FileCache(repo)
        cache.defer = True
    return engine.scan_workspace(repo, cache=cache, health=cached)


@pytest.mark.parametrize("cached", [False, True])
def test_only_the_protocol_files_are_left_for_the_end(git_repo: Path, cached: bool,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file of the durable folders was handed over by the walk (sent, or held while Git
    was not started yet or its pipe was full): what is left is the protocol files."""
    pages = {f"page-{number:02d}.md": page() for number in range(30)}
    init_cached_vault(git_repo, pages)
    write(git_repo, "EchoesVault/raw/kept.txt", "raw\n")
    write(git_repo, "EchoesVault/assets/pic.png", "png\n")
    write(git_repo, ".gitignore", "page-0*.md\nkept.txt\n/.echoes-vault/state.json\n*-session-*\n")
    calls = _asked_at_the_end(monkeypatch)
    cache: Optional[engine.FileCache] = None
    if cached:
        runtime(git_repo, "rebuild-index")
        cache = engine.FileCache(git_repo)
        cache.defer = True
    scan = engine.scan_workspace(git_repo, cache=cache, health=cached)
    if cache is not None:  # the folders matched whole
        assert cache.report()["matchedFolders"] >= 2 and cache.report()["readFiles"] < 5
    [(left, _held)] = calls
    assert left and set(left) <= set(engine.DURABLE_PROTOCOL_FILES)
    ignored = set(scan.git.ignored) & set(scan.durable or ())
    assert ignored == _everything_at_the_end(git_repo)
    assert {f"{PAGES}/page-00.md", "EchoesVault/raw/kept.txt"} <= ignored
    assert any(path.startswith("EchoesVault/daily/") for path in ignored)
    assert not any(path.endswith(("page-10.md", "pic.png")) for path in ignored)


def test_a_full_pipe_holds_the_rest_for_the_end(tmp_path: Path) -> None:
    """Every path ignored: Git's answers fill its output while its input is still fed, and
    neither is read; the feed never blocks, holds the rest, and `git_ignored` sends it."""
    repo = vault_repo(tmp_path / "repo")
    write(repo, ".gitignore", "*.md\n")
    name = "EchoesVault/pages/a-rather-long-page-name-so-that-answers-fill-the-pipe-{:05d}.md"
    paths = [name.format(number) for number in range(20000)]  # 1.6 MB each way
    feed = engine.IgnoreFeed()
    feed.started = engine.start_git_ignored(repo)
    for start in range(0, len(paths), 500):
        feed.feed(paths[start:start + 500])
    assert feed.held  # the pipe took less than it was given
    left, held = feed.rest(paths)
    assert left == [] and held
    matched, error = engine.git_ignored(feed.started, left, held)
    assert (matched, error) == (paths, None)


def test_without_non_blocking_pipes_everything_is_sent_at_the_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where `os.set_blocking` is missing (Windows before Python 3.12) the feed holds every
    path for `git_ignored` instead of failing the command."""
    chunks = 200
    repo = vault_repo(tmp_path / "repo")
    write(repo, ".gitignore", "b*.md\n")
    paths = [f"{PAGES}/{letter}{number}.md" for number in range(chunks) for letter in "ab"]
    monkeypatch.delattr(engine.os, "set_blocking")
    feed = engine.IgnoreFeed()
    feed.started = engine.start_git_ignored(repo)
    for start in range(0, len(paths), 2):
        feed.feed(paths[start:start + 2])
    assert feed.descriptor is None and len(feed.held) == chunks
    left, held = feed.rest(paths)
    matched, error = engine.git_ignored(feed.started, left, held)
    assert (matched, error) == (paths[1::2], None)


def test_a_walk_that_handed_over_fewer_files_asks_every_file_again(tmp_path: Path) -> None:
    """Should the walk have handed over fewer files than its folders hold, every durable file
    is asked at the end (those handed over too: a path asked twice is answered twice)."""
    repo = vault_repo(tmp_path / "repo")
    write(repo, ".gitignore", "b.md\n")
    durable = [f"{PAGES}/a.md", f"{PAGES}/b.md", f"{PAGES}/c.md", "AGENTS.md"]
    feed = engine.IgnoreFeed()
    feed.started = engine.start_git_ignored(repo)
    feed.feed(durable[:2])  # c.md never handed over
    left, held = feed.rest(durable)
    assert left == durable
    matched, error = engine.git_ignored(feed.started, left, held)
    assert error is None and set(matched) == {f"{PAGES}/b.md"}


def test_outside_a_repository_nothing_is_sent(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk hands its files over before it knows there is no repository; no Git takes
    them, and the scan answers without one."""
    write(tmp_path, f"{PAGES}/a.md", page())
    feeds: list[engine.IgnoreFeed] = []
    real = engine.IgnoreFeed.send

    def send(feed: engine.IgnoreFeed) -> None:
        feeds.append(feed)
        real(feed)

    monkeypatch.setattr(engine.IgnoreFeed, "send", send)
    scan = engine.scan_workspace(tmp_path)
    assert not scan.git.available and feeds
    assert all(feed.descriptor is None and feed.held for feed in feeds)
    assert scan.durable == (f"{PAGES}/a.md",)
    assert git(tmp_path.parent, "--version")  # git itself is there


@pytest.mark.parametrize("tracked", [False, True])
def test_whether_the_cache_is_tracked_is_taken_after_the_walk(
        git_repo: Path, tracked: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Status and inspect do not wait for Git's `ls-files` of the cache before they walk: the
    answer is taken after the walk from their scan's list of the tracked local-only files (no
    git of its own), and the walk is made again without the cache when it is tracked (the
    reasons and counts as when the cache was ignored from the start)."""
    init_cached_vault(git_repo, {"a.md": page(), "b.md": page()})
    runtime(git_repo, "rebuild-index")
    if tracked:
        git(git_repo, "add", "-f", engine.CACHE_PATH)
    events: list[str] = []
    walk, tracking = engine._walk_vault, engine.cache_listed_problem

    walked: list[weakref.ref[engine.Scan]] = []

    def walking(scan: engine.Scan, *args: Any, **kwargs: Any) -> Any:
        events.append("walk")
        gc.collect()  # the first scan is gone before the second walk (one at a time at 100k)
        assert all(earlier() is None for earlier in walked)
        walked.append(weakref.ref(scan))
        return walk(scan, *args, **kwargs)

    def asking(*args: Any, **kwargs: Any) -> Any:
        events.append("tracking")
        return tracking(*args, **kwargs)

    monkeypatch.setattr(engine, "_walk_vault", walking)
    monkeypatch.setattr(engine, "cache_listed_problem", asking)
    monkeypatch.setattr(engine, "cache_tracking_problem", None)  # no git of its own
    report, cache = engine.cached_inspection(git_repo)
    assert events == (["walk", "tracking", "walk"] if tracked else ["walk", "tracking"])
    assert report["health"]["totalPages"] == 2
    if tracked:
        assert cache.report()["state"] == "ignored" and cache.report()["reusedEntries"] == 0
        assert "tracked by Git" in (cache.reason or "")
    else:
        assert cache.report()["state"] == "valid" and cache.report()["summaryUsed"]


@pytest.mark.parametrize("situation", ["untracked", "tracked", "broken .git", "no repository"])
def test_the_listed_answer_is_the_cache_s_own_ls_files(tmp_path: Path, situation: str) -> None:
    """`cache_listed_problem` of a health scan's Git facts says what `cache_tracking_problem`
    (`ls-files` of CACHE_PATH alone) says: the same reason, or None."""
    repo = tmp_path / "repo"
    if situation == "no repository":
        repo.mkdir()
    else:
        init_cached_vault(init_repo(repo), {"a.md": page()})
    if situation == "tracked":
        git(repo, "add", "-f", engine.CACHE_PATH)
    if situation == "broken .git":
        (repo / ".git").rename(tmp_path / "moved")
        (repo / ".git").write_text("gitdir: nowhere\n", encoding="utf-8")
    facts = engine.collect_git_facts(repo, engine.LOCAL_ONLY_PATHS)
    expected = engine.cache_tracking_problem(repo)
    assert engine.cache_listed_problem(repo, facts) == expected
    assert (expected is None) is (situation in ("untracked", "no repository"))
