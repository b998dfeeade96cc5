#!/usr/bin/env python3
"""Agent SessionStart hook: the EchoesVault status card as session context, read-only.

Prints the JSON that Claude Code and Codex SessionStart hooks read:

    {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "<card>"}}

and nothing at all where the project has no EchoesVault folder. The card comes from the installed
echoes-lint, never from the project's own runtime (`.echoes-vault/echoes_vault.py`): a session
may start in a repository just cloned from anywhere, and the hook must not run its code. `status`
never creates, migrates, hydrates or repairs anything (spec section 12.5), so starting a session
changes no file.

Python 3.9+, standard library and the installed echoes-lint. Register it, for example in
`.claude/settings.json` or `.codex/hooks.json`:

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
# echoes-lint is not on PyPI yet: its release tag installs from Git (same version as the package).
INSTALL_REQUIREMENT = "echoes-lint @ git+https://github.com/echoes-lint/echoes-lint@v0.2.0"
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


def card_from_package(workspace: Path) -> Optional[str]:
    """The card from the installed echoes-lint. The project's own runtime is never run: a
    session may start in a repository just cloned from anywhere."""
    # Python puts this script's folder (inside the project) first on sys.path: drop it, so that
    # only an installed echoes_lint is imported.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if p not in ("", ".") and os.path.abspath(p) != here]
    try:
        from echoes_lint import engine
    except ImportError:
        return None
    try:
        root = engine.resolve_workspace(str(workspace))
        # As `status` reads it: the local cache spares reading unchanged files, and is never
        # written (spec 12.5).
        inspection = getattr(engine, "cached_inspection", None)  # echoes-lint 0.2.0 and later
        report = inspection(root)[0] if inspection else engine.inspect_report(
            engine.scan_workspace(root))
        return engine.status_card(report).strip()
    except Exception:  # The hook must never break a session; fall back to the notice below.
        return None


def status_card(workspace: Path) -> str:
    card = card_from_package(workspace)
    if card:
        return card
    return (
        "### EchoesVault · status unavailable\n\n"
        "echoes-lint is not installed for this Python, so the vault status could not be read "
        "(this hook never runs the project's own `.echoes-vault/echoes_vault.py`). Install it "
        f"with `python3 -m pip install \"{INSTALL_REQUIREMENT}\"` (echoes-lint is not on PyPI "
        "yet), or run "
        f"`python3 {RUNTIME.as_posix()} --workspace . status --format card` yourself."
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
