"""Issue 11: a merge driver that cannot run never drops a side. The recorded command falls back
to `git merge-file` (markers) when its interpreter is gone or fails, `resolve` refuses a file
whose resolution reverted a side's change, and `check` warns (EV090) until the driver is
reinstalled. Real repositories, real `git merge`s that really conflict."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Sequence

import pytest
from conftest import git, load_json, run_cli
from helpers_linear import frontmatter_sides, run_guarded
from helpers_merge import (
    PAGE,
    diverge,
    driven_vault,
    git_run,
    install_driver,
    record_driver,
    replace,
    resolve,
    unmerged_paths,
)

from echoes_lint.merge.driver import split_page
from echoes_lint.merge.install import driver_command, recorded_interpreter
from echoes_lint.merge.resolve import dropped_keys
from echoes_lint.rules import MAX_PER_FILE

KEYS = 100_000
# What echoes-lint 0.1 recorded: the interpreter alone, no fallback.
OLD_COMMAND = ("'/gone/env/bin/python' -c 'from echoes_lint.cli import main; main()' "
               "merge-driver --marker-size %L %O %A %B %P")


def interpreter_at(folder: Path) -> Path:
    """A stand-in for a virtual environment's `bin/python`, deleted later: it runs this one."""
    folder.mkdir(parents=True)
    python = folder / "python"
    python.write_text(f"#!/bin/sh\nexec '{sys.executable}' \"$@\"\n")
    python.chmod(0o755)
    return python


def page(repo: Path) -> str:
    return (repo / PAGE).read_text(encoding="utf-8")


@pytest.fixture
def diverged(git_repo: Path) -> Path:
    diverge(driven_vault(git_repo))
    return git_repo


def test_a_deleted_interpreter_falls_back_to_git_merge_file_with_markers(
        diverged: Path, tmp_path: Path) -> None:
    # A path with a space, a quote and `%A` (a placeholder Git would expand): the command line
    # quotes it for sh and doubles the `%` for Git's placeholder expansion.
    python = interpreter_at(tmp_path / "my env's 100%A" / "bin")
    record_driver(diverged, driver_command(str(python)))
    assert recorded_interpreter(git(diverged, "config", "merge.echoes-vault.driver").strip()) \
        == str(python)
    # While it exists, the page driver itself merges (its message names the conflicting key).
    merge = git_run(diverged, "merge", "--no-edit", "feature")
    assert "echoes-lint merge-driver: EchoesVault/pages/auth.md: frontmatter conflict in " \
           "`summary`" in merge.stderr
    git(diverged, "merge", "--abort")
    assert run_cli("check", "--select", "EV09", cwd=diverged).returncode == 0

    python.unlink()
    merge = git_run(diverged, "merge", "--no-edit", "feature")
    assert merge.returncode == 1
    assert f"echoes-lint merge-driver: {python} is missing; merged with git merge-file " \
           "instead; run echoes-lint install-merge-driver to repair the driver" in merge.stderr
    text = page(diverged)
    # Both sides are there: the conflict with markers, and theirs' other changes merged.
    assert "<<<<<<< HEAD\nsummary: Ours.\n=======\nsummary: Theirs.\n>>>>>>> feature\n" in text
    assert "stack: [python, go]\n" in text and "Line three, theirs.\n" in text
    assert unmerged_paths(diverged) == {PAGE}

    lint = run_cli("check", "--select", "EV09", cwd=diverged)
    assert f".git/config:1:1: EV090 the echoes-vault merge driver runs {python}, which is " \
           "missing" in lint.stdout
    assert resolve(diverged, "--check")[0] == 1
    # Keeping only our summary reverts theirs: refused, with the key named.
    replace(diverged / PAGE, "<<<<<<< HEAD\nsummary: Ours.\n=======\nsummary: Theirs.\n"
                             ">>>>>>> feature\n", "summary: Ours.\n")
    status, output = resolve(diverged, "--check")
    assert status == 1
    assert f"{PAGE}: their change to `summary` (line 5 of `:3:`) is absent: the file keeps " \
           "our version" in output
    assert "git add" not in output
    replace(diverged / PAGE, "summary: Ours.", "summary: Ours and theirs, reconciled.")
    status, output = resolve(diverged, "--check")
    assert status == 0, output
    assert output.endswith(f"  git add -- {PAGE}\nThen continue with: git merge --continue\n")
    # install-merge-driver records the interpreter running it now; the warning is gone.
    install_driver(diverged)
    assert run_cli("check", "--select", "EV09", cwd=diverged).returncode == 0


