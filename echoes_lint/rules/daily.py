"""EV060 shared-daily-file: a new or changed date-level `daily/YYYY-MM-DD.md` (spec section 9).

Committed legacy files may stay readable during migration, so only one that is new (untracked,
staged as added, or outside Git) or whose staged change appends to it is reported.
"""

from __future__ import annotations

from collections.abc import Iterator

from echoes_lint import engine
from echoes_lint.findings import Finding
from echoes_lint.rules.context import Context

CODES = frozenset({"EV060"})

DAILY_PREFIX = f"{engine.VAULT_DIR}/daily/"


def check(ctx: Context) -> Iterator[Finding]:
    for document in ctx.scan.daily:
        name = document.path[len(DAILY_PREFIX):]
        if "/" in name or not engine.LEGACY_DAILY_FILE_RE.match(name):
            continue
        if ctx.is_new(document.path):
            what = "new date-level daily file"
        elif ctx.staged_changes().get(document.path) == "M":
            what = "staged change to the date-level daily file"
        else:
            continue
        day = name[:-3]
        yield ctx.finding(
            "EV060", document.path, 1, 1,
            f"{what} `{name}` writes to the legacy shared log, which conflicts whenever two "
            f"branches write on the same day; Protocol {engine.PROTOCOL_VERSION} writers create "
            f"one file per entry under `daily/{day}/` (use the `append` command)")
