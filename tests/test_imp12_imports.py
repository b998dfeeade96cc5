"""What a command loads that it never calls (issue 13, the fixed cost of every command): a vault
of ASCII names needs no `unicodedata` (the NFC of ASCII text is itself), only the local cache's
checksums need `binascii`, which the gates never read, a command or a report format is loaded
without `importlib`, which the console script and the hooks have not loaded, and a clone without
the merge driver (CI's) loads no installer and no `shlex`. Behaviour only: which modules are
imported, never how long anything takes."""

from __future__ import annotations

import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from helpers_check import vault_repo, write
from helpers_gates import HANG_GUARD, run_guarded
from helpers_writer import init_vault, runtime
from test_fixed2_imports import IMPORTTIME, imported
from test_gates5k_imports import GATES, loaded

import echoes_lint
from echoes_lint import engine


@pytest.mark.parametrize("command", GATES)
def test_a_gate_on_ascii_names_loads_neither_unicodedata_nor_binascii(
        tmp_path: Path, command: tuple[str, ...]) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, "EchoesVault/pages/bare.md", "# No frontmatter\n")
    modules = loaded(repo, *command)
    assert "echoes_lint.checker" in modules  # the listing is real
    assert not modules & {"unicodedata", "binascii"}


@pytest.mark.parametrize("command", GATES)
def test_a_gate_in_a_clone_without_the_merge_driver_loads_no_installer_nor_shlex(
        tmp_path: Path, command: tuple[str, ...]) -> None:
    repo = vault_repo(tmp_path / "repo")  # a clean vault: no finding suggests a command
    done = run_guarded(*command, cwd=repo, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode in (0, 1) and "EV0" not in done.stdout, done.stdout + done.stderr
    modules = imported(done.stderr)
    assert "echoes_lint.report" in modules  # the check ran to its report
    assert "echoes_lint.rules.mergedriver" in modules
    assert not modules & {"echoes_lint.merge.install", "shlex"}


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


# The gate as the console script runs it, without `site` (whose `.pth` files may load
# `importlib`, as an editable install's does): what it has loaded when it is done.
_LOADED = """
import sys
from echoes_lint.cli import main
status = main(sys.argv[1:])
sys.stdout.flush()
sys.stderr.write("LOADED " + " ".join(sorted(sys.modules)) + "\\n")
sys.exit(status)
"""


@pytest.mark.parametrize("command", GATES)
def test_a_gate_loads_no_importlib(tmp_path: Path, command: tuple[str, ...]) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, "EchoesVault/pages/bare.md", "# No frontmatter\n")
    root = str(Path(echoes_lint.__file__).parent.parent)
    done = subprocess.run([sys.executable, "-S", "-c", _LOADED, *command], cwd=repo,
                          env={**os.environ, "PYTHONPATH": root}, capture_output=True,
                          text=True, timeout=HANG_GUARD, check=False)
    assert done.returncode == 1 and "EV010" in done.stdout, done.stderr  # a real run, reported
    line = next(line for line in done.stderr.splitlines() if line.startswith("LOADED "))
    modules = set(line.split()[1:])
    assert "echoes_lint.checker" in modules and "importlib" not in modules