def test_an_interpreter_that_cannot_import_echoes_lint_also_falls_back(
        diverged: Path, tmp_path: Path) -> None:
    broken = tmp_path / "bin" / "python"
    broken.parent.mkdir()
    # What a Python without echoes_lint does: a traceback and exit status 1, which Git would
    # take for "conflict written" and keep "ours" as it is.
    broken.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'echoes_lint'\" >&2"
                      "\nexit 1\n")
    broken.chmod(0o755)
    record_driver(diverged, driver_command(str(broken)))
    merge = git_run(diverged, "merge", "--no-edit", "feature")
    assert merge.returncode == 1
    assert "it failed with exit status 1; merged with git merge-file instead" in merge.stderr
    assert "=======\nsummary: Theirs.\n>>>>>>> feature\n" in page(diverged)


def test_resolve_refuses_what_an_old_driver_command_left_until_both_sides_are_present(
        diverged: Path) -> None:
    """The bug of issue 11: the recorded interpreter is gone, Git keeps "ours" without markers."""
    record_driver(diverged, OLD_COMMAND)
    ours_before = git(diverged, "show", f"main:{PAGE}")
    assert git_run(diverged, "merge", "--no-edit", "feature").returncode != 0
    assert page(diverged) == ours_before  # no markers: nothing else would notice
    assert unmerged_paths(diverged) == {PAGE}

    status, output = resolve(diverged, "--check")
    assert status == 1
    assert "every conflicted vault file is resolved" not in output
    for line in (
        f"{PAGE}: their change to `stack` (line 3 of `:3:`) is absent: the file keeps the base "
        "version",
        f"{PAGE}: their change to `summary` (line 5 of `:3:`) is absent: the file keeps our "
        "version",
        f"{PAGE}: their line 12 of `:3:` (`Line three, theirs.`) is absent: the file keeps the "
        "base version",
    ):
        assert line in output.splitlines(), output
    assert "our change" not in output
    assert "git add" not in output
    report = json.loads(resolve(diverged, "--output-format", "json")[1])
    assert [(drop["side"], drop["key"], drop["firstLine"], drop["kept"])
            for drop in report["files"][0]["dropped"]] == [
        ("theirs", "stack", 3, "base"), ("theirs", "summary", 5, "ours"),
        ("theirs", None, 12, "base")]
    assert report["ok"] is False and report["continueCommand"] is None
    lint = run_cli("check", "--select", "EV09", cwd=diverged)
    assert "EV090 the echoes-vault merge driver runs /gone/env/bin/python, which is missing " \
           "(a moved or deleted environment): Git keeps only our side of a page" in lint.stdout

    # Bring theirs' changes in one at a time: refused until every one is present.
    replace(diverged / PAGE, "stack: [python]", "stack: [python, go]")
    replace(diverged / PAGE, "Line three.", "Line three, theirs.")
    status, output = resolve(diverged, "--check")
    assert status == 1 and "change to `summary`" in output
    assert "change to `stack`" not in output and "line 12" not in output
    replace(diverged / PAGE, "summary: Ours.", "summary: Ours, with theirs.")
    status, output = resolve(diverged, "--check")
    assert status == 0, output
    assert "absent" not in output


def test_an_intended_drop_is_accepted_by_name(diverged: Path) -> None:
    record_driver(diverged, OLD_COMMAND)
    assert git_run(diverged, "merge", "--no-edit", "feature").returncode != 0
    status, output = resolve(diverged, "--check", "--accept-dropped", PAGE)
    assert status == 0, output
    assert "is absent: the file keeps our version (accepted)" in output
    assert output.endswith(f"  git add -- {PAGE}\nThen continue with: git merge --continue\n")
    # Another path does not cover it.
    assert resolve(diverged, "--check", "--accept-dropped", "EchoesVault/pages/x.md")[0] == 1
    # From outside the work tree the path is read relative to the repository.
    outside = run_cli("--workspace", str(diverged), "resolve", "--check", "--accept-dropped",
                      PAGE, cwd=diverged.parent)
    assert outside.returncode == 0, outside.stdout


