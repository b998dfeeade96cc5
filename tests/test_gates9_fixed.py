"""The gates' fixed and per-page costs (issue 13, `check` and `ci` within 2x the I/O floor):
a whole-vault `check` loads no `hashlib` (OpenSSL, ~4 ms of every start). Behaviour only: which
modules are imported, never how long anything takes."""

from __future__ import annotations

from pathlib import Path

from helpers_check import vault_repo, write
from test_gates5k_imports import loaded

HEAD = "---\ntype: note\nstack: [python]\nstatus: active\nsummary: A plain page.\n---\n"


def test_a_whole_vault_check_imports_no_hashlib(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, "EchoesVault/pages/bare.md", "# No frontmatter\n")
    write(repo, "EchoesVault/pages/plain.md", HEAD + "\n[[bare]]\n")
    modules = loaded(repo, "check")
    assert "echoes_lint.checker" in modules  # the listing is real
    assert not modules & {"hashlib", "_hashlib"}
