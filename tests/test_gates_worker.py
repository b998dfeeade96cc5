"""The worker that reads pages/ from the other end for the whole-vault gates (issue 13) changes
nothing but the time.

- Pages and daily files that came from the worker give the scan, findings and reports that
  the walk alone gives (every lean page and daily file without markers taken from the
  worker, so the comparison covers them all).
- The walk and the worker take one listing of pages/, made before the fork: a page added
  once it is made is read by neither, and the worker's pages are still taken.
- A worker that dies gives nothing: the walk reads every file itself, with the same result.
- Its frames are decoded as they come; one not yet whole waits, one cut short at the end
  makes the worker give nothing.
- Without fork, with another thread running, with SIGCHLD ignored, or with the vault a link,
  there is no worker; a linked pages/ is never read through.
"""

from __future__ import annotations

import marshal
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable, Optional

import pytest
from helpers_check import PAGES, commit, page, vault_repo, write

from echoes_lint import checker, engine
from echoes_lint.check import main as check_main
from echoes_lint.check import render_result
from echoes_lint.checker import CheckResult, run_checks

# Bodies that let the page go (links to existing pages), and bodies a rule needs to read.
_LEAN = "# P\n\nSee [[home]] and [[p{next:03d}]].\n"
_KEPT = ("# Broken\n\n[[nowhere]]\n", "# Code\n\n`[[x]]`\n", "<!-- echoes-lint-disable-next-line -->\n",
         "# Bare\n=======\n", "# Nul\n\0\n")
_COUNT = 120


def _vault(tmp_path: Path) -> Path:
    repo = vault_repo(tmp_path / "repo")
    for number in range(_COUNT):
        body = _KEPT[number // 10] if number % 10 == 3 and number // 10 < len(_KEPT) \
            else _LEAN.format(next=(number + 1) % _COUNT)
        extra = {"status": "deprecated"} if number % 17 == 5 else {}
        write(repo, f"{PAGES}/p{number:03d}.md", page(body, summary=f"Page {number}.", **extra))
    write(repo, f"{PAGES}/odd.md", "\n\n---\ntype: note\nstack: []\nstatus: Active\nsummary: 'x'\n---\n")
    write(repo, f"{PAGES}/twice.md", page().replace("status: active\n", "status: active\n" * 2))
    write(repo, f"{PAGES}/CON.md", page(_LEAN.format(next=0)))  # a name rule reads it again
    os.symlink("home.md", repo / PAGES / "via-link.md")
    for number in range(12):
        write(repo, f"EchoesVault/daily/2026-01-{number % 3 + 1:02d}/e{number}.md",
              f"### Session — x\n\n[[home]] {number}\n")
    write(repo, "EchoesVault/daily/2026-01-02/conflict.md", "<<<<<<< ours\n=======\n>>>>>>> x\n")
    write(repo, "EchoesVault/daily/2026-01-02/note.txt", "not markdown\n")
    os.symlink("2026-01-01", repo / "EchoesVault/daily/linked")
    commit(repo, "pages")
    return repo


def _start(repo: Path) -> Optional[checker._PageWorker]:
    return checker._PageWorker.start(checker._GateReader(repo))


def _finished(worker: checker._PageWorker) -> None:
    """Wait until the worker has sent every page (a hang guard, not a timing)."""
    deadline = time.monotonic() + 120
    while worker.progress[1] != 0:
        assert time.monotonic() < deadline, "the worker never finished"
        time.sleep(0.01)


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The paths of the pages the walk took from the worker."""
    yield _taken_paths(monkeypatch)


def _taken_paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the worker's files the walk will take: the page it met the worker at
    (`_PageWorker.page`), and those it filed (`_file_rows`)."""
    paths: list[str] = []
    page, file_rows = checker._PageWorker.page, checker._file_rows

    def counted_page(self: checker._PageWorker, name: str, position: int) -> Any:
        taken = page(self, name, position)
        if taken is not None:
            paths.append(taken[0].path)
        return taken

    def counted_rows(scan: engine.Scan, documents: list[engine.Document], rows: Any) -> None:
        paths.extend(row[0].path for row in rows)
        file_rows(scan, documents, rows)

    monkeypatch.setattr(checker._PageWorker, "page", counted_page)
    monkeypatch.setattr(checker, "_file_rows", counted_rows)
    return paths


def _starting(monkeypatch: pytest.MonkeyPatch,
              then: Optional[Callable[[], None]] = None) -> None:
    """Make every worker finish before the walk begins (so that it sends every lean page),
    then run `then`."""
    start = checker._PageWorker.start.__func__  # type: ignore[attr-defined]

    def finished_first(cls: type[checker._PageWorker], reader: checker._GateReader) -> Any:
        worker = start(cls, reader)
        assert worker is not None, "this test needs fork and two CPUs"
        _finished(worker)
        if then is not None:
            then()
        return worker

    monkeypatch.setattr(checker._PageWorker, "start", classmethod(finished_first))


def _serial(repo: Path, monkeypatch: pytest.MonkeyPatch) -> CheckResult:
    with monkeypatch.context() as patch:
        patch.setattr(checker._PageWorker, "start", classmethod(lambda cls, reader: None))
        return run_checks(repo)


def _facts(result: CheckResult) -> tuple[Any, ...]:
    scan = result.scan
    documents = [(document.path, document.text, document.problem, document.markers,
                  document.meta) for document in scan.documents()]
    return (documents, scan.files, scan.symlinks, scan.unreadable,
            [render_result(result, form) for form in ("full", "json", "concise")])


pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or len(os.sched_getaffinity(0)) < 2
    if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) < 2,
    reason="the worker needs fork and two CPUs")


