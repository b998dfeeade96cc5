"""`echoes-lint check --fix` and `--diff`: apply the fixes that findings carry.

A finding's fix is either an `Edit` of its file or a Git command. Edits of one file are applied
in memory and the file is checked again until nothing more changes (a byte-order mark hid a
delimiter with blanks, say); the result replaces the file through the engine's writer (`fix_file`:
the lock, the hash of the bytes as read, atomic replacement, the index refresh), so a fix never
races an agent writing the same page and never leaves half a change. A file that changed since it
was read is read again on the next pass. Git commands run after the edits, from the repository
root. `--diff` computes the same and writes nothing.
"""

from __future__ import annotations

import difflib
import hashlib
import io
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from echoes_lint import engine
from echoes_lint.checker import CheckResult, recheck_text, run_checks
from echoes_lint.engine import printable
from echoes_lint.findings import SAFE, UNSAFE, Finding
from echoes_lint.rules.edits import apply_edits

# Codes whose fixes edit the file they are found in (rules of the file's own text).
EDIT_CODES = frozenset({"EV002", "EV010", "EV011", "EV014", "EV080"})
# A fixed point is normally reached in one or two passes; these bound a fix that keeps producing
# new edits, or a file that an agent keeps changing under the fixer. One edit can reveal the next
# problem of the same file (engines stop at a frontmatter's first problem): edits of one text,
# made in memory, get more passes than whole checks of the vault.
MAX_PASSES = 4
MAX_TEXT_PASSES = 8


@dataclass
class FixOutcome:
    result: CheckResult
    """The check after the fixes (with `dry_run`, before them)."""
    fixed: list[Finding] = field(default_factory=list)
    """Every finding a fix removed (or, with `dry_run`, would remove)."""
    diffs: list[str] = field(default_factory=list)
    commands: list[tuple[str, ...]] = field(default_factory=list)
    """The Git commands run (or that would run), batched, without the leading `git`."""
    attempted: set[tuple[str, ...]] = field(default_factory=set)
    given_up: set[str] = field(default_factory=set)
    """Files a fix could not be applied to (unreadable, mixed line breaks, refused): said once."""
    """Each finding's own command once tried: a later pass never runs it again."""
    problems: list[str] = field(default_factory=list)
    """Fixes that could not be applied, and why."""


def applicable(finding: Finding, unsafe: bool) -> bool:
    return finding.applicability == SAFE or (unsafe and finding.applicability == UNSAFE)


def run_fixes(workspace: Path, *, unsafe: bool = False, dry_run: bool = False,
              git_fixes: bool = True, **check: Any) -> FixOutcome:
    """Fix what the check of `workspace` (`run_checks` keyword arguments in `check`) finds.

    `unsafe` adds the unsafe fixes, `dry_run` only computes them (diffs and commands) and
    `git_fixes=False` leaves Git's index alone (a pre-commit hook must not change it)."""
    outcome = FixOutcome(run_checks(workspace, **check))
    for _ in range(MAX_PASSES):
        result = outcome.result
        chosen = [finding for finding in result.findings if applicable(finding, unsafe)
                  and (finding.edit is not None or (git_fixes and finding.command is not None))]
        if not chosen:
            break
        wrote, retry = _fix_files(result, {finding.path for finding in chosen
                                           if finding.edit is not None}, unsafe, dry_run, outcome)
        ran = _run_commands(result, [finding for finding in chosen if finding.command], dry_run,
                            outcome)
        if dry_run or not (wrote or retry or ran):
            break  # nothing changed: checking again would find the same
        outcome.result = run_checks(workspace, **check)
    return outcome


def _documents(result: CheckResult) -> dict[str, str]:
    """Path as findings show it -> path relative to the engine workspace."""
    return {printable(result.prefix + document.path): document.path
            for document in result.scan.documents()}


