"""What a writer pays besides the pages it changes (issue 13): the intent records no derived file,
and one writer lists each folder once, reads the index at most once and asks Git only what it
must. Counts, never timings."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any, Callable, Counter, Dict, List, Sequence

import pytest
from helpers_writer import INDEX, INTENT, PAGES, STATE, init_vault, ok, page, runtime

from echoes_lint import engine

NEW = page("A page written by a killed upsert.")


def killed_upsert(repo: Path) -> Dict[str, Any]:
    """A vault with one page and an `upsert` of `new.md` SIGKILLed right after its intent was
    renamed into place; returns the intent."""
    init_vault(repo)
    ok(runtime(repo, "upsert", "--payload", "-",
               payload={"filename": "old.md", "content": page("The first page.")}))
    crashed = runtime(repo, "upsert", "--payload", "-",
                      payload={"filename": "new.md", "content": NEW},
                      env={engine.CRASH_ENV: "upsert:intent"})
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    intent: Dict[str, Any] = json.loads((repo / INTENT).read_text(encoding="utf-8"))
    return intent


def test_an_intent_names_the_index_and_recovery_renders_it_from_the_pages(
        git_repo: Path) -> None:
    intent = killed_upsert(git_repo)
    assert intent["version"] == engine.INTENT_VERSION
    assert intent["derived"] == [str(INDEX)]
    assert [write["path"] for write in intent["writes"]] == [f"{PAGES}/new.md", str(STATE)]
    assert "[[old]]" not in json.dumps(intent)  # no index row is recorded
    assert "[[new]]" not in (git_repo / INDEX).read_text(encoding="utf-8")
    # `append` renders no index of its own: the new row comes from the roll-forward alone.
    recovered = ok(runtime(git_repo, "append", "--payload", "-",
                           payload={"entry": "After the crash."}))["recovered"]
    assert recovered["files"] == [f"{PAGES}/new.md", str(STATE), str(INDEX)]
    assert str(INDEX) in recovered["rewritten"] and recovered["superseded"] == []
    assert (git_repo / PAGES / "new.md").read_text(encoding="utf-8") == NEW
    assert (git_repo / INDEX).read_text(encoding="utf-8").endswith(
        "- [[new]]: A page written by a killed upsert.\n- [[old]]: The first page.\n")
    # Byte for byte the index a full rebuild renders.
    assert ok(runtime(git_repo, "rebuild-index"))["rebuilt"] is False


def test_an_engine_that_does_not_know_derived_files_leaves_a_valid_vault(git_repo: Path) -> None:
    """Engines 1.3.0 and 1.4.0 read intent version 2 with this parser minus `derived` (unknown
    keys are ignored): they complete the recorded files and keep the old, valid index."""
    intent = killed_upsert(git_repo)
    index = (git_repo / INDEX).read_bytes()
    del intent["derived"]
    (git_repo / INTENT).write_text(json.dumps(intent), encoding="utf-8")
    recovered = ok(runtime(git_repo, "append", "--payload", "-",
                           payload={"entry": "After the crash."}))["recovered"]
    assert recovered["files"] == [f"{PAGES}/new.md", str(STATE)]
    assert (git_repo / PAGES / "new.md").read_text(encoding="utf-8") == NEW
    assert (git_repo / INDEX).read_bytes() == index
    health = ok(runtime(git_repo, "status"))["health"]
    assert health["invalidFrontmatter"] == [] and health["indexBuildErrors"] == []
    assert health["indexOutOfDate"] == ["index.md"]  # stale, and the next renderer fixes it
    assert ok(runtime(git_repo, "rebuild-index"))["rebuilt"] is True
    assert ok(runtime(git_repo, "status"))["health"]["indexOutOfDate"] == []


def test_an_index_the_pages_no_longer_make_is_left_and_reported(git_repo: Path) -> None:
    killed_upsert(git_repo)
    index = (git_repo / INDEX).read_bytes()
    (git_repo / PAGES / "old.md").write_text("---\ntype: note\n---\nNo summary.\n")
    recovered = ok(runtime(git_repo, "append", "--payload", "-",
                           payload={"entry": "After the crash."}))["recovered"]
    assert recovered["superseded"] == [str(INDEX)]
    assert (git_repo / PAGES / "new.md").read_text(encoding="utf-8") == NEW
    assert (git_repo / INDEX).read_bytes() == index and not (git_repo / INTENT).exists()


def _intent(operation: str, **fields: Any) -> bytes:
    record = {"version": engine.INTENT_VERSION, "operation": operation, "head": None,
              "request": None, "directories": [],
              "writes": [{"path": str(STATE), "content": "{}\n", "before": None}], **fields}
    return json.dumps(record).encode("utf-8")


@pytest.mark.parametrize(("operation", "derived", "reason"), [
    ("append", [str(INDEX)], "which `append` never writes"),
    ("upsert", [f"{PAGES}/a.md"], "which `upsert` never writes"),
    ("upsert", [str(STATE)], "which `upsert` never writes"),
    ("upsert", [str(INDEX), str(INDEX)], "twice"),
    ("upsert", str(INDEX), "not those of a change set"),
])
def test_a_derived_file_its_operation_never_writes_is_refused(operation: str, derived: Any,
                                                              reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        engine.parse_intent(_intent(operation, derived=derived))


def test_a_file_both_recorded_and_derived_is_refused() -> None:
    writes = [{"path": str(INDEX), "content": "# Index\n", "before": None}]
    with pytest.raises(ValueError, match="twice"):
        engine.parse_intent(_intent("upsert", writes=writes, derived=[str(INDEX)]))
    # An intent of engine 1.4.0 and older records the index's content: still completed.
    assert engine.parse_intent(_intent("upsert", writes=writes)).files == [str(INDEX)]


class Recorder:
    """Counts what one in-process command lists, reads and asks Git."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, repo: Path) -> None:
        self.repo = repo
        self.listed: Counter[str] = Counter()
        self.read: Counter[str] = Counter()
        self.git: List[str] = []
        scandir, read_file, run, start = (os.scandir, engine._read_file, subprocess.run,
                                          engine.git_start)

        def listing(path: Any = ".") -> Any:
            self.listed[self._relative(path)] += 1
            return scandir(path)

        def reading(path: Any, *args: Any, **kwargs: Any) -> Any:
            self.read[self._relative(path)] += 1
            return read_file(path, *args, **kwargs)

        def running(command: Any, *args: Any, **kwargs: Any) -> Any:
            if list(command[:1]) == ["git"]:
                self.git.append(" ".join(command[1:3]))
            return run(command, *args, **kwargs)

        def starting(workspace: Path, args: Sequence[str], stdin: bool = False) -> Any:
            self.git.append(" ".join(args[:2]))
            return start(workspace, args, stdin)

        monkeypatch.setattr(os, "scandir", listing)
        monkeypatch.setattr(engine, "_read_file", reading)
        monkeypatch.setattr(subprocess, "run", running)  # git check-ignore
        monkeypatch.setattr(engine, "git_start", starting)  # every other git

    def _relative(self, path: Any) -> str:
        return Path(os.fsdecode(path)).resolve().relative_to(self.repo.resolve()).as_posix()


