"""What a whole-vault `check` loads (issue 13, the gates' fixed cost at 5,000 pages): it reads
no clock, so it imports no `datetime` (~1 ms); `ci`'s status report reads it (storage figures,
today's entries) through `time`, without `datetime` too. Behaviour only: which modules are
imported, never how long anything takes."""

from __future__ import annotations

from pathlib import Path

from helpers_check import vault_repo, write
from test_gates5k_imports import loaded


def test_neither_check_nor_ci_imports_datetime(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, "EchoesVault/pages/bare.md", "# No frontmatter\n")
    checked = loaded(repo, "check")
    assert "echoes_lint.checker" in checked and "datetime" not in checked
    in_ci = loaded(repo, "ci", "--summary", "false")
    assert "echoes_lint.checker" in in_ci and "datetime" not in in_ci
