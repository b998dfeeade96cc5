"""What a whole-vault gate (`check`, `ci`) loads and starts: every module and process is paid
for by every run of the pre-commit hook and the Action (issue 13, the gates' fixed cost at
5,000 pages). Behaviour only: which modules are imported, never how long anything takes."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers_check import vault_repo, write
from helpers_gates import run_guarded
from test_fixed2_imports import imported

from echoes_lint.config import Config
from echoes_lint.findings import RULES, Edit, Finding, Severity, replace
from echoes_lint.report import ReportInput

GATES = (("check",), ("ci", "--summary", "false"))
# dataclasses brings inspect (with ast, dis, tokenize): ~8 ms with the classes it builds.
NOT_NEEDED = {"dataclasses", "inspect"}


def loaded(repo: Path, *args: str) -> set[str]:
    done = run_guarded(*args, cwd=repo, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode == 1, done.stderr  # the finding below: a real run, to the end
    assert "EV010" in done.stdout
    return imported(done.stderr)


@pytest.mark.parametrize("command", GATES)
def test_a_gate_imports_neither_dataclasses_nor_inspect(tmp_path: Path,
                                                        command: tuple[str, ...]) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, "EchoesVault/pages/bare.md", "# No frontmatter\n")
    modules = loaded(repo, *command)
    assert "echoes_lint.checker" in modules  # the listing is real
    assert not modules & NOT_NEEDED


def test_the_records_compare_hash_show_and_copy_as_frozen_dataclasses_did() -> None:
    edit = Edit(1, 1, 1, 4, "x")
    finding = Finding("a.md", 2, 3, "EV010", "m", Severity.ERROR, edit=edit)
    same = Finding("a.md", 2, 3, "EV010", "m", Severity.ERROR, None, Edit(1, 1, 1, 4, "x"))
    assert finding == same and hash(finding) == hash(same) and len({finding, same}) == 1
    assert finding != replace(finding, line=9) and finding != ("a.md", 2, 3)
    changed = replace(finding, fix="do it", applicability="safe")
    assert (changed.fix, changed.applicability, changed.edit, changed.line) == (
        "do it", "safe", edit, 2)
    assert (finding.fix, finding.applicability) == (None, None)  # the original is unchanged
    assert repr(edit) == "Edit(line=1, col=1, end_line=1, end_col=4, content='x')"
    assert repr(Finding("a.md", 1, 1, "EV001", "m", Severity.WARNING)).startswith(
        "Finding(path='a.md', line=1, col=1, code='EV001', message='m', severity=")
    assert Config() == Config() and Config(select=("EV0",)) != Config()
    assert replace(Config(), fail_on="never").fail_on == "never"
    assert RULES["EV001"].fix and replace(RULES["EV001"], fix="") != RULES["EV001"]
    first, second = ReportInput([], "1"), ReportInput([], "1")
    assert first.sources == {} and first.sources is not second.sources  # a fresh dict each
    assert first == second and replace(first, color=True).color
