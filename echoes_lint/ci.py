"""`echoes-lint ci`: the read-only pull-request gate that the GitHub Action (`action.yml`) runs.

One scan serves the whole report: `run_checks` lints the vault and returns its `Scan`, and the
status figures come from that same scan. Nothing in the repository is written; the only files
touched are the ones GitHub Actions hands the step (`$GITHUB_STEP_SUMMARY`, `$GITHUB_OUTPUT`)
and an optional SARIF log.

Exit status: 0 when the gate passes, 1 when it fails under `--fail-on`, 2 for a usage,
configuration or internal error.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from echoes_lint import __version__, engine
from echoes_lint.check import (
    Parser,
    UsageError,
    add_scope_options,
    fast_process,
    guarded,
    write_text,
)
from echoes_lint.checker import Beside, CheckResult, run_checks
from echoes_lint.cli import PROG, keep
from echoes_lint.config import FAIL_ON, load_config, split_codes
from echoes_lint.engine import printable
from echoes_lint.findings import RULES, Finding, Severity
from echoes_lint.report import ReportInput, render, summary_line

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    from typing import Any, Optional

# GitHub shows at most 10 annotations of each type per step and drops the rest silently.
ANNOTATION_LIMIT = 10
# GitHub discards a step summary over 1 MiB whole; the findings table stops well before that.
SUMMARY_TABLE_BUDGET = 512 * 1024


def _boolean(value: str) -> bool:
    """Action inputs are strings; accept the spellings YAML 1.2 gives booleans."""
    folded = value.strip().casefold()
    if folded not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")
    return folded == "true"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="echoes-lint ci",
        description="Read-only EchoesVault status and lint gate for CI: a report in the log, "
                    "annotations, a job summary and step outputs under GitHub Actions.",
    )
    add_scope_options(parser, workspace_default=".")
    parser.add_argument("--fail-on", choices=FAIL_ON, default=None,
                        help="fail on errors or an unhealthy status, on warnings too, or never "
                             "(default: the configured `fail-on`, else error)")
    parser.add_argument("--annotations", type=_boolean, default=None, metavar="BOOL",
                        help="emit ::error/::warning annotations (default: under GitHub Actions)")
    parser.add_argument("--summary", type=_boolean, default=True, metavar="BOOL",
                        help="append a Markdown report to $GITHUB_STEP_SUMMARY (default: true)")
    parser.add_argument("--sarif", default=None, metavar="FILE",
                        help="also write a SARIF 2.1.0 log to FILE")
    parser.add_argument("--args", default="", metavar="STRING",
                        help="more options in one string (" + ", ".join(ARGS_OPTIONS)
                             + "), split into words like a shell would but never run by one "
                               "(the Action's `args` input)")
    return parser


# What the Action's free-form `args` input may carry: rule selection and configuration. The
# outputs (`--sarif`, the summary, annotations) and `--help` belong to dedicated inputs, so that
# `args` can neither redirect a file write nor turn the gate into a run that checks nothing.
ARGS_OPTIONS = ("--select", "--ignore", "--config", "--vault-dir", "--fail-on")


def _args_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="echoes-lint ci --args", add_help=False, allow_abbrev=False)
    parser.add_argument("--select", action="append", default=[])
    parser.add_argument("--ignore", action="append", default=[])
    parser.add_argument("--config", default=None)
    parser.add_argument("--vault-dir", default=None)
    parser.add_argument("--fail-on", choices=FAIL_ON, default=None)
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Parse argv, then the words of `--args`, which may add to the rule selection and name a
    configuration but never replace an option that argv set."""
    options = build_parser().parse_args(list(argv))
    extra = options.args
    if extra.strip():
        import shlex  # only for --args: the gate's run loads none (~0.6 ms)

        try:
            words = shlex.split(extra)
        except ValueError as exc:
            raise UsageError(f"--args: cannot split {extra!r} into words: {exc}") from None
        reserved = {option for action in build_parser()._actions
                    for option in action.option_strings} - set(ARGS_OPTIONS)
        for word in words:
            name = word.split("=", 1)[0]
            if name == "--args":
                raise UsageError("--args cannot contain --args")
            if name in reserved:
                raise UsageError(f"--args cannot carry {name}; it takes only "
                                 f"{', '.join(ARGS_OPTIONS)} (the other options have inputs)")
        added = _args_parser().parse_args(words)
        options.select += added.select
        options.ignore += added.ignore
        for name in ("config", "vault_dir", "fail_on"):
            value = getattr(added, name)
            if value is not None:
                if getattr(options, name) is not None:
                    raise UsageError(f"--args cannot replace --{name.replace('_', '-')}, "
                                     "which is already set")
                setattr(options, name, value)
        options.args = ""
    return options


