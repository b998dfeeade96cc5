"""`echoes-lint install-merge-driver` / `uninstall-merge-driver`.

Install writes two Git config keys (local by default, `--global` for every repository of the
user) and the attribute line `EchoesVault/pages/*.md merge=echoes-vault` in the repository's
`.gitattributes` (or `.git/info/attributes` with `--local-attributes`). Both steps are
idempotent and leave other lines and keys alone.

The driver command is a short `sh` script (`driver_command`) that runs `<this Python> -c '<run
echoes_lint.cli>' merge-driver ...` with the interpreter's absolute path: Git runs drivers through
`sh` with whatever PATH the calling program has (an IDE, a GUI client, a hook), where neither the
`echoes-lint` console script nor an activated virtual environment can be relied on, and a PATH
lookup could pick a program from the repository being merged. The absolute interpreter works
for venv, pipx, `--user` and system installs alike. When it cannot run the driver (moved,
deleted, echoes_lint uninstalled), the script merges with `git merge-file` and markers instead
and says how to repair it: running install again, which also repairs a partial configuration.

Uninstall removes only what install added: our keys (when they still hold our driver) and the
attribute line in the files recorded at install time (`merge.echoes-vault.attributes` in the
local config), so a line the team committed before stays. `status` and `check` never need any
of this: a fresh CI clone has no local config.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
from pathlib import Path

from echoes_lint import engine
from echoes_lint.merge import (
    ATTRIBUTES_LINE,
    DRIVER_KEY,
    SECTION,
    SECTION_KEYS,
    SubfolderVault,
    refuse_subfolder_vault,
)

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    from typing import List, Optional, Sequence, Tuple

NAME_KEY = f"{SECTION}.name"
RECORD_KEY = f"{SECTION}.attributes"
DRIVER_TITLE = "EchoesVault page merge driver (echoes-lint)"
# A record value is `<how>:<file>`: `created` files are deleted again when they end up empty.
_CREATED, _APPENDED = "created", "appended"
_FILES = (".gitattributes", "info/attributes")


class InstallError(Exception):
    """A refusal with a clear reason: exit 2, nothing (more) written."""


# Git runs the driver from the top of the work tree, and `python -m` would import an
# `echoes_lint/` folder found there first: the command drops the current directory from sys.path,
# and `-E` ignores PYTHONPATH (whose relative entries Python makes absolute, to that same top).
_INSTALLED_ONLY = ('import sys; sys.path[:] = [p for p in sys.path if p not in ("", ".")]; '
                   'from echoes_lint.cli import main; sys.exit(main())')
# The driver's exit status for "conflict, markers written". Any other failure (the interpreter
# is gone, echoes_lint no longer imports, an error) leaves %A untouched: Git would then record
# "ours" alone, with no markers. The wrapper below tells the two apart and falls back to Git's own
# text merge, so the other side is never silently dropped.
CONFLICT_STATUS = 3
# Git substitutes %O %A %B (temporary names), %L (a number), and %P %S %X %Y shell-quoted; an
# older Git leaves %S %X %Y as they are (so `case` sees `%X`). Its only other `%` is in `*%[XY]*`,
# which no placeholder starts; the interpreter's path has each `%` doubled, which Git turns back
# into one.
_WRAPPER = (
    "e={python}; o=%O a=%A b=%B l=%L p=%P s=%S x=%X y=%Y; "
    'if [ -x "$e" ]; then "$e" -E -c {code} merge-driver --conflict-status {status} '
    '--marker-size "$l" --names "$s" "$x" "$y" "$o" "$a" "$b" "$p"; c=$?; '
    "case $c in 0) exit 0;; {status}) exit 1;; esac; "
    'why="it failed with exit status $c"; else why="$e is missing"; fi; '
    # An older Git: label as its own merge does when it named the merged branch (GITHEAD_<id>).
    "case $x$y in *%[XY]*) s=base x=ours y=theirs; "
    # `command -p`: the system's own tools, never one a PATH entry finds in the repository.
    "if [ \"$(command -p env | command -p grep -c '^GITHEAD_')\" = 1 ]; then "
    "x=HEAD y=$(command -p env | command -p sed -n 's/^GITHEAD_[0-9a-f]*=//p'); fi;; esac; "
    'echo "echoes-lint merge-driver: $why; merged with git merge-file instead; run '
    'echoes-lint install-merge-driver to repair the driver" >&2; '
    'git merge-file -q --marker-size="$l" -L "$x" -L "$s" -L "$y" "$a" "$o" "$b" && exit 0; '
    "exit 1"
)


def driver_command(python: Optional[str] = None) -> str:
    """The `merge.echoes-vault.driver` value: this interpreter runs the driver; when it cannot
    (moved, deleted, echoes_lint uninstalled), `git merge-file` merges with markers.

    It names the interpreter by its absolute path and nothing else: looking `echoes-lint` or
    `python3` up on PATH at merge time could pick a program from the repository being merged (a
    relative PATH entry, direnv's `PATH_add bin`). A recreated environment at the same path
    keeps working; after a move, `check` warns (EV090) and install records the new one.
    """
    interpreter = shlex.quote(python or sys.executable).replace("%", "%%")
    return _WRAPPER.format(python=interpreter, code=shlex.quote(_INSTALLED_ONLY),
                           status=CONFLICT_STATUS)


def is_our_driver(value: str) -> bool:
    return " merge-driver " in value and "echoes" in value


def recorded_interpreter(command: str) -> Optional[str]:
    """The interpreter a recorded driver command runs (this version's wrapper or the bare
    command of earlier versions), or None when the command is not ours or cannot be read."""
    if not is_our_driver(command):
        return None
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";")
        first = next(iter(lexer), "")
    except ValueError:
        return None
    if has_fallback(command):
        if not first.startswith("e="):
            return None
        first = first[2:]
    return first.replace("%%", "%") or None


def has_fallback(command: str) -> bool:
    """Whether a recorded command of ours falls back to `git merge-file` (earlier versions ran
    the interpreter alone, so a missing one left "ours" without markers)."""
    return f"--conflict-status {CONFLICT_STATUS} " in command


def _git(top: Path, *args: str) -> Optional[str]:
    output = engine.run_git(top, list(args))
    return None if output is None else output.decode("utf-8", "replace").rstrip("\n")


def _git_required(top: Path, *args: str) -> str:
    output = _git(top, *args)
    if output is None:
        raise InstallError(f"`git {' '.join(args)}` failed")
    return output


def repository_top(workspace: Optional[str]) -> Path:
    try:
        top = engine.resolve_workspace(workspace)
    except engine.VaultError as exc:
        raise InstallError(str(exc)) from exc
    if _git(top, "rev-parse", "--show-toplevel") is None:
        raise InstallError(f"not inside a Git work tree: {top}")
    return top


def attributes_path(top: Path, which: str) -> Path:
    if which == ".gitattributes":
        return top / ".gitattributes"
    return top / _git_required(top, "rev-parse", "--git-path", which)


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _has_line(text: str) -> bool:
    return any(line.strip() == ATTRIBUTES_LINE for line in text.splitlines())


def add_attribute_line(path: Path) -> Optional[str]:
    """Append our line unless present; returns how (`created`/`appended`) or None if present.
    A file without a final newline keeps that shape, so removal restores it byte for byte."""
    text = path.read_text(encoding="utf-8") if path.exists() else None
    if text is not None and _has_line(text):
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    if not text:
        addition = ATTRIBUTES_LINE + "\n"
    elif text.endswith("\n"):
        addition = ATTRIBUTES_LINE + _newline(text)
    else:
        addition = _newline(text) + ATTRIBUTES_LINE
    with path.open("a", encoding="utf-8", newline="") as handle:
        handle.write(addition)
    return _CREATED if text is None else _APPENDED


def remove_attribute_line(path: Path, created: bool) -> bool:
    """Remove the last copy of our line, undoing `add_attribute_line`; True if one was removed."""
    if not path.exists():
        return False
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].strip() != ATTRIBUTES_LINE:
            continue
        if not lines[index].endswith("\n") and index > 0:
            # Our line was appended after a final line that had no newline: give it back.
            lines[index - 1] = lines[index - 1].rstrip("\r\n")
        del lines[index]
        remaining = "".join(lines)
        if created and not remaining:
            path.unlink()
        else:
            path.write_bytes(remaining.encode("utf-8"))
        return True
    return False


def _config(top: Path, scope: str, *args: str) -> Optional[str]:
    return _git(top, "config", scope, *args)


def install(top: Path, scope: str, which: str) -> List[str]:
    """Install the driver; returns one line per step for the person running it. A partial
    configuration (our section without a driver, which makes Git stop every merge of a page
    with "custom merge driver ... lacks command line") and a recorded command that no longer
    runs are repaired."""
    refuse_subfolder_vault(top, "install-merge-driver")
    command = driver_command()
    current = _config(top, scope, "--get", DRIVER_KEY)
    if current is not None and current != command and not is_our_driver(current):
        raise InstallError(
            f"{DRIVER_KEY} is already set to {current!r}, which is not echoes-lint's driver; "
            f"remove it with `git config {scope} --unset {DRIVER_KEY}` first")
    where = "global" if scope == "--global" else "local"
    report = []
    if current is None and _config(top, scope, "--get-regexp", SECTION_KEYS) is not None:
        report.append(f"{SECTION}: repaired a partial configuration (keys without "
                      f"{DRIVER_KEY}, which makes Git stop merging pages)")
    elif current is not None and current != command:
        interpreter = recorded_interpreter(current)
        if interpreter is not None and not os.access(interpreter, os.X_OK):
            report.append(f"{DRIVER_KEY}: the recorded interpreter "
                          f"{engine.printable(interpreter)} is missing")
        elif not has_fallback(current):
            report.append(f"{DRIVER_KEY}: the recorded command had no fallback to Git's "
                          "text merge")
    for key, value in ((NAME_KEY, DRIVER_TITLE), (DRIVER_KEY, command)):
        if _config(top, scope, "--get", key) == value:
            report.append(f"{key}: already set ({where} config)")
        else:
            _git_required(top, "config", scope, key, value)
            report.append(f"{key}: set ({where} config)")
    path = attributes_path(top, which)
    shown = os.path.relpath(path, top)
    how = add_attribute_line(path)
    if how is None:
        report.append(f"{shown}: `{ATTRIBUTES_LINE}` already present")
    else:
        _git_required(top, "config", "--local", "--add", RECORD_KEY, f"{how}:{which}")
        report.append(f"{shown}: added `{ATTRIBUTES_LINE}`")
        if which == ".gitattributes":
            report.append("Commit .gitattributes to share the attribute; each clone still runs "
                          "`echoes-lint install-merge-driver` once for the config.")
    report.append(f"The driver runs {sys.executable}; after moving or recreating that "
                  "environment elsewhere, run `echoes-lint install-merge-driver` again "
                  "(`echoes-lint check` warns with EV090; meanwhile pages merge with Git's text "
                  "merge).")
    version = git_version(top)
    if version is not None and version < NAMES_SINCE:
        report.append(f"Git {'.'.join(map(str, version))} does not pass branch names to merge "
                      "drivers (Git 2.44 and later do): conflict markers name HEAD and the "
                      "merged branch, or the replayed commit, as Git's own merge does.")
    return report


# The first Git that expands %S %X %Y in a driver's command line.
NAMES_SINCE = (2, 44)


def git_version(top: Path) -> Optional[Tuple[int, ...]]:
    output = _git(top, "--version") or ""
    found = re.search(r"(\d+)\.(\d+)", output)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _records(top: Path) -> List[Tuple[str, str]]:
    values = _config(top, "--local", "--get-all", RECORD_KEY)
    records = []
    for value in (values or "").splitlines():
        how, _, which = value.partition(":")
        if how in (_CREATED, _APPENDED) and which in _FILES:
            records.append((how, which))
    return records


def _drop_empty_section(top: Path, scope: str) -> None:
    """`git config --unset` leaves an empty section header behind; remove it when it is ours."""
    if _config(top, scope, "--get-regexp", SECTION_KEYS) is None:
        _git(top, "config", scope, "--remove-section", SECTION)


def uninstall(top: Path, scope: str) -> List[str]:
    report = []
    where = "global" if scope == "--global" else "local"
    current = _config(top, scope, "--get", DRIVER_KEY)
    if current is not None and not is_our_driver(current):
        report.append(f"{DRIVER_KEY}: left alone, it is not echoes-lint's driver ({current!r})")
    else:
        if current is not None:
            _git_required(top, "config", scope, "--unset-all", DRIVER_KEY)
            report.append(f"{DRIVER_KEY}: removed ({where} config)")
        if _config(top, scope, "--get", NAME_KEY) == DRIVER_TITLE:
            _git_required(top, "config", scope, "--unset-all", NAME_KEY)
            report.append(f"{NAME_KEY}: removed ({where} config)")
    for how, which in _records(top):
        path = attributes_path(top, which)
        if remove_attribute_line(path, how == _CREATED):
            report.append(f"{os.path.relpath(path, top)}: removed `{ATTRIBUTES_LINE}`")
    if _config(top, "--local", "--get-all", RECORD_KEY) is not None:
        _git_required(top, "config", "--local", "--unset-all", RECORD_KEY)
    for each in dict.fromkeys((scope, "--local")):
        _drop_empty_section(top, each)
    return report or ["nothing to remove: the echoes-vault merge driver is not installed"]


def _parser(prog: str, installing: bool) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--workspace", default=None, help="repository (default: current directory)")
    parser.add_argument("--global", dest="global_", action="store_true",
                        help="write the driver to the user's global Git config")
    if installing:
        parser.add_argument("--local-attributes", action="store_true",
                            help="write the attribute to .git/info/attributes (not committed) "
                                 "instead of .gitattributes")
    return parser


def _run(steps: List[str]) -> int:
    sys.stdout.write("".join(f"{step}\n" for step in steps))
    return 0


def install_main(argv: Sequence[str]) -> int:
    args = _parser("echoes-lint install-merge-driver", True).parse_args(list(argv))
    try:
        top = repository_top(args.workspace)
        which = "info/attributes" if args.local_attributes else ".gitattributes"
        return _run(install(top, "--global" if args.global_ else "--local", which))
    except (InstallError, SubfolderVault, OSError, UnicodeDecodeError) as exc:
        sys.stderr.write(f"echoes-lint install-merge-driver: {exc}\n")
        return 2


def uninstall_main(argv: Sequence[str]) -> int:
    args = _parser("echoes-lint uninstall-merge-driver", False).parse_args(list(argv))
    try:
        top = repository_top(args.workspace)
        return _run(uninstall(top, "--global" if args.global_ else "--local"))
    except (InstallError, OSError, UnicodeDecodeError) as exc:
        sys.stderr.write(f"echoes-lint uninstall-merge-driver: {exc}\n")
        return 2
