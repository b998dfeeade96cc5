"""Merge tools for EchoesVault pages: the Git merge driver, `resolve`, and their installers.

Every protocol rule (frontmatter parsing, summary limits, conflict markers, validation) comes from
the engine; these modules only orchestrate Git around it.
"""

from __future__ import annotations

import os
from pathlib import Path

from echoes_lint import engine
from echoes_lint.config import ConfigError, load_config

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    from typing import Optional

DRIVER_NAME = "echoes-vault"
ATTRIBUTES_PATTERN = "EchoesVault/pages/*.md"
ATTRIBUTES_LINE = f"{ATTRIBUTES_PATTERN} merge={DRIVER_NAME}"
# The Git configuration keys of the driver (`install` writes them): here, so that the gates'
# check of them (rules/mergedriver) loads no installer.
SECTION = f"merge.{DRIVER_NAME}"
DRIVER_KEY = f"{SECTION}.driver"
# A POSIX extended regular expression for Git: only the dots need escaping (`\-`, which
# re.escape writes, is undefined there).
SECTION_KEYS = "^" + SECTION.replace(".", r"\.") + r"\."


class SubfolderVault(Exception):
    """The repository's vault is not at its top, where these tools work."""


def subfolder_vault(top: Path) -> Optional[str]:
    """The repository-relative folder of a vault below the top of the repository (from the
    configuration's `vault-dir`, else the only committed marker), or None."""
    if os.path.lexists(top / engine.VAULT_DIR):
        return None
    try:
        configured = load_config(top).vault_dir
    except ConfigError:
        configured = None
    if configured and configured.strip("/") != engine.VAULT_DIR:
        return configured.strip("/")
    output = engine.run_git(top, ["ls-files", "-z", "--", f"*/{engine.VAULT_DIR}/"
                                                          f"{engine.MARKER_FILE}"])
    markers = engine.split_nul(output)
    return markers[0].rsplit("/", 1)[0] if markers else None


def refuse_subfolder_vault(top: Path, command: str) -> None:
    """The engine's workspace is always the Git top level (`resolve_workspace`), and so is the
    vault `resolve`, the merge driver's attribute line and the hooks work on: say so rather
    than install tools that would never see a vault in a subfolder."""
    found = subfolder_vault(top)
    if found is not None:
        raise SubfolderVault(
            f"the vault is at {engine.printable(found)}, not at the top of the repository; "
            f"{command}, `resolve` and the hooks work on `{engine.VAULT_DIR}/` at the top (the "
            "engine's workspace is the Git top level), so a vault in a subfolder is not "
            f"supported; `echoes-lint check --vault-dir {engine.shell_quote(found)}` still "
            "checks it")