def test_pages_from_the_worker_are_the_pages_the_walk_reads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, taken: list[str]) -> None:
    repo = _vault(tmp_path)
    alone = _facts(_serial(repo, monkeypatch))
    assert not taken
    _starting(monkeypatch)
    result = run_checks(repo)
    let_go = {document.path for document in result.scan.pages if document.text is None}
    days = {document.path for document in result.scan.daily if not document.markers}
    # Every page the walk would let go and every daily file without markers came from the
    # worker; the others the walk read itself.
    assert sorted(taken) == sorted(let_go | days) and len(let_go) > _COUNT // 2
    assert len(days) == 12 and len(result.scan.daily) == 13
    assert {f"{PAGES}/odd.md", f"{PAGES}/CON.md"} <= let_go  # odd.md: lines moved
    # The report reads a page from the worker again for its source line.
    assert "EchoesVault/pages/CON.md:1:1: EV031" in alone[-1][0]
    assert "1 | ---" in alone[-1][0].split("EchoesVault/pages/CON.md:1:1: EV031", 1)[1]
    assert _facts(result) == alone
    assert all(code in alone[-1][2] for code in ("EV002", "EV014", "EV050", "EV077", "EV080"))


def test_the_walk_and_the_worker_take_one_listing_of_pages(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, taken: list[str]) -> None:
    repo = _vault(tmp_path)
    alone = _facts(_serial(repo, monkeypatch))
    taken.clear()
    # A page added once pages/ is listed (the worker has read every page by then): links are
    # judged by the files listed, which are the files both read, so the worker's pages are
    # taken, and the late page is in neither's listing.
    _starting(monkeypatch, lambda: write(repo, f"{PAGES}/late.md", page("[[home]]\n")))
    result = run_checks(repo)
    assert [path for path in taken if path.startswith(PAGES)]
    assert f"{PAGES}/late.md" not in {document.path for document in result.scan.pages}
    assert f"{PAGES}/late.md" not in result.scan.files
    assert _facts(result) == alone


@pytest.mark.parametrize("death", ["exit", "signal"])
def test_a_worker_that_dies_leaves_every_file_to_the_walk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        taken: list[str], death: str) -> None:
    """A worker killed (or out of memory or file space) after writing rows: none is taken, and
    the gate's result is the serial one (never an error that a rerun would repeat)."""
    repo = _vault(tmp_path)
    alone = _facts(_serial(repo, monkeypatch))
    serial_status = check_main(["--workspace", str(repo)])
    serial_output = capsys.readouterr()
    taken.clear()  # that run had a worker of its own
    work = checker._work

    def dies(*args: Any) -> None:  # runs in the worker only, once it wrote every row
        work(*args)
        if death == "exit":
            os._exit(3)
        os.kill(os.getpid(), signal.SIGKILL)

    monkeypatch.setattr(checker, "_work", dies)
    _starting(monkeypatch)
    assert _facts(run_checks(repo)) == alone
    assert not taken
    assert check_main(["--workspace", str(repo)]) == serial_status
    assert capsys.readouterr() == serial_output


def test_no_worker_when_sigchld_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          taken: list[str]) -> None:
    """An ignored SIGCHLD (inherited from some CI agents) lets the kernel reap children, so no
    worker could be waited for: the walk reads everything."""
    repo = _vault(tmp_path)
    alone = _facts(_serial(repo, monkeypatch))
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        assert _start(repo) is None
        assert _facts(run_checks(repo)) == alone
    finally:
        signal.signal(signal.SIGCHLD, previous)
    assert not taken


def test_a_linked_pages_folder_is_not_read_through(tmp_path: Path) -> None:
    """pages/ as a link to a folder outside the repository: the walk reads no page there, and
    the worker reads nothing there either."""
    repo = vault_repo(tmp_path / "repo")
    outside = tmp_path / "outside"
    outside.mkdir()
    write(outside, "secret.md", page("# Secret\n"))
    pages = repo / PAGES
    for child in pages.iterdir():
        child.unlink()
    pages.rmdir()
    os.symlink(outside, pages)
    reader = checker._GateReader(repo)
    assert reader.pages_listing is None  # the walk finds the link, and enters none
    worker = checker._PageWorker.start(reader)
    assert worker is not None
    _finished(worker)
    worker.finish()
    assert worker.pages == {}


