"""`echoes-lint check [PATHS...]` and `echoes-lint rule CODE`.

Exit codes: 0 clean (warnings allowed), 1 findings at or above the failing severity, 2 usage,
configuration or internal error (`echoes-lint: error: ...` on stderr).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from echoes_lint import __version__, engine
from echoes_lint.checker import CheckResult, exit_code, run_checks
from echoes_lint.cli import keep
from echoes_lint.config import FAIL_ON, ConfigError, load_config, split_codes, split_patterns
from echoes_lint.engine import printable
from echoes_lint.findings import RULES, Finding, Rule

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    from typing import IO, Any, Callable, NoReturn, Optional

FORMATS = ("concise", "full", "json", "github", "sarif")


class UsageError(Exception):
    """A command-line mistake: reported like a configuration error, exit 2."""


class Parser(argparse.ArgumentParser):
    """argparse that raises UsageError, so `guarded` reports it like any other failure."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)

    _adding = False

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        self._adding = True
        try:
            return super().add_argument(*args, **kwargs)
        finally:
            self._adding = False

    def _get_formatter(self) -> argparse.HelpFormatter:
        # `add_argument` asks a formatter only to check the metavar; argparse's own would
        # import shutil and ask the terminal's size for each option of every gate run. Help
        # and usage are formatted for the terminal as before.
        if self._adding:
            return argparse.HelpFormatter(self.prog, width=80)
        return super()._get_formatter()


def add_scope_options(parser: argparse.ArgumentParser, workspace_default: Optional[str]) -> None:
    """What to check and with which rules: the options `check` and `ci` share."""
    parser.add_argument("--workspace", default=workspace_default, metavar="DIR",
                        help="a directory inside the repository (default: the current one)")
    parser.add_argument("--vault-dir", default=None, metavar="PATH",
                        help="the EchoesVault folder, relative to the repository root")
    parser.add_argument("--config", default=None, metavar="FILE",
                        help="read this TOML file instead of .echoes-lint.toml / pyproject.toml")
    parser.add_argument("--select", action="append", default=[], metavar="CODES",
                        help="comma-separated codes or prefixes to check (replaces `select`)")
    parser.add_argument("--ignore", action="append", default=[], metavar="CODES",
                        help="comma-separated codes or prefixes to skip (adds to `ignore`)")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="echoes-lint check",
        description="Lint an EchoesVault: conflict markers, frontmatter, Git hygiene, names, "
                    "links. Read-only.",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files or folders to check (default: the whole vault); "
                             "repository-wide facts are always checked")
    add_scope_options(parser, workspace_default=None)
    parser.add_argument("--staged", action="store_true",
                        help="check the staged snapshot (what `git commit` would record)")
    parser.add_argument("--output-format", choices=FORMATS, default="concise")
    parser.add_argument("-o", "--output-file", default=None, metavar="FILE",
                        help="write the report to FILE instead of standard output")
    parser.add_argument("--exit-zero", action="store_true",
                        help="exit 0 even when there are findings")
    parser.add_argument("--fail-on", choices=FAIL_ON, default=None,
                        help="lowest severity that fails the check, or never (default: error)")
    parser.add_argument("--extend-select", action="append", default=[], metavar="CODES",
                        help="comma-separated codes or prefixes to check in addition to the "
                             "selection")
    parser.add_argument("--extend-ignore", action="append", default=[], metavar="CODES",
                        help="comma-separated codes or prefixes to skip (like --ignore)")
    parser.add_argument("--exclude", action="append", default=None, metavar="GLOBS",
                        help="comma-separated globs of files or folders (relative to the "
                             "repository root) whose findings are skipped (replaces `exclude`)")
    parser.add_argument("--extend-exclude", action="append", default=[], metavar="GLOBS",
                        help="like --exclude, but adds to `exclude`")
    parser.add_argument("--statistics", action="store_true",
                        help="count findings per rule instead of showing each one: a table for "
                             "concise and full, a JSON list for json, one annotation per rule "
                             "for github, counts in the run's properties for sarif")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour the concise and full formats (auto honours NO_COLOR and "
                             "FORCE_COLOR)")
    add_fix_options(parser)
    return parser


