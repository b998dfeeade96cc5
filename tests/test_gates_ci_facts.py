"""`ci`'s status report from the gate's own scan costs little per page, and decides as before.

- The index is rendered from the page names in a few passes in C when every name is ASCII and
  ends in `.md`: its bytes, and build_index's collisions and errors, are those of the
  definition (each name's `page_stem`, `stem_identity` and `page_sort_key`, one at a time),
  over generated names of every shape (non-ASCII, `.MD`, `.md` alone, NFD spellings, names
  that collide).
- `check` and `ci` take the repository root from a git started before they loaded.
- The merge-driver rule's git commands start before the walk and the rule takes their answers.
- The link rule's page stems, taken from all names at once, are the stems name by name.
- The report's source lines are found by path below the vault's folder, plain or escaped.
- A page that the gate's walk let go (no rule needs its text) carries the engine's own
  `page_problems`, and `ci`'s status report on the lean scan is the engine's report on its own
  scan of the same vault (the entry headings of daily files, counted by the gate's worker,
  included).
"""

from __future__ import annotations

import datetime
import json
import os
import random
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import pytest
from conftest import init_repo, make_vault
from helpers_check import PAGES, commit, page, vault_repo, write
from hypothesis import given, settings
from hypothesis import strategies as st

from echoes_lint import checker, cli, engine
from echoes_lint.checker import run_checks
from echoes_lint.merge import ATTRIBUTES_LINE
from echoes_lint.rules import links, mergedriver

_STEMS = st.sampled_from(["a", "A", "b", "page-1", "Page-1", ".hidden", "x.", "é", "e\u0301",
                          "É", "straße", "STRASSE", "z", "a.md", "-_", "ß", "Ω", "k\u212a"])
_SUFFIXES = st.sampled_from([".md", ".md", ".md", ".MD", ".Md"])
_SUMMARIES = st.sampled_from(["One.", "Deprecated already.", "deprecated: old", "x — y"])


def _meta(summary: str, status: str) -> engine.PageMeta:
    return engine.parse_frontmatter(f"---\ntype: note\nstack: [python]\nstatus: {status}\n"
                                    f"summary: {summary}\n---\n\n# T\n")


def _defined_render(pages: list[tuple[str, engine.PageMeta]]) -> str:
    rows = sorted(((engine.page_sort_key(name), engine.index_row(name, meta))
                   for name, meta in pages), key=lambda row: row[0])
    return engine.INDEX_HEADER + ("\n" + "\n".join(row for _key, row in rows) + "\n"
                                  if rows else "")


def _defined_collisions(names: list[str]) -> list[list[str]]:
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(engine.stem_identity(name), []).append(name)
    return sorted(sorted(group) for group in groups.values() if len(group) > 1)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(st.tuples(_STEMS, _SUFFIXES, _SUMMARIES, st.booleans()), max_size=8),
       st.booleans(), st.randoms(use_true_random=False))
def test_the_index_is_rendered_as_defined_name_by_name(
        shapes: list[tuple[str, str, str, bool]], unique: bool, rng: random.Random) -> None:
    pages = [(stem + suffix, _meta(summary, "deprecated" if old else "active"))
             for stem, suffix, summary, old in shapes]
    if rng.random() < 0.2:
        pages.append((".md", _meta("Not a page name.", "active")))
    if unique:
        pages = list({name: (name, meta) for name, meta in pages}.values())
    rng.shuffle(pages)
    assert engine.render_index(pages) == _defined_render(pages)
    names = [name for name, _meta in pages]
    collisions = _defined_collisions(names)
    entries = [(name, meta, meta.problems) for name, meta in pages]
    if collisions:
        with pytest.raises(engine.VaultError) as raised:
            engine.build_index(entries)
        expected = "; ".join("page names collide after case folding: " + ", ".join(group)
                             for group in collisions)
        assert str(raised.value) == f"Cannot build the index: {expected}"
    else:
        assert engine.build_index(entries) == _defined_render(pages)


