"""EV090-EV092: the merge driver this clone recorded must run, or Git drops a side.

Facts of the local Git configuration, never of the vault: a fresh clone (CI) has none of our
keys and gets no finding; a clone whose committed `.gitattributes` names the driver but which
never ran `install-merge-driver` merges pages with Git's own text merge, which keeps both sides
with markers, so that is not reported either. Nothing recorded is ever run: the interpreter is
only looked up on disk (a gate never executes what a repository's configuration names).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from echoes_lint import engine
from echoes_lint.findings import RULES, Finding
from echoes_lint.merge import ATTRIBUTES_LINE, DRIVER_KEY, SECTION, SECTION_KEYS
from echoes_lint.rules.context import Context

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    import subprocess
    from typing import Optional

    Started = tuple[Optional[subprocess.Popen[bytes]], Optional[str]]  # `engine.git_start`

CODES = frozenset({"EV090", "EV091", "EV092"})
FIX = "echoes-lint install-merge-driver"


def _finding(code: str, path: str, message: str) -> Finding:
    return Finding(path, 1, 1, code, message, RULES[code].severity, FIX)


_CONFIG = ("config", "--show-origin", "-z", "--get-regexp", SECTION_KEYS)
_ATTRIBUTES = ("rev-parse", "--git-path", "info/attributes")


class _Git:
    """Git's answers in one repository root: started early (`prefetch`), or when asked."""

    def __init__(self, top: Path) -> None:
        self.top = top
        self.started: dict[tuple[str, ...], Started] = {}

    def start(self, *commands: tuple[str, ...]) -> None:
        for args in commands:
            self.started[args] = engine.git_start(self.top, args)

    def output(self, args: tuple[str, ...]) -> Optional[bytes]:
        """`engine.run_git`: None when git fails."""
        started = self.started.pop(args, None) or engine.git_start(self.top, args)
        return engine.git_finish(started, args)[0]

    def close(self) -> None:
        """Collect what was started and not asked for."""
        for args in list(self.started):
            self.output(args)


_prefetched: dict[Path, _Git] = {}


def prefetch(top: Path) -> None:
    """Start the rule's two git commands in `top` now: they then run while the vault is read,
    not one after the other after it (about 5 ms)."""
    discard()
    _prefetched[top] = answers = _Git(top)
    answers.start(_CONFIG, _ATTRIBUTES)


def discard() -> None:
    """Collect what `prefetch` started for a check that never ran the rule."""
    while _prefetched:
        _prefetched.popitem()[1].close()


def _config(git: _Git) -> list[tuple[str, str, str]]:
    """(origin file, key, value) of every `merge.echoes-vault.*` key Git sees here."""
    output = git.output(_CONFIG)
    items = engine.split_nul(output)
    entries = []
    for origin, entry in zip(items[::2], items[1::2]):
        key, _, value = entry.partition("\n")
        entries.append((origin.partition(":")[2], key.lower(), value))
    return entries


def _info_attributes(git: _Git) -> str:
    """The path of `.git/info/attributes` relative to the root (linked worktrees share it)."""
    output = git.output(_ATTRIBUTES)
    return os.fsdecode(output.strip()) if output else ".git/info/attributes"


def check(ctx: Context) -> Iterator[Finding]:
    if not ctx.in_git or ctx.passed is not None:  # hooks pass files: this is not about them
        return
    top = ctx.scan.workspace
    for _part in ctx.prefix.strip("/").split("/") if ctx.prefix else ():
        top = top.parent
    git = _prefetched.pop(top, None) or _Git(top)
    try:
        yield from _check(top, git)
    finally:
        git.close()


def _check(top: Path, git: _Git) -> Iterator[Finding]:
    entries = _config(git)
    drivers = [(origin, value) for origin, key, value in entries if key == DRIVER_KEY]
    if drivers:
        # Only here: a clone without the driver (CI's) loads no installer, nor its shlex (~1 ms).
        from echoes_lint.merge.install import has_fallback, is_our_driver, recorded_interpreter

        origin, command = drivers[-1]  # the last one wins, as for Git
        if not is_our_driver(command):
            return
        interpreter = recorded_interpreter(command)
        if interpreter is None or not os.access(interpreter, os.X_OK):
            yield _finding(
                "EV090", origin,
                f"the echoes-vault merge driver runs {interpreter or 'an unreadable command'}, "
                "which is missing (a moved or deleted environment): "
                + ("pages merge with Git's text merge until you reinstall the driver"
                   if has_fallback(command) else
                   "Git keeps only our side of a page, without conflict markers")
                + f"; run `{FIX}`")
        elif not has_fallback(command):
            yield _finding(
                "EV092", origin,
                "the echoes-vault merge driver was recorded by an earlier echoes-lint without a "
                "fallback: if its interpreter goes away, Git keeps only our side of a page, "
                f"without conflict markers; run `{FIX}` to record the current command")
        return
    if entries:
        yield _finding(
            "EV091", entries[0][0],
            f"`{SECTION}` has keys but no `driver`: Git stops every merge that touches a page "
            f"(\"custom merge driver ... lacks command line\"); run `{FIX}` to repair it")
        return
    attributes = _info_attributes(git)
    try:
        # A regular file only, bounded: a FIFO planted there must not block the check.
        text = engine.read_bytes(top / attributes, follow=True).decode("utf-8", "replace")
    except OSError:
        return
    if any(line.strip() == ATTRIBUTES_LINE for line in text.splitlines()):
        yield _finding(
            "EV091", attributes,
            f"`{attributes}` assigns `merge=echoes-vault` but no driver is configured: pages "
            f"merge as plain text; run `{FIX}` to repair it")
