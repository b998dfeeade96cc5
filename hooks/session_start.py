#!/usr/bin/env python3
"""Agent SessionStart hook: the EchoesVault status card as session context, read-only.

Prints the JSON that Claude Code and Codex SessionStart hooks read:

    {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "<card>"}}

and nothing at all where the project has no EchoesVault folder. The card comes from the project's
own runtime (`.echoes-vault/echoes_vault.py status --format card`), or from an installed
echoes-lint when the project has no runtime. `status` never creates, migrates, hydrates or
repairs anything (spec section 12.5), so starting a session changes no file.

Standard library only (Python 3.9+). Register it, for example in `.claude/settings.json` or
`.codex/hooks.json`:

    {"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": "python3 hooks/session_start.py", "timeout": 15}]}]}}
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional

VAULT_DIR = "EchoesVault"
RUNTIME = Path(".echoes-vault") / "echoes_vault.py"
TIMEOUT = 10
PREAMBLE = (
    "EchoesVault project memory is available in this repository. The card below is a read-only "
    "snapshot taken when the session started. Do not initialize, migrate, restore or finalize "
    "the vault unless the user asks for it."
)


def read_event() -> Dict[str, Any]:
    """The hook event from standard input (`cwd`, `source`, ...); empty when run by hand."""
    if sys.stdin is None or sys.stdin.isatty():
        return {}
    try:
        event = json.loads(sys.stdin.read() or "{}")
    except (OSError, ValueError):
        return {}
    return event if isinstance(event, dict) else {}


def project_root(directory: str) -> Path:
    """The Git top level of `directory`, or the directory itself outside Git."""
    try:
        completed = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=directory,
                                   capture_output=True, text=True, timeout=TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError):
        return Path(directory)
    top = completed.stdout.strip()
    return Path(top) if completed.returncode == 0 and top else Path(directory)


def card_from_runtime(workspace: Path) -> Optional[str]:
    runtime = workspace / RUNTIME
    if not runtime.is_file() or runtime.is_symlink():
        return None
    try:
        completed = subprocess.run(
            [sys.executable, "-I", str(runtime), "--workspace", str(workspace),
             "status", "--format", "card"],
            capture_output=True, timeout=TIMEOUT, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    card = completed.stdout.decode("utf-8", "replace").strip()
    return card if completed.returncode == 0 and card else None


def card_from_package(workspace: Path) -> Optional[str]:
    try:
        from echoes_lint import engine
    except ImportError:
        return None
    try:
        scan = engine.scan_workspace(engine.resolve_workspace(str(workspace)))
        return engine.status_card(engine.inspect_report(scan)).strip()
    except Exception:  # The hook must never break a session; fall back to the notice below.
        return None


def status_card(workspace: Path) -> str:
    card = card_from_runtime(workspace) or card_from_package(workspace)
    if card:
        return card
    return (
        "### EchoesVault · status unavailable\n\n"
        f"Neither `{RUNTIME.as_posix()}` nor an installed echoes-lint could report the vault "
        f"status. Run `python3 {RUNTIME.as_posix()} --workspace . status --format card` to see why."
    )


def main() -> int:
    event = read_event()
    cwd = event.get("cwd")
    directory = (cwd if isinstance(cwd, str) and cwd else None) or os.environ.get(
        "CLAUDE_PROJECT_DIR") or os.getcwd()
    if not os.path.isdir(directory):
        return 0
    workspace = project_root(str(directory))
    if not os.path.lexists(workspace / VAULT_DIR):
        return 0  # No vault, no context: stay silent.
    output = {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": f"{PREAMBLE}\n\n{status_card(workspace)}\n",
        }
    }
    sys.stdout.write(json.dumps(output) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
