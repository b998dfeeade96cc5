"""`echoes-lint install-git-hooks`: keep the ignored local index fresh after Git rewrites pages.

Installs the `post-merge`, `post-checkout` and `post-rewrite` scripts of `hooks/` into the
directory Git really runs hooks from (`git rev-parse --git-path hooks`, which honours
`core.hooksPath` and resolves linked worktrees to the shared hooks). A hook the user already has
is never overwritten: it is moved to `<hook>.before-echoes-lint`, which our script runs first
with the same arguments, input and exit status. When that name is taken too, nothing is
installed and the message says why. Running it again changes nothing.

`echoes-lint uninstall-git-hooks` removes only the scripts that carry our signature and moves a
chained user hook back to its own name; any other hook stays as it is.

The hooks hydrate with this installed echoes-lint (`echoes_lint.merge.hydrate`), never with the
repository's `.echoes-vault/echoes_vault.py`: a checkout or pull must not run code it brought.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from echoes_lint import engine
from echoes_lint.merge import SubfolderVault, refuse_subfolder_vault

HOOK_NAMES = ("post-merge", "post-checkout", "post-rewrite")
CHAIN_SUFFIX = ".before-echoes-lint"
# Every script in hooks/ carries this line; it tells an older echoes-lint hook (safe to replace)
# from a user's own hook (to chain).
SIGNATURE = b"Installed by `echoes-lint install-git-hooks`"
# A wheel ships the scripts as `echoes_lint/hooks/`; a source checkout or editable install keeps
# them in the repository's top-level `hooks/`.
_PACKAGE = Path(__file__).resolve().parents[1]
SOURCE_DIR = next((folder for folder in (_PACKAGE / "hooks", _PACKAGE.parent / "hooks")
                   if (folder / HOOK_NAMES[0]).is_file()), _PACKAGE / "hooks")


class HookError(Exception):
    """Nothing was installed; the message says why."""


def hooks_directory(top: Path) -> Path:
    output = engine.run_git(top, ["rev-parse", "--git-path", "hooks"])
    if output is None:
        raise HookError(f"not inside a Git repository: {top}")
    return top / os.fsdecode(output.strip())


# The scripts' default interpreter; installing names this interpreter instead, because Git runs
# hooks with whatever PATH the calling program has (as for the merge driver, see install.py).
_PYTHON_LINE = b"python=${ECHOES_LINT_PYTHON:-python3}\n"


def hook_source(name: str) -> bytes:
    """The script as installed: the interpreter running this command is the hook's default."""
    try:
        script = (SOURCE_DIR / name).read_bytes()
    except OSError as exc:
        raise HookError(f"hook script {name} not found in {SOURCE_DIR}: "
                        f"{exc.strerror or exc}") from exc
    python = os.fsencode(shlex.quote(sys.executable))
    return script.replace(_PYTHON_LINE, b"python=${ECHOES_LINT_PYTHON:-" + python + b"}\n")


def _write_executable(target: Path, data: bytes) -> None:
    """Write atomically, so Git never runs a half-written hook."""
    target.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=str(target.parent))
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.chmod(temporary, 0o755)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


Plan = Tuple[str, Path, bytes, Optional[str]]


def plan(directory: Path) -> List[Plan]:
    """(name, target, script, action) per hook; action None means already installed. Raises
    HookError before anything is written when a user hook cannot be chained."""
    steps: List[Plan] = []
    for name in HOOK_NAMES:
        script = hook_source(name)
        target = directory / name
        if not os.path.lexists(target):
            steps.append((name, target, script, "install"))
            continue
        current = b"" if target.is_symlink() else _read(target)
        if current == script:
            steps.append((name, target, script, None))
        elif SIGNATURE in current:
            steps.append((name, target, script, "update"))
        elif os.path.lexists(str(target) + CHAIN_SUFFIX):
            raise HookError(
                f"{target} is your own hook and {target.name}{CHAIN_SUFFIX} already exists, so "
                "it cannot be chained; merge the two into one file, then run install-git-hooks "
                "again")
        else:
            steps.append((name, target, script, "chain"))
    return steps


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise HookError(f"cannot read {path}: {exc.strerror or exc}") from exc


def install(top: Path) -> List[str]:
    directory = hooks_directory(top)
    report = []
    for name, target, script, action in plan(directory):
        shown = os.path.relpath(target, top)
        if action is None:
            report.append(f"{name}: already installed ({shown})")
            continue
        if action == "chain":
            os.replace(target, str(target) + CHAIN_SUFFIX)
        _write_executable(target, script)
        if action == "chain":
            report.append(f"{name}: installed ({shown}); your hook is now {name}{CHAIN_SUFFIX} "
                          "and still runs first")
        else:
            report.append(f"{name}: {'updated' if action == 'update' else 'installed'} ({shown})")
    return report


def uninstall(top: Path) -> List[str]:
    directory = hooks_directory(top)
    report = []
    for name in HOOK_NAMES:
        target = directory / name
        chained = Path(str(target) + CHAIN_SUFFIX)
        shown = os.path.relpath(target, top)
        if not os.path.lexists(target):
            continue
        if target.is_symlink() or SIGNATURE not in _read(target):
            report.append(f"{name}: left alone, not installed by echoes-lint ({shown})")
        elif os.path.lexists(chained):
            os.replace(chained, target)
            report.append(f"{name}: removed; your hook is back at {shown}")
        else:
            target.unlink()
            report.append(f"{name}: removed ({shown})")
    return report or ["nothing to remove: no echoes-lint Git hooks are installed"]


def _main(argv: Sequence[str], installing: bool) -> int:
    command = "install-git-hooks" if installing else "uninstall-git-hooks"
    parser = argparse.ArgumentParser(
        prog=f"echoes-lint {command}",
        description="Install post-merge, post-checkout and post-rewrite hooks that run `hydrate`."
        if installing else "Remove the hooks install-git-hooks added; your own hooks stay.")
    parser.add_argument("--workspace", default=None, help="repository (default: current directory)")
    args = parser.parse_args(list(argv))
    try:
        top = engine.resolve_workspace(args.workspace)
        if installing:
            refuse_subfolder_vault(top, command)
        report = install(top) if installing else uninstall(top)
    except (HookError, SubfolderVault, engine.VaultError, OSError) as exc:
        sys.stderr.write(f"echoes-lint {command}: {exc}\n")
        return 2
    sys.stdout.write("".join(f"{line}\n" for line in report))
    return 0


def main(argv: Sequence[str]) -> int:
    return _main(argv, True)


def uninstall_main(argv: Sequence[str]) -> int:
    return _main(argv, False)
