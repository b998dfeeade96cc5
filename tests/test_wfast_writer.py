"""A writer's fast path at scale (issue 13, writers at 100,000 pages within 3x the same write at
1,000): the index spliced as bytes, the summary's names kept as one text in the cache's head,
and Git's word taken before Git answers, then confirmed before anything is written or answered
(the command runs again when Git does not vouch). Outputs with the cache equal outputs without
it; each test fails on the engine before the change it names."""

from __future__ import annotations

import gc
import hashlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import IO, Callable, Dict, List, Tuple

import pytest
from conftest import git, init_repo
from helpers_cache import cache_layout, read_only_agree, upsert_payload, writer_agrees
from helpers_writer import page
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_cache_property import NAMES, SUMMARIES, edit, run_step
from test_gitsrc_cache import GIT_ACTIONS, committed_vault, flip, git_action

from echoes_lint import engine

PAGES = Path("EchoesVault/pages")


# --- The index spliced as bytes --------------------------------------------------------------

stems = st.text(st.sampled_from("abcXYZ-é]ſK\u212a"), min_size=1, max_size=5)


def _meta(summary: str, deprecated: bool) -> engine.PageMeta:
    meta, problems = engine.validate_page_text(page(summary, "deprecated" if deprecated
                                                    else "active"))
    assert not problems
    return meta


def _table(entries: Dict[str, engine.PageMeta]) -> engine.PageTable:
    """The `PageTable` a writer whose summary stands builds for these pages: from the bytes of
    the index they render, as the cache's summary describes them."""
    names = sorted(entries, key=engine.page_sort_key)
    data = engine.build_index([(name, entries[name], []) for name in names]).encode("utf-8")
    summary = {"names": names, "index": hashlib.sha256(data).hexdigest(),
               "deprecated": sorted(engine.stored_stem(name) for name in names
                                    if entries[name].deprecated)}
    table = engine.page_table((data, data.count(b"\n"), "]" not in "".join(names)), summary,
                              len(names), lambda: [])
    assert table is not None
    return table


@settings(max_examples=60, deadline=None, derandomize=True)
@given(old=st.dictionaries(stems, st.booleans(), max_size=6),
       new=st.dictionaries(stems, st.booleans(), min_size=1, max_size=3))
@example(old={"b": False, "d": False}, new={"a": False, "c": True, "e": False})
@example(old={"a]": False, "b": False}, new={"c": False})
def test_rows_spliced_into_the_index_s_bytes_are_the_full_render(
        old: Dict[str, bool], new: Dict[str, bool]) -> None:
    """Pages written (new, replaced, deprecated or not) spliced into the rendered index's bytes
    give the bytes, digest and row facts a full render of the resulting pages gives."""
    entries = {f"{stem}.md": _meta(f"Summary of {stem}.", deprecated)
               for stem, deprecated in old.items()}
    if len({engine.stem_identity(name) for name in entries}) != len(entries):
        return  # colliding names make no index: no table
    table = _table(entries)
    overrides = {f"{stem}.md": page(f"New {stem}.", "deprecated" if deprecated else "active")
                 for stem, deprecated in new.items()}
    prospect = table.prospective(overrides)
    final = dict(entries)
    for name, text in overrides.items():
        final[name] = engine.validate_page_text(text)[0]
    if len({engine.stem_identity(name) for name in final}) != len(final):
        assert prospect is None
        return
    assert prospect is not None
    names = sorted(final, key=engine.page_sort_key)
    rendered = engine.build_index([(name, final[name], []) for name in names])
    assert prospect.names == names
    assert prospect.data() == rendered.encode("utf-8")
    assert prospect.digest() == engine.sha256_text(rendered)
    assert prospect.render() == rendered
    assert engine.table_row_facts(prospect) == engine.index_row_facts(rendered, names)
    assert prospect.deprecated == sorted(engine.stored_stem(name) for name in names
                                         if final[name].deprecated)
    for name in overrides:
        at = names.index(name)
        assert prospect.row(at) == engine.index_row(name, final[name])


