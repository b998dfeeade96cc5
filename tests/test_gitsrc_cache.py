"""Git as a writer's change source (issue 13): a writer whose cache was written under the index
Git uses now takes every tracked file Git does not report as its entry says, without a stat of
its own, and stats only the files the cache lists (untracked, racy for Git, or written since).
Every condition that makes Git's word doubtful falls back to the stat of every file; outputs
with the cache equal outputs without it, whatever Git was asked to do in between."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
from conftest import git, init_repo
from helpers_cache import (
    cache_layout,
    read_only_agree,
    rewrite_keeping_stat,
    upsert_payload,
    writer_agrees,
)
from helpers_writer import cli, ok, page, refused, resumed, runtime, stopped_runtime
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_cache_property import NAMES, SUMMARIES, edit, run_step

PAGES = Path("EchoesVault/pages")


def head(repo: Path) -> Dict[str, Any]:
    return cache_layout(repo)[0]


def committed_vault(repo: Path) -> Path:
    """A committed vault whose files changed over a second before Git wrote its index (so no
    entry is racy for Git), then one writer on the stat path: it vouches for the tracked files
    and records what the next writer may take on Git's word."""
    (repo / PAGES).mkdir(parents=True)
    for name, summary in zip(NAMES, SUMMARIES):
        (repo / PAGES / name).write_text(page(summary), encoding="utf-8")
    ok(cli(repo, "init"))
    time.sleep(1.1)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "vault")
    ok(runtime(repo, "append", "--payload", "-", payload={"entry": "- First."}))
    assert head(repo)["git"] is not None
    return repo


@pytest.fixture
def repo(git_repo: Path) -> Path:
    return committed_vault(git_repo)


