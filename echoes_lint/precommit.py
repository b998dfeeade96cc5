"""Entry points of the pre-commit hooks in `.pre-commit-hooks.yaml`, one per hook id.

Each hook checks the files pre-commit passes (none at all is fine: `always_run` hooks still check
the repository-wide facts from the Git index), prints findings as `path:line:col: CODE message`
with the exact fix command, and never changes the repository, except `echoes-lint-fix`: it
applies the safe page fixes of `check --fix` to the files and fails when it changed one (the
pre-commit convention for fixers). It never touches Git's index: pre-commit owns it while a hook
runs, so index fixes stay printed commands.

Before a push, untracked or ignored durable files (EV022, a warning) fail: a push without them
loses them for the team, and only their author can still add them. The `echoes-untracked-files`
hook exists for that stage; the all-rules `echoes-lint` hook does the same when pre-commit runs
it for a push, where it checks the whole vault as CI will.
"""

from __future__ import annotations

import os
import sys

# Only what starts the listing of Git's index loads before it starts (not even `typing`).
from echoes_lint import gitindex

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import NoReturn, Optional

    from echoes_lint.checker import CheckResult
    from echoes_lint.findings import Finding

# hook id -> the rule codes (or prefixes) it checks; empty means every rule.
HOOKS: dict[str, tuple[str, ...]] = {
    "echoes-lint": (),
    "echoes-conflict-markers": ("EV001", "EV002"),
    "echoes-frontmatter": ("EV01", "EV07"),
    "echoes-forbid-local-files": ("EV020", "EV021"),
    "echoes-case-collisions": ("EV030",),
    "echoes-untracked-files": ("EV022",),
    "echoes-lint-fix": (),
}
PUSH_HOOK = "echoes-untracked-files"
UNTRACKED = "EV022"
FIX_HOOK = "echoes-lint-fix"


def pushing() -> bool:
    """pre-commit names the remote in the hook environment of a pre-push run only."""
    return bool(os.environ.get("PRE_COMMIT_REMOTE_NAME"))


# Hooks that read Git's index for the files they are given (the rest read files only, or
# check the whole vault).
LISTS_INDEX = frozenset({"echoes-lint", "echoes-forbid-local-files", "echoes-case-collisions",
                         "echoes-lint-fix"})


def run_hook(hook_id: str, argv: Optional[list[str]] = None) -> int:
    if hook_id in LISTS_INDEX and not _whole(hook_id):
        gitindex.start()  # git lists a large index while the modules below load
    try:
        return _run_hook(hook_id, argv)
    finally:
        gitindex.discard()


def _run_hook(hook_id: str, argv: Optional[list[str]]) -> int:
    # Imported here, after the listing started: loading them is what git overlaps.
    from echoes_lint.check import Parser, fast_process, guarded

    fast_process()
    parser = Parser(prog=hook_id, description=f"pre-commit hook `{hook_id}` of echoes-lint")
    parser.add_argument("filenames", nargs="*", help="files pre-commit passes")
    parser.add_argument("--vault-dir", default=None,
                        help="the EchoesVault folder, relative to the repository root")
    parser.add_argument("--config", default=None, help="a TOML configuration file")
    parser.add_argument("--fail-on-untracked-at-push", choices=("true", "false"), default=None,
                        help="fail a push on untracked or ignored durable files (EV022); "
                             "default: the configured `fail-on-untracked-at-push`, else true")
    return guarded(lambda: _hook(hook_id, parser.parse_args(
        list(sys.argv[1:] if argv is None else argv))))


