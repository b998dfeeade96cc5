"""What a command loads that it never calls (issue 13, the fixed cost of every command): a vault
of ASCII names needs no `unicodedata` (the NFC of ASCII text is itself), and only the local
cache's checksums need `binascii`, which the gates never read. Behaviour only: which modules are
imported, never how long anything takes."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from helpers_check import vault_repo, write
from helpers_writer import init_vault, runtime
from test_fixed2_imports import IMPORTTIME, imported
from test_gates5k_imports import GATES, loaded

from echoes_lint import engine


@pytest.mark.parametrize("command", GATES)
def test_a_gate_on_ascii_names_loads_neither_unicodedata_nor_binascii(
        tmp_path: Path, command: tuple[str, ...]) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, "EchoesVault/pages/bare.md", "# No frontmatter\n")
    modules = loaded(repo, *command)
    assert "echoes_lint.checker" in modules  # the listing is real
    assert not modules & {"unicodedata", "binascii"}


def test_status_on_ascii_names_loads_no_unicodedata(git_repo: Path) -> None:
    init_vault(git_repo)
    done = runtime(git_repo, "status", python=IMPORTTIME)
    assert done.returncode == 0, done.stderr
    modules = imported(done.stderr)
    assert "json" in modules and "unicodedata" not in modules


@pytest.mark.parametrize("name", ["plain-page.md", "cafe\u0301.md", "caf\u00e9.md", "\u212b.md",
                                  "\ufb01le.md", "a\u0300\u0316.md", ""])
def test_nfc_is_unicodedata_s_for_ascii_and_other_names(name: str) -> None:
    assert engine.nfc(name) == unicodedata.normalize("NFC", name)
    assert engine.fold_name(name) == unicodedata.normalize(
        "NFC", unicodedata.normalize("NFC", name).casefold())