def test_a_resolution_that_takes_theirs_is_refused_for_ours_too(diverged: Path) -> None:
    assert git_run(diverged, "merge", "--no-edit", "feature").returncode != 0
    git(diverged, "checkout", "--theirs", "--", PAGE)
    status, output = resolve(diverged, "--check")
    assert status == 1
    assert f"{PAGE}: our change to `summary` (line 5 of `:2:`) is absent: the file keeps their " \
           "version" in output
    assert "their change" not in output


def test_dropped_sides_of_a_huge_page_are_found_in_linear_time(git_repo: Path) -> None:
    """100,000 frontmatter keys and 50,000 body hunks changed on both sides, resolved by taking
    ours: `resolve` names the drops within the hang guard, with a bounded report. The index
    stages are written as `git merge` leaves them (Git's own merge of this page takes minutes)."""
    base, ours, theirs = frontmatter_sides(KEYS)
    body = {name: "".join(f"{name if i % 2 == 0 else 'b'}{i}\n" for i in range(KEYS))
            for name in ("b", "o", "t")}
    page = git_repo / PAGE
    page.parent.mkdir(parents=True)
    entries = []
    for stage, text in ((1, base + body["b"]), (2, ours + body["o"]), (3, theirs + body["t"])):
        page.write_text(text, encoding="utf-8")
        blob = git(git_repo, "hash-object", "-w", "--", PAGE).strip()
        entries.append(f"100644 {blob} {stage}\t{PAGE}\n")
    git(git_repo, "update-index", "--index-info", input="".join(entries))
    page.write_text(ours + body["o"], encoding="utf-8")  # as `git checkout --ours` leaves it
    assert unmerged_paths(git_repo) == {PAGE}
    checked = run_guarded("resolve", "--check", cwd=git_repo)
    assert checked.returncode == 1, checked.stderr
    assert f"{PAGE}: their change to `k0` (line 6 of `:3:`) is absent: the file keeps our " \
           "version" in checked.stdout
    assert f"and {KEYS + KEYS // 2 - MAX_PER_FILE} more dropped changes" in checked.stdout
    assert len(checked.stdout) < 100_000
    report = load_json(run_guarded("resolve", "--output-format", "json", cwd=git_repo).stdout)
    assert report["files"][0]["dropped"][-1]["key"] == f"k{MAX_PER_FILE - 1}"


def test_a_deleted_or_added_key_that_the_file_reverted_is_named() -> None:
    texts = {1: "---\ntype: note\nowner: ana\n---\n",
             2: "---\ntype: note\nowner: ana\n---\n",
             3: "---\ntype: note\ntags: [a]\n---\n"}
    pages = {stage: split_page(text) for stage, text in texts.items()}
    current = split_page(texts[2])
    assert current is not None
    assert [drop.describe() for drop in dropped_keys(pages, current, texts)] == [
        "their deletion of `owner` is absent: the file keeps the base version",
        "their change to `tags` (line 3 of `:3:`) is absent: the file keeps the base version",
    ]


def test_one_large_hunk_against_many_small_ones_is_judged_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Theirs rewrites a whole body, ours changes every other line, the file takes theirs: every
    small hunk of ours overlaps the one large hunk of theirs, which is read once, not once per
    small hunk (that was quadratic). Counted in lines read, not in time."""
    from echoes_lint.merge import resolve as module

    size = 4000
    base = [f"base {number}" for number in range(size)]
    ours = [f"ours {number}" if number % 2 else base[number] for number in range(size)]
    theirs = [f"theirs {number}" for number in range(size)]
    texts = {1: "\n".join(base), 2: "\n".join(ours), 3: "\n".join(theirs)}
    hunks = {texts[2]: [(number + 1, 1, number + 1, 1) for number in range(1, size, 2)],
             texts[3]: [(1, size, 1, size)]}
    monkeypatch.setattr(module, "diff_hunks", lambda _top, _a, _b, text: hunks[text])
    read = 0
    written = module._written

    def counted(lines: Sequence[str], first: int, count: int) -> List[str]:
        nonlocal read
        read += count
        return written(lines, first, count)

    monkeypatch.setattr(module, "_written", counted)
    dropped = module.dropped_lines(Path("."), {1: "a", 2: "b", 3: "c"}, texts, texts[3], {})
    assert len(dropped) == size // 2 and {item.kept for item in dropped} == {"theirs"}
    assert read <= 4 * size  # each small hunk twice, the large one once per side
