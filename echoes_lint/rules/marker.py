"""EV041 unsupported-marker: the vault's `.echoes-vault.json` as the engine validates it."""

from __future__ import annotations

from collections.abc import Iterator

from echoes_lint import engine
from echoes_lint.findings import Finding
from echoes_lint.rules.context import Context

CODES = frozenset({"EV041"})

MARKER_PATH = f"{engine.VAULT_DIR}/{engine.MARKER_FILE}"


def check(ctx: Context) -> Iterator[Finding]:
    scan = ctx.scan
    if scan.marker_valid:
        return
    workspace = f" --workspace {engine.shell_quote(ctx.prefix.rstrip('/'))}" if ctx.prefix else ""
    fix = f"echoes-lint{workspace} init"
    if not scan.marker_exists:
        problem = ("is missing, so writers treat the vault as uninitialised or legacy; "
                   f"run `{fix}` (it also migrates a legacy vault) or restore the committed marker")
    else:
        problem = (f"does not declare protocol {engine.PROTOCOL_VERSION}: {scan.marker_error}; "
                   "restore the committed marker, or run "
                   f"`{fix}` if this engine should own the vault")
    yield ctx.finding("EV041", MARKER_PATH, 1, 1, f"`{ctx.path(MARKER_PATH)}` {problem}", fix)
