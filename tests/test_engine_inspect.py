"""Read-only commands end to end: protocol, inspect/status, search, hash, and the bare runtime."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from conftest import MARKER, git, make_vault, page_text, run_cli, write_page

from echoes_lint import engine

ENGINE_FILE = Path(engine.__file__)


def status(repo: Path, *extra: str) -> dict:  # type: ignore[type-arg]
    completed = run_cli("--workspace", str(repo), "status", *extra, cwd=repo)
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    result: dict = json.loads(completed.stdout)  # type: ignore[type-arg]
    return result


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file and folder below root with its bytes and modification time."""
    found: dict[str, tuple[bytes, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if ".git" in dirnames:
            dirnames.remove(".git")
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            data = b"" if path.is_dir() else path.read_bytes()
            found[str(path.relative_to(root))] = (data, path.lstat().st_mtime_ns)
    return found


def assert_protocol_error(completed: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert completed.returncode == 2
    assert completed.stdout == ""
    lines = completed.stderr.splitlines()
    assert len(lines) == 1, completed.stderr
    error = json.loads(lines[0])
    assert error["ok"] is False and fragment in error["error"]


@pytest.fixture
def vault_repo(git_repo: Path) -> Path:
    make_vault(git_repo)
    write_page(git_repo, "alpha.md", summary="Alpha summary.", body="# Alpha\nUses JWT tokens.\n")
    write_page(git_repo, "beta.md", summary="Beta summary.", status="deprecated",
               body="> [!warning] DEPRECATED\nSee [[alpha]]. jwt again\n")
    daily = git_repo / "EchoesVault" / "daily" / "2026-01-02"
    daily.mkdir(parents=True)
    (daily / "20260102T030405000000Z-session-codex-0a1b2c3d.md").write_text(
        "### Session — 2026-01-02T04:04:05+01:00\n\nAgent: `codex`\n\n- Done.\n", encoding="utf-8")
    return git_repo


def test_protocol_reports_versions_and_all_fifteen_commands(tmp_path: Path) -> None:
    completed = run_cli("--workspace", str(tmp_path), "protocol", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)
    assert result["supportedProtocolVersion"] == "1.0.0"
    assert result["engineVersion"] == engine.ENGINE_VERSION
    assert result["codexAdapterVersion"] == result["managedAdapterVersion"]
    assert result["vaultProtocolVersion"] is None
    assert result["marker"]["exists"] is False
    assert result["projectRuntime"]["exists"] is False
    assert len(result["commands"]) == 15 and "rebuild-index" in result["commands"]


def test_protocol_reads_the_marker_and_project_runtime(vault_repo: Path) -> None:
    runtime = vault_repo / ".echoes-vault" / "echoes_vault.py"
    runtime.parent.mkdir()
    shutil.copyfile(ENGINE_FILE, runtime)
    result = json.loads(run_cli("protocol", cwd=vault_repo / "EchoesVault").stdout)
    assert result["vaultProtocolVersion"] == "1.0.0"
    assert result["marker"]["valid"] is True
    assert result["projectRuntime"]["recognized"] and result["projectRuntime"]["current"]


def test_status_of_a_healthy_vault_after_commit(vault_repo: Path) -> None:
    add_protocol_files(vault_repo)
    git(vault_repo, "add", "-A")
    git(vault_repo, "commit", "-qm", "vault")
    result = status(vault_repo)
    health = result["health"]
    assert health["integrity"] == "healthy", {k: v for k, v in health.items() if v}
    assert health["issueCount"] == 0
    assert health["totalPages"] == 2 and health["totalDailyLogs"] == 1
    assert health["deprecatedSlugs"] == ["beta"]
    assert health["generatedIndex"] is True  # a protocol fact, as in the reference engine
    assert health["git"]["ready"] is True
    assert result["indexRefresh"]["needsRefresh"] is True
    assert result["state"]["initialized"] is True


def add_protocol_files(repo: Path) -> None:
    """The committed files `init` would write, laid down by hand."""
    (repo / "EchoesVault" / "AGENT_PROTOCOL.md").write_text(
        f"# Protocol\n\n<!-- {engine.GENERATED_SIGNATURE}. -->\n", encoding="utf-8")
    runtime_dir = repo / ".echoes-vault"
    runtime_dir.mkdir(exist_ok=True)
    shutil.copyfile(ENGINE_FILE, runtime_dir / "echoes_vault.py")
    (runtime_dir / ".gitignore").write_text("/state.json\n/lock\n", encoding="utf-8")
    for guide in engine.ROOT_GUIDES:
        (repo / guide).write_text(f"{engine.GUIDE_START}\nmanaged\n{engine.GUIDE_END}\n",
                                  encoding="utf-8")
    for relative in (*engine.SKILL_PATHS, *engine.OPENCODE_COMMAND_PATHS):
        target = repo / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"<!-- {engine.GENERATED_SIGNATURE}. -->\n", encoding="utf-8")


def test_status_and_inspect_are_strictly_read_only(vault_repo: Path) -> None:
    add_protocol_files(vault_repo)
    (vault_repo / "EchoesVault" / "index.md").write_text("# stale index\n", encoding="utf-8")
    (vault_repo / ".echoes-vault" / "state.json").write_text("{not json", encoding="utf-8")
    write_page(vault_repo, "broken.md").write_text("no frontmatter\n", encoding="utf-8")
    before = snapshot(vault_repo)
    git_index = (vault_repo / ".git" / "index").exists()
    for args in (("status",), ("inspect",), ("status", "--format", "card"),
                 ("inspect", "--format", "card")):
        completed = run_cli("--workspace", str(vault_repo), *args, cwd=vault_repo)
        assert completed.returncode == 0, completed.stderr
    assert snapshot(vault_repo) == before
    assert not (vault_repo / ".echoes-vault" / "lock").exists()
    assert (vault_repo / ".git" / "index").exists() == git_index


def test_status_reports_every_problem_kind(vault_repo: Path) -> None:
    vault = vault_repo / "EchoesVault"
    write_page(vault_repo, "broken.md").write_text("no frontmatter\n", encoding="utf-8")
    write_page(vault_repo, "conflicted.md").write_text(
        page_text() + "<<<<<<< HEAD\na\n=======\nb\n>>>>>>> topic\n", encoding="utf-8")
    (vault / "pages" / "binary.md").write_bytes(b"---\x00\xff")
    (vault / "pages" / "link.md").symlink_to(vault / "pages" / "alpha.md")
    (vault / "index.md").write_text(
        engine.INDEX_HEADER + "\n- [[alpha]]: Alpha summary.\n- [[alpha]]: again\n- [[gone]]:\n",
        encoding="utf-8")
    (vault_repo / ".echoes-vault").mkdir()
    (vault_repo / ".echoes-vault" / "state.json").write_text("[]", encoding="utf-8")
    health = status(vault_repo)["health"]
    # Page stems, as the reference engine names invalid pages.
    assert health["invalidFrontmatter"] == ["binary", "broken", "conflicted"]
    assert health["conflictMarkers"] == ["pages/conflicted.md"]
    assert health["symbolicLinks"] == ["pages/link.md"]
    assert health["duplicateIndexEntries"] == ["alpha"]
    assert health["emptyDescriptions"] == ["gone"]
    assert health["missingPages"] == ["gone"]
    assert "beta" in health["orphanPages"]
    assert health["indexBuildErrors"] and "broken.md" in health["indexBuildErrors"][0]
    assert health["stateFile"] == {"exists": True, "valid": False,
                                   "error": "state root is not an object"}
    assert health["integrity"] == "attention"
    expected = sum(len(health[key]) for key in engine.HEALTH_ISSUE_KEYS) + 1
    assert health["issueCount"] == expected


def test_git_readiness_in_a_real_repository_with_non_ascii_names(vault_repo: Path) -> None:
    vault = vault_repo / "EchoesVault"
    (vault_repo / ".gitignore").write_text("EchoesVault/pages/secret*\n", encoding="utf-8")
    git(vault_repo, "add", "-A")
    git(vault_repo, "commit", "-qm", "base")
    (vault / "index.md").write_text(engine.INDEX_HEADER, encoding="utf-8")
    (vault_repo / ".echoes-vault").mkdir()
    (vault_repo / ".echoes-vault" / "state.json").write_text("{}", encoding="utf-8")
    git(vault_repo, "add", "-f", "EchoesVault/index.md", ".echoes-vault/state.json")
    git(vault_repo, "commit", "-qm", "oops: local files")
    untracked = unicodedata.normalize("NFC", "Überblick der Straße.md")
    write_page(vault_repo, untracked)
    write_page(vault_repo, "secret ñotes.md")
    readiness = status(vault_repo)["health"]["git"]
    assert readiness["available"] is True and readiness["ready"] is False
    assert readiness["trackedLocalFiles"] == [".echoes-vault/state.json", "EchoesVault/index.md"]
    assert readiness["untrackedDurableFiles"] == [f"EchoesVault/pages/{untracked}"]
    assert readiness["ignoredDurableFiles"] == ["EchoesVault/pages/secret ñotes.md"]
    assert readiness["suggestedCommands"] == [
        "git rm --cached -- .echoes-vault/state.json EchoesVault/index.md",
        "git add -f -- 'EchoesVault/pages/secret ñotes.md'",
        f"git add -- 'EchoesVault/pages/{untracked}'",
    ]
    # Running the printed commands commits every durable file and untracks the local ones...
    for command in readiness["suggestedCommands"]:
        subprocess.run(command, shell=True, cwd=vault_repo, check=True, capture_output=True)
    readiness = status(vault_repo)["health"]["git"]
    assert readiness["trackedLocalFiles"] == readiness["untrackedDurableFiles"] == []
    # ...but, as for the reference engine, a durable file stays reported while an ignore rule
    # matches it, tracked or not: the rule would keep the next such file out of Git.
    assert readiness["ignoredDurableFiles"] == ["EchoesVault/pages/secret ñotes.md"]
    (vault_repo / ".gitignore").write_text("", encoding="utf-8")
    assert status(vault_repo)["health"]["git"]["ready"] is True


def test_status_card_badges(vault_repo: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    card = run_cli("status", "--format", "card", cwd=empty).stdout
    assert card.startswith("### EchoesVault · Not initialized\n")
    (vault_repo / "EchoesVault" / ".echoes-vault.json").unlink()
    card = run_cli("status", "--format", "card", cwd=vault_repo).stdout
    assert card.startswith("### EchoesVault · Legacy vault detected\n")
    (vault_repo / "EchoesVault" / ".echoes-vault.json").write_text(json.dumps(MARKER))
    card = run_cli("status", "--format", "card", cwd=vault_repo).stdout
    first = card.splitlines()[0]
    assert first.startswith("### EchoesVault · Needs attention (")
    assert "| 2 pages · 1 logs · 1 deprecated |" in card
    assert "\ngit add -- " in card and " EchoesVault/pages/alpha.md" in card


def test_status_in_a_folder_that_is_not_a_repository(tmp_path: Path) -> None:
    make_vault(tmp_path)
    write_page(tmp_path, "alpha.md")
    result = status(tmp_path)
    assert result["workspace"] == str(tmp_path.resolve())
    assert result["health"]["git"]["available"] is False
    assert result["health"]["gitReadiness"] == []


def test_workspace_resolves_to_the_git_top_level(vault_repo: Path) -> None:
    completed = run_cli("status", cwd=vault_repo / "EchoesVault" / "pages")
    assert json.loads(completed.stdout)["workspace"] == str(vault_repo.resolve())


# --- search and hash ---------------------------------------------------------------------------


def test_search_is_literal_case_insensitive_and_reads_the_whole_page(vault_repo: Path) -> None:
    result = json.loads(run_cli("search", "JWT", cwd=vault_repo).stdout)
    assert result["truncated"] is False
    assert result["results"] == [
        {"file": "EchoesVault/pages/alpha.md", "line": 9, "text": "Uses JWT tokens."},
        {"file": "EchoesVault/pages/beta.md", "line": 9, "text": "See [[alpha]]. jwt again"},
    ]
    # As the reference engine: frontmatter lines are page lines too.
    summary_only = json.loads(run_cli("search", "Alpha summary", cwd=vault_repo).stdout)
    assert summary_only["results"] == [
        {"file": "EchoesVault/pages/alpha.md", "line": 5, "text": "summary: Alpha summary."}]
    regex_chars = json.loads(run_cli("search", "[[alpha]]", cwd=vault_repo).stdout)
    assert len(regex_chars["results"]) == 1


def test_search_limit_is_clamped_and_truncation_reported(vault_repo: Path) -> None:
    write_page(vault_repo, "many.md", body="\n".join(["needle " + "x" * 400] * 600) + "\n")
    result = json.loads(run_cli("search", "needle", "--limit", "0", cwd=vault_repo).stdout)
    assert len(result["results"]) == 1 and result["truncated"] is True
    assert len(result["results"][0]["text"]) == 300
    result = json.loads(run_cli("search", "needle", "--limit", "9999", cwd=vault_repo).stdout)
    assert len(result["results"]) == 500 and result["truncated"]


def test_search_rejects_an_empty_query(vault_repo: Path) -> None:
    assert_protocol_error(run_cli("search", "   ", cwd=vault_repo), "empty")


def test_hash_matches_sha256_of_normalised_text(vault_repo: Path) -> None:
    page = write_page(vault_repo, "crlf.md")
    page.write_bytes(page_text().replace("\n", "\r\n").encode())
    result = json.loads(run_cli("hash", "crlf", cwd=vault_repo).stdout)
    assert result["page"] == str(page)
    assert result["sha256"] == engine.sha256_text(page_text())


def test_hash_errors_are_one_json_line(vault_repo: Path) -> None:
    assert_protocol_error(run_cli("hash", "missing.md", cwd=vault_repo), "does not exist")
    assert_protocol_error(run_cli("hash", "..escape", cwd=vault_repo), "'..'")
    assert_protocol_error(run_cli("hash", "../escape", cwd=vault_repo), "must not contain")
    (vault_repo / "EchoesVault" / "pages" / "link.md").symlink_to("alpha.md")
    assert_protocol_error(run_cli("hash", "link.md", cwd=vault_repo), "symbolic link")


def test_usage_errors_are_protocol_errors(tmp_path: Path) -> None:
    assert_protocol_error(run_cli("no-such-command", cwd=tmp_path), "invalid choice")
    assert_protocol_error(run_cli("search", cwd=tmp_path), "required")
    assert_protocol_error(run_cli("--workspace", str(tmp_path / "nope"), "status", cwd=tmp_path),
                          "not a directory")


def test_bad_files_never_produce_a_traceback(vault_repo: Path) -> None:
    pages = vault_repo / "EchoesVault" / "pages"
    (pages / "huge.md").write_bytes(b"---\n" + b"x" * (engine.MAX_TEXT_BYTES + 1))
    (pages / "latin1.md").write_bytes("---\nsummary: café\n".encode("latin-1"))
    (pages / "nul.md").write_bytes(b"\x00" * 10)
    (pages / "dir.md").mkdir()
    unreadable = pages / "locked.md"
    unreadable.write_text(page_text())
    unreadable.chmod(0)
    try:
        health = status(vault_repo)["health"]
    finally:
        unreadable.chmod(0o644)
    assert "pages/huge.md" in health["unreadableFiles"]
    assert {"latin1", "nul", "huge"} <= set(health["invalidFrontmatter"])
    if os.geteuid() != 0:  # root reads mode-0 files
        assert "pages/locked.md" in health["unreadableFiles"]


# --- the portable runtime as a bare script -----------------------------------------------------


def python_versions() -> list[str]:
    """This interpreter plus every supported CPython that pyenv provides on the machine."""
    found = [sys.executable]
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for candidate in sorted(pyenv.glob("3.*/bin/python3")):
        if 9 <= int(candidate.parent.parent.name.split(".")[1]) <= 13:
            found.append(str(candidate))
    return found


@pytest.mark.parametrize("python", python_versions())
def test_runtime_file_runs_isolated_without_site_packages(vault_repo: Path, tmp_path: Path,
                                                          python: str) -> None:
    runtime = vault_repo / ".echoes-vault" / "echoes_vault.py"
    runtime.parent.mkdir()
    shutil.copyfile(ENGINE_FILE, runtime)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"]}
    for args in (("status",), ("status", "--format", "card"), ("search", "jwt"),
                 ("hash", "alpha.md"), ("protocol",)):
        completed = subprocess.run(
            [python, "-I", "-S", str(runtime), "--workspace", str(vault_repo), *args],
            cwd=elsewhere, capture_output=True, env=env, check=False,
        )
        assert completed.returncode == 0, (python, args, completed.stderr)
        assert completed.stderr == b""
    reference = run_cli("--workspace", str(vault_repo), "status", cwd=vault_repo).stdout
    bare = subprocess.run([python, "-I", str(runtime), "--workspace", str(vault_repo), "status"],
                          capture_output=True, text=True, env=env, check=True).stdout
    assert without_volatile(json.loads(bare)) == without_volatile(json.loads(reference))


def without_volatile(report: dict) -> dict:  # type: ignore[type-arg]
    report["health"]["storage"].pop("lastModified")
    return report


def test_a_symlinked_root_guide_is_an_adapter_conflict_not_missing(vault_repo: Path) -> None:
    add_protocol_files(vault_repo)
    (vault_repo / "CLAUDE.md").unlink()
    (vault_repo / "CLAUDE.md").symlink_to("AGENTS.md")
    health = status(vault_repo)["health"]
    assert health["adapterConfiguration"] == ["CLAUDE.md"]
    assert "../CLAUDE.md" not in health["missingStructure"]


def test_legacy_redirect_skills_count_as_durable_files() -> None:
    assert engine.is_durable_path(".opencode/skills/echoes-search-vault-pages/SKILL.md")
    assert not engine.is_durable_path(".opencode/skills/someone-else/SKILL.md")
    assert not engine.is_durable_path("EchoesVault/index.md")


# --- odd names, Unicode forms and confinement --------------------------------------------------


def test_a_page_name_that_is_not_utf8_is_reported_without_a_traceback(vault_repo: Path) -> None:
    pages = os.fsencode(vault_repo / "EchoesVault" / "pages")
    with open(os.path.join(pages, b"bad\xff.md"), "wb") as handle:
        handle.write(page_text().encode())
    completed = run_cli("status", cwd=vault_repo)
    assert completed.returncode == 0 and completed.stderr == ""
    health = json.loads(completed.stdout)["health"]
    # JSON carries the undecodable byte as the escape \udcff, which reads back as os.fsdecode does.
    assert health["invalidFrontmatter"] == [os.fsdecode(b"bad\xff")]
    assert "not valid UTF-8" in health["indexBuildErrors"][0]
    for args in (("status", "--format", "card"), ("search", "JWT")):
        completed = run_cli(*args, cwd=vault_repo)
        assert completed.returncode == 0 and completed.stderr == "", completed.stderr
    # `hash` reads what the reference reads: the page exists under that (undecodable) name.
    hashed = json.loads(run_cli("hash", os.fsdecode(b"bad\xff.md"), cwd=vault_repo).stdout)
    assert hashed["sha256"] == engine.sha256_text(page_text())


def test_a_page_name_with_a_control_character_is_indexed_as_the_reference_does(
        vault_repo: Path) -> None:
    # The reference engine indexes it (the linter reports it as EV034); writers refuse the name.
    write_page(vault_repo, "two\nlines.md")
    health = status(vault_repo)["health"]
    assert health["invalidFrontmatter"] == [] and health["indexBuildErrors"] == []
    assert "- [[two\nlines]]: A page.\n" in engine.build_index(
        engine.scan_index_pages(engine.scan_workspace(vault_repo, git=False)))


def test_hash_finds_a_page_stored_in_decomposed_unicode(vault_repo: Path) -> None:
    stored = write_page(vault_repo, unicodedata.normalize("NFD", "café.md"))
    for requested in ("café.md", unicodedata.normalize("NFD", "café")):
        result = json.loads(run_cli("hash", requested, cwd=vault_repo).stdout)
        assert result["page"] == str(stored)
        assert result["sha256"] == engine.sha256_text(page_text())


def test_search_and_hash_refuse_a_pages_folder_linked_outside(vault_repo: Path,
                                                              tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.md").write_text(page_text(body="TOPSECRET\n"), encoding="utf-8")
    pages = vault_repo / "EchoesVault" / "pages"
    shutil.rmtree(pages)
    pages.symlink_to(outside)
    assert_protocol_error(run_cli("search", "TOPSECRET", cwd=vault_repo), "symbolic link")
    assert_protocol_error(run_cli("hash", "leak.md", cwd=vault_repo), "symbolic link")


def test_a_delimiter_with_trailing_spaces_is_rejected_with_a_hint(vault_repo: Path) -> None:
    write_page(vault_repo, "spaces.md").write_text(
        page_text().replace("\n---\n", "\n---  \n", 1), encoding="utf-8")
    health = status(vault_repo)["health"]
    assert health["invalidFrontmatter"] == ["spaces"]
    assert "`---` followed by spaces" in health["indexBuildErrors"][0]


def test_pages_are_selected_as_the_reference_selects_them(vault_repo: Path) -> None:
    pages = vault_repo / "EchoesVault" / "pages"
    (pages / "Notes.MD").write_text(page_text(), encoding="utf-8")
    (pages / ".hidden.md").write_text(page_text(), encoding="utf-8")
    (pages / "nested").mkdir()
    (pages / "nested" / "deep.md").write_text(page_text(), encoding="utf-8")
    (vault_repo / ".gitignore").write_text(".DS_Store\n", encoding="utf-8")
    (pages / ".DS_Store").write_bytes(b"\0")
    (pages / ".md").write_text(page_text(), encoding="utf-8")
    health = status(vault_repo)["health"]
    # As the reference selects pages: a case-insensitive `.md` suffix, hidden names included;
    # `.md` alone has no suffix.
    assert health["strayPageEntries"] == ["pages/.md", "pages/nested/"]
    assert health["totalPages"] == 4


def test_no_command_is_a_protocol_error_for_the_runtime(tmp_path: Path) -> None:
    # Agents call the runtime; `echoes-lint` without a command prints its usage instead.
    runtime = subprocess.run([sys.executable, "-I", str(ENGINE_FILE)], cwd=tmp_path,
                             capture_output=True, text=True, check=False)
    assert_protocol_error(runtime, "required")


@pytest.mark.parametrize("kind", ["uninitialized", "legacy"])
def test_status_is_read_only_in_uninitialized_and_legacy_folders(git_repo: Path,
                                                                  kind: str) -> None:
    (git_repo / "README.md").write_text("project\n", encoding="utf-8")
    if kind == "legacy":
        write_page(git_repo, "old.md")
        (git_repo / "EchoesVault" / "index.md").write_text("# EchoesVault Index\n- [[old]]: x\n")
    before = snapshot(git_repo)
    for args in (("status",), ("inspect", "--format", "card"), ("protocol",)):
        assert run_cli(*args, cwd=git_repo).returncode == 0
    assert snapshot(git_repo) == before


def test_conflict_markers_in_raw_notes_are_reported_too(vault_repo: Path) -> None:
    notes = vault_repo / "EchoesVault" / "raw" / "notes.md"
    notes.write_text("<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> topic\n", encoding="utf-8")
    (vault_repo / "EchoesVault" / "assets" / "diagram.png").write_bytes(b"<<<<<<< HEAD\n")
    assert status(vault_repo)["health"]["conflictMarkers"] == ["raw/notes.md"]
