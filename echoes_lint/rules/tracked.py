"""EV020-EV022: Git readiness as the engine computes it (spec section 14)."""

from __future__ import annotations

from collections.abc import Iterator

from echoes_lint import engine
from echoes_lint.findings import SAFE, Finding, replace
from echoes_lint.rules.context import INDEX_PATH, Context

CODES = frozenset({"EV020", "EV021", "EV022"})


def check(ctx: Context) -> Iterator[Finding]:
    if not ctx.scan.git.available:
        return
    readiness = engine.git_readiness(ctx.scan.git, ctx.scan.durable)
    for relative in readiness["trackedLocalFiles"]:
        fix = f"git rm --cached -- {engine.shell_quote(ctx.path(relative))}"
        # Only the index entry goes: the file stays on disk.
        command: tuple[str, ...] = ("rm", "--cached", "-q", "--", ctx.path(relative))
        if relative == INDEX_PATH:
            finding = ctx.finding(
                "EV020", relative, 1, 1,
                f"`{ctx.path(relative)}` is tracked or staged, but the index is generated locally "
                f"and must never be committed; run `{fix}` (the file stays on disk)", fix)
        else:
            finding = ctx.finding(
                "EV021", relative, 1, 1,
                f"`{ctx.path(relative)}` is machine-local state that must never be committed; "
                f"run `{fix}` (the file stays on disk)", fix)
        yield replace(finding, command=command, applicability=SAFE)
    tracked = ctx.index  # Git's index: the tracked paths, as a set
    for key, how in (("untrackedDurableFiles", "is not tracked by Git"),
                     ("ignoredDurableFiles", "is ignored by Git")):
        force = "-f " if key == "ignoredDurableFiles" else ""
        for relative in readiness[key]:
            # Knowledge (pages, daily entries, assets, raw sources), or a protocol file that
            # every clone needs: the marker, the runtime, the agent adapters.
            what = ("durable vault file" if relative.startswith(DURABLE_PREFIXES)
                    else "EchoesVault protocol file that every clone needs")
            if relative in tracked:  # committed, but an ignore rule matches it
                fix = f"git check-ignore -v --no-index -- {engine.shell_quote(ctx.path(relative))}"
                yield ctx.finding(
                    "EV022", relative, 1, 1,
                    f"{what} is tracked, but an ignore rule matches it, so a new file there "
                    f"would not reach the team; remove the rule that `{fix}` shows", fix)
                continue
            fix = f"git add {force}-- {engine.shell_quote(ctx.path(relative))}"
            added = ("add", *force.split(), "--", ctx.path(relative))
            yield replace(ctx.finding(
                "EV022", relative, 1, 1,
                f"{what} {how}, so it never reaches the team; run `{fix}`", fix),
                command=added, applicability=SAFE)


DURABLE_PREFIXES = tuple(f"{engine.VAULT_DIR}/{folder}/" for folder in engine.DURABLE_DIRS)