def test_a_writer_whose_summary_stands_neither_renders_nor_decodes_the_index(
        git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process `upsert` and `end` with the summary standing: no row split from the index,
    none rendered (the old engine split and rendered 100,000 rows), the index never decoded;
    the index written is the one a copy without a cache writes."""
    repo = committed_vault(git_repo)

    def forbidden(*_args: object) -> None:
        raise AssertionError("the index was rendered or decoded")

    for command, payload in (
            ("upsert", upsert_payload(repo, "delta.md", "Delta.")),
            ("end", {"dailySummary": "- Done.", "pages": [upsert_payload(repo, NAMES[1],
                                                                         "Changed.")]})):
        expected = tmp_path / f"without-{command}"
        shutil.copytree(repo, expected, symlinks=True)
        os.unlink(expected / engine.CACHE_PATH)
        args = [command, *(["--confirm-explicit-user-end"] if command == "end" else []),
                "--payload", "-"]
        assert engine.run(["--workspace", str(expected), *args],
                          _stdin(payload), _Sink(), _Sink()) == 0
        with monkeypatch.context() as patched:
            patched.setattr(engine.IndexTable, "render", forbidden)
            patched.setattr(engine, "build_index", forbidden)
            patched.setattr(engine, "decode_text", _not_the_index(engine.decode_text))
            assert engine.run(["--workspace", str(repo), *args], _stdin(payload), _Sink(),
                              _Sink()) == 0
        assert (repo / "EchoesVault/index.md").read_bytes() == \
            (expected / "EchoesVault/index.md").read_bytes()
    assert read_only_agree(repo)["summaryUsed"]


def _not_the_index(decode: Callable[[bytes], object]) -> Callable[[bytes], object]:
    def checked(data: bytes) -> object:
        assert not data.startswith(b"# EchoesVault Index"), "the index was decoded"
        return decode(data)
    return checked


class _Sink:
    def write(self, data: bytes) -> int:
        return len(data)

    def flush(self) -> None:
        pass


def _stdin(payload: object) -> IO[bytes]:
    return io.BytesIO(json.dumps(payload).encode("utf-8"))


# --- The summary's names as one text ---------------------------------------------------------

def test_the_head_keeps_the_page_names_as_one_text(git_repo: Path, tmp_path: Path) -> None:
    """Every head repeats the summary's names: one text joined by `/` (at 100,000 pages
    decoded in C, not as 100,000 strings), which a writer splits to find its page and a
    reader never needs; a head holding a list is not this format's."""
    repo = committed_vault(git_repo)
    writer_agrees(repo, tmp_path / "scratch", "upsert", "--payload", "-",
                  payload=upsert_payload(repo, "delta.md", "Delta."))
    head = cache_layout(repo)[0]
    assert head["version"] == engine.CACHE_VERSION
    names = sorted([*NAMES, "delta.md"], key=engine.page_sort_key)
    assert head["summary"]["names"] == "/".join(names)
    assert read_only_agree(repo)["summaryUsed"]
    head["summary"]["names"] = names
    assert engine.cache_header_problem(head) == "its summary is malformed"


