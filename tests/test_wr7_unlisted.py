"""A writer that finds pages/ as the head's `git` record found it (the same inode, mtime and
ctime in nanoseconds, both older than the lock of the writer that knew its names then) takes
its names from the summary instead of listing it (issue 13: ~40 ms at 100,000 pages). Any
name added, removed or renamed there since changes the folder's times: then it is listed as
before, and every output still equals the output without a cache."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest
from conftest import init_repo
from helpers_cache import read_only_agree, upsert_payload, writer_agrees
from helpers_writer import page, runtime, stopped_runtime
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_cache_property import NAMES, SUMMARIES
from test_gitsrc_cache import PAGES, committed_vault, head

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="names listed descriptors through /proc")


@pytest.fixture
def repo(git_repo: Path) -> Path:
    return committed_vault(git_repo)


def start(repo: Path) -> None:
    completed = runtime(repo, "start")
    assert completed.returncode == 0, completed.stderr


def folder_stat(repo: Path) -> List[int]:
    info = os.lstat(repo / PAGES)
    return [info.st_ino, info.st_mtime_ns, info.st_ctime_ns]


def listed_in_process(repo: Path, monkeypatch: pytest.MonkeyPatch,
                      *args: str) -> List[str]:
    """Run the project runtime in this process; the folders it listed (os.listdir or
    os.scandir, by path or descriptor)."""
    spec = importlib.util.spec_from_file_location(
        "wr7_runtime", repo / ".echoes-vault" / "echoes_vault.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    listed: List[str] = []

    def counted(real: Callable[..., Any]) -> Callable[..., Any]:
        def listing(path: Any = ".") -> Any:
            listed.append(os.readlink(f"/proc/self/fd/{path}") if isinstance(path, int)
                          else os.fspath(path))
            return real(path)
        return listing

    scandir = counted(os.scandir)
    monkeypatch.setattr(os, "listdir", counted(os.listdir))
    monkeypatch.setattr(os, "scandir", scandir)
    # `match_folder` lists through a descriptor only where os.scandir takes one.
    monkeypatch.setattr(os, "supports_fd", os.supports_fd | {scandir})
    stdout, stderr = io.BytesIO(), io.BytesIO()
    code = module.run(["--workspace", str(repo), *args], io.BytesIO(b""), stdout, stderr)
    monkeypatch.undo()
    assert code == 0, stderr.getvalue()
    return [path for path in listed if path.endswith("/EchoesVault/pages")]


def test_a_writer_that_wrote_no_page_records_pages_and_the_next_one_lists_nothing(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    start(repo)  # it listed pages/ under its lock and wrote nothing there
    assert head(repo)["git"]["folders"] == {"EchoesVault/pages": folder_stat(repo)}
    payload = tmp_path / "upsert.json"
    payload.write_text(json.dumps(upsert_payload(repo, "delta.md", "Delta.")))
    assert listed_in_process(repo, monkeypatch, "upsert", "--payload", str(payload)) == []
    assert head(repo)["git"]["folders"] == {}  # it wrote a page there: its names changed
    read_only_agree(repo)
    # The next writer lists the folder again, and records it (it writes no page).
    assert len(listed_in_process(repo, monkeypatch, "start")) == 1
    assert head(repo)["git"]["folders"] == {"EchoesVault/pages": folder_stat(repo)}
    writer_agrees(repo, tmp_path / "scratch", "upsert", "--payload", "-",
                  payload=upsert_payload(repo, "echo.md", "Echo."))


def test_a_folder_whose_times_are_not_older_than_the_lock_is_not_recorded(repo: Path) -> None:
    future = time.time_ns() + 3600 * 10**9  # a name added in the tick the writer listed it
    os.utime(repo / PAGES, ns=(future, future))
    start(repo)
    assert head(repo)["git"]["folders"] == {}


def test_a_folder_changed_after_the_lock_is_not_recorded_though_its_mtime_was_put_back(
        repo: Path, tmp_path: Path) -> None:
    """Stopped under its lock before it lists pages/ (`cache:git`): a name added and removed
    there, the old mtime put back. Only the ctime, newer than the lock, tells."""
    process = stopped_runtime(repo, "start", payload=None, step="cache:git")
    try:
        before = os.lstat(repo / PAGES)
        (repo / PAGES / "delta.md").write_text(page("Added outside."), encoding="utf-8")
        (repo / PAGES / "delta.md").unlink()
        os.utime(repo / PAGES, ns=(before.st_atime_ns, before.st_mtime_ns))
        process.send_signal(signal.SIGCONT)
        process.stdin = None  # (closed once the payload was written)
        _stdout, stderr = process.communicate(timeout=60)  # (a hang guard)
    finally:
        if process.returncode is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr
    assert folder_stat(repo)[1] == before.st_mtime_ns
    assert head(repo)["git"]["folders"] == {}
    writer_agrees(repo, tmp_path / "scratch", "upsert", "--payload", "-",
                  payload=upsert_payload(repo, "echo.md", "Echo."))


def test_a_writer_that_wrote_nothing_refreshes_a_record_the_folder_no_longer_matches(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An editor's swap file created and removed in pages/ leaves its names as they were but
    its stat not as recorded: the next writer lists it and records the new stat, even though
    it writes nothing, so that the writers after it do not list it again."""
    start(repo)
    recorded = head(repo)["git"]["folders"]
    assert recorded == {"EchoesVault/pages": folder_stat(repo)}
    (repo / PAGES / ".delta.md.swp").write_bytes(b"x")
    (repo / PAGES / ".delta.md.swp").unlink()
    assert [recorded["EchoesVault/pages"]] != [folder_stat(repo)]
    assert len(listed_in_process(repo, monkeypatch, "start")) == 1
    assert head(repo)["git"]["folders"] == {"EchoesVault/pages": folder_stat(repo)}
    assert listed_in_process(repo, monkeypatch, "start") == []
    writer_agrees(repo, tmp_path / "scratch", "start")
    payload = tmp_path / "upsert.json"
    payload.write_text(json.dumps(upsert_payload(repo, "delta.md", "Delta.")))
    assert listed_in_process(repo, monkeypatch, "upsert", "--payload", str(payload)) == []
    read_only_agree(repo)
    writer_agrees(repo, tmp_path / "scratch", "upsert", "--payload", "-",
                  payload=upsert_payload(repo, "echo.md", "Echo."))