# ---------------------------------------------------------------------------------------------
# Facts shared by the log, the summary and the outputs
# ---------------------------------------------------------------------------------------------


def fix_commands(result: CheckResult, git: Mapping[str, Any]) -> list[str]:
    """The engine's Git readiness fixes, rebuilt from its lists so that they run from the
    repository root (the engine's own are relative to the vault's parent folder)."""
    return engine.git_fix_commands(
        *([result.prefix + path for path in git[key]]
          for key in ("trackedLocalFiles", "untrackedDurableFiles", "ignoredDurableFiles"))
    )


def status_issues(health: Mapping[str, Any]) -> list[str]:
    """Every status issue as `key: item`, named and ordered as `echoes-lint status` reports."""
    issues = [f"{key}: {item}" for key in engine.HEALTH_ISSUE_KEYS for item in health[key]]
    if health["stateFile"]["exists"] and not health["stateFile"]["valid"]:
        issues.append(f"stateFile: {health['stateFile']['error']}")
    return [printable(issue) for issue in issues]


def card(report: Mapping[str, Any]) -> str:
    """The engine's status card without its Git fix block: CI prints the commands once,
    relative to the repository root."""
    health = report["health"]
    quiet = {**health, "git": {**health["git"], "suggestedCommands": []}}
    return printable(engine.status_card({**report, "health": quiet}, PROG), keep="\n")


def local_notes(scan: engine.Scan, report: Mapping[str, Any], prefix: str,
                current: bool) -> list[str]:
    """What only this working copy has: local-only files that are stale, invalid or pending,
    each with the command that fixes it. They never change the verdict, since a CI checkout
    has none of them (`engine.clone_view`); a missing one is no note, as in a fresh clone.
    `current`: whether the working copy's index is the one rendered (`status_report`)."""
    # Only the local-only paths are looked up: no set of every tracked path.
    tracked = set(engine.LOCAL_ONLY_PATHS).intersection(scan.git.tracked)
    found = []
    index = f"{engine.VAULT_DIR}/{engine.INDEX_FILE}"
    if (index not in tracked and index in scan.files
            and report["indexRefresh"]["sha256"] is not None and not current):
        found.append((index, "is out of date", "echoes-lint hydrate", "rebuilds it"))
    state = engine.state_health(scan.state_raw, scan.state_error, scan.state_exists)
    if engine.STATE_PATH not in tracked and state["exists"] and not state["valid"]:
        found.append((engine.STATE_PATH, f"is invalid ({state['error']})", "echoes-lint hydrate",
                      "rewrites it"))
    if engine.INTENT_PATH not in tracked and scan.interrupted_write:
        found.append((engine.INTENT_PATH, "records an interrupted write",
                      "echoes-lint rebuild-index", "completes it"))
    # The engine works on a vault at the repository root only: below it, no command fixes it.
    return [printable(f"{prefix}{path} {what}; `{command}` {fixes}" if not prefix
                      else f"{prefix}{path} {what}")
            for path, what, command, fixes in found]


def effective_fail_on(option: Optional[str], configured: str) -> str:
    """The workflow's `fail-on` wins; without one, the repository's configuration (which a pull
    request can change) may make the gate stricter, never weaker."""
    if option:
        return option
    return "warning" if configured == "warning" else "error"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def failure(fail_on: str, integrity: str, errors: int, warnings: int) -> Optional[str]:
    """Why the gate fails, or None when it passes."""
    if fail_on == "never":
        return None
    reasons = []
    if errors:
        reasons.append(_count(errors, "error"))
    if warnings and fail_on == "warning":
        reasons.append(_count(warnings, "warning"))
    if integrity != "healthy":
        reasons.append(f"integrity {integrity}")
    return ", ".join(reasons) or None


# ---------------------------------------------------------------------------------------------
# The log, the annotations, the summary and the outputs
# ---------------------------------------------------------------------------------------------


def log_text(report: Mapping[str, Any], result: CheckResult, commands: Sequence[str],
             issues: Sequence[str], final: str, notes: Sequence[str] = ()) -> str:
    """The human report: status card, status issues, every finding with its source line.
    Paths, messages and quoted lines are already `printable`: one line each, no escapes."""
    parts = [card(report)]
    if notes:
        parts.append("Local-only files (a CI checkout has none, so they do not change the "
                     "verdict):\n" + "".join(f"  note: {note}\n" for note in notes))
    if issues:
        parts.append("Status issues:\n" + "".join(f"  {issue}\n" for issue in issues))
    parts.append(render("full", ReportInput(result.findings, __version__, result.sources())))
    if commands:
        parts.append("Fix commands (run them from the repository root):\n"
                     + "".join(f"  {command}\n" for command in commands))
    parts.append(final + "\n")
    return "\n".join(parts)