def test_ascii_names_take_the_fast_path() -> None:
    """The fast path must not silently turn into the fallback for the vaults it exists for."""
    stems, lowered = engine._page_stems(["Alpha.md", "b.c.md", "..md"])
    assert (stems, lowered) == (["Alpha", "b.c", "."], ["alpha.md", "b.c.md", "..md"])
    for names in (["a.MD"], [".md"], ["é.md"], ["a.md", ".md"], []):
        assert engine._page_stems(names)[1] is None


def _vault(tmp_path: Path) -> Path:
    repo = vault_repo(tmp_path / "repo")
    for number in range(40):
        write(repo, f"{PAGES}/page-{number:02d}.md", page(f"# P{number}\n\n[[home]]\n"))
    write(repo, f"{PAGES}/old.md", page("# Old\n", status="deprecated"))
    write(repo, f"{PAGES}/Résumé.md", page("# R\n"))
    write(repo, f"{PAGES}/broken.md", "---\ntype: note\n---\n")
    write(repo, f"{PAGES}/marked.md", page("<<<<<<< ours\na\n=======\nb\n>>>>>>> theirs\n"))
    write(repo, "EchoesVault/daily/2026-01-02/entry.md", "### Session — x\n\nText.\n")
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    for number in range(3):  # today's entries: the worker counts their headings
        write(repo, f"EchoesVault/daily/{today}/e{number}.md",
              "### Session — a\n\nOne.\n\n### Scratchpad — b\n\nTwo.\n")
    commit(repo, "pages")
    return repo


def test_let_go_pages_carry_the_engines_own_problems(tmp_path: Path) -> None:
    result = run_checks(_vault(tmp_path))
    lean = [document for document in result.scan.pages if document.text is None]
    assert len(lean) >= 40
    for document in result.scan.pages:
        assert document.page_problems == engine._PAGE_PROBLEMS.func(document)
    assert checker._NO_PROBLEMS == []  # shared: never written


def test_ci_reports_the_status_of_the_engines_own_scan(tmp_path: Path) -> None:
    repo = _vault(tmp_path)
    result = run_checks(repo, guard=True)
    lean = engine.inspect_report(engine.clone_view(result.scan))
    whole = engine.inspect_report(engine.clone_view(engine.scan_workspace(repo)))
    assert json.dumps(lean, sort_keys=True) == json.dumps(whole, sort_keys=True)
    assert lean["health"]["invalidFrontmatter"] == ["broken", "marked"]
    assert lean["health"]["conflictMarkers"] == ["pages/marked.md"]
    assert lean["health"]["todayEntries"] == 6


def test_the_merge_driver_rule_takes_the_git_answers_started_beside_the_walk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = vault_repo(tmp_path / "repo")
    git_dir = repo / ".git"
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "attributes").write_text(ATTRIBUTES_LINE + "\n", encoding="utf-8")
    events: list[str] = []
    start, scan = engine.git_start, engine.scan_workspace

    def started(workspace: Path, args: Sequence[str], stdin: bool = False) -> Any:
        events.append(" ".join(args[:2]))
        return start(workspace, args, stdin)

    def scanned(*args: Any, **kwargs: Any) -> engine.Scan:
        try:
            return scan(*args, **kwargs)
        finally:
            events.append("walked")

    monkeypatch.setattr(engine, "git_start", started)
    monkeypatch.setattr(engine, "scan_workspace", scanned)
    findings = run_checks(repo).findings
    assert [finding.code for finding in findings] == ["EV091"]  # the answers, as git gave them
    walked = events.index("walked")  # started beside the walk (by a thread), not after it
    assert {"config --show-origin", "rev-parse --git-path"} <= set(events[:walked])
    assert events.count("config --show-origin") == 1 and mergedriver._prefetched == {}
    run_checks(repo, select=["EV050"])  # the rule does not run: nothing is started for it
    assert events.count("config --show-origin") == 1


@pytest.mark.parametrize("command", [["check", "--exit-zero"],
                                     ["ci", "--summary", "false", "--fail-on", "never"]])