def add_fix_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fix", action="store_true",
                        help="apply the safe fixes (page edits through the engine's writer, "
                             "`git rm --cached`, `git add`), then report what remains")
    parser.add_argument("--unsafe-fixes", action="store_true",
                        help="with --fix or --diff, also apply the unsafe fixes (renames)")
    parser.add_argument("--diff", action="store_true",
                        help="print a unified diff of what --fix would change and change "
                             "nothing; exit 1 when there is something to fix")
    parser.add_argument("--show-fixes", action="store_true",
                        help="with --fix, list the fixed findings per file")
    parser.add_argument("--exit-non-zero-on-fix", action="store_true",
                        help="with --fix, exit 1 when something was fixed, even if nothing "
                             "remains")


def use_color(choice: str, stream: IO[Any]) -> bool:
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream.isatty() and os.environ.get("TERM") != "dumb"


def render_result(result: CheckResult, output_format: str, *, color: bool = False,
                  statistics: bool = False, fixed: Sequence[Finding] = (),
                  show_fixes: bool = False) -> str:
    # The reporters are imported only when a report is written.
    from echoes_lint.report import ReportInput, render

    # Only the full format quotes source lines: the others need no file read again.
    sources = result.sources() if output_format == "full" and not statistics else {}
    text = render(output_format, ReportInput(
        result.findings, __version__, sources, color=color, statistics=statistics,
        workspace_uri=result.repo_root.as_uri(), fixed=fixed, show_fixes=show_fixes,
    ))
    if output_format in HUMAN_FORMATS:
        text += fix_hint(grouped_fix_commands(result))
    return text


HUMAN_FORMATS = ("concise", "full")


def grouped_fix_commands(result: CheckResult) -> list[str]:
    """The Git commands that fix every reported EV020-EV022 finding at once: `git rm --cached`,
    `git add -f`, `git add`, each path shell-quoted, grouped and split every 100 paths exactly as
    the engine's `suggestedCommands` are, relative to the repository root. Built from the
    reported findings' own commands (raw paths), so what the selection, a path or
    `per-file-ignores` left out is not in them, nor a tracked file an ignore rule matches (it
    has no command: adding it again fixes nothing)."""
    groups: dict[tuple[str, ...], list[str]] = {("rm",): [], ("add",): [], ("add", "-f"): []}
    for finding in result.findings:
        command = finding.command
        if finding.code in GIT_READINESS_CODES and command is not None:
            groups[command[:1] if command[0] == "rm" else command[:-2]].append(command[-1])
    return [printable(command) for command in engine.git_fix_commands(*groups.values())]


GIT_READINESS_CODES = ("EV020", "EV021", "EV022")


def fix_hint(commands: list[str]) -> str:
    """The grouped commands after a human report, once, instead of one command per finding."""
    if not commands:
        return ""
    return ("\nTo fix Git readiness, run from the repository root:\n"
            + "".join(f"  {command}\n" for command in commands))


def error(message: str, quote: Optional[Callable[[str], str]] = None) -> int:
    """One `echoes-lint: error:` line on stderr, exit 2. The message may quote the repository
    (a configuration key, a path): it is made printable, and `quote` can fence it further."""
    line = f"echoes-lint: error: {printable(message)}\n"
    sys.stderr.write(quote(line) if quote else line)
    return 2


def write_text(text: str, output_file: Optional[str]) -> None:
    data = text.encode("utf-8", "backslashreplace")  # never fail while reporting
    if output_file is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    Path(output_file).write_bytes(data)


def fast_process() -> None:
    """A check is a short-lived process that builds a large, acyclic scan: garbage collection
    would only walk it again and again (a third of the run time on a large vault)."""
    gc.disable()


def guarded(command: Callable[[], int], quote: Optional[Callable[[str], str]] = None) -> int:
    """Run a command, turning every failure into one `echoes-lint: error:` line and exit 2."""
    try:
        return command()
    except (UsageError, ConfigError) as exc:
        return error(str(exc), quote)
    except OSError as exc:
        return error(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc),
                     quote)
    except KeyboardInterrupt:
        return error("interrupted", quote)
    except Exception as exc:  # one line on stderr, never a traceback
        return error(f"internal error ({type(exc).__name__}): {exc}", quote)


