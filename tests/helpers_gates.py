"""Helpers for the gate tests (issue 10): CLI runs with a hang guard, and tree snapshots."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

# A hang guard, never a measurement: far above what any of these runs needs.
HANG_GUARD = 60.0


def run_guarded(*args: str, cwd: Path, env: Optional[dict[str, str]] = None,
                timeout: float = HANG_GUARD) -> subprocess.CompletedProcess[str]:
    """`python -m echoes_lint ARGS`, killed (and the test failed) if it does not finish."""
    return subprocess.run(
        [sys.executable, "-m", "echoes_lint", *args], cwd=cwd, capture_output=True, text=True,
        encoding="utf-8", errors="backslashreplace", check=False, timeout=timeout,
        env={**os.environ, **(env or {})})


def snapshot(root: Path) -> dict[bytes, tuple[int, int, int]]:
    """Every entry below `root` (the .git folder included) with its type, size and mtime in
    nanoseconds: a read-only command must leave all of it as it was."""
    entries = {}
    for folder, names, files in os.walk(os.fsencode(root)):
        for name in names + files:
            path = os.path.join(folder, name)
            info = os.lstat(path)
            entries[path] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return entries