def test_the_gates_take_the_repository_root_git_gave_before_they_loaded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        command: list[str]) -> None:
    repo = vault_repo(tmp_path / "repo")
    asked: list[str] = []
    output = engine.git_output

    def recorded(workspace: Path, args: Sequence[str], stdin: Optional[bytes] = None) -> Any:
        asked.append(" ".join(args))
        return output(workspace, args, stdin)

    monkeypatch.setattr(engine, "git_output", recorded)
    monkeypatch.chdir(repo / PAGES)  # below the root: git names the root
    assert cli.main(command) == 0
    assert "rev-parse --show-toplevel" not in asked and cli._toplevels == {}
    assert "EchoesVault" in capsys.readouterr().out or command[0] == "check"
    # The option's folder (as the Action passes it): started there before the loading too.
    assert cli.main([*command, f"--workspace={repo}"]) == 0
    assert "rev-parse --show-toplevel" not in asked and cli._toplevels == {}
    # Two of them: which one counts is argparse's to say; the check asks git itself.
    assert cli.main([*command, "--workspace", str(tmp_path), f"--workspace={repo}"]) == 0
    assert asked.count("rev-parse --show-toplevel") == 1
    monkeypatch.chdir(tmp_path)  # no repository here: the option still names one
    assert cli.main(["check", "--workspace", str(repo)]) == 0 and cli._toplevels == {}


@pytest.mark.parametrize("name", ["plain.md", "bad\x1bname.md"])
def test_a_vault_below_the_root_shows_the_source_lines_of_its_findings(
        tmp_path: Path, name: str) -> None:
    """The report finds a document by its path below the vault's folder, plain or escaped."""
    repo = init_repo(tmp_path / "repo")
    vault = make_vault(repo / "docs")
    write(vault.parent, f"{PAGES}/{name}", page("# P\n\nSee [[gone]] here.\n"))
    write(vault.parent, f"{PAGES}/other.md", page("# O\n\nNo links.\n"))
    commit(repo, "vault")
    result = run_checks(repo, vault_dir="docs/EchoesVault")
    shown = f"docs/{PAGES}/{engine.printable(name)}"
    assert {finding.path for finding in result.findings} == {shown}
    assert result.sources() == {shown: page("# P\n\nSee [[gone]] here.\n").split("\n")}


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.frozensets(st.sampled_from(["a.md", "b.MD", ".md", "c", "d.md.md", "e.mdx", "f.md",
                                      "é.md", "g h.md", "", "md", "x.md"]), max_size=6))
def test_link_stems_taken_at_once_are_the_stems_name_by_name(names: frozenset[str]) -> None:
    assert links.PageLinks(names).stems == frozenset(name[:-3] for name in names
                                                    if name.endswith(".md"))


def test_a_check_that_fails_collects_the_git_it_started_for_the_merge_driver_rule(
        tmp_path: Path) -> None:
    """A check that fails after the early git commands started (here: Git cannot read its
    index) leaves none of them running or unclaimed."""
    repo = vault_repo(tmp_path / "repo")
    (repo / ".git" / "index").write_bytes(b"DIRC garbage" * 10)
    with pytest.raises(checker.GitUnavailable):
        run_checks(repo)
    assert mergedriver._prefetched == {}


@pytest.mark.parametrize("command", [["check", "--bogus"], ["ci", "--bogus"], ["check", "--help"]])
def test_a_usage_error_does_not_wait_for_the_early_git(tmp_path: Path,
                                                       command: list[str]) -> None:
    """The early `rev-parse` that no check takes is ended, not waited for: a `.git` whose file
    blocks git (a FIFO) must not hold a usage error's exit."""
    repo = init_repo(tmp_path / "repo")
    os.mkfifo(repo / ".git" / "commondir")
    done = subprocess.run([sys.executable, "-m", "echoes_lint", *command], cwd=repo,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == (0 if "--help" in command else 2)
    assert ("usage:" in done.stdout) if "--help" in command else (
        "unrecognized arguments: --bogus" in done.stderr)