Writer = Callable[[Path], List[str]]


def _upsert(repo: Path) -> List[str]:
    (repo / "payload.json").write_text(json.dumps({"filename": "z.md", "content": page()}))
    return ["upsert", "--payload", str(repo / "payload.json")]


def _append(repo: Path) -> List[str]:
    (repo / "payload.json").write_text(json.dumps({"entry": "One more fact."}))
    return ["append", "--payload", str(repo / "payload.json")]


def _end(repo: Path) -> List[str]:
    (repo / "payload.json").write_text(json.dumps({
        "dailySummary": "Done.", "pages": [{"filename": "z.md", "content": page()}]}))
    return ["end", "--confirm-explicit-user-end", "--payload", str(repo / "payload.json")]


@pytest.mark.parametrize("command", [_upsert, _append, _end], ids=["upsert", "append", "end"])
def test_a_writer_lists_each_folder_once_and_reads_the_index_at_most_once(
        git_repo: Path, monkeypatch: pytest.MonkeyPatch, command: Writer) -> None:
    init_vault(git_repo)
    for number in range(3):
        ok(runtime(git_repo, "upsert", "--payload", "-",
                   payload={"filename": f"p{number}.md", "content": page(f"Page {number}.")}))
        ok(runtime(git_repo, "append", "--payload", "-", payload={"entry": f"Fact {number}."}))
    argv = ["--workspace", str(git_repo), *command(git_repo)]
    recorder = Recorder(monkeypatch, git_repo)
    stdout, stderr = io.BytesIO(), io.BytesIO()
    assert engine.run(argv, io.BytesIO(), stdout, stderr) == 0, stderr.getvalue()
    monkeypatch.undo()
    daily = sorted(path for path in recorder.listed if path.startswith("EchoesVault/daily"))
    assert len(daily) == 2, recorder.listed  # daily/ and today's folder
    # pages/ once: the walk's (no sweep or count of its own). Daily folders once by the walk (no
    # second walk of daily/), and the sweep of the newest ones: daily/ and at most two dates.
    assert recorder.listed["EchoesVault/pages"] == 1
    assert sum(recorder.listed[path] for path in daily) <= len(daily) + 3
    # The index once, by the walk: the new one differs in size, so it is not read again.
    assert recorder.read["EchoesVault/index.md"] == 1
    assert recorder.git.count("ls-files -z") == 1  # the cache's tracking check, no other


def test_the_command_line_builds_the_parser_of_the_named_command_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    built: List[str] = []

    class Counted(engine._Parser):
        def __init__(self, **settings: Any) -> None:
            built.append(settings.get("prog", ""))
            super().__init__(**settings)

    monkeypatch.setattr(engine, "_Parser", Counted)
    args = engine.build_parser().parse_args(["--workspace", ".", "upsert", "--payload", "-"])
    assert (args.command, args.payload) == ("upsert", "-")
    assert built == ["echoes_vault.py", "echoes_vault.py upsert"]
    with pytest.raises(engine.VaultError, match=r"invalid choice: 'nope' .*'rebuild-index'"):
        engine.build_parser().parse_args(["nope"])


def test_only_the_runtime_entry_point_leaves_its_command_to_the_exit(
        git_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`main` (the runtime as a script, ended by `exit_now`) keeps its context for the exit to
    drop; `run` and `launch`, which `echoes-lint` and in-process callers use, keep nothing."""
    init_vault(git_repo)
    ok(runtime(git_repo, "upsert", "--payload", "-", payload={"filename": "a.md",
                                                               "content": page()}))
    before = len(engine._ENDING)
    assert engine.run(["--workspace", str(git_repo), "rebuild-index"], io.BytesIO(),
                      io.BytesIO(), io.BytesIO()) == 0
    assert engine.launch("echoes-lint", ["--workspace", str(git_repo), "protocol"]) == 0
    assert len(engine._ENDING) == before
    assert engine.main(["--workspace", str(git_repo), "rebuild-index"]) == 0
    assert json.loads(capsys.readouterr().out.split("\n}\n")[-2] + "}")["ok"] is True
    [kept] = engine._ENDING[before:]
    assert kept.workspace == git_repo.resolve() and kept.pages
    del engine._ENDING[before:]
