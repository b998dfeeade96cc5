"""`echoes-lint`: protocol commands go to the engine, tool commands to their own modules.

Each tool command lives in one module with `main(argv) -> int`, imported only when used so that
`echoes-lint status` pays for nothing but the engine.
"""

from __future__ import annotations

import gc
import importlib
import os
import subprocess
import sys

from echoes_lint import __version__, gitindex

TYPE_CHECKING = False  # not `typing`'s: `check --staged` starts git before `typing` loads
if TYPE_CHECKING:
    from typing import Callable, NoReturn, Optional

# command -> "module:function"; every function takes the argv after the command name.
TOOL_COMMANDS: dict[str, str] = {
    "check": "echoes_lint.check:main",
    "rule": "echoes_lint.check:rule_main",
    "ci": "echoes_lint.ci:main",
    "resolve": "echoes_lint.merge.resolve:main",
    "merge-driver": "echoes_lint.merge.driver:main",
    "install-merge-driver": "echoes_lint.merge.install:install_main",
    "uninstall-merge-driver": "echoes_lint.merge.install:uninstall_main",
    "install-git-hooks": "echoes_lint.merge.githooks:main",
    "uninstall-git-hooks": "echoes_lint.merge.githooks:uninstall_main",
}

# One line each for `echoes-lint --help`, as the protocol commands have theirs.
TOOL_SUMMARIES: dict[str, str] = {
    "check": "Lint the vault (read-only; --fix applies the safe fixes).",
    "rule": "Explain a rule, or list them all with --all.",
    "ci": "The pull-request gate the GitHub Action runs: report, annotations, SARIF.",
    "resolve": "While merging: check the vault's conflicted files and say what comes next.",
    "merge-driver": "The Git merge driver for pages (Git runs it; see install-merge-driver).",
    "install-merge-driver": "Let Git merge pages key by key in this clone.",
    "uninstall-merge-driver": "Remove what install-merge-driver set up.",
    "install-git-hooks": "Keep the local index fresh after checkout, merge and rebase.",
    "uninstall-git-hooks": "Remove the hooks install-git-hooks installed; keep your own.",
}

# How people run us: usage, `COMMAND --help` and the commands the status card suggests say so.
PROG = "echoes-lint"
_GLOBAL_OPTIONS = ("--workspace", "--agent", "--adapter-version")


def usage() -> str:
    from echoes_lint import engine

    return f"""\
usage: echoes-lint [--workspace DIR] [--agent NAME] [--adapter-version X.Y.Z] COMMAND [ARGS]

Protocol {engine.PROTOCOL_VERSION} commands (engine {engine.ENGINE_VERSION}):
{"".join(f"  {name:<17} {engine.COMMAND_SUMMARIES[name]}{chr(10)}" for name in engine.COMMANDS)}
Tool commands:
{"".join(f"  {name:<23} {TOOL_SUMMARIES[name]}{chr(10)}" for name in TOOL_COMMANDS)}
Run `echoes-lint COMMAND --help` for a command's options (and the payload schema of `append`,
`upsert` and `end`).
"""


def _split(argv: list[str]) -> tuple[list[str], Optional[str], list[str]]:
    """Split argv into leading global options, the command name, and the rest."""
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg in _GLOBAL_OPTIONS:
            index += 2
        elif arg.split("=", 1)[0] in _GLOBAL_OPTIONS:
            index += 1
        else:
            return argv[:index], arg, argv[index + 1 :]
    return argv, None, []


def _load(target: str) -> Callable[[list[str]], int]:
    module_name, function_name = target.split(":")
    function: Callable[[list[str]], int] = getattr(
        importlib.import_module(module_name), function_name
    )
    return function


# The whole-vault gates and the plain Git hook (`check --staged`).
_GATES = ("check", "ci")
# Set by `entry`: what a gate built stays referenced here until its process ends (`keep`).
_kept: Optional[list[object]] = None


def keep(value: object) -> None:
    """Hold `value` (a gate's scan and findings) until the process ends, when the gate runs as
    its own process (`entry`): it ends without freeing them object by object (about 30 ms at
    100,000 pages). In-process callers (tests, `fix`) free it as usual."""
    if _kept is not None:
        _kept.append(value)


def entry() -> NoReturn:
    """The `echoes-lint` console script and `python -m echoes_lint`. A gate is a short-lived
    process: its garbage collector is off from the start (the imports alone ran it several
    times) and it ends without the interpreter's teardown once its output is flushed
    (`precommit.leave`, as the hooks do). Other commands exit as usual."""
    global _kept
    if _split(sys.argv[1:])[1] not in _GATES:
        sys.exit(main())
    gc.disable()
    _kept = []
    status = main()
    from echoes_lint.precommit import leave

    leave(status)


def main(argv: Optional[list[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    leading, command, rest = _split(args)
    if command == "check" and "--staged" in rest:  # the plain Git hook (hooks/pre-commit)
        gitindex.start(staged=True)  # git reads a large index while the engine and linter load
        try:
            return _load(TOOL_COMMANDS[command])(_workspace(leading) + rest)
        finally:
            gitindex.discard()
    if command in _GATES:  # the whole-vault gates: the repository root, asked now
        _start_toplevel(args)
        try:
            return _load(TOOL_COMMANDS[command])(_workspace(leading) + rest)
        finally:
            _discard_toplevel()
    from echoes_lint import engine

    if command in ("-h", "--help"):
        sys.stdout.write(usage())
        return 0
    if command is None:  # a bare `echoes-lint` is a person asking what it does
        sys.stderr.write(usage())
        return 2
    if command == "--version":
        sys.stdout.write(f"echoes-lint {__version__} (engine {engine.ENGINE_VERSION}, "
                         f"protocol {engine.PROTOCOL_VERSION})\n")
        return 0
    if command in TOOL_COMMANDS:
        return _load(TOOL_COMMANDS[command])(_workspace(leading) + rest)
    return engine.launch(PROG, args)


# `git rev-parse --show-toplevel` in the folder of a gate run without --workspace, started
# before the engine and the linter load (about 35 ms) instead of after: a check takes it.
_TOPLEVEL = ("rev-parse", "--show-toplevel")
_toplevels: dict[str, subprocess.Popen[bytes]] = {}


def _start_toplevel(args: list[str]) -> None:
    if any(arg.startswith("--workspace") for arg in args):
        return  # the folder is the option's: the check asks git there itself
    try:
        folder = os.getcwd()
        _toplevels[os.path.realpath(folder)] = subprocess.Popen(
            ["git", *_TOPLEVEL], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return  # the check runs git itself, and says why it cannot


def toplevel(folder: str) -> Optional[subprocess.Popen[bytes]]:
    """The `git rev-parse --show-toplevel` started in `folder` (resolved) for this run, if
    any: `engine.git_finish` collects it."""
    return _toplevels.pop(os.path.realpath(folder), None)


def _discard_toplevel() -> None:
    """End and collect a started git that no check took (a usage error stopped it first):
    its answer is not needed, and a git stuck on a hostile `.git` must not hold the exit."""
    while _toplevels:
        process = _toplevels.popitem()[1]
        with process:
            process.kill()
            process.communicate()


def _workspace(leading: list[str]) -> list[str]:
    """Tool commands take the workspace as their own option; the agent options mean nothing
    there."""
    workspace: list[str] = []
    for position, arg in enumerate(leading):
        if arg == "--workspace":
            workspace = ["--workspace", leading[position + 1]]
        elif arg.startswith("--workspace="):
            workspace = [arg]
    return workspace
