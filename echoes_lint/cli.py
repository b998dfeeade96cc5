"""`echoes-lint`: protocol commands go to the engine, tool commands to their own modules.

Each tool command lives in one module with `main(argv) -> int`, imported only when used so that
`echoes-lint status` pays for nothing but the engine.
"""

from __future__ import annotations

import importlib
import sys

from echoes_lint import __version__, gitindex

TYPE_CHECKING = False  # not `typing`'s: `check --staged` starts git before `typing` loads
if TYPE_CHECKING:
    from typing import Callable, Optional

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


def main(argv: Optional[list[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    leading, command, rest = _split(args)
    if command == "check" and "--staged" in rest:  # the plain Git hook (hooks/pre-commit)
        gitindex.start(staged=True)  # git reads a large index while the engine and linter load
        try:
            return _load(TOOL_COMMANDS[command])(_workspace(leading) + rest)
        finally:
            gitindex.discard()
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