def test_a_cache_truncated_while_it_is_read_is_ignored(
        git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The entries lines are mapped into memory once the head is read: a cache cut short in
    between (by something outside the engine, which only appends or replaces it) is ignored
    as changed, never an internal error."""
    repo = committed_vault(git_repo)
    writer_agrees(repo, tmp_path / "scratch", "upsert", "--payload", "-",
                  payload=upsert_payload(repo, "delta.md", "Delta."))
    cache = repo / ".echoes-vault" / "cache.json"
    head = engine._cache_head

    def cut(descriptor: int, size: int) -> object:
        found = head(descriptor, size)
        os.truncate(cache, 10)
        return found

    monkeypatch.setattr(engine, "_cache_head", cut)
    problem, *_rest = engine._read_cache(cache, cache.stat().st_size)
    assert problem == "it changed while it was read"


# --- Git's word before Git answers -----------------------------------------------------------

def slow_git(folder: Path, seconds: float) -> Dict[str, str]:
    """An environment whose `git` answers `diff-files` after `seconds`, first noting in
    `folder/log` each time it was asked and how many files a writer had staged by then."""
    real = shutil.which("git")
    assert real is not None
    folder.mkdir(exist_ok=True)
    (folder / "git").write_text(
        "#!/bin/sh\nfor arg; do if [ \"$arg\" = diff-files ]; then sleep "
        f"{seconds}; find EchoesVault -name '*{engine.TEMP_SUFFIX}' | wc -l"
        f" >> '{folder / 'log'}'; fi; done\nexec '{real}' \"$@\"\n", encoding="utf-8")
    (folder / "git").chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def asked(folder: Path) -> List[int]:
    """The files staged when Git was asked to answer, once per `diff-files`."""
    log = folder / "log"
    counts = [int(line) for line in log.read_text().split()] if log.exists() else []
    if log.exists():
        log.unlink()
    return counts


def test_a_writer_stages_its_files_before_git_answers(
        git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With Git still at work when the walk ends, the writer plans and stages its files (the
    page and the index in the vault, the state and the intent beside the runtime) beside it and
    checks Git's word before it renames any: the old engine waited for Git at the end of its
    walk, with nothing staged."""
    repo = committed_vault(git_repo)
    bin_dir = tmp_path / "bin"
    for name, value in slow_git(bin_dir, 1.5).items():
        monkeypatch.setenv(name, value)
    writer_agrees(repo, tmp_path / "scratch", "upsert", "--payload", "-",
                  payload=upsert_payload(repo, "delta.md", "Delta."))
    # The page and the index staged in the vault when Git answered; then the copy without a
    # cache, whose walk took nothing on Git's word.
    assert asked(bin_dir) == [2, 0]
    assert cache_layout(repo)[0]["gitMatched"] == len(NAMES)
    assert read_only_agree(repo)["summaryUsed"]


def test_a_writer_runs_again_when_git_then_does_not_vouch(
        git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tracked page edited outside (Git reports it) while the writer took Git's word: the
    files it staged are removed, nothing is written, and the command runs again with Git's
    word awaited, printing what it prints without a cache (here: the page is invalid, so no
    index, and `upsert` is refused; `append` succeeds). The old engine asked Git once."""
    repo = committed_vault(git_repo)
    bin_dir = tmp_path / "bin"
    for name, value in slow_git(bin_dir, 1.0).items():
        monkeypatch.setenv(name, value)
    flip(repo / PAGES / NAMES[0])
    before = (repo / "EchoesVault/index.md").read_bytes()
    code, _error = writer_agrees(repo, tmp_path / "scratch", "upsert", "--payload", "-",
                                 payload=upsert_payload(repo, "delta.md", "Delta."))
    assert code == 2
    staged = asked(bin_dir)
    # Staged, then asked again (nothing staged: Git awaited); the copy without a cache is
    # refused before it asks for Git's answer (its `diff-files` ended unheard).
    assert staged == [2, 0], staged
    assert (repo / "EchoesVault/index.md").read_bytes() == before
    assert not [path for path in repo.rglob(f"*{engine.TEMP_SUFFIX}")]
    flip(repo / PAGES / NAMES[0])  # valid again
    writer_agrees(repo, tmp_path / "scratch", "append", "--payload", "-",
                  payload={"entry": "- Again."})
    # Git still reports the page (its stat is not the one Git's index holds) and no writer
    # recorded it since: the append staged its entry, ran again, then the copy's.
    assert asked(bin_dir) == [1, 0, 0]
    read_only_agree(repo, card=True)


def test_the_second_run_starts_without_the_first_runs_cache(
        git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When Git does not vouch, the first run's cache, page table and index bytes are let go
    before the second run walks (the collector is paused, and an exception's frames held
    them: 40 MB over the 300 MB target at 100,000 pages): its walk meets one live cache, its
    own, and no page table more than the first walk met."""
    repo = committed_vault(git_repo)
    for name, value in slow_git(tmp_path / "bin", 1.0).items():
        monkeypatch.setenv(name, value)
    # Edited outside, valid still: Git reports it, so the first run's word is not vouched.
    (repo / PAGES / NAMES[1]).write_text(page("Edited outside."), encoding="utf-8")
    live: List[Tuple[bool, int, int]] = []
    walk = engine.writer_pages

    def counted(ctx: engine.Context) -> object:
        objects = gc.get_objects()
        live.append((ctx.speculate, sum(type(item) is engine.FileCache for item in objects),
                     sum(type(item) is engine.PageTable for item in objects)))
        return walk(ctx)

    monkeypatch.setattr(engine, "writer_pages", counted)
    gc.collect()  # (what earlier tests of this process left is counted in both walks alike)
    out, err = io.BytesIO(), io.BytesIO()
    code = engine.run(["--workspace", str(repo), "upsert", "--payload", "-"],
                      _stdin(upsert_payload(repo, "delta.md", "Delta.")), out, err)
    assert code == 0, err.getvalue()
    assert [speculating for speculating, *_counts in live] == [True, False]
    assert live[1][1:] == live[0][1:], live  # the first run's cache and table are gone


Step = Tuple[str, str, int, int, str]


@settings(max_examples=2, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(
    st.sampled_from(GIT_ACTIONS),
    st.sampled_from(("same-size", "write", "touch-old", "directory", "delete", "none")),
    st.integers(0, len(NAMES) - 1), st.integers(0, len(SUMMARIES) - 1),
    st.sampled_from(("upsert", "append", "end", "start"))), min_size=1, max_size=3))
@example(steps=[("none", "same-size", 0, 0, "upsert"), ("none", "none", 1, 1, "end"),
                ("add", "same-size", 0, 2, "append")])
@example(steps=[("untracked", "none", 0, 0, "append"), ("none", "delete", 1, 1, "upsert"),
                ("commit", "directory", 2, 0, "start")])
def test_outputs_with_the_cache_equal_outputs_without_it_when_git_answers_late(
        steps: List[Step]) -> None:
    """The property test of Git as the change source, with a Git that answers after the walk:
    every writer takes Git's word before it answers, whatever was done outside."""
    with tempfile.TemporaryDirectory() as temporary:
        scratch = Path(temporary)
        repo = committed_vault(init_repo(scratch / "repo"))
        git(repo, "checkout", "-q", "-b", "other")  # (the branch the `checkout` action takes)
        (repo / PAGES / NAMES[2]).write_text(page("On the other branch."), encoding="utf-8")
        git(repo, "commit", "-q", "-am", "other")
        git(repo, "checkout", "-q", "main")
        environment = slow_git(scratch / "bin", 0.3)
        saved = os.environ["PATH"]
        os.environ["PATH"] = environment["PATH"]
        try:
            for action, kind, number, summary, which in steps:
                git_action(repo, action, number)
                if kind != "none":
                    edit(repo, kind, number, SUMMARIES[summary])
                run_step(repo, scratch / "scratch", NAMES[number], SUMMARIES[summary], which)
                read_only_agree(repo)
        finally:
            os.environ["PATH"] = saved
        read_only_agree(repo, card=True)
