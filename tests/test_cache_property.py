"""The local cache never changes an answer (issue 13): random sequences of edits made outside the
engine (same-size rewrites that restore the old mtime, `touch` to an old date, renames, swaps,
deletions, a page replaced by a folder, daily entries and raw notes) interleaved with engine
commands. After every step, `status` prints the same with the cache as with it moved aside, and
each writer prints the same, and leaves the same index, as in a copy of the vault without one."""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, List, Optional, Tuple

from conftest import git, init_repo
from helpers_cache import read_only_agree, rewrite_keeping_stat, upsert_payload, writer_agrees
from helpers_writer import cli, ok, page
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

NAMES = ("alpha.md", "beta.md", "Gamma.md")
# Same length each, so that a rewrite can keep the file's size.
SUMMARIES = ("First summary.", "Other summary.", "Third summary.")
CONFLICT = "<<<<<<< HEAD\na\n=======\nb\n>>>>>>> topic\n"
OLD = 1_000_000_000  # 2001-09-09: `touch -d` far in the past
EDITS = ("write", "same-size", "invalid", "conflict", "touch-old", "rename", "swap", "delete",
         "directory", "daily", "daily-same-size", "raw-note")
COMMANDS = ("status", "upsert", "append", "rebuild-index", "start", "hydrate", "end", "init")

Step = Tuple[str, int, int, str]
steps = st.lists(st.tuples(st.sampled_from(EDITS), st.integers(0, len(NAMES) - 1),
                           st.integers(0, len(SUMMARIES) - 1), st.sampled_from(COMMANDS)),
                 min_size=1, max_size=4)


def _daily(repo: Path) -> Path:
    today = _dt.datetime.now(_dt.timezone.utc).date().isoformat()
    return repo / "EchoesVault" / "daily" / today / "20260101T000000000000Z-session-x-0000000a.md"


def edit(repo: Path, kind: str, number: int, summary: str) -> None:
    pages = repo / "EchoesVault" / "pages"
    path = pages / NAMES[number]
    other = pages / NAMES[(number + 1) % len(NAMES)]
    if path.is_dir() and kind != "directory":
        shutil.rmtree(path)
    if kind == "write":
        path.write_text(page(summary), encoding="utf-8")
    elif kind == "same-size" and path.is_file():
        # As many bytes, another decision: the page turns invalid (or valid again).
        text = path.read_text(encoding="utf-8")
        flipped = (text.replace("summary:", "summarx:") if "summary:" in text
                   else text.replace("summarx:", "summary:"))
        rewrite_keeping_stat(path, flipped.encode("utf-8"))
    elif kind == "invalid":
        path.write_text("---\ntype: note\n---\n\nNo summary.\n", encoding="utf-8")
    elif kind == "conflict":
        path.write_text(page(summary) + CONFLICT, encoding="utf-8")
    elif kind == "touch-old" and path.exists():
        os.utime(path, (OLD, OLD))
    elif kind == "rename" and path.is_file() and not other.exists():
        os.rename(path, other)
    elif kind == "swap" and path.is_file() and other.is_file():
        aside = pages / "swap.tmp"
        os.rename(path, aside)
        os.rename(other, path)
        os.rename(aside, other)
    elif kind == "delete" and path.is_file():
        path.unlink()
    elif kind == "directory":
        if path.is_file():
            path.unlink()
        path.mkdir(exist_ok=True)
    elif kind in ("daily", "daily-same-size"):
        entry = _daily(repo)
        entry.parent.mkdir(parents=True, exist_ok=True)
        heading = "### Session — now\n\nDone.\n"
        if kind == "daily" or not entry.is_file():
            entry.write_text(heading * (number + 1), encoding="utf-8")
        else:  # as many bytes, one heading fewer
            text = entry.read_text(encoding="utf-8").replace("### Session", "xxx Session", 1)
            rewrite_keeping_stat(entry, text.encode("utf-8"))
    elif kind == "raw-note":
        note = repo / "EchoesVault" / "raw" / "note.md"
        note.write_text(CONFLICT if number else CONFLICT.replace("=======", "-------"),
                        encoding="utf-8")


def run_step(repo: Path, scratch: Path, name: str, summary: str, which: str) -> None:
    payload: Optional[Any] = None
    args: List[str] = [which]
    if which == "status":
        return
    if which == "upsert":
        args, payload = ["upsert", "--payload", "-"], upsert_payload(repo, name, summary)
    elif which == "append":
        args, payload = ["append", "--payload", "-"], {"entry": f"- {summary}"}
    elif which == "end":
        args = ["end", "--confirm-explicit-user-end", "--payload", "-"]
        payload = {"dailySummary": "- Done.", "pages": [upsert_payload(repo, name, summary)]}
    writer_agrees(repo, scratch, *args, payload=payload)


@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(steps=steps)
# The edits a stat-based cache is most easily fooled by, always tried.
@example(steps=[("same-size", 0, 0, "status"), ("same-size", 0, 0, "upsert"),
                ("daily-same-size", 0, 0, "status"), ("swap", 1, 0, "rebuild-index")])
@example(steps=[("daily", 1, 0, "append"), ("daily-same-size", 1, 0, "start"),
                ("touch-old", 2, 1, "hydrate"), ("directory", 2, 1, "end")])
# Writers one after another with nothing changed outside (a rename onto an existing page does
# nothing): each adds its entries to the line it read, and the last one of a page counts.
@example(steps=[("rename", 0, 0, "upsert"), ("rename", 0, 1, "upsert"), ("rename", 0, 2, "end"),
                ("touch-old", 1, 0, "status"), ("rename", 0, 0, "append")])
# A change outside the engine, then two writers (a rename onto an existing page does nothing):
# the first leaves a summary of the vault as it left it, which the second takes.
@example(steps=[("write", 0, 1, "upsert"), ("rename", 0, 0, "upsert"), ("delete", 2, 0, "append"),
                ("rename", 0, 2, "end")])
def test_outputs_with_the_cache_equal_outputs_without_it(steps: List[Step]) -> None:
    with tempfile.TemporaryDirectory() as temporary:
        repo = init_repo(Path(temporary) / "repo")
        (repo / "EchoesVault" / "pages").mkdir(parents=True)
        for name, summary in zip(NAMES, SUMMARIES):
            edit(repo, "write", NAMES.index(name), summary)
        ok(cli(repo, "init"))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "vault")
        report = read_only_agree(repo)
        # The cache `init` wrote is used, through its summary: no document is built.
        assert report["reusedEntries"] > 0 and report["summaryUsed"]
        for kind, number, summary_number, which in steps:
            edit(repo, kind, number, SUMMARIES[summary_number])
            run_step(repo, Path(temporary) / "scratch", NAMES[number], SUMMARIES[summary_number],
                     which)
            read_only_agree(repo)
        read_only_agree(repo, card=True)
