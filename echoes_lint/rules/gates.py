"""What a gate meets in a hostile or damaged repository and must report rather than trip over:
EV042 special files, EV045 names that are not UTF-8, EV046 submodules inside the vault."""

from __future__ import annotations

from collections.abc import Iterator

from echoes_lint import engine
from echoes_lint.findings import Finding
from echoes_lint.rules.context import VAULT_PREFIX, Context

CODES = frozenset({"EV042", "EV045", "EV046"})


def _not_utf8(path: str) -> bool:
    # os.fsdecode turns each byte that is not UTF-8 into a lone surrogate U+DC80..U+DCFF.
    return not path.isascii() and any("\udc80" <= char <= "\udcff" for char in path)


def check(ctx: Context) -> Iterator[Finding]:
    for relative in ctx.scan.special:
        yield ctx.finding(
            "EV042", relative, 1, 1,
            f"`{ctx.path(relative)}` is a FIFO, socket or device, not a regular file: engines "
            "never open it (it could block or act on a device); remove it or replace it with "
            "a regular file",
            fix=f"rm -- {engine.shell_quote(ctx.path(relative))}")
    seen: set[str] = set()
    if not ctx.vault_ascii():  # the common vault
        seen.update(ctx.vault_paths())
    seen.update(ctx.scan.special, ctx.scan.unreadable)
    # Page names have their own finding (EV031): the engine cannot address such a page.
    for relative in sorted(path for path in seen if _not_utf8(path)
                           and engine.classify_vault_path(path) != "page"):
        yield ctx.finding(
            "EV045", relative, 1, 1,
            "the path is not valid UTF-8: Git hosts, other systems and engines show or refuse "
            "it differently; rename it with a UTF-8 name (shown here with \\x escapes)")
    for relative in sorted(ctx.gitlinks):
        if relative.startswith(VAULT_PREFIX):
            yield ctx.finding(
                "EV046", relative, 1, 1,
                f"`{ctx.path(relative)}` is a Git submodule (gitlink) inside the vault: its "
                "files belong to another repository, so a clone does not have them and engines "
                "read them as vault files; move it out of the vault",
                fix=f"git rm --cached -- {engine.shell_quote(ctx.path(relative))}")
