"""Issue 10 items 2 and 10, merge side: `resolve`, the merge driver and the hook scripts never
run code from the repository, and odd file names, gitlinks and inputs the driver cannot merge
give clear messages and conflicts with markers, never a traceback. Real repositories, real
`git merge` of real branches, the real hook scripts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, git, page_text, run_cli
from helpers_merge import (
    PAGE,
    commit_on,
    driven_vault,
    edit_main,
    git_run,
    install_driver,
    unmerged_paths,
    vault_with_page,
)

from echoes_lint import engine
from echoes_lint.merge.githooks import hook_source

# ---------------------------------------------------------------------------------------------
# Item 2: no repository code runs
# ---------------------------------------------------------------------------------------------


def plant_traps(repo: Path, sentinel: Path) -> None:
    """A project runtime that claims a newer engine, and an `echoes_lint` package at the top of
    the work tree; each records in `sentinel` that it was executed."""
    trap = f"import pathlib\npathlib.Path({str(sentinel)!r}).open('a').write(__file__ + '\\n')\n"
    runtime = repo / engine.RUNTIME_PATH
    runtime.parent.mkdir(parents=True, exist_ok=True)
    runtime.write_text(f'ENGINE_VERSION = "99.0.0"\nPROTOCOL_VERSION = "1.0.0"\n{trap}')
    (repo / "echoes_lint").mkdir()
    (repo / "echoes_lint" / "__init__.py").write_text(trap)


def test_resolve_the_driver_and_every_hook_script_never_run_repository_code(
        git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sentinel = tmp_path / "executed"
    # The hooks' interpreter logs which hook started it, so a hook that never ran fails the test.
    calls = tmp_path / "hook-calls"
    wrapper = tmp_path / "logging-python"
    wrapper.write_text(f"#!/bin/sh\ntr '\\0' ' ' < /proc/$PPID/cmdline >> '{calls}'\n"
                       f"echo >> '{calls}'\nexec '{sys.executable}' \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("ECHOES_LINT_PYTHON", str(wrapper))
    vault_with_page(git_repo)
    install_driver(git_repo)
    assert run_cli("install-git-hooks", cwd=git_repo).returncode == 0
    shutil.copy2(ROOT / "hooks" / "pre-commit", git_repo / ".git" / "hooks" / "pre-commit")
    # From here on echoes-lint runs from outside the work tree, as an installed command does:
    # `python -m` in the work tree would import the planted package by Python's own rules.
    plant_traps(git_repo, sentinel)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "traps")  # pre-commit
    commit_on(git_repo, "feature", ("summary: Original summary.", "summary: Theirs."))  # checkout
    edit_main(git_repo, ("summary: Original summary.", "summary: Ours."))
    merge = git_run(git_repo, "merge", "--no-edit", "feature")  # the driver
    assert merge.returncode == 1
    assert "<<<<<<< HEAD\nsummary: Ours." in (git_repo / PAGE).read_text(encoding="utf-8")
    assert run_cli("--workspace", str(git_repo), "resolve", cwd=tmp_path).returncode == 0
    assert run_cli("--workspace", str(git_repo), "resolve", "--check", cwd=tmp_path).returncode == 1
    (git_repo / PAGE).write_text(page_text("Reconciled.", body="# Auth\n"), encoding="utf-8")
    checked = run_cli("--workspace", str(git_repo), "resolve", "--check", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "hydrate skipped: the project runtime is engine 99.0.0, newer than this " \
           "echoes-lint's" in checked.stdout
    git(git_repo, "commit", "-q", "-a", "--no-edit")  # pre-commit, post-merge is not run
    commit_on(git_repo, "other", ("# Auth", "# Auth, other"))
    git(git_repo, "merge", "-q", "--no-edit", "other")  # post-merge
    git(git_repo, "commit", "-q", "--amend", "--no-edit")  # post-rewrite
    hook = subprocess.run([sys.executable, str(ROOT / "hooks" / "session_start.py")],
                          input=json.dumps({"cwd": str(git_repo)}), capture_output=True,
                          text=True, check=False)
    assert hook.returncode == 0
    assert "### EchoesVault · " in json.loads(hook.stdout)["hookSpecificOutput"][
        "additionalContext"]
    assert not sentinel.exists(), sentinel.read_text()
    assert not (git_repo / "EchoesVault" / "index.md").exists()  # hydrate was skipped
    started = calls.read_text(encoding="utf-8")
    for hook_name in ("pre-commit", "post-checkout", "post-merge", "post-rewrite"):
        assert f"hooks/{hook_name}" in started, started


def test_resolve_and_hooks_hydrate_with_the_packaged_engine(git_repo: Path,
                                                           tmp_path: Path) -> None:
    assert run_cli("init", cwd=git_repo).returncode == 0
    sentinel = tmp_path / "executed"
    runtime = git_repo / engine.RUNTIME_PATH
    # The same engine version but other bytes: hydrated by the package, the file never runs.
    runtime.write_text(runtime.read_text(encoding="utf-8")
                       + f"\nopen({str(sentinel)!r}, 'w').write('ran')\n", encoding="utf-8")
    vault_with_page(git_repo)
    index = git_repo / "EchoesVault" / "index.md"
    index.unlink()
    checked = run_cli("resolve", "--check", "--output-format", "json", cwd=git_repo)
    assert json.loads(checked.stdout)["hydrate"] == {"ran": True, "error": None}
    assert "- [[auth]]: Original summary.\n" in index.read_text(encoding="utf-8")
    index.unlink()
    hook = tmp_path / "post-merge"
    hook.write_bytes(hook_source("post-merge"))
    hook.chmod(0o755)
    assert subprocess.run([str(hook), "0"], cwd=git_repo, check=False).returncode == 0
    assert "- [[auth]]: Original summary.\n" in index.read_text(encoding="utf-8")
    assert not sentinel.exists()


# ---------------------------------------------------------------------------------------------
# Item 10: odd names, gitlinks, inputs the driver cannot merge
# ---------------------------------------------------------------------------------------------


def conflicting_page(repo: Path, name: bytes, ours: str, theirs: str,
                     base: str = "Original.") -> bytes:
    """A page called `name`, committed, then given summary `theirs` on `feature` and `ours` on
    main; returns its path (bytes, relative)."""
    relative = b"EchoesVault/pages/" + name
    path = os.path.join(os.fsencode(repo), relative)

    def commit(summary: str, message: str) -> None:
        with open(path, "wb") as handle:
            handle.write(page_text(summary).encode("utf-8"))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", message)

    commit(base, f"add {name!r}")
    git(repo, "checkout", "-q", "-b", "feature")
    commit(theirs, "theirs")
    git(repo, "checkout", "-q", "main")
    commit(ours, "ours")
    return relative


@pytest.fixture
def driven(git_repo: Path) -> Path:
    return driven_vault(git_repo)


@pytest.mark.parametrize(("name", "shown"), [
    (b"new\nline.md", "new\\nline.md"),
    (b"caf\xe9.md", "caf\\xe9.md"),
    (b"esc\x1b[31m.md", "esc\\x1b[31m.md"),
])
def test_odd_file_names_get_escaped_labels_and_messages(driven: Path, name: bytes,
                                                        shown: str) -> None:
    relative = conflicting_page(driven, name, "Ours.", "Theirs.")
    merge = subprocess.run(["git", "merge", "--no-edit", "feature"], cwd=driven,
                           capture_output=True, check=False)
    assert merge.returncode == 1
    assert b"Traceback" not in merge.stderr
    label = f"EchoesVault/pages/{shown}"
    assert f"echoes-lint merge-driver: {label}: frontmatter conflict in `summary`\n".encode() \
        in merge.stderr
    with open(os.path.join(os.fsencode(driven), relative), "rb") as handle:
        merged = handle.read().decode("utf-8")
    assert "\n<<<<<<< HEAD\nsummary: Ours.\n=======\nsummary: Theirs.\n" \
           ">>>>>>> feature\n" in merged
    resolved = subprocess.run([sys.executable, "-m", "echoes_lint", "resolve"], cwd=driven,
                              capture_output=True, check=False)
    assert resolved.returncode == 0
    output = resolved.stdout.decode("utf-8")
    assert f"\n{label}: unmerged, changed on both sides; frontmatter `summary` changed " \
           "differently on both sides\n" in output
    assert b"Traceback" not in resolved.stderr
    report = run_cli("resolve", "--output-format", "json", cwd=driven)
    assert [entry["path"] for entry in json.loads(report.stdout)["files"]] == \
        [os.fsdecode(relative)]
    # Once the conflict is gone, a name with control characters is a valid page for engines
    # (the reference indexes it) and the linter reports the name itself (EV034: no writer can
    # address it). A name that is not UTF-8 cannot be written into any index: still unresolved.
    with open(os.path.join(os.fsencode(driven), relative), "wb") as handle:
        handle.write(page_text("Both.").encode("utf-8"))
    checked = run_cli("resolve", "--check", cwd=driven)
    if b"\xe9" in name:
        assert checked.returncode == 1
        assert f"\n{label}:1:1: page name is not valid UTF-8" in checked.stdout
        return
    assert checked.returncode == 0, checked.stdout
    assert "Resolved; stage with:\n  git add -- $'" in checked.stdout
    assert f"{label}:1:1: EV034 " in run_cli("check", cwd=driven).stdout


def test_odd_names_outside_pages_get_a_one_line_stage_command(git_repo: Path) -> None:
    vault_with_page(git_repo)
    relative = b"EchoesVault/raw/caf\xe9\nnotes.txt"
    path = os.path.join(os.fsencode(git_repo), relative)
    for branch, text in (("main", b"base\n"), ("feature", b"theirs\n"), ("main", b"ours\n")):
        if branch == "feature":
            git(git_repo, "checkout", "-q", "-b", "feature")
        elif text == b"ours\n":
            git(git_repo, "checkout", "-q", "main")
        with open(path, "wb") as handle:
            handle.write(text)
        git(git_repo, "add", "-A")
        git(git_repo, "commit", "-q", "-m", text.decode().strip())
    merge = subprocess.run(["git", "merge", "--no-edit", "feature"], cwd=git_repo,
                           capture_output=True, check=False)
    assert merge.returncode == 1
    listed = run_cli("resolve", cwd=git_repo).stdout
    assert "\nEchoesVault/raw/caf\\xe9\\nnotes.txt:1:1: conflict in the body" in listed
    with open(path, "wb") as handle:
        handle.write(b"both\n")
    checked = run_cli("resolve", "--check", cwd=git_repo)
    assert checked.returncode == 0, checked.stdout
    assert checked.stdout.endswith(
        "Resolved; stage with:\n  git add -- $'EchoesVault/raw/caf\\xe9\\x0anotes.txt'\n"
        "Then continue with: git merge --continue\n")


def test_a_gitlink_conflict_under_the_vault_is_explained(git_repo: Path) -> None:
    vault_with_page(git_repo)
    link = "EchoesVault/assets/tool"
    for branch, commit in (("main", "1" * 40), ("feature", "2" * 40), ("main", "3" * 40)):
        if branch == "feature":
            git(git_repo, "checkout", "-q", "-b", "feature")
        elif commit == "3" * 40:
            git(git_repo, "checkout", "-q", "main")
        git(git_repo, "update-index", "--add", "--cacheinfo", f"160000,{commit},{link}")
        git(git_repo, "commit", "-q", "-m", commit[:1])
    assert git_run(git_repo, "merge", "--no-edit", "feature").returncode != 0
    assert unmerged_paths(git_repo) == {link}
    for args in ((), ("--check",), ("--output-format", "json")):
        resolved = run_cli("resolve", *args, cwd=git_repo)
        assert "Traceback" not in resolved.stderr
        assert resolved.returncode == 0, resolved.stderr
    assert f"{link}: unmerged, changed on both sides; a submodule (gitlink): check out the " \
           f"commit to keep in the submodule, then `git add -- {link}`\n" in \
           run_cli("resolve", cwd=git_repo).stdout


def merged_page(repo: Path) -> str:
    return (repo / PAGE).read_bytes().decode("utf-8", "replace")


def test_a_clean_merge_into_an_invalid_page_is_a_conflict_with_markers(driven: Path) -> None:
    # Every side lacks `status`: each body edit alone merges, but the page stays invalid.
    edit_main(driven, ("status: active\n", ""))
    commit_on(driven, "feature", ("Line one.", "Line one, theirs."))
    edit_main(driven, ("Line four.", "Line four, ours."))
    merge = git_run(driven, "merge", "--no-edit", "feature")
    assert merge.returncode == 1
    assert "merged page would be invalid" in merge.stderr
    text = merged_page(driven)
    assert text.startswith("<<<<<<< HEAD\n---\n")
    assert "\n=======\n---\n" in text and text.endswith("\n>>>>>>> feature\n")
    assert unmerged_paths(driven) == {PAGE}


def test_binary_pages_still_get_markers(driven: Path) -> None:
    commit_on(driven, "feature", ("Line one.", "Line\0one, theirs."))
    edit_main(driven, ("Line one.", "Line\0one, ours."))
    merge = git_run(driven, "merge", "--no-edit", "feature")
    assert merge.returncode == 1
    assert "Traceback" not in merge.stderr
    text = merged_page(driven)
    assert text.startswith("<<<<<<< HEAD\n") and "\n=======\n" in text
    assert text.endswith(">>>>>>> feature\n")


def test_an_oversized_page_falls_back_to_git_merge_file(driven: Path) -> None:
    filler = ("filler line\n" * (engine.MAX_TEXT_BYTES // 12 + 1))
    edit_main(driven, ("Line four.\n", "Line four.\n" + filler))
    commit_on(driven, "feature", ("Line one.", "Line one, theirs."))
    edit_main(driven, ("Line one.", "Line one, ours."))
    merge = git_run(driven, "merge", "--no-edit", "feature")
    assert merge.returncode == 1
    assert f"echoes-lint merge-driver: {PAGE}: cannot read a merge input: file is larger than " \
           "8 MiB\n" in merge.stderr
    assert "\n<<<<<<< HEAD\nLine one, ours.\n=======\nLine one, theirs.\n" \
           ">>>>>>> feature\n" in merged_page(driven)
    # %L: the marker size Git asks for is honoured by the fallback too.
    sides = [driven / name for name in ("O", "A", "B")]
    for side, stage in zip(sides, ("1", "2", "3")):
        side.write_bytes(git_run(driven, "show", f":{stage}:{PAGE}").stdout.encode("utf-8"))
    direct = run_cli("merge-driver", "--marker-size", "9", *map(str, sides), PAGE, cwd=driven)
    assert direct.returncode == 1
    assert f"\n<<<<<<<<< ours:{PAGE}\nLine one, ours.\n=========\n" in \
        sides[1].read_text(encoding="utf-8")