def add(pages: Path) -> None:
    (pages / "delta.md").write_text(page("Added outside."), encoding="utf-8")


def add_and_put_the_mtime_back(pages: Path) -> None:
    before = os.lstat(pages)
    (pages / f"added-{before.st_mtime_ns}.md").write_text(page("Added."), encoding="utf-8")
    os.utime(pages, ns=(before.st_atime_ns, before.st_mtime_ns))  # only ctime tells


def delete(pages: Path) -> None:
    if (pages / NAMES[0]).is_file():
        (pages / NAMES[0]).unlink()


def rename(pages: Path) -> None:
    if (pages / NAMES[1]).is_file():
        (pages / NAMES[1]).rename(pages / f"beta-{time.time_ns()}.md")


def stray(pages: Path) -> None:
    (pages / f"notes-{time.time_ns()}.txt").write_text("x", encoding="utf-8")


def folder(pages: Path) -> None:
    (pages / f"nested-{time.time_ns()}").mkdir()


# Outside changes of pages/'s names (each can be made again), "none" when nothing changes.
OUTSIDE: Dict[str, Callable[[Path], None]] = {
    "add": add, "add-keeping-mtime": add_and_put_the_mtime_back, "delete": delete,
    "rename": rename, "stray": stray, "folder": folder, "none": lambda pages: None,
}


@pytest.mark.parametrize("change", sorted(OUTSIDE))
def test_a_name_changed_in_pages_after_the_record_is_seen(
        repo: Path, tmp_path: Path, change: str) -> None:
    start(repo)
    assert head(repo)["git"]["folders"]
    OUTSIDE[change](repo / PAGES)
    writer_agrees(repo, tmp_path / "scratch", "upsert", "--payload", "-",
                  payload=upsert_payload(repo, "echo.md", "Echo."))
    read_only_agree(repo)


Step = Tuple[str, str, int]
steps = st.lists(st.tuples(st.sampled_from(sorted(OUTSIDE)),
                           st.sampled_from(("start", "upsert", "append", "end")),
                           st.integers(0, len(SUMMARIES) - 1)), min_size=1, max_size=4)


@settings(max_examples=5, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(steps=steps)
@example(steps=[("none", "start", 0), ("add-keeping-mtime", "append", 1),
                ("none", "upsert", 2), ("rename", "end", 0)])
def test_outputs_with_the_cache_equal_outputs_without_it_whatever_pages_holds(
        steps: List[Step]) -> None:
    with tempfile.TemporaryDirectory() as temporary:
        repo = committed_vault(init_repo(Path(temporary) / "repo"))
        scratch = Path(temporary) / "scratch"
        for number, (change, which, summary) in enumerate(steps):
            OUTSIDE[change](repo / PAGES)
            args: List[str] = [which]
            payload: Any = None
            if which == "upsert":
                args = ["upsert", "--payload", "-"]
                payload = upsert_payload(repo, f"new-{number}.md", SUMMARIES[summary])
            elif which == "append":
                args, payload = ["append", "--payload", "-"], {"entry": f"- {number}."}
            elif which == "end":
                args = ["end", "--confirm-explicit-user-end", "--payload", "-"]
                payload = {"dailySummary": "- Done.", "pages": [
                    upsert_payload(repo, f"end-{number}.md", SUMMARIES[summary])]}
            writer_agrees(repo, scratch, *args, payload=payload)
            read_only_agree(repo)
