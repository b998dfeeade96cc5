"""The gates' fixed and per-page costs (issue 13, `check` and `ci` within 2x the I/O floor):
a whole-vault `check` loads no `hashlib` (OpenSSL, ~4 ms of every start), and a page that is
trimmed already is parsed without a copy. Behaviour only: which modules are imported and which
decisions are made, never how long anything takes."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers_check import vault_repo, write
from test_gates5k_imports import loaded

from echoes_lint import engine

HEAD = "---\ntype: note\nstack: [python]\nstatus: active\nsummary: A plain page.\n---\n"


def test_a_whole_vault_check_imports_no_hashlib(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, "EchoesVault/pages/bare.md", "# No frontmatter\n")
    write(repo, "EchoesVault/pages/plain.md", HEAD + "\n[[bare]]\n")
    modules = loaded(repo, "check")
    assert "echoes_lint.checker" in modules  # the listing is real
    assert not modules & {"hashlib", "_hashlib"}


@pytest.mark.parametrize("ending", ["", "\n", " \n", "\n\n", "\t\n", "\u3000\n", "\n \n", "x\n",
                                    "\r\n"])
def test_a_page_is_decided_alike_however_it_ends(ending: str) -> None:
    # "\n" and "x\n" are trimmed already (taken as they are); the others are trimmed first.
    text = HEAD + "\nBody" + ending
    meta = engine.parse_frontmatter(text)
    assert meta == engine._parse_frontmatter(text)
    assert meta.valid and meta.summary == "A plain page." and meta.close_line == 6