def append(repo: Path, scratch: Path, entry: str = "- More.",
           env: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """An `append` that prints what it prints without a cache; the head it left."""
    if env is None:
        writer_agrees(repo, scratch, "append", "--payload", "-", payload={"entry": entry})
    else:
        ok(runtime(repo, "append", "--payload", "-", payload={"entry": entry}, env=env))
    return head(repo)


def test_a_writer_takes_every_tracked_file_on_git_s_word(repo: Path, tmp_path: Path) -> None:
    record = head(repo)["git"]
    # The first writer's daily entry is untracked: listed to be stat'ed; the pages are vouched.
    assert [path.rsplit("/", 1)[0] for path in record["check"]] == [
        f"EchoesVault/daily/{path}" for path in os.listdir(repo / "EchoesVault/daily")]
    assert record["dirs"]["EchoesVault/pages"] == len(NAMES)
    following = append(repo, tmp_path / "scratch")
    # Every page and the day's folder taken without a stat of the pages, the one untracked
    # entry stat'ed; the second entry now listed too.
    assert following["gitMatched"] == len(NAMES)
    assert len(following["git"]["check"]) == 2
    assert read_only_agree(repo)["summaryUsed"]


def flip(path: Path) -> None:
    """The page turns invalid in as many bytes, its mtime put back: only ctime tells."""
    flipped = path.read_text(encoding="utf-8").replace("summary:", "summarx:")
    rewrite_keeping_stat(path, flipped.encode("utf-8"))


def refused_as_without_a_cache(repo: Path, scratch: Path) -> None:
    """An `upsert` that must see the page `flip` made invalid: no index, so it is refused."""
    assert writer_agrees(repo, scratch, "upsert", "--payload", "-", payload={
        "filename": "other.md", "content": page("Other.")})[0] == 2


def test_a_tracked_page_edited_outside_is_seen(repo: Path, tmp_path: Path) -> None:
    append(repo, tmp_path / "scratch")  # (on Git's word)
    flip(repo / PAGES / NAMES[0])  # Git reports it
    refused_as_without_a_cache(repo, tmp_path / "scratch")
    read_only_agree(repo, card=True)


def test_an_index_written_before_git_reads_it_is_not_trusted(repo: Path, tmp_path: Path) -> None:
    """Git is asked about the index the writer started with, or not at all: the index's
    identity is stat'ed again once Git answered."""
    append(repo, tmp_path / "scratch")  # (on Git's word)
    process = stopped_runtime(repo, "upsert", "--payload", "-", step="cache:git", payload={
        "filename": "other.md", "content": page("Other.")})
    flip(repo / PAGES / NAMES[0])
    git(repo, "add", str(PAGES / NAMES[0]))  # the new index holds the page's new stat
    assert NAMES[0] in resumed(process, reruns=1)  # the invalid page seen: nothing written


def test_a_page_the_engine_wrote_is_stat_ed_every_time(repo: Path, tmp_path: Path) -> None:
    """A page a writer created is untracked: listed to be stat'ed, never taken on Git's word."""
    writer_agrees(repo, tmp_path / "scratch", "upsert", "--payload", "-",
                  payload=upsert_payload(repo, "delta.md", "Delta."))
    assert f"{PAGES}/delta.md" in head(repo)["git"]["check"]
    append(repo, tmp_path / "scratch")
    assert head(repo)["gitMatched"] == len(NAMES)  # every page but delta.md without a stat
    flip(repo / PAGES / "delta.md")
    refused_as_without_a_cache(repo, tmp_path / "scratch")


def test_an_untracked_page_added_outside_is_seen(repo: Path, tmp_path: Path) -> None:
    append(repo, tmp_path / "scratch")  # (on Git's word)
    (repo / PAGES / "delta.md").write_text("---\ntype: note\n---\n", encoding="utf-8")
    refused_as_without_a_cache(repo, tmp_path / "scratch")
    assert read_only_agree(repo)["reusedEntries"] > 0


@pytest.mark.parametrize("bit", ["--assume-unchanged", "--skip-worktree"])
def test_a_page_git_does_not_look_at_is_never_vouched_for(repo: Path, tmp_path: Path,
                                                          bit: str) -> None:
    git(repo, "update-index", bit, str(PAGES / NAMES[1]))
    # A writer under that index (none on Git's word: the index changed) vouches for nothing.
    assert append(repo, tmp_path / "scratch")["git"] is None
    flip(repo / PAGES / NAMES[1])  # Git will not report it
    refused_as_without_a_cache(repo, tmp_path / "scratch")
    read_only_agree(repo, card=True)


def test_a_new_index_is_vouched_for_again(repo: Path, tmp_path: Path) -> None:
    git(repo, "add", "-A")  # the daily entry: the index is written again
    # Written again over 1 s later, so that the entry, changed just before, is not racy for
    # the writer. (`--really-refresh` alone writes only when Git finds the entry racy, which
    # depends on where a second boundary falls between the entry and `add`.)
    time.sleep(1.1)
    git(repo, "update-index", "--really-refresh", "--force-write-index")
    first = append(repo, tmp_path / "scratch")
    assert first["gitMatched"] == 0 and first["git"] is not None
    assert append(repo, tmp_path / "scratch")["gitMatched"] > len(NAMES)


def test_without_git_on_the_path_no_entry_is_trusted(repo: Path, tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    before = (repo / ".echoes-vault/cache.json").read_bytes()
    flip(repo / PAGES / NAMES[1])
    # The page edited is seen (an invalid page: no index, nothing written), as without a cache.
    assert "beta.md" in refused(runtime(repo, "upsert", "--payload", "-", env={
        "PATH": str(empty)}, payload={"filename": "delta.md", "content": page("Delta.")}))
    # Git cannot say whether the cache is tracked: it is neither used nor written.
    assert (repo / ".echoes-vault/cache.json").read_bytes() == before
    read_only_agree(repo, card=True)


def test_an_index_git_is_told_to_use_elsewhere_is_not_trusted(repo: Path, tmp_path: Path) -> None:
    shutil.copy(repo / ".git/index", tmp_path / "index")
    record = append(repo, tmp_path / "scratch", env={"GIT_INDEX_FILE": str(tmp_path / "index")})
    assert record["gitMatched"] == 0 and record["git"] is None


def test_outside_a_repository_every_file_is_stat_ed(tmp_path: Path) -> None:
    vault = tmp_path / "plain"
    (vault / PAGES).mkdir(parents=True)
    (vault / PAGES / "alpha.md").write_text(page("Alpha."), encoding="utf-8")
    ok(cli(vault, "init"))
    for _round in range(2):
        record = append(vault, tmp_path / "scratch")
        assert record["gitMatched"] == 0 and record["git"] is None


def test_a_page_written_by_a_writer_on_git_s_word_keeps_its_folder_matched_whole(
        repo: Path, tmp_path: Path) -> None:
    """The folder's signature follows the pages written without a stat of the others: a new
    page, then a tracked page replaced (the line it replaced found in the entries line)."""
    for name, summary in (("delta.md", "Delta."), (NAMES[0], "Replaced.")):
        writer_agrees(repo, tmp_path / "scratch", "upsert", "--payload", "-",
                      payload=upsert_payload(repo, name, summary))
        current = head(repo)
        assert current["gitMatched"] >= len(NAMES)
        assert isinstance(current["dirs"]["EchoesVault/pages"], list)  # [signature, -, +]
        report = read_only_agree(repo, card=True)
        assert report["summaryUsed"] and not report["entriesDecoded"]
    removed, added = current["dirs"]["EchoesVault/pages"][1:]
    assert [line.split("/")[0] for line in removed] == [NAMES[0]]
    assert sorted(line.split("/")[0] for line in added) == sorted(["delta.md", NAMES[0]])


# Git actions for the property test, applied before the step's edit.
GIT_ACTIONS = ("none", "add", "commit", "checkout", "stash", "assume-unchanged",
               "skip-worktree", "untracked", "remove-untracked")

Step = Tuple[str, str, int, int, str]
steps = st.lists(st.tuples(st.sampled_from(GIT_ACTIONS),
                           st.sampled_from(("same-size", "write", "touch-old", "directory",
                                            "delete", "daily-same-size", "none")),
                           st.integers(0, len(NAMES) - 1), st.integers(0, len(SUMMARIES) - 1),
                           st.sampled_from(("status", "upsert", "append", "end", "start"))),
                 min_size=1, max_size=4)


def git_action(repo: Path, action: str, number: int) -> None:
    page_path = str(PAGES / NAMES[number])
    if action == "add":
        git(repo, "add", "-A")  # an edit right after it is in the same second: racy for Git
    elif action == "commit":
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", "step")
    elif action == "checkout":
        git(repo, "checkout", "-q", "-f", "other" if git(
            repo, "branch", "--show-current").strip() == "main" else "main")
    elif action == "stash":
        git(repo, "stash", "-q", check=False)
    elif action in ("assume-unchanged", "skip-worktree"):
        git(repo, "update-index", f"--{action}", page_path, check=False)
    elif action == "untracked":
        (repo / PAGES / "untracked.md").write_text(page("Untracked."), encoding="utf-8")
    elif action == "remove-untracked" and (repo / PAGES / "untracked.md").is_file():
        (repo / PAGES / "untracked.md").unlink()


@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(steps=steps)
@example(steps=[("assume-unchanged", "same-size", 0, 0, "append"),
                ("none", "same-size", 0, 0, "append"), ("none", "none", 0, 0, "upsert")])
@example(steps=[("skip-worktree", "same-size", 1, 0, "append"),
                ("add", "same-size", 2, 0, "append"), ("none", "none", 2, 0, "end")])
@example(steps=[("untracked", "none", 0, 0, "append"), ("none", "none", 0, 1, "upsert"),
                ("remove-untracked", "none", 0, 0, "append"), ("none", "none", 1, 2, "start")])
@example(steps=[("checkout", "none", 0, 0, "append"), ("stash", "write", 1, 0, "append"),
                ("checkout", "touch-old", 2, 1, "append"), ("commit", "directory", 0, 0, "end")])
def test_outputs_with_the_cache_equal_outputs_without_it_whatever_git_does(
        steps: List[Step]) -> None:
    with tempfile.TemporaryDirectory() as temporary:
        repo = committed_vault(init_repo(Path(temporary) / "repo"))
        git(repo, "checkout", "-q", "-b", "other")
        (repo / PAGES / NAMES[2]).write_text(page("On the other branch."), encoding="utf-8")
        git(repo, "commit", "-q", "-am", "other")
        git(repo, "checkout", "-q", "main")
        ok(runtime(repo, "append", "--payload", "-", payload={"entry": "- Vouched."}))
        for action, kind, number, summary, which in steps:
            git_action(repo, action, number)
            if kind != "none":
                edit(repo, kind, number, SUMMARIES[summary])
            run_step(repo, Path(temporary) / "scratch", NAMES[number], SUMMARIES[summary],
                     which)
            read_only_agree(repo)
        read_only_agree(repo, card=True)


def test_an_index_from_the_future_vouches_for_no_page_changed_in_the_last_second(
        repo: Path, tmp_path: Path) -> None:
    """An index file whose mtime is ahead (a clock stepped back, an index restored with its
    times): a page changed in the writer's own second is listed to be stat'ed, not vouched
    for, so a same-size rewrite in that second is still seen."""
    path = repo / PAGES / NAMES[0]
    text = path.read_text(encoding="utf-8")
    time.sleep(1 - time.time() % 1 + 0.01)  # what follows shares one second
    path.write_text(text.replace(SUMMARIES[0], "Xxxxx summary."), encoding="utf-8")
    ok(runtime(repo, "rebuild-index"))  # the cache describes the page as it is now
    git(repo, "add", str(PAGES / NAMES[0]))
    ahead = time.time() + 3600
    os.utime(repo / ".git" / "index", (ahead, ahead))
    record = append(repo, tmp_path / "scratch")["git"]  # vouches under that index
    assert record is not None and f"{PAGES}/{NAMES[0]}" in record["check"]
    path.write_text(text.replace(SUMMARIES[0], "Yyyyy summary."), encoding="utf-8")
    writer_agrees(repo, tmp_path / "scratch", "upsert", "--payload", "-",
                  payload=upsert_payload(repo, "delta.md", "Delta."))


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="processes seen in /proc")
def test_no_git_outlives_a_writer_that_did_not_ask_it(repo: Path, tmp_path: Path) -> None:
    """The `diff-files` a writer starts under the lock is ended with the command when nothing
    asked for its answer (here the index changed, so no folder is matched on Git's word)."""
    real = shutil.which("git")
    assert real is not None
    fake = tmp_path / "bin"
    fake.mkdir()
    marker = f"{60 + os.getpid() % 1000 / 1000:.3f}"  # a `sleep` no other process runs
    (fake / "git").write_text(
        "#!/bin/sh\nfor arg; do if [ \"$arg\" = diff-files ]; then exec sleep "
        f"{marker}; fi; done\nexec '{real}' \"$@\"\n", encoding="utf-8")
    (fake / "git").chmod(0o755)
    os.utime(repo / ".git" / "index")  # another identity: the record cannot be used
    card = runtime(repo, "start", env={"PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"})
    assert card.returncode == 0, card.stderr
    time.sleep(1)  # Git's stat threads run at nice 19: time to get as far as they would
    left = [pid for pid in os.listdir("/proc") if pid.isdigit()
            and _cmdline(pid) == ["sleep", marker]]
    for pid in left:
        os.kill(int(pid), 9)
    assert left == [], "the writer's diff-files outlived it"


def _cmdline(pid: str) -> List[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace").split("\0")[:-1]
    except OSError:
        return []


def test_a_whole_rewrite_keeps_a_folder_matched_on_git_s_word(repo: Path,
                                                               tmp_path: Path) -> None:
    """A writer on Git's word that replaces a vouched page when the cache takes no more
    appends (CACHE_MAX_SPANS) writes the whole cache and keeps the folder's signature, with
    the line the page replaced found in the entries: the next writer still takes the folder
    on Git's word."""
    for number in range(80):
        if len(head(repo)["spans"]) == 64:  # CACHE_MAX_SPANS: the next writer rewrites all
            break
        ok(runtime(repo, "append", "--payload", "-", payload={"entry": f"- Fact {number}."}))
    else:
        pytest.fail("the appends never filled the cache")
    ok(runtime(repo, "upsert", "--payload", "-",
               payload=upsert_payload(repo, NAMES[1], "Other replaced.")))
    last = head(repo)
    assert len(last["spans"]) == 1 and last["gitMatched"] >= len(NAMES) - 1
    assert last["dirs"]["EchoesVault/pages"] is not None
    assert "EchoesVault/pages" in last["git"]["dirs"]
    assert append(repo, tmp_path / "scratch")["gitMatched"] >= len(NAMES) - 1
