"""What the whole-vault gates (`check`, `ci`) load (issue 13: the gates at 5,000 pages).
Behaviour only: which modules are imported, and by whom, never how long anything takes.

Every module on the gates' path (the engine, the linter's own modules, the Git listing's rules,
the merge tools' settings) imports `typing` for the type checker only (`if TYPE_CHECKING:`), so
the gates load no `typing` (~2 ms).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_check import vault_repo, write
from helpers_gates import HANG_GUARD


def _repo(tmp_path: Path) -> Path:
    repo = vault_repo(tmp_path / "repo")
    write(repo, "EchoesVault/pages/bare.md", "# No frontmatter\n")  # EV010: a real run
    return repo


# Every module that runs an import of `typing` during a gate, by the importer's name.
_IMPORTERS = """
import builtins, json, sys
original = builtins.__import__
importers = set()
def recording(name, globals=None, locals=None, fromlist=(), level=0):
    if name == "typing" and globals is not None:
        importers.add(globals.get("__name__"))
    return original(name, globals, locals, fromlist, level)
builtins.__import__ = recording
from echoes_lint import cli
status = cli.main(sys.argv[1:])
sys.stdout.flush()
sys.stderr.write("IMPORTERS " + json.dumps(sorted(importers)) + "\\n")
sys.exit(status)
"""

@pytest.mark.parametrize("command", [("check",), ("ci", "--summary", "false")])
def test_the_gates_own_modules_import_no_typing(tmp_path: Path, command: tuple[str, ...]) -> None:
    repo = _repo(tmp_path)
    done = subprocess.run([sys.executable, "-c", _IMPORTERS, *command], cwd=repo,
                          capture_output=True, text=True, timeout=HANG_GUARD, check=False)
    assert done.returncode == 1 and "EV010" in done.stdout, done.stderr  # a real run
    line = next(line for line in done.stderr.splitlines() if line.startswith("IMPORTERS "))
    importers = set(json.loads(line[len("IMPORTERS "):]))
    assert importers == set(), importers
