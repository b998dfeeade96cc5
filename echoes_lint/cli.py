"""`echoes-lint`: protocol commands go to the engine, tool commands to their own modules.

Each tool command lives in one module with `main(argv) -> int`, imported only when used so that
`echoes-lint status` pays for nothing but the engine.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading

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
    # `__import__`, not `importlib`'s: the console script has not loaded that (~0.3 ms).
    function: Callable[[list[str]], int] = getattr(
        __import__(module_name, fromlist=[function_name]), function_name
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
        try:
            _start_toplevel(args, command, rest)
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
# The engine's `git_listings()`, spelled out (a test holds them equal) so that a whole-vault
# gate starts them with the rev-parse, while the second CPU has nothing else to do: a scan of
# the vault at that folder takes them (`listings`).
_SCOPE = ("--", "EchoesVault", ".echoes-vault", ".opencode", ".codex", ".claude", "AGENTS.md",
          "CLAUDE.md")
_LISTINGS = (("ls-files", "-z", "--cached", *_SCOPE),
             ("ls-files", "-z", "--others", "--exclude-standard", *_SCOPE))
_listings: dict[str, list[subprocess.Popen[bytes]]] = {}


def _start_toplevel(args: list[str], command: str, rest: list[str]) -> None:
    # The folder checked: the one --workspace names (as the Action passes it), else this one.
    # A guess that misses (an abbreviated option, one inside --args) is only ended, never
    # taken: a check takes what was started in its own folder.
    global _starting
    named = [args[at + 1] if arg == "--workspace" else arg.partition("=")[2]
             for at, arg in enumerate(args[:-1] if args[-1:] == ["--workspace"] else args)
             if arg == "--workspace" or arg.startswith("--workspace=")]
    if len(named) > 1:
        return
    try:
        folder = os.path.abspath(named[0]) if named else os.getcwd()
    except OSError:
        return  # the check says why it cannot look
    # Started by a thread while this one loads the linter: a `Popen` returns only once git
    # runs, and git waits for a CPU when the other one is busy (with the git started just
    # before: ms each). Taken (joined) before the check forks its page worker.
    starting = threading.Thread(target=_start, args=(folder, _whole_vault(command, rest)))
    try:
        starting.start()
    except RuntimeError:  # no thread to be had (a process limit): started by this one
        starting.run()
        return
    _starting = starting


# The thread that starts the gate's first git processes, until `_started` joins it.
_starting: Optional[threading.Thread] = None


def _start(folder: str, whole: bool) -> None:
    try:
        key = os.path.realpath(folder)
        _toplevels[key] = _git(folder, _TOPLEVEL)
        if whole:
            _listings[key] = []  # filled in turn: each one started is collected
            for listing in _LISTINGS:
                _listings[key].append(_git(folder, listing))
    except (OSError, subprocess.SubprocessError):
        return  # the check runs git itself, and says why it cannot


def _started() -> None:
    """Wait until the git processes of `_start_toplevel` are started (or failed to start)."""
    global _starting
    if _starting is not None:
        _starting.join()
        _starting = None


def _git(folder: str, args: tuple[str, ...]) -> subprocess.Popen[bytes]:
    """git started as `engine.git_start` starts it."""
    return subprocess.Popen(["git", *args], cwd=folder, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)


def _whole_vault(command: str, args: list[str]) -> bool:
    """Whether the gate will most likely scan the whole vault: `ci` does, and `check` without
    a word that names a file or folder (or a glob) does (`check --staged` never gets here).
    A guess that fails costs a little of Git's time on the other CPU: the listings are ended
    when the check ends."""
    return command == "ci" or not any(
        not arg.startswith("-") and (os.path.lexists(arg) or any(char in arg for char in "*?["))
        for arg in args)


def listings(folder: str) -> Optional[list[tuple[Optional[subprocess.Popen[bytes]],
                                                 Optional[str]]]]:
    """The `engine.git_listings()` started in `folder` (resolved) for this run, if all
    started: `engine.collect_git_facts` collects them."""
    _started()
    started = _listings.pop(os.path.realpath(folder), None)
    if started is not None and len(started) == len(_LISTINGS):
        return [(process, None) for process in started]
    for process in started or ():
        _end(process)
    return None


def toplevel(folder: str) -> Optional[subprocess.Popen[bytes]]:
    """The `git rev-parse --show-toplevel` started in `folder` (resolved) for this run, if
    any: `engine.git_finish` collects it."""
    _started()
    return _toplevels.pop(os.path.realpath(folder), None)


def _discard_toplevel() -> None:
    """End and collect a started git that no check took (a usage error stopped it first, or
    the check read named files): its answer is not needed, and a git stuck on a hostile
    `.git` must not hold the exit."""
    _started()
    while _toplevels:
        _end(_toplevels.popitem()[1])
    discard_listings()


def discard_listings() -> None:
    """End and collect the listings no scan took."""
    _started()
    while _listings:
        for process in _listings.popitem()[1]:
            _end(process)


def _end(process: subprocess.Popen[bytes]) -> None:
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