def test_no_worker_without_fork_with_threads_or_with_a_linked_vault(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, taken: list[str]) -> None:
    repo = _vault(tmp_path)
    alone = _facts(_serial(repo, monkeypatch))
    worker = _start(repo)
    assert worker is not None
    worker.stop()
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert _start(repo) is None  # a fork could deadlock on its locks
    finally:
        release.set()
        other.join()
    linked = vault_repo(tmp_path / "linked")
    os.rename(linked / "EchoesVault", linked / "real-vault")
    os.symlink("real-vault", linked / "EchoesVault")
    assert _start(linked) is None
    with monkeypatch.context() as patch:
        patch.delattr(os, "fork")
        assert _start(repo) is None
        assert _facts(run_checks(repo)) == alone
    assert not taken


def test_a_finish_interrupted_ends_and_collects_the_worker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the walk waits for the worker's last word: the worker is ended and
    collected before the interrupt goes on, not left to init."""
    worker = _start(_vault(tmp_path))
    assert worker is not None
    read = os.read

    def interrupted(fd: int, size: int) -> bytes:
        if fd == worker.pipe and size == 1:
            raise KeyboardInterrupt
        return read(fd, size)

    monkeypatch.setattr(os, "read", interrupted)
    with pytest.raises(KeyboardInterrupt):
        worker.finish()
    monkeypatch.setattr(os, "read", read)
    with pytest.raises(ChildProcessError):
        os.waitpid(worker.pid, os.WNOHANG)  # collected already


def _frame(kind: str, rows: list[Any]) -> bytes:
    data = marshal.dumps((kind, rows))
    return len(data).to_bytes(4, "little") + data


def test_frames_are_decoded_as_they_come_and_a_cut_one_waits() -> None:
    """The walk decodes the worker's frames, and makes their rows into documents, while the
    worker writes more (`_drain`): a frame not yet whole is left for the next look, and one
    still cut short when the worker is done makes it give nothing."""
    file = checker._anonymous_file()
    progress = memoryview(bytearray(16)).cast("q")
    worker = checker._PageWorker(0, -1, file, progress)
    day = "EchoesVault/daily/2026-01-01/a.md"
    folder = day.rpartition("/")[0]
    first = _frame("d", [(folder, "a.md", day, (5, 1.5), "text\n", 1)])
    second = _frame("p", [_page_row("b.md"), _page_row("c.md")])
    os.write(file, first + second[:7])  # the worker is writing the second frame
    worker._drain()
    assert worker.decoded["p"] == {} and list(worker.decoded["d"]) == [folder]
    document, facts = worker.decoded["d"][folder]["a.md"]
    assert (document.path, document.text, document.entry_headings) == (day, "text\n", 1)
    assert facts == (5, 1.5)
    assert not worker.broken and worker.offset == len(first)
    os.write(file, second[7:])
    worker._drain()
    assert list(worker.decoded["p"]) == ["b.md", "c.md"]
    page_document, page_facts = worker.decoded["p"]["c.md"]
    assert page_document.path == f"{PAGES}/c.md" and page_document.meta.summary == "S."
    assert page_facts == (9, 2.5)
    os.write(file, _frame("p", [_page_row("d.md")])[:-1])
    worker._drain()
    assert not worker.broken and "d.md" not in worker.decoded["p"]
    worker._drain(final=True)  # done, and still cut short: nothing is taken
    assert worker.broken
    os.close(file)


def _page_row(name: str) -> tuple[Any, ...]:
    return (name, f"{PAGES}/{name}", (9, 2.5), 1, 6, 5, "note", "active", "S.")


def test_the_walk_files_the_worker_s_pages_without_loading_each(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, taken: list[str]) -> None:
    """Once the walk has met the worker (here at its first page: the worker sent every lean
    page before the walk began), the pages the worker sent are filed as the walk goes, not
    loaded one by one (`_GateReader.load`), with the walk's scan all the same."""
    repo = _vault(tmp_path)
    alone = _facts(_serial(repo, monkeypatch))
    loaded: list[str] = []
    load = checker._GateReader.load

    def counted(self: checker._GateReader, entry: os.DirEntry[str], relative: str, kind: str,
                limit: int = engine.MAX_TEXT_BYTES) -> Any:
        loaded.append(relative)
        return load(self, entry, relative, kind, limit)

    monkeypatch.setattr(checker._GateReader, "load", counted)
    _starting(monkeypatch)
    taken.clear()
    result = run_checks(repo)
    pages = [path for path in taken if path.startswith(PAGES)]
    assert len(pages) > _COUNT // 2
    assert [path for path in pages if path in loaded] == [pages[0]]  # the one met at
    assert _facts(result) == alone