def without_commands(text: str) -> str:
    """Log text that GitHub Actions prints but never runs: between `::stop-commands::TOKEN` and
    `::TOKEN::` the runner ignores every workflow command, both `::cmd::` lines and the legacy
    `##[cmd]` form anywhere in a line. The token is derived from the text, so the text cannot
    hold the line that ends the block (it would have to contain its own hash)."""
    token = f"echoes-lint-{engine.digest(text.encode('utf-8', 'backslashreplace'))}"
    return f"::stop-commands::{token}\n{text}::{token}::\n"


def annotation_commands(findings: Sequence[Finding]) -> str:
    """`::error`/`::warning` commands for the first findings of each type, then one notice
    saying how many more there are (GitHub would drop them without a word)."""
    shown: list[Finding] = []
    kept = {Severity.ERROR: 0, Severity.WARNING: 0}
    hidden = {Severity.ERROR: 0, Severity.WARNING: 0}
    for finding in findings:
        if kept[finding.severity] < ANNOTATION_LIMIT:
            kept[finding.severity] += 1
            shown.append(finding)
        else:
            hidden[finding.severity] += 1
    text = render("github", ReportInput(shown, __version__))
    more = [_count(count, f"more {severity.value}") for severity, count in hidden.items() if count]
    if more:
        text += (f"::notice title=echoes-lint::{' and '.join(more)} not annotated here "
                 f"(GitHub shows {ANNOTATION_LIMIT} per type); the log and the job summary "
                 "list every finding.\n")
    return text


def _cell(text: str) -> str:
    """Table-cell Markdown: one line, `|` escaped, HTML outside code spans neutralised."""
    text = " ".join(printable(text).split())
    pieces = text.split("`")
    if len(pieces) % 2 == 0:  # an unpaired backtick is literal text: escape everything
        pieces = [text]
    for index in range(0, len(pieces), 2):
        pieces[index] = (pieces[index].replace("&", "&amp;").replace("<", "&lt;")
                         .replace(">", "&gt;"))
    return "`".join(pieces).replace("|", "\\|")


def _fence(texts: Sequence[str], minimum: int) -> str:
    """Backticks that no backtick run in the texts can close early."""
    longest = max((len(run) for text in texts for run in re.findall(r"`+", text)), default=0)
    return "`" * max(minimum, longest + 1)


def _code(text: str) -> str:
    """A table-cell code span that holds any text (on one line: control characters escaped)."""
    text = printable(text)
    fence = _fence([text], 1)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") else text
    return f"{fence}{padded}{fence}".replace("|", "\\|")


def findings_table(findings: Sequence[Finding]) -> str:
    """Rule | File:line | Message rows, cut short (with a note) past the size budget."""
    rows = ["| Rule | File:line | Message |\n", "| --- | --- | --- |\n"]
    size = 0
    for number, finding in enumerate(findings):
        row = (f"| {_code(finding.code)} {RULES[finding.code].name} "
               f"| {_code(f'{finding.path}:{finding.line}')} | {_cell(finding.message)} |\n")
        size += len(row.encode("utf-8"))
        if size > SUMMARY_TABLE_BUDGET:
            rows.append(f"\n{len(findings) - number} more findings are listed in the log.\n")
            break
        rows.append(row)
    return "".join(rows)


def summary_markdown(report: Mapping[str, Any], findings: Sequence[Finding],
                     commands: Sequence[str], issues: Sequence[str], final: str) -> str:
    """The job summary: the status card and the verdict, the findings table, the fix commands,
    then the status issues folded away (the card counts them; most are findings too)."""
    parts = [card(report), f"**{final}**\n"]
    table = f"**Lint findings**: {summary_line(findings)}\n"
    parts.append(table + "\n" + findings_table(findings) if findings else table)
    if commands:
        lines = [printable(command) for command in commands]
        fence = _fence(lines, 3)
        parts.append("**Fix commands** (run them from the repository root)\n\n"
                     f"{fence}sh\n" + "".join(f"{line}\n" for line in lines)
                     + f"{fence}\n")
    if issues:
        parts.append(f"<details><summary>Status issues ({len(issues)})</summary>\n\n"
                     + "".join(f"- {_cell(issue)}\n" for issue in issues) + "\n</details>\n")
    return "\n".join(parts)


