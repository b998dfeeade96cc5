"""Issue 12: `check --fix` as a user runs it: Git index fixes, unsafe fixes, exit codes, the
summary, `--show-fixes`, the json and SARIF fix objects, `echoes-lint rule`, and where fixing is
refused (`--staged`, `ci`)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from conftest import git, init_repo, make_vault, run_cli
from helpers_check import PAGES, commit, lint, page, parsed, vault_repo, write
from helpers_gates import snapshot
from test_fix_rules import DEPRECATED, FRONT

from echoes_lint.findings import RULES

SARIF_SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"


def tracked(repo: Path) -> list[str]:
    return git(repo, "ls-files").split()


def test_tracked_local_files_leave_the_index_and_stay_on_disk(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, "EchoesVault/index.md", "# index\n")
    write(repo, ".echoes-vault/state.json", "{}\n")
    git(repo, "add", "-f", "EchoesVault/index.md", ".echoes-vault/state.json")
    commit(repo, "local files")
    diff = lint(repo, "--diff")
    assert (diff.returncode, diff.stdout) == (1, "")
    # One command for both, exactly what --fix runs.
    assert diff.stderr == ("Would run: git rm --cached -q -- .echoes-vault/state.json "
                           "EchoesVault/index.md\n"
                           "Would fix 2 findings.\n")
    assert "EchoesVault/index.md" in tracked(repo)
    fixed = lint(repo, "--fix")
    assert (fixed.returncode, fixed.stdout) == (0, "Found 2 errors (2 fixed, 0 remaining).\n")
    assert "EchoesVault/index.md" not in tracked(repo)
    assert ".echoes-vault/state.json" not in tracked(repo)
    assert (repo / "EchoesVault/index.md").read_text(encoding="utf-8") == "# index\n"
    assert (repo / ".echoes-vault/state.json").is_file()
    assert lint(repo, "--fix").stdout == "All checks passed!\n"


def test_untracked_and_ignored_durable_files_are_added(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/new.md", page())
    write(repo, "EchoesVault/assets/hidden.png", "png\n")
    write(repo, ".gitignore", "*.png\n")
    commit(repo, "ignore pngs", ".gitignore")
    shown = lint(repo, "--fix", "--show-fixes")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    # Force-added, the asset is tracked but still ignored: that needs the rule changed.
    assert parsed(shown.stdout) == [("EchoesVault/assets/hidden.png", 1, 1, "EV022")]
    assert "remove the rule that `git check-ignore" in shown.stdout
    assert shown.stdout.endswith(
        "Fixed 2 warnings:\n"
        "- EchoesVault/assets/hidden.png:\n    1 × EV022 (untracked-durable-file)\n"
        f"- {PAGES}/new.md:\n    1 × EV022 (untracked-durable-file)\n"
        "\nFound 3 warnings (2 fixed, 1 remaining).\n")
    staged = git(repo, "diff", "--cached", "--name-only").split()
    assert staged == ["EchoesVault/assets/hidden.png", f"{PAGES}/new.md"]


def test_untracked_pages_are_added_together(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    names = [f"{PAGES}/{name}.md" for name in ("a", "b b", "c")]
    for name in names:
        write(repo, name, page())
    diff = lint(repo, "--diff")
    assert diff.stderr == (f"Would run: git add -- {PAGES}/a.md '{PAGES}/b b.md' {PAGES}/c.md\n"
                           "Would fix 3 findings.\n")
    fixed = lint(repo, "--fix")
    assert fixed.stdout == "Found 3 warnings (3 fixed, 0 remaining).\n"
    assert git(repo, "diff", "--cached", "--name-only", "-z").split("\0")[:-1] == names


def test_a_suffix_rename_is_unsafe(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/Notes.MD", page())
    commit(repo, "notes")
    safe = lint(repo, "--fix")
    assert safe.returncode == 1
    assert [found[3] for found in parsed(safe.stdout)] == ["EV033"]
    assert safe.stdout.endswith("\nFound 1 error.\n")
    assert (repo / PAGES / "Notes.MD").is_file()
    diff = lint(repo, "--diff", "--unsafe-fixes")
    assert diff.returncode == 1
    assert f"Would run: git mv -- {PAGES}/Notes.MD {PAGES}/Notes.md\n" in diff.stderr
    unsafe = lint(repo, "--fix", "--unsafe-fixes")
    assert (unsafe.returncode, unsafe.stdout) == (0, "Found 1 error (1 fixed, 0 remaining).\n")
    assert f"{PAGES}/Notes.md" in tracked(repo)
    assert not (repo / PAGES / "Notes.MD").exists()


@pytest.mark.parametrize(("code", "source", "target"), [
    ("EV032", f"{PAGES}/.hidden.md", f"{PAGES}/hidden.md"),
    ("EV031", f"{PAGES}/picture.png", "EchoesVault/assets/picture.png"),
    ("EV031", f"{PAGES}/Cafe\u0301.md", f"{PAGES}/Caf\u00e9.md"),
])
def test_other_renames_are_unsafe_too(tmp_path: Path, code: str, source: str,
                                      target: str) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, source, page())
    commit(repo, "file")
    assert lint(repo, "--fix").returncode == 1
    assert (repo / source).is_file()
    unsafe = lint(repo, "--fix", "--unsafe-fixes")
    assert (unsafe.returncode, unsafe.stdout) == (0, "Found 1 error (1 fixed, 0 remaining).\n")
    assert git(repo, "ls-files", "-z", "--", target).split("\0")[0] == target
    assert (repo / target).is_file()


def test_an_untracked_file_is_never_renamed(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/Notes.MD", page())
    result = lint(repo, "--fix", "--unsafe-fixes", "--select", "EV033")
    assert result.returncode == 1
    assert (repo / PAGES / "Notes.MD").is_file()
    assert "mv -- EchoesVault/pages/Notes.MD EchoesVault/pages/Notes.md" in result.stdout


def test_unfixable_findings_stay_untouched_and_exit_1(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/merge.md", page(body="<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n"))
    write(repo, f"{PAGES}/bad.md", "---\ntype: note\n---\n")
    write(repo, f"{PAGES}/links.md", page(body="See [[nowhere]].\n"))
    commit(repo, "unfixable")
    before = snapshot(repo)
    result = lint(repo, "--fix")
    assert result.returncode == 1
    assert snapshot(repo) == before
    assert "echoes-lint resolve" in result.stdout
    assert [found[3] for found in parsed(result.stdout)] == ["EV015", "EV015", "EV015", "EV050",
                                                             "EV001"]
    assert result.stdout.endswith("\nFound 4 errors and 1 warning.\n")
    assert lint(repo, "--diff").returncode == 0


def test_exit_codes_after_fixing(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/old.md", f"{DEPRECATED}\n# Old\n")
    write(repo, f"{PAGES}/merge.md", page(body="<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n"))
    commit(repo, "pages")
    zero = lint(repo, "--fix", "--exit-zero")
    assert zero.returncode == 0
    assert zero.stdout.endswith("\nFound 1 error and 1 warning (1 fixed, 1 remaining).\n")
    write(repo, f"{PAGES}/merge.md", page())
    write(repo, f"{PAGES}/old.md", f"{DEPRECATED}\n# Old\n")
    commit(repo, "resolved")
    assert lint(repo, "--fix", "--exit-non-zero-on-fix").returncode == 1
    assert lint(repo, "--fix", "--exit-non-zero-on-fix").returncode == 0  # nothing left to fix


def test_json_and_sarif_carry_the_fixes(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/setext.md", f"{FRONT}\nTitle\n=======\n\nNext\n\n=======\n")
    write(repo, "EchoesVault/index.md", "# index\n")
    git(repo, "add", "-f", "EchoesVault/index.md")
    commit(repo, "page")
    items = json.loads(lint(repo, "--output-format", "json").stdout)
    fixes = {(item["code"], item["location"]["row"]): item["fix"] for item in items}
    assert fixes[("EV002", 9)] == {
        "applicability": "safe", "message": "lengthen the setext underline to `========`",
        "edits": [{"content": "=", "location": {"row": 9, "column": 8},
                   "end_location": {"row": 9, "column": 8}}]}
    assert fixes[("EV002", 13)] is None  # after a blank line: text, no fix
    assert fixes[("EV020", 1)] == {"applicability": "safe", "edits": [],
                                   "message": "git rm --cached -- EchoesVault/index.md"}

    sarif = json.loads(lint(repo, "--output-format", "sarif").stdout)
    jsonschema.validate(sarif, json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))
    results = {(result["ruleId"], result["locations"][0]["physicalLocation"]["region"]
                ["startLine"]): result for result in sarif["runs"][0]["results"]}
    assert results[("EV002", 9)]["fixes"] == [{
        "description": {"text": "lengthen the setext underline to `========`"},
        "artifactChanges": [{
            "artifactLocation": {"uri": f"{PAGES}/setext.md", "uriBaseId": "%SRCROOT%"},
            "replacements": [{"deletedRegion": {"startLine": 9, "startColumn": 8,
                                                "endLine": 9, "endColumn": 8},
                              "insertedContent": {"text": "="}}]}]}]
    assert "fixes" not in results[("EV002", 13)]
    assert "fixes" not in results[("EV020", 1)]


@pytest.mark.parametrize(("code", "line"), [
    ("EV002", "Fix is sometimes available (safe: `echoes-lint check --fix` applies it)."),
    ("EV020", "Fix is always available (safe: `echoes-lint check --fix` applies it)."),
    ("EV080", "Fix is always available (safe: `echoes-lint check --fix` applies it)."),
    ("EV033", "Fix is sometimes available (unsafe: only `echoes-lint check --fix "
              "--unsafe-fixes` applies it)."),
])
def test_rule_explains_whether_a_fix_is_available(tmp_path: Path, code: str, line: str) -> None:
    shown = run_cli("rule", code, cwd=tmp_path)
    assert shown.stdout.endswith(f"\n\n{line}\n")
    docs = Path(__file__).parent.parent / "docs" / "rules" / f"{code}.md"
    assert docs.read_text(encoding="utf-8") == shown.stdout


def test_rules_without_a_fix_say_nothing_about_one() -> None:
    fixable = {code for code, rule in RULES.items() if rule.fix_applicability}
    assert fixable == {"EV002", "EV010", "EV011", "EV014", "EV020", "EV021", "EV022", "EV031",
                       "EV032", "EV033", "EV080"}
    assert "Fix is" not in RULES["EV001"].document()


def test_fix_refuses_the_staged_snapshot_and_ci_never_fixes(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/setext.md", f"{FRONT}\nTitle\n=======\n")
    git(repo, "add", "-A")
    before = snapshot(repo)
    staged = lint(repo, "--staged", "--fix")
    assert staged.returncode == 2
    assert staged.stderr.startswith("echoes-lint: error: --staged checks Git's index")
    ci = run_cli("ci", "--fix", cwd=repo)
    assert ci.returncode == 2
    assert "unrecognized arguments: --fix" in ci.stderr
    assert snapshot(repo) == before


def test_a_vault_in_a_subfolder_is_fixed_at_its_own_paths(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    make_vault(repo / "docs")
    write(repo, "docs/EchoesVault/pages/old.md", f"{DEPRECATED}\n# Old\n")
    write(repo, "docs/EchoesVault/index.md", "# index\n")
    git(repo, "add", "-A", "-f")
    commit(repo, "monorepo")
    diff = lint(repo, "--diff")
    assert diff.stdout.startswith("--- docs/EchoesVault/pages/old.md\n")
    assert "Would run: git rm --cached -q -- docs/EchoesVault/index.md\n" in diff.stderr
    fixed = lint(repo, "--fix")
    assert fixed.stdout == "Found 1 error and 1 warning (2 fixed, 0 remaining).\n"
    assert (repo / "docs/EchoesVault/pages/old.md").read_text(encoding="utf-8") == \
        f"{DEPRECATED}\n> [!warning] DEPRECATED\n\n# Old\n"
    assert "- [[old]]: DEPRECATED — Old way.\n" in \
        (repo / "docs/EchoesVault/index.md").read_text(encoding="utf-8")
    assert "docs/EchoesVault/index.md" not in tracked(repo)