def main(argv: Optional[list[str]] = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    fast_process()
    return guarded(lambda: _check(build_parser().parse_args(arguments)))


def expand_globs(paths: Sequence[str]) -> list[str]:
    """Paths as given, with a glob that names no existing path expanded (relative to the current
    folder, `**` recursive; sorted) for shells and hooks that pass it quoted. `pathlib` never
    follows a symbolic link into `**` (`glob.glob` does: a link loop would never end)."""
    expanded: list[str] = []
    for path in paths:
        if os.path.lexists(path) or not any(char in path for char in "*?["):
            expanded.append(path)
            continue
        pattern = Path(path)
        base = Path(pattern.anchor) if pattern.is_absolute() else Path()
        matches = sorted(str(match) for match in base.glob(str(pattern.relative_to(base))))
        if not matches:
            raise UsageError(f"{path}: no file or folder matches")
        expanded.extend(matches)
    return expanded


def _check(args: argparse.Namespace) -> int:
    if args.staged and args.paths:
        raise UsageError("--staged checks what is staged and takes no paths")
    if args.staged and (args.fix or args.diff):
        raise UsageError("--staged checks Git's index, which --fix and --diff do not edit; "
                         "fix the working tree, then stage it")
    workspace = Path(args.workspace) if args.workspace else Path.cwd()
    config = load_config(workspace, Path(args.config)) if args.config else None
    paths = [str(Path.cwd() / path) for path in expand_globs(args.paths)] if args.paths else None
    scope: dict[str, Any] = dict(
        vault_dir=args.vault_dir, paths=paths, config=config, select=split_codes(args.select),
        ignore=split_codes(args.ignore), extend_select=split_codes(args.extend_select),
        extend_ignore=split_codes(args.extend_ignore),
        exclude=None if args.exclude is None else split_patterns(args.exclude),
        extend_exclude=split_patterns(args.extend_exclude))
    if args.fix or args.diff:
        return _fix(args, workspace, scope)
    result = run_checks(workspace, staged=args.staged, **scope)
    keep(result)
    color = args.output_file is None and use_color(args.color, sys.stdout)
    write_text(render_result(result, args.output_format, color=color,
                             statistics=args.statistics), args.output_file)
    if args.exit_zero:
        return 0
    return exit_code(result.findings, args.fail_on or result.config.fail_on)


def _fix(args: argparse.Namespace, workspace: Path, scope: dict[str, Any]) -> int:
    from echoes_lint.fix import command_text, run_fixes

    outcome = run_fixes(workspace, unsafe=args.unsafe_fixes, dry_run=args.diff, **scope)
    for problem in outcome.problems:
        sys.stderr.write(f"echoes-lint: {problem}\n")
    if args.diff:
        write_text("".join(outcome.diffs), args.output_file)
        for command in outcome.commands:
            sys.stderr.write(f"Would run: {command_text(command)}\n")
        count = len(outcome.fixed)
        sys.stderr.write(f"Would fix {count} finding{'s' if count != 1 else ''}.\n"
                         if count else "No fixes available.\n")
        return 1 if outcome.diffs or outcome.commands else 0
    result = outcome.result
    keep(outcome)
    color = args.output_file is None and use_color(args.color, sys.stdout)
    write_text(render_result(result, args.output_format, color=color, statistics=args.statistics,
                             fixed=outcome.fixed, show_fixes=args.show_fixes), args.output_file)
    if args.exit_zero:
        return 0
    if outcome.problems or (args.exit_non_zero_on_fix and outcome.fixed):
        return 1
    return exit_code(result.findings, args.fail_on or result.config.fail_on)


def _find_rule(name: str) -> Optional[Rule]:
    key = name.strip()
    return RULES.get(key.upper()) or next((rule for rule in RULES.values() if rule.name == key),
                                          None)


def rule_main(argv: Optional[list[str]] = None) -> int:
    """`echoes-lint rule EV030` (or a rule name) explains a rule; `--all` lists every rule."""
    parser = Parser(prog="echoes-lint rule", description="Explain a rule.")
    parser.add_argument("rule", nargs="?", help="a code such as EV030 or a name such as "
                                                "case-collision")
    parser.add_argument("--all", action="store_true", help="list every rule")
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        if args.all:
            text = "".join(f"{rule.code}  {rule.severity.value:<7}  {rule.name:<26}  "
                           f"{rule.summary}\n" for rule in RULES.values())
        elif args.rule:
            rule = _find_rule(args.rule)
            if rule is None:
                raise UsageError(f"unknown rule {args.rule!r} (run `echoes-lint rule --all`)")
            text = rule.document()
        else:
            raise UsageError("name a rule, for example `echoes-lint rule EV030`, or pass --all")
    except UsageError as exc:
        return error(str(exc))
    write_text(text, None)
    return 0
