"""EV041 unsupported-marker: the vault's `.echoes-vault.json` as the engine validates it."""

from __future__ import annotations

from collections.abc import Iterator

from echoes_lint import engine
from echoes_lint.findings import Finding
from echoes_lint.rules.context import Context

CODES = frozenset({"EV041"})

MARKER_PATH = f"{engine.VAULT_DIR}/{engine.MARKER_FILE}"
# The error of a marker the checked snapshot (Git's index) lacks although the file is on disk.
NOT_IN_INDEX = "not in Git's index"


def check(ctx: Context) -> Iterator[Finding]:
    scan = ctx.scan
    if scan.marker_valid:
        return
    # Protocol engines resolve a workspace to the Git top level, so `init` only applies to a vault
    # there; a vault in a subfolder can only get its committed marker back.
    fix = None if ctx.prefix else "echoes-lint init"
    if not scan.marker_exists and scan.marker_error == NOT_IN_INDEX:
        fix = f"git add -- {engine.shell_quote(ctx.path(MARKER_PATH))}"
        problem = (f"is on disk but not in Git's index, so the commit records a vault without "
                   f"it and writers in other clones treat the vault as uninitialised; run `{fix}`")
    elif not scan.marker_exists:
        problem = ("is missing, so writers treat the vault as uninitialised or legacy; "
                   + (f"run `{fix}` (it also migrates a legacy vault) or " if fix else "")
                   + "restore the committed marker")
    else:
        problem = (f"does not declare protocol {engine.PROTOCOL_VERSION}: {scan.marker_error}; "
                   "restore the committed marker"
                   + (f", or run `{fix}` if this engine should own the vault" if fix else ""))
    yield ctx.finding("EV041", MARKER_PATH, 1, 1, f"`{ctx.path(MARKER_PATH)}` {problem}", fix)
