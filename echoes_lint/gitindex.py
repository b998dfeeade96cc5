"""Git's index over the vault and the local-only paths, listed by one `git ls-files`.

A pre-commit hook starts the listing first (`start`), so that git reads a large index while the
linter's modules load; the check then takes it (`output`) or, elsewhere, lists the index itself.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Optional

from echoes_lint import engine

# Each entry comes as `<mode> <object id> <stage>\t<path>` and ends with NUL.
LS_FILES = ("ls-files", "-z", "--cached", "--stage", "--", engine.VAULT_DIR,
            *engine.LOCAL_ONLY_PATHS)

Started = tuple[Optional["subprocess.Popen[bytes]"], Optional[str]]
_started: dict[str, Started] = {}


def start() -> None:
    """List, from now on, the index of the folder this process runs in: where pre-commit runs a
    hook, the repository root, the usual engine workspace. A check takes it if it looks there."""
    discard()
    try:
        folder = os.getcwd()
    except OSError:  # the folder is gone: the check says so
        return
    _started[os.path.realpath(folder)] = engine.git_start(Path(folder), LS_FILES)


def output(root: Path) -> tuple[Optional[bytes], Optional[str]]:
    """`engine.git_output` of `LS_FILES` in the engine workspace `root`, from the listing
    started for it if there is one."""
    started = _started.pop(os.path.realpath(root), None)
    return engine.git_finish(started, LS_FILES) if started else engine.git_output(root, LS_FILES)


def discard() -> None:
    """End the listings nobody took (a hook without a vault there, or with one elsewhere)."""
    for process, _cause in _started.values():
        if process is not None:
            process.kill()
            process.communicate()
    _started.clear()