def _hook(hook_id: str, args: argparse.Namespace) -> int:
    from pathlib import Path

    from echoes_lint.check import render_result, write_text
    from echoes_lint.checker import NoVault, exit_code, run_checks
    from echoes_lint.config import load_config

    workspace = Path.cwd()
    config = load_config(workspace, Path(args.config)) if args.config else None
    whole = _whole(hook_id)
    fixed: list[Finding] = []
    try:
        if hook_id == FIX_HOOK:
            from echoes_lint.fix import run_fixes

            outcome = run_fixes(workspace, git_fixes=False, vault_dir=args.vault_dir,
                                paths=args.filenames, config=config)
            result, fixed = outcome.result, outcome.fixed
            for problem in outcome.problems:
                sys.stderr.write(f"echoes-lint: {problem}\n")
        else:
            result = run_checks(workspace, vault_dir=args.vault_dir,
                                paths=None if whole else args.filenames, config=config,
                                select=HOOKS[hook_id])
    except NoVault as exc:
        if exc.configured:  # by --vault-dir or `vault-dir`: the vault is expected, and missing
            raise
        return 0  # a repository without a vault (yet) has nothing for these hooks to check
    blocked = whole and _untracked_fail(result, args.fail_on_untracked_at_push)
    if result.findings or fixed:
        write_text(render_result(result, "concise", fixed=fixed, show_fixes=bool(fixed)), None)
    if blocked:
        write_text(f"{hook_id}: these files are not committed, so the push would leave them "
                   "behind for the team: commit them (the command above), or set "
                   "`fail-on-untracked-at-push = false` to push without them.\n", None)
        return 1
    return 1 if fixed else exit_code(result.findings, result.config.fail_on)


def _whole(hook_id: str) -> bool:
    """Untracked files are never among the files pre-commit passes: find them in the whole
    vault. A push is rare enough to check everything CI will."""
    return hook_id == PUSH_HOOK or (hook_id == "echoes-lint" and pushing())


def _untracked_fail(result: CheckResult, option: Optional[str]) -> bool:
    """Whether the EV022 findings (only those the configuration lets through) fail this run: by
    the hook argument, else the configuration; never under `fail-on = "never"`."""
    wanted = result.config.fail_on_untracked_at_push if option is None else option == "true"
    return (wanted and result.config.fail_on != "never"
            and any(finding.code == UNTRACKED for finding in result.findings))


def lint_main(argv: Optional[list[str]] = None) -> int:
    return run_hook("echoes-lint", argv)


def conflict_markers_main(argv: Optional[list[str]] = None) -> int:
    return run_hook("echoes-conflict-markers", argv)


def frontmatter_main(argv: Optional[list[str]] = None) -> int:
    return run_hook("echoes-frontmatter", argv)


def forbid_local_files_main(argv: Optional[list[str]] = None) -> int:
    return run_hook("echoes-forbid-local-files", argv)


def case_collisions_main(argv: Optional[list[str]] = None) -> int:
    return run_hook("echoes-case-collisions", argv)


def untracked_files_main(argv: Optional[list[str]] = None) -> int:
    return run_hook("echoes-untracked-files", argv)


def fix_main(argv: Optional[list[str]] = None) -> int:
    return run_hook(FIX_HOOK, argv)


# The console scripts of `.pre-commit-hooks.yaml` (pyproject `[project.scripts]`): the hook, then
# `leave`. The `*_main` functions above return instead, for callers in the same process.


def lint_entry() -> NoReturn:
    leave(lint_main())


def conflict_markers_entry() -> NoReturn:
    leave(conflict_markers_main())


def frontmatter_entry() -> NoReturn:
    leave(frontmatter_main())


def forbid_local_files_entry() -> NoReturn:
    leave(forbid_local_files_main())


def case_collisions_entry() -> NoReturn:
    leave(case_collisions_main())


def untracked_files_entry() -> NoReturn:
    leave(untracked_files_main())


def fix_entry() -> NoReturn:
    leave(fix_main())


# What the interpreter's exit gives when it cannot flush standard output (Py_RunMain).
FLUSH_FAILED = 120


def leave(status: int) -> NoReturn:
    """End the process with `status`, without the interpreter's teardown: a hook process has
    nothing to clean up, and freeing the objects of a large Git index one by one costs ~10 ms at
    100,000 pages. Output is flushed first, as the interpreter's exit does; when that fails
    (a closed pipe, a full disk), the status is the interpreter's own for it, never 0."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and not stream.closed:  # the interpreter skips those too
                stream.flush()
        except OSError:
            status = FLUSH_FAILED
    os._exit(status)