def _fix_files(result: CheckResult, paths: set[str], unsafe: bool, dry_run: bool,
               outcome: FixOutcome) -> tuple[bool, bool]:
    """Apply the edits of every file in `paths`: (whether one was written, whether one changed
    under the fixer and must be read again). A file given up on is not planned again."""
    documents = _documents(result)
    wrote = retry = False
    for shown in sorted(paths - outcome.given_up):
        relative = documents.get(shown)
        if relative is None:
            continue
        try:
            data = engine.read_bytes(os.path.join(result.scan.workspace, relative))
        except OSError as exc:
            outcome.problems.append(f"{shown}: cannot read it ({exc.strerror or exc})")
            outcome.given_up.add(shown)
            continue
        planned = _plan(result, relative, data, unsafe)
        if planned is None:
            outcome.problems.append(f"{shown}: mixed line endings; fix it by hand")
            outcome.given_up.add(shown)
            continue
        content, fixed = planned
        if not fixed:
            continue
        if dry_run:
            outcome.diffs.append(unified_diff(shown, data.decode("utf-8"), content))
            outcome.fixed += fixed
            continue
        engine.crash_point("fix:read")  # a test stops here to change the file under the fix
        context = engine.Context(result.scan.workspace, None, None, io.BytesIO())
        try:
            written = engine.fix_file(context, relative, hashlib.sha256(data).hexdigest(),
                                      content)
        except engine.VaultError as exc:
            outcome.problems.append(f"{shown}: not fixed: {printable(str(exc))}")
            outcome.given_up.add(shown)
            continue
        if written:
            outcome.fixed += fixed
            wrote = True
        else:
            retry = True  # changed since it was read: the next pass reads it again
    return wrote, retry


def _plan(result: CheckResult, relative: str, data: bytes,
          unsafe: bool) -> Optional[tuple[str, list[Finding]]]:
    """(the file's fixed text, in its own line-break style, and the findings fixed), or None
    when its line breaks are mixed (an edit could not keep them)."""
    text, _problem = engine.decode_text(data)
    if text is None:  # not UTF-8 (any more): EV019 has no automatic fix
        return "", []
    raw = data.decode("utf-8")
    crlf = text != raw
    if crlf and raw != text.replace("\n", "\r\n"):
        return None
    fixed: list[Finding] = []
    current = text
    for _ in range(MAX_TEXT_PASSES):
        found = [finding for finding in recheck_text(result, relative, current, EDIT_CODES)
                 if finding.edit is not None and applicable(finding, unsafe)]
        edited = apply_edits(current, [finding.edit for finding in found if finding.edit])
        if edited == current:
            break
        fixed += found
        current = edited
    return (current.replace("\n", "\r\n") if crlf else current), fixed


def unified_diff(path: str, before: str, after: str) -> str:
    """A unified diff of one file, `--- path` / `+++ path` as ruff prints it; a last line
    without a line break is marked as `diff` marks it."""
    lines = []
    for line in difflib.unified_diff(_with_ends(before), _with_ends(after), path, path):
        lines.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(lines)


def _with_ends(text: str) -> list[str]:
    """The lines of `text` with their line breaks, split at `\n` only (as edits count lines)."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _run_commands(result: CheckResult, findings: Sequence[Finding], dry_run: bool,
                  outcome: FixOutcome) -> bool:
    """Run each finding's Git command once; True when one ran. Commands that differ only in
    their last path (`git add -- PATH`) run together, up to GIT_FIX_BATCH paths a call, so a
    vault of thousands of untracked pages does not start thousands of processes."""
    batches: dict[tuple[str, ...], list[Finding]] = {}
    for finding in findings:
        command = finding.command
        if command is None or command in outcome.attempted:
            continue
        outcome.attempted.add(command)
        # `git mv -- SOURCE TARGET` runs alone; `... -- PATH` joins its batch.
        key = command[:-1] if command[-2] == "--" else command
        batches.setdefault(key, []).append(finding)
    ran = False
    for key, batch in batches.items():
        for start in range(0, len(batch), engine.GIT_FIX_BATCH):
            chunk = batch[start:start + engine.GIT_FIX_BATCH]
            command = (*key, *(finding.command[-1] for finding in chunk if finding.command)) \
                if key[-1] == "--" else key
            outcome.commands.append(command)
            if dry_run:  # what `--diff` shows is what `--fix` would run
                outcome.fixed += chunk
                continue
            completed = subprocess.run(["git", *command], cwd=result.repo_root,
                                       capture_output=True, check=False)
            if completed.returncode != 0:
                cause = completed.stderr.decode("utf-8", "backslashreplace").strip()
                outcome.problems.append(f"`{command_text(command)}` failed: {printable(cause)}")
                continue
            outcome.fixed += chunk
            ran = True
    return ran


def command_text(command: Sequence[str]) -> str:
    return printable(" ".join(["git", *(engine.shell_quote(part) for part in command)]))