def output_lines(name: str, value: str) -> str:
    """One `$GITHUB_OUTPUT` entry. A value with a line break takes the heredoc form, with a
    delimiter derived from the value, which therefore cannot occur in it."""
    if "\n" not in value and "\r" not in value:
        return f"{name}={value}\n"
    delimiter = f"ECHOES_LINT_{engine.digest(value.encode('utf-8', 'backslashreplace'))}"
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def write_inside(base: Path, given: str, data: bytes) -> Path:
    """Write `data` to `given` (relative to `base`, or absolute) atomically, refusing a path
    outside `base` and never following a symbolic link: the checked-out repository decides
    which links exist below `base`. Missing folders are created. The engine's managed-file
    writer does exactly this for the vault."""
    target = Path(os.path.normpath(base / given))
    try:
        relative = target.relative_to(base)
    except ValueError:
        raise UsageError(f"--sarif {given!r} is outside the workspace {base}") from None
    if not relative.parts:
        raise UsageError(f"--sarif {given!r} names the workspace itself, not a file")
    try:
        if len(relative.parts) > 1:
            engine.make_directories(base, relative.parent.as_posix())
        temporary, path = engine.stage_file(base, relative.as_posix(), data, "sarif")
        engine.publish_file(temporary, path, "sarif")
    except engine.VaultError as exc:
        raise UsageError(f"--sarif: {exc}") from None
    return target


def _append(path: str, text: str) -> None:
    with open(path, "a", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


# ---------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------


def main(argv: Sequence[str]) -> int:
    # An error may quote the pull request (a configuration key): under Actions it is fenced
    # like the rest of the log, so the legacy `##[command]` form cannot run either.
    actions = os.environ.get("GITHUB_ACTIONS") == "true"
    fast_process()
    return guarded(lambda: _run(parse_args(argv)), without_commands if actions else None)


def status_report(scan: engine.Scan) -> tuple[dict[str, Any], bool]:
    """The engine's status report, judged as a fresh clone of the commit: the verdict is the
    one CI gives; and whether the working copy's own index is the one rendered, told by their
    texts while the rendered one is at hand (no digest of the local index is printed)."""
    view = engine.clone_view(scan)
    facts, current = engine.index_facts(view, local=scan.index_text)
    # The view keeps the index only where a clone has it too: then it is the same text.
    return engine.inspect_report(view, (facts, current and view.index_text is not None)), current


# The pages from which a second process makes the status report while the rules run. Below,
# the fork and the copy-on-write faults it brings to both processes cost about what the
# report costs here (5,000 pages: the report about 6 ms, 4 ms less wall time and 15 ms less
# CPU in-process; 20,000 pages: the same wall time, 30 ms less CPU).
BESIDE_PAGES = 20_000


def _beside(scan: engine.Scan, beside: list[Beside]) -> None:
    if len(scan.pages) >= BESIDE_PAGES:
        beside.append(Beside(lambda: status_report(scan)))


def _run(options: argparse.Namespace) -> int:
    workspace = Path(options.workspace)
    config = load_config(workspace, Path(options.config)) if options.config else None
    # The status report needs only the scan: in a large vault, a second process makes it while
    # the rules run.
    beside: list[Beside] = []
    try:
        result = run_checks(workspace, vault_dir=options.vault_dir, config=config,
                            select=split_codes(options.select),
                            ignore=split_codes(options.ignore), guard=True,
                            scanned=lambda scan: _beside(scan, beside))
        keep(result)
        report, current = beside[0].result() if beside else status_report(result.scan)
    finally:
        for child in beside:  # collected already, or the check failed: its report is not wanted
            child.stop()
    fail_on = effective_fail_on(options.fail_on, result.config.fail_on)
    notes = local_notes(result.scan, report, result.prefix, current)
    health = report["health"]
    errors = sum(1 for finding in result.findings if finding.severity is Severity.ERROR)
    warnings = len(result.findings) - errors
    commands = [printable(command) for command in fix_commands(result, health["git"])]
    issues = status_issues(health)
    reason = failure(fail_on, health["integrity"], errors, warnings)
    final = (f"echoes-lint ci: failed (fail-on {fail_on}): {reason}." if reason
             else f"echoes-lint ci: passed (fail-on {fail_on}).")

    outputs = {
        "integrity": health["integrity"],
        "issue-count": str(health["issueCount"]),
        "error-count": str(errors),
        "warning-count": str(warnings),
    }
    if options.sarif:
        sarif = render("sarif", ReportInput(result.findings, __version__,
                                            workspace_uri=result.repo_root.as_uri()))
        outputs["sarif-file"] = str(write_inside(Path.cwd(), options.sarif,
                                                 sarif.encode("utf-8")))

    actions = os.environ.get("GITHUB_ACTIONS") == "true"
    annotate = actions if options.annotations is None else options.annotations
    log = log_text(report, result, commands, issues, final, notes)
    write_text((without_commands(log) if actions else log)
               + (annotation_commands(result.findings) if annotate else ""), None)
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if options.summary and summary_file:
        _append(summary_file, summary_markdown(report, result.findings, commands, issues, final))
    output_file = os.environ.get("GITHUB_OUTPUT")
    if output_file:
        _append(output_file, "".join(output_lines(name, value) for name, value in outputs.items()))
    return 1 if reason else 0
