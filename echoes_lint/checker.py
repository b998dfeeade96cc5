"""Run the rules over one vault: locate it, scan it once, apply selection and suppressions.

`run_checks` has three modes:

* the whole vault (`paths=None`): one `engine.scan_workspace`, Git asked once, the files
  read by two processes where fork and a second CPU exist (`_PageWorker`);
* named files (`paths=[...]`, what pre-commit passes): only those files are read, and the
  repository-wide facts (tracked local files, case collisions, the marker) come from the Git
  index, so a one-file hook costs one file plus `git ls-files -z`;
* the staged snapshot (`staged=True`, the plain Git hook): staged vault files are read from the
  index with one `git cat-file --batch`, never from the working tree.

Paths in the scan are relative to the engine workspace (the folder holding `EchoesVault/`);
findings are relative to the repository root.
"""

from __future__ import annotations

import contextlib
import itertools
import marshal
import mmap
import operator
import os
import signal
import stat
import subprocess
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path

from echoes_lint import cli, engine, gitindex
from echoes_lint.config import (
    Config,
    ConfigError,
    enabled_codes,
    excluded,
    ignored_by_path,
    load_config,
    validate_codes,
)
from echoes_lint.engine import printable
from echoes_lint.findings import RULES, Finding, Record, Severity, replace
from echoes_lint.rules import FAMILIES, GIT_CODES, REPOSITORY_CODES, Context, links, mergedriver
from echoes_lint.rules.context import GitIndex
from echoes_lint.rules.marker import NOT_IN_INDEX

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    from typing import Any, Callable, Optional

VAULT = engine.VAULT_DIR
SUPPRESSION = "echoes-lint-disable-next-line"
# Findings that `status` counts as issues: a comment in the file cannot make them go away.
UNSUPPRESSIBLE = ("EV001", "EV002", "EV01", "EV020", "EV021", "EV022", "EV040", "EV041", "EV042")
# What `ci` holds the repository's configuration to: conflict markers, frontmatter, tracked
# index and state, and collisions stay on unless the workflow itself switches them off.
PROTOCOL_FATAL = ("EV001", "EV002", "EV01", "EV020", "EV021", "EV030")


class CheckResult(Record):
    """`findings`: sorted by `Finding.sort_key`, paths relative to `repo_root`; `vault`: the
    vault folder relative to `repo_root`, POSIX (`EchoesVault` or `docs/EchoesVault`);
    `enabled`: the codes that ran (selection and ignores applied), which `check --fix`
    rechecks with."""

    __slots__ = _FIELDS = ("workspace", "repo_root", "scan", "findings", "config", "vault",
                           "enabled")

    def __init__(self, workspace: Path, repo_root: Path, scan: engine.Scan,
                 findings: list[Finding], config: Config, vault: str,
                 enabled: frozenset[str] = frozenset()) -> None:
        self.workspace, self.repo_root, self.scan, self.findings = (
            workspace, repo_root, scan, findings)
        self.config, self.vault, self.enabled = config, vault, enabled

    @property
    def prefix(self) -> str:
        return self.vault[: -len(VAULT)]

    def sources(self) -> dict[str, list[str]]:
        """Repository-relative path (as findings show it) -> printable lines, for the files that
        have findings."""
        wanted = {finding.path for finding in self.findings}
        sources: dict[str, list[str]] = {}
        if not wanted:
            return sources
        scan = self.scan
        documents = [*scan.pages, *scan.daily, *scan.other_markdown]  # `Scan.documents()`
        prefix = self.prefix
        if "\\" in "".join(wanted):
            chosen = [(printable(prefix + document.path), document) for document in documents]
        else:
            # `printable` escapes with a backslash: a printed path without one is the path
            # itself, so only the documents of these paths are looked at (filtered in C).
            paths = {path[len(prefix):]: path for path in wanted if path.startswith(prefix)}
            found = itertools.compress(documents, map(paths.__contains__, map(_PATH, documents)))
            chosen = [(paths[document.path], document) for document in found]
        for path, document in chosen:
            if path not in wanted:
                continue
            text = document.text
            if text is None and document.problem is None:
                text = _read_again(self.scan, document.path)
            if text is not None:
                # Escaping works character by character: a whole text escaped with its line
                # breaks kept splits into the lines escaped one by one. The common text has
                # nothing else to escape: its lines are then the lines themselves.
                sources[path] = (text.split("\n") if _as_printed(text)
                                 else printable(text, keep="\t\n").split("\n"))
        return sources


_PATH = operator.attrgetter("path")
# What `printable` escapes in ASCII text: the C0 controls and DEL.
_CONTROLS = bytes([*range(32), 127])


def _as_printed(text: str) -> bool:
    """Whether `printable` gives `text` without its line breaks back as it is (its lines are
    then their printed selves). In ASCII it escapes exactly the controls: deleted in one pass
    in C, line breaks too, several times faster than `str.isprintable` (a lookup a character)."""
    if text.isascii():
        data = text.encode("ascii")
        return len(data.translate(None, _CONTROLS)) + data.count(b"\n") == len(data)
    flat = text.replace("\n", "")
    return printable(flat) == flat


def _read_again(scan: engine.Scan, relative: str) -> Optional[str]:
    """The text of a page the whole-vault scan let go, read again for the report's source
    lines: only through real folders (a folder swapped for a link since the scan could lead
    out of the repository) and only while the file is the one the scan saw (its size and
    mtime); else None, and the report shows no source."""
    try:
        path = engine.managed_path(scan.workspace, relative)
    except engine.VaultError:
        return None
    document, info = engine._load_document(str(path), relative, False)
    if info is None or scan.files.get(relative) != (info.st_size, info.st_mtime):
        return None
    return document.text


def _printable_finding(finding: Finding) -> Finding:
    # `edit` and `command` stay as they are: `check --fix` applies them to the real path.
    path, message = printable(finding.path), printable(finding.message)
    fix = None if finding.fix is None else printable(finding.fix)
    if path is finding.path and message is finding.message and fix is finding.fix:
        return finding  # nothing to escape (`printable` gives such a text back): no copy
    return replace(finding, path=path, message=message, fix=fix)


def exit_code(findings: Iterable[Finding], fail_on: str) -> int:
    """1 when a finding is at or above the failing severity (`error`, `warning`), else 0."""
    if fail_on == "never":
        return 0
    threshold = (Severity.WARNING if fail_on == "warning" else Severity.ERROR).rank
    return 1 if any(finding.severity.rank >= threshold for finding in findings) else 0


def run_checks(workspace: Path, *, vault_dir: Optional[str] = None,
               paths: Optional[Sequence[str]] = None, config: Optional[Config] = None,
               select: Sequence[str] = (), ignore: Sequence[str] = (),
               staged: bool = False, guard: bool = False, extend_select: Sequence[str] = (),
               extend_ignore: Sequence[str] = (), exclude: Optional[Sequence[str]] = None,
               extend_exclude: Sequence[str] = (),
               scanned: Optional[Callable[[engine.Scan], None]] = None) -> CheckResult:
    """Check the vault of the repository that contains `workspace`.

    `vault_dir` (relative to the repository root) overrides the configuration's `vault-dir`;
    `paths` are files or folders, relative to `workspace` or absolute; `select` replaces the
    configuration's selection (its `extend-select` too) and `ignore` adds to its ignores, as
    `extend_select` adds to the selection and `extend_ignore` to the ignores, as in ruff.
    `exclude` (globs, repository-relative) replaces the configuration's `exclude`,
    `extend_exclude` adds to it; findings in excluded files or folders are not reported, even
    for files named in `paths` (ruff's `force-exclude`). With `guard` (what `ci` asks),
    the configuration and suppression comments, which a pull request can change, cannot switch
    off the protocol-fatal rules or the rules `select` names; only `select`/`ignore` can.
    `scanned` is called with the scan once it is read, before the rules run.
    Raises `ConfigError` for usage and configuration problems (no vault, unknown codes, a path
    that does not exist) and `GitUnavailable` when Git exists but cannot be asked.
    """
    workspace = _directory(workspace)
    top = _repository_top(workspace)
    in_git = top is not None
    repo_root = top if top is not None else workspace
    if config is None:
        config = load_config(repo_root)
    explicit_select = validate_codes(select, "--select")
    explicit_ignore = validate_codes(ignore, "--ignore")
    added = validate_codes(extend_select, "--extend-select")
    # A selection on the command line replaces the configured one with its extension, as in ruff.
    chosen = (*explicit_select, *added) if explicit_select else \
        (*config.select, *config.extend_select, *added) if config.select else ()
    enabled = enabled_codes(chosen, (*config.ignore, *config.extend_ignore, *explicit_ignore,
                                     *validate_codes(extend_ignore, "--extend-ignore")))
    excludes = (*(config.exclude if exclude is None else exclude), *config.extend_exclude,
                *extend_exclude)
    protected: frozenset[str] = frozenset()
    if guard:
        wanted = enabled_codes(explicit_select, explicit_ignore)
        protected = frozenset(code for code in wanted if explicit_select
                              or code.startswith(PROTOCOL_FATAL))
        enabled |= protected
    root, prefix = _locate_vault(repo_root, vault_dir or config.vault_dir)
    if guard and in_git and vault_dir is None and config.vault_dir is not None:
        _refuse_decoy(repo_root, prefix)
    git = in_git and bool(enabled & GIT_CODES)

    only: Optional[list[str]] = None  # repository-relative files and folders to report on
    try:
        if staged:
            if not in_git:
                raise ConfigError("--staged needs a Git repository")
            context = _staged_context(root, prefix)
        elif paths is None:
            # The rule's git commands answer while the vault is read.
            context = _whole_context(root, prefix, git, prefetch=(
                repo_root if git and enabled & mergedriver.CODES else None))
        else:
            files, folders, whole = _resolve_paths(workspace, root, paths)
            if whole or folders or not in_git:
                context = _whole_context(root, prefix, git)
                only = None if whole else [prefix + path for path in (*files, *folders)]
            else:
                # Without a full scan, link targets come from the Git index.
                index = git or "EV050" in enabled
                context = _files_context(root, prefix, files, index, "EV022" in enabled)
        if scanned is not None:
            scanned(context.scan)

        findings: list[Finding] = []
        # As the engine's own scan: the rules allocate, the vault is large.
        with engine._PausedGC():
            for codes, check in FAMILIES:
                if codes & enabled:
                    findings.extend(finding for finding in check(context)
                                    if finding.code in enabled)
    finally:  # what the rule did not take, also when the check failed before it ran
        mergedriver.discard()
        cli.discard_listings()  # what no scan took: named or staged files, no Git codes
    findings = _apply_suppressions(findings, context, config, enabled, protected)
    if excludes:
        findings = [finding for finding in findings if finding.code in protected
                    or not excluded(excludes, finding.path)]
    if only is not None:
        findings = [finding for finding in findings if finding.code in REPOSITORY_CODES
                    or any(finding.path == item or finding.path.startswith(item + "/")
                           for item in only)]
    findings = [_printable_finding(finding) for finding in findings]
    findings.sort(key=Finding.sort_key)
    return CheckResult(workspace, repo_root, context.scan, findings, config,
                       prefix + VAULT, frozenset(enabled))


def recheck_text(result: CheckResult, relative: str, text: str,
                 codes: frozenset[str]) -> list[Finding]:
    """The findings of `codes` (selected, per-file ignores and suppressions applied as in
    `result`) that one vault file would have with `text`: how `check --fix` sees the effect of
    its edits without writing. Only rules of a file's own text can ask for this."""
    scan = engine.Scan(result.scan.workspace)
    kind = engine.classify_vault_path(relative)
    engine.file_document(scan, engine.document_from_bytes(relative, text.encode("utf-8"),
                                                          kind == "page"),
                         kind if kind in ("page", "daily") else "markdown")
    context = Context(scan, result.prefix)
    wanted = codes & result.enabled
    findings = [finding for family, check in FAMILIES if family & wanted
                for finding in check(context) if finding.code in wanted]
    findings = _apply_suppressions(findings, context, result.config, result.enabled, frozenset())
    return sorted((_printable_finding(finding) for finding in findings if finding.code in wanted),
                  key=Finding.sort_key)


class GitUnavailable(ConfigError):
    """The workspace is in a Git repository that git cannot read: a gate that cannot look must
    not pass."""


def _git_problem(where: Path, cause: Optional[str]) -> GitUnavailable:
    cause = " ".join((cause or "git failed").split())
    if "not installed" in cause:
        fix = "install Git and put `git` on PATH"
    elif "dubious ownership" in cause or "safe.directory" in cause:
        fix = (f"if you trust this repository, run "
               f"`git config --global --add safe.directory {engine.shell_quote(str(where))}`")
    else:
        fix = "repair the repository (`git status` shows what Git refuses)"
    return GitUnavailable(f"{where} is a Git repository, but git cannot read it: {cause}; "
                          f"{fix}, then run the check again")


def _repository_top(workspace: Path) -> Optional[Path]:
    """The repository root, or None outside Git. Inside a repository (a `.git` above the
    workspace) that git cannot read, raise: never check as if Git were not there."""
    args = ["rev-parse", "--show-toplevel"]
    early = cli.toplevel(str(workspace))  # started before the linter loaded
    top, cause = engine.git_finish((early, None), args) if early is not None \
        else engine.git_output(workspace, args)
    if top is not None and top.strip():
        return Path(os.fsdecode(top.strip())).resolve()
    marked = next((folder for folder in (workspace, *workspace.parents)
                   if os.path.lexists(folder / ".git")), None)
    if marked is None and not os.environ.get("GIT_DIR"):
        return None
    raise _git_problem(marked or workspace, cause)


def _git(root: Path, args: Sequence[str], stdin: Optional[bytes] = None) -> list[str]:
    """The NUL-separated paths a git command prints; GitUnavailable when it fails."""
    output, cause = engine.git_output(root, args, stdin)
    if output is None:
        raise _git_problem(root, cause)
    return engine.split_nul(output)


def _directory(workspace: Path) -> Path:
    try:
        resolved = workspace.expanduser().resolve()
    except OSError as exc:
        raise ConfigError(f"cannot resolve workspace {str(workspace)!r}: {exc}") from exc
    if not resolved.is_dir():
        raise ConfigError(f"workspace is not a directory: {workspace}")
    return resolved


def _locate_vault(repo_root: Path, vault_dir: Optional[str]) -> tuple[Path, str]:
    """(engine workspace, its repository-relative prefix) for the configured vault folder."""
    given = vault_dir or VAULT
    candidate = Path(os.path.normpath(repo_root / given))  # `repo_root / absolute` = absolute
    if candidate.name != VAULT:
        raise ConfigError(f"vault dir {given!r} must name the `{VAULT}` folder itself, "
                          f"for example `docs/{VAULT}`")
    try:
        parent = candidate.parent.resolve()
        relative = parent.relative_to(repo_root).as_posix()
    except (OSError, ValueError) as exc:
        raise ConfigError(f"vault dir {given!r} is outside the repository {repo_root}") from exc
    if not os.path.lexists(parent / VAULT):
        found = None if vault_dir else _only_tracked_vault(repo_root)
        if found is not None:
            return _locate_vault(repo_root, found)
        where = f"{relative}/{VAULT}" if relative != "." else VAULT
        raise NoVault(f"no vault at {where!r} in {repo_root}; pass --vault-dir or set "
                      "`vault-dir` in [tool.echoes-lint]", configured=vault_dir is not None)
    return parent, "" if relative == "." else relative + "/"


class NoVault(ConfigError):
    """The repository has no vault where the configuration says, and none to find."""

    def __init__(self, message: str, configured: bool) -> None:
        super().__init__(message)
        self.configured = configured
        """A vault folder was named (option or configuration), so its absence is an error."""


def _refuse_decoy(repo_root: Path, prefix: str) -> None:
    """In `ci` the repository's configuration, which a pull request can change, chose the
    vault: with another vault committed beside it, that could be a clean decoy while the real
    vault goes unchecked. Then only the workflow may choose (`vault-dir` input, `--vault-dir`)."""
    chosen = f"{prefix}{VAULT}"
    committed = _git(repo_root, ["ls-files", "-z", "--", f"{VAULT}/{engine.MARKER_FILE}",
                                 f"*/{VAULT}/{engine.MARKER_FILE}"])
    others = sorted({marker.rsplit("/", 1)[0] for marker in committed} - {chosen})
    if others:
        shown = ", ".join(printable(other) for other in others[:5])
        raise ConfigError(f"the repository's configuration chooses the vault {printable(chosen)!r}"
                          f", but it also commits {shown}: in ci only the workflow chooses "
                          "between vaults; set the action's `vault-dir` input (or pass "
                          "`--vault-dir`)")


def _only_tracked_vault(repo_root: Path) -> Optional[str]:
    """The vault folder of a monorepo whose only committed marker sits in a subfolder."""
    markers = engine.split_nul(engine.run_git(
        repo_root, ["ls-files", "-z", "--", f"*/{VAULT}/{engine.MARKER_FILE}"]))
    return markers[0].rsplit("/", 1)[0] if len(markers) == 1 else None


def _resolve_paths(workspace: Path, root: Path,
                   paths: Sequence[str]) -> tuple[list[str], list[str], bool]:
    """(vault files, vault folders, whether some path covers the whole vault); paths relative
    to the engine workspace. Paths outside the vault are not ours and are dropped."""
    vault = str(root / VAULT)
    files: list[str] = []
    folders: list[str] = []
    whole = False
    for given in paths:
        absolute = os.path.normpath(workspace / given)
        if not os.path.lexists(absolute):
            raise ConfigError(f"{given}: no such file or directory")
        if absolute == vault or vault.startswith(absolute.rstrip(os.sep) + os.sep):
            whole = True
        elif absolute.startswith(vault + os.sep):
            relative = Path(absolute).relative_to(root).as_posix()
            is_folder = os.path.isdir(absolute) and not os.path.islink(absolute)
            (folders if is_folder else files).append(relative)
    return sorted(set(files)), sorted(set(folders)), whole


# --- building the context -------------------------------------------------------------------


def _whole_context(root: Path, prefix: str, git: bool, lean: bool = True,
                   prefetch: Optional[Path] = None) -> Context:
    reader = _GateReader(root) if lean else None
    if reader is not None:
        reader.worker = _PageWorker.start(reader)
    # `mergedriver.prefetch` in `prefetch` (the repository root), by a thread once the worker
    # is forked (a fork beside a thread could copy a lock held): a `Popen` returns only once git
    # runs, and with both CPUs busy git waits for one (ms each); the walk goes on meanwhile.
    starting = None if prefetch is None else threading.Thread(target=mergedriver.prefetch,
                                                              args=(prefetch,))
    try:
        if starting is not None:
            try:
                starting.start()
            except RuntimeError:  # no thread to be had (a process limit): started by this one
                starting.run()
        scan = engine.scan_workspace(root, git=git, cache=reader,
                                     listings=cli.listings(str(root)) if git else None)
    except BaseException:
        if reader is not None and reader.worker is not None:
            reader.worker.stop()
        raise
    finally:
        if starting is not None and starting.ident is not None:
            starting.join()  # before the rule takes them, and before `ci` forks
    if reader is not None:
        reader.finish()
    if git and (scan.git.error or not scan.git.available):
        raise _git_problem(root, scan.git.error)
    available = scan.git.available
    index = frozenset(scan.git.tracked) if available else frozenset()
    # A tracked vault path that the walk did not find as a file is deleted, or a gitlink (a
    # submodule: a folder on disk, empty in a clone without --recursive).
    gitlinks = frozenset(path for path in index.difference(scan.files)
                         if path.startswith(VAULT + "/") and os.path.isdir(root / path)
                         and not os.path.islink(root / path))
    if reader is not None and reader.dropped and gitlinks & _PAGE_FOLDERS:
        # The pages are a submodule's, so links to them are broken after all: read again,
        # keeping every text.
        return _whole_context(root, prefix, git, lean=False)
    return Context(scan, prefix, available, index, None, lambda: _staged_changes(root),
                   gitlinks=gitlinks)


_PAGE_FOLDERS = frozenset({VAULT, f"{VAULT}/pages"})


# What the documents of a whole-vault gate scan without markers, and its pages without fields
# or problems, share with the engine's slimmed documents: nothing ever adds to them (rules and
# reports only read documents), and one object instead of one per file is 13 MB less at
# 100,000 pages.
_NO_MARKERS, _NO_FIELDS, _NO_PROBLEMS = engine._NO_MARKERS, engine._NO_FIELDS, engine._NO_PROBLEMS


class _GateReader(engine.FileCache):
    """How the whole-vault scan of a gate reads each vault file: always from the disk (it is
    opened without reading the local cache, which in a gate is hostile input), keeping a
    page's text (and its frontmatter fields) only when a rule or the report may need it. Most
    pages need neither once they are parsed, and at 100,000 pages they are half the memory.

    A page needs its text when it has conflict markers, a NUL, a suppression comment,
    frontmatter problems or notes, is deprecated (EV080 reads its body), or has a link not
    known to resolve to a file in `pages/` (as the walk lists the folder: the listing below).
    `CheckResult.sources` reads a page again for the report's source lines.

    It lists pages/ before the walk, which takes that listing (`FileCache.pages_listing`), so
    that a `_PageWorker`, forked then, reads the very files the walk reads and judges links
    by them too, listed once: daily files and the pages that need no text come from that
    second process where it has read them already (see there)."""

    def __init__(self, workspace: Path) -> None:
        super().__init__(workspace)
        self.opened = True  # nothing to read: the scan must not open it
        self.pages_listing = _list_pages(workspace)
        self.links = links.PageLinks(_page_files(self.pages_listing or []))
        self.dropped = False
        self.worker: Optional[_PageWorker] = None
        self._position = 0  # pages of pages/ loaded so far

    def load(self, entry: os.DirEntry[str], relative: str, kind: str,
             limit: int = engine.MAX_TEXT_BYTES) -> tuple[engine.Document, Optional[os.stat_result]]:
        worker = self.worker
        # A daily file's row is taken before this (`entries_walked`), a page's once they met.
        if worker is not None and limit == engine.MAX_TEXT_BYTES and kind == "page" \
                and relative.startswith(_PAGES_PREFIX):
            self._position += 1
            taken = worker.page(entry.name, self._position - 1)
            if taken is not None:
                self.dropped = True
                document, (size, mtime) = taken
                document.path = relative  # the walk's string, its `Scan.files` key too
                return document, _file_facts(size, mtime)
        document, info = engine._load_document(entry.path, relative, kind == "page", limit)
        if not document.markers:
            document.markers = _NO_MARKERS
        if kind == "page" and document.text is not None and not _needs_text(document, self.links):
            _let_go(document)
            self.dropped = True
        return document, info

    def entries_walked(self, scan: engine.Scan, relative_dir: str,
                       entries: list[os.DirEntry[str]]) -> Iterable[os.DirEntry[str]]:
        worker = self.worker
        if worker is None:
            return entries
        if relative_dir == _PAGES_DIR:
            return self._taking(scan, entries, worker)
        if relative_dir == _DAILY_DIR or relative_dir.startswith(_DAILY_PREFIX):
            return _taking_days(scan, relative_dir, entries, worker.collected_days())
        return entries

    def _taking(self, scan: engine.Scan, entries: list[os.DirEntry[str]],
                worker: _PageWorker) -> Iterator[os.DirEntry[str]]:
        """The walk's entries of pages/ until it met the worker (`load` takes the one it met
        at); from then on, the pages the worker has rows for are filed here, as the walk
        would file them (`engine._walk_file`), in the walk's order, at a fraction of the
        walk's cost per file: only the other entries are given to the walk. A worker row
        stands for an entry the walk reads as a page (a regular file with a page name:
        both decide that on the one listing)."""
        rest = iter(entries)
        for entry in rest:
            yield entry
            if worker.pages is not None:
                break
        remaining = list(rest)
        # Each entry's row, popped in C; each run of entries with rows between two without
        # (pages that need their text, other entries) is then filed in a few passes in C too.
        taken = list(map((worker.pages or {}).pop, map(_ENTRY_NAME, remaining), itertools.repeat(None)))
        start = 0
        while start < len(taken):
            try:
                stop = taken.index(None, start)
            except ValueError:
                stop = len(taken)
            if stop > start:
                self.dropped = True
                _file_rows(scan, scan.pages, taken[start:stop])
            if stop < len(taken):
                yield remaining[stop]
            start = stop + 1

    def finish(self) -> None:
        """At the end of the walk: let the worker end and check that it ended well."""
        worker, self.worker = self.worker, None
        if worker is not None:
            worker.finish()


_PAGES_DIR, _PAGES_PREFIX = engine._PAGES_DIR, engine._PAGES_PREFIX
_DAILY_DIR, _DAILY_PREFIX = engine._DAILY_DIR, engine._DAILY_PREFIX


def _taking_days(scan: engine.Scan, relative_dir: str, entries: list[os.DirEntry[str]],
                 days: dict[str, dict[str, _Taken]]) -> Iterable[os.DirEntry[str]]:
    """The walk's entries of a daily folder, less the daily files the worker has rows for
    (`days`, by folder and name), filed here as the walk would file them
    (`engine._walk_file`), in the walk's order. The worker listed daily/ on its own: a row is
    taken only for an entry the walk itself reads as a daily file (neither a link nor a
    folder, a regular file, its kind "daily"); any other entry, its row dropped, goes to the
    walk as ever."""
    rows = days.pop(relative_dir, None)
    if not rows:
        return entries
    names = list(map(_ENTRY_NAME, entries))
    taken = list(map(rows.pop, names, itertools.repeat(None)))
    try:
        # The common folder, decided in a few passes in C: a row for every entry, each a
        # regular file (not a link, not a folder) named `*.md`, which the walk reads as daily.
        joined = "\0".join(names)
        common = (None not in taken and joined.endswith(".md")
                  and joined.count(".md\0") == len(names) - 1 and all(map(_REGULAR, entries)))
    except OSError:
        common = False
    if common:
        _file_rows(scan, scan.daily, taken)
        return ()
    return _each_day(scan, entries, taken)


def _each_day(scan: engine.Scan, entries: list[os.DirEntry[str]],
              taken: list[Optional[_Taken]]) -> Iterator[os.DirEntry[str]]:
    """`_taking_days` entry by entry, in a folder that is not the common one."""
    for entry, row in zip(entries, taken):
        if row is not None and entry.name[-3:].casefold() == ".md":  # `classify_vault_path`
            try:  # (not a link, not a folder: as the walk decides it)
                regular = entry.is_file(follow_symlinks=False)
            except OSError:
                regular = False
            if regular:
                _file_rows(scan, scan.daily, (row,))
                continue
        yield entry


def _file_rows(scan: engine.Scan, documents: list[engine.Document],
               rows: Sequence[Any]) -> None:
    """File the worker's rows (none of them None) as the walk would file their files
    (`engine._walk_file` and `engine.file_document`): each is a regular file read whole,
    without a problem."""
    made = list(map(_FIRST, rows))
    documents.extend(made)
    if scan.sizes:
        scan.files.update(zip(map(_DOCUMENT_PATH, made), map(_SECOND, rows)))


_FIRST, _SECOND = operator.itemgetter(0), operator.itemgetter(1)
_DOCUMENT_PATH = operator.attrgetter("path")
_REGULAR = operator.methodcaller("is_file", follow_symlinks=False)


def _needs_text(document: engine.Document, page_links: links.PageLinks) -> bool:
    text, meta = document.text or "", document.meta
    return (meta is None or bool(meta.problems or meta.notes or meta.deprecated
                                 or document.markers) or "\0" in text or SUPPRESSION in text
            or not page_links.settled(text))


def _let_go(document: engine.Document) -> None:
    """Drop what no rule reads of a page that needs no text: the text, and (only a page's
    problems need them, for an edit of EV014) its fields. The page then holds what a page from
    the engine's local cache holds."""
    document.text = None
    if document.meta is not None:
        document.meta.fields = _NO_FIELDS
    _settle_clean(document)


def _settle_clean(document: engine.Document) -> None:
    """A page that needs no text was read whole and has no frontmatter problem: with an ASCII
    name (no surrogate), the engine finds no problem in it (`Document.page_problems`). Said
    here, where that is known, it costs `ci`'s status report nothing per page (the engine's
    first look takes a lock and a search on Python before 3.12: 80 ms at 100,000 pages)."""
    if document.path.isascii():
        # An attribute, not `__dict__[...]`: asking for `__dict__` would make one per page.
        document.page_problems = _NO_PROBLEMS


def _list_pages(workspace: Path) -> Optional[list[os.DirEntry[str]]]:
    """The entries of pages/ sorted by name, as the walk lists it, when pages/ is a folder in
    the vault folder, neither a link (the walk never enters those); else None, and the walk
    lists what it finds there itself."""
    vault = workspace / VAULT
    pages = vault / "pages"
    try:
        if not (stat.S_ISDIR(os.lstat(vault).st_mode) and stat.S_ISDIR(os.lstat(pages).st_mode)):
            return None
        return sorted(os.scandir(pages), key=_ENTRY_NAME)
    except OSError:
        return None


def _page_files(entries: list[os.DirEntry[str]]) -> frozenset[str]:
    """The names of the regular files and symbolic links among the entries of pages/."""
    try:
        # A regular file first: the common entry is then decided by one call, not two.
        return frozenset(entry.name for entry in entries
                         if entry.is_file(follow_symlinks=False) or entry.is_symlink())
    except OSError:
        return frozenset()


def _all_pages(entries: list[os.DirEntry[str]]) -> bool:
    """Whether the walk reads every entry of pages/ as a page (`_walked_page`) because each is a
    regular file named `<name>.md`: the names of the common pages/ decided in a few passes in
    C (a page's name classified one by one cost the worker 2 ms at 5,000 pages)."""
    joined = "\0".join(map(_ENTRY_NAME, entries))
    return (joined.endswith(".md") and joined.count(".md\0") == len(entries) - 1
            and f"\0{joined}\0".find("\0.md\0") < 0
            and all(entry.is_file(follow_symlinks=False) for entry in entries))


_ENTRY_NAME = operator.attrgetter("name")


# A lean page as the worker sends it: (file name, path, (size, mtime), open line, close line,
# close index, type, status, summary); a daily file: (folder, file name, path, (size, mtime),
# text, entry headings). A file's (size, mtime) is its `Scan.files` value as it is; its mode
# is a regular file's (`engine._read_file` reads no other).
if TYPE_CHECKING:
    _Facts = tuple[int, float]
    _Row = tuple[str, str, _Facts, int, Optional[int], Optional[int], Optional[str],
                 Optional[str], Optional[str]]
    _Daily = tuple[str, str, str, _Facts, str, int]


def _lean_row(entry: os.DirEntry[str], relative: str, page_links: links.PageLinks,
              ) -> Optional[_Row]:
    """What the worker sends of a page that needs no text, or None (the walk reads it)."""
    document, info = engine._load_document(entry.path, relative, True)
    meta = document.meta
    if info is None or document.text is None or meta is None or _needs_text(document,
                                                                            page_links):
        return None
    return (entry.name, relative, (info.st_size, info.st_mtime), meta.open_line,
            meta.close_line, meta.close_index, meta.type, meta.status, meta.summary)


def _daily_row(path: str, relative: str) -> Optional[_Daily]:
    """What the worker sends of a daily file without markers, or None (the walk reads it)."""
    document, info = engine._load_document(path, relative, False)
    if info is None or document.text is None or document.markers:
        return None
    folder, _, name = relative.rpartition("/")
    # Its entry headings (what `ci`'s status counts) are counted here, beside the walk.
    return (folder, name, relative, (info.st_size, info.st_mtime), document.text,
            document.entry_headings)


def _file_facts(size: int, mtime: float) -> os.stat_result:
    """The facts of a regular file the walk records (size, mtime), as a worker read them."""
    return os.stat_result((stat.S_IFREG, 0, 0, 0, 0, 0, size, 0, int(mtime), 0, 0.0, mtime, 0.0))


def _lean_document(row: _Row) -> engine.Document:
    """The page of a lean row."""
    _name, path, _facts, open_line, close_line, close_index, kind, status, summary = row
    meta = engine.PageMeta(_NO_FIELDS, (), open_line, close_line, kind, status, summary, (),
                           close_index)
    document = engine.Document(path, None, None, _NO_MARKERS, meta)
    _settle_clean(document)  # (an ASCII name is an ASCII path in pages/)
    return document


def _daily_document(row: _Daily) -> engine.Document:
    """The daily file of a row."""
    _folder, _name, relative, _facts, text, headings = row
    document = engine.Document(relative, text, None, _NO_MARKERS)
    document.entry_headings = headings  # as counted (an attribute: no `__dict__` made)
    return document


# A row made into its document (with its path: one string for both) and its file's
# (size, mtime), until the walk takes it.
if TYPE_CHECKING:
    _Taken = tuple[engine.Document, _Facts]


class _PageWorker:
    """A forked process that reads vault files beside the walk: first every daily file, then
    the pages of pages/ from the last one down, while the walk reads them from the first one
    up; shared memory says how far each got, so both stop where they meet. It writes the
    daily files without markers and the pages that need no text (`_lean_row`) to an
    anonymous file, whose frames the walk decodes as they come while it reads its own pages.
    With two CPUs, the vault takes about half the time to read.

    The worker never decides anything alone: the walk takes a row only for a file it reached
    itself, by path, after the worker said, last, that it wrote every row (one byte on the
    pipe: a worker that dies says nothing); both take pages/ as the reader listed it before
    the fork (`_GateReader`), so links are judged by the same files; any other file the walk
    reads itself. A worker that dies, or wrote what cannot be read, gives
    nothing: the walk reads every file itself, as it does where there is no fork (or one CPU,
    threads that a fork could deadlock, or SIGCHLD ignored, whose children nobody can wait
    for)."""

    CHUNK = 256  # rows a frame, and pages between two looks at the walk's progress

    def __init__(self, pid: int, pipe: int, rows: int, progress: memoryview) -> None:
        self.pid = pid
        self.pipe = pipe  # the worker's last word
        self.file = rows  # the frames it wrote
        self.progress = progress  # [next page the walk reads, lowest page the worker wrote]
        self.pages: Optional[dict[str, _Taken]] = None  # once collected
        self.days: dict[str, dict[str, _Taken]] = {}  # by folder, then file name
        self.reaped = False
        # The frames decoded so far (`_drain`), taken by `finish` only if the worker ended well.
        self.offset = 0
        self.decoded: dict[str, dict[str, Any]] = {"p": {}, "d": {}}
        self.broken = False

    @classmethod
    def start(cls, reader: _GateReader) -> Optional[_PageWorker]:
        vault = reader.workspace / VAULT
        if not _can_fork() or not vault.is_dir() or vault.is_symlink():
            return None
        shared = mmap.mmap(-1, 16)
        progress = memoryview(shared).cast("q")
        progress[0], progress[1] = 0, _NEVER
        try:
            rows = _anonymous_file()
            read_fd, write_fd = os.pipe()
        except OSError:
            return None
        try:
            pid = os.fork()
        except OSError:
            for descriptor in (rows, read_fd, write_fd):
                os.close(descriptor)
            return None
        if pid == 0:  # the worker: it never returns, and never runs the parent's clean-up
            status = 1
            try:
                os.close(read_fd)
                _work(str(vault), reader.pages_listing or [], reader.links, rows, progress)
                os.write(write_fd, _DONE)  # every row is written
                status = 0
            finally:
                os._exit(status)
        os.close(write_fd)
        return cls(pid, read_fd, rows, progress)

    def page(self, name: str, position: int) -> Optional[_Taken]:
        """The worker's row for the page at `position` of the walk's pages, or None when the
        walk reads it itself."""
        if self.pages is None:
            progress = self.progress
            if position < progress[1]:  # the worker has not got here
                progress[0] = position + 1
                if not position % self.CHUNK:
                    self._drain()  # beside the worker, not after it
                return None
            progress[0] = position  # the worker stops: everything from here on is written
            self.finish()
        assert self.pages is not None
        return self.pages.pop(name, None)

    def collected_days(self) -> dict[str, dict[str, _Taken]]:
        """The worker's rows for daily files, by folder and name, for the walk to take (it
        collects the worker now if it has not met it in pages/)."""
        if self.pages is None:
            self.progress[0] = _NEVER
            self.finish()
        return self.days

    def finish(self) -> None:
        """Tell the worker to stop where the walk is (it ends within one file) and collect
        what it wrote. No row is taken before this, so a worker that failed (killed, out of
        memory or file space) costs only time: its rows are dropped and the walk reads those
        files itself."""
        if self.reaped:
            return
        self.reaped = True
        self.progress[0] = _NEVER
        try:
            try:
                # Its last word, once every row is written; then its rows are what they
                # will be, and its exit is waited for after they are decoded.
                done = os.read(self.pipe, len(_DONE)) == _DONE
            finally:
                os.close(self.pipe)
            if done:
                self._drain(final=True)
        except BaseException:  # interrupted: the worker is not waited for, it is ended
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            raise
        finally:
            os.close(self.file)
            with contextlib.suppress(ChildProcessError):  # reaped by someone else
                os.waitpid(self.pid, 0)
        done = done and not self.broken
        self.pages = self.decoded["p"] if done else {}
        self.days = self.decoded["d"] if done else {}
        self.decoded = {"p": {}, "d": {}}

    def _drain(self, final: bool = False) -> None:
        """Decode the frames written since the last look (all of them when `final`: the worker
        is done, and a frame cut short is a failure)."""
        if self.broken:
            return
        try:
            # Made into documents and facts here, while the worker still reads, rather than
            # one by one as the walk takes them once it is done, when the second CPU has
            # nothing to do.
            pages, days = self.decoded["p"], self.decoded["d"]
            for kind, rows in _frames(self, final):
                if kind == "p":
                    pages.update({row[0]: (_lean_document(row), row[2]) for row in rows})
                    continue
                for row in rows:
                    days.setdefault(row[0], {})[row[1]] = (_daily_document(row), row[3])
        except (ValueError, KeyError, TypeError, IndexError):
            self.broken = True

    def stop(self) -> None:
        """End the worker now, whatever it is doing (the walk went wrong)."""
        if self.reaped:
            return
        self.reaped = True
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.pipe)
        os.close(self.file)


_NEVER = 1 << 62
_DONE = b"\x01"  # the worker's last word: every row is written


def _can_fork() -> bool:
    """Whether a second process can work beside this one: fork exists, a second CPU is
    there to run it, and no other thread holds a lock the fork would copy locked."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1
    return (hasattr(os, "fork") and cpus >= 2 and threading.active_count() == 1
            and signal.getsignal(signal.SIGCHLD) is not signal.SIG_IGN)


def _anonymous_file() -> int:
    """A file in memory (or, without memfd, an unlinked temporary file): the worker's writes
    to it never wait for a reader, as a pipe's would."""
    if hasattr(os, "memfd_create"):
        with contextlib.suppress(OSError):
            return os.memfd_create("echoes-lint-rows")
    import tempfile  # only here: it costs a gate ~2 ms of imports

    return os.dup(tempfile.TemporaryFile().fileno())


class Beside:
    """A value computed by a forked child while this process goes on (`ci`'s status report
    beside the rules: about 0.2 s at 100,000 pages), where `_can_fork` allows; else, or when
    the child failed (killed, a value `marshal` cannot carry), computed here when asked, from
    the same inputs: the same value either way. The child sends it marshalled (tuples, lists
    and dicts in their order, as they were) through an anonymous file."""

    def __init__(self, compute: Callable[[], Any]) -> None:
        self.compute = compute
        self.pid = 0
        self.file = -1
        if not _can_fork():
            return
        try:
            file = _anonymous_file()
        except OSError:
            return
        try:
            pid = os.fork()
        except OSError:
            os.close(file)
            return
        if pid == 0:  # the child: it never returns, and never runs the parent's clean-up
            status = 1
            try:
                view = memoryview(marshal.dumps(compute()))
                while view:
                    view = view[os.write(file, view):]
                status = 0
            finally:
                os._exit(status)
        self.pid, self.file = pid, file

    def result(self) -> Any:
        """The value: the child's once it ended well, else computed now."""
        if self.pid:
            status = self._reap()  # interrupted, the child is still this one's: `stop` ends it
            try:
                if status == 0:
                    data = b"".join(_chunks(self.file))
                    with contextlib.suppress(EOFError, ValueError, TypeError):
                        return marshal.loads(data)
            finally:
                self._close()
        return self.compute()

    def stop(self) -> None:
        """End the child now, whatever it is doing (its value is not wanted)."""
        if self.pid:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            self._reap()
        self._close()

    def _reap(self) -> int:
        try:
            status = os.waitpid(self.pid, 0)[1]
        except ChildProcessError:  # reaped by someone else: whether it ended well is unknown
            status = -1
        self.pid = 0  # only once it is collected
        return status

    def _close(self) -> None:
        if self.file >= 0:
            os.close(self.file)
            self.file = -1


def _chunks(file: int) -> Iterator[bytes]:
    """What an anonymous file holds, from its start."""
    offset = 0
    while True:
        chunk = os.pread(file, 1 << 24, offset)
        if not chunk:
            return
        yield chunk
        offset += len(chunk)


def _frames(worker: _PageWorker, final: bool) -> Iterator[tuple[str, list[Any]]]:
    """The frames of the worker's file from `worker.offset` on, read one at a time (the file
    can hold megabytes): a 4-byte length, then a marshalled (kind, rows). The worker appends
    them: the bytes below the file's size are final, and a frame past it (not `final`) is
    left for the next look."""
    file = worker.file
    size = os.fstat(file).st_size
    while worker.offset < size:
        offset = worker.offset
        header = os.pread(file, 4, offset)
        length = int.from_bytes(header, "little")
        if len(header) < 4 or offset + 4 + length > size:
            if final:
                raise ValueError("a truncated frame")
            return
        data = os.pread(file, length, offset + 4)
        if len(data) != length:
            raise ValueError("a truncated frame")
        try:
            kind, rows = marshal.loads(data)
        except (EOFError, ValueError, TypeError) as exc:
            raise ValueError("a frame that cannot be read") from exc
        worker.offset = offset + 4 + length
        yield kind, rows


def _work(vault: str, entries: list[os.DirEntry[str]], page_links: links.PageLinks, file: int,
          progress: memoryview) -> None:
    """The worker's side of `_PageWorker`: frames of daily rows, then of page rows of
    `entries` (pages/ as the reader listed it) from the last page down, until it meets the
    walk."""

    def write(kind: str, rows: list[Any]) -> None:
        data = marshal.dumps((kind, rows))
        view = memoryview(len(data).to_bytes(4, "little") + data)
        while view:
            view = view[os.write(file, view):]

    _write_daily(vault, write, progress)
    try:
        common = _all_pages(entries)
    except OSError:
        common = False
    candidates = entries if common else [entry for entry in entries if _walked_page(entry)]
    rows: list[_Row] = []
    position = len(candidates)
    while position and position - 1 >= progress[0]:
        position -= 1
        entry = candidates[position]
        row = _lean_row(entry, f"{_PAGES_PREFIX}{entry.name}", page_links)
        if row is not None:
            rows.append(row)
        if not position % _PageWorker.CHUNK:
            write("p", rows)
            rows = []
            progress[1] = position
    write("p", rows)
    progress[1] = position


def _write_daily(vault: str, write: Callable[[str, list[Any]], None],
                 progress: memoryview) -> None:
    """The daily files (`engine.daily_files`: below real folders of daily/), until the walk
    says stop."""
    workspace = os.path.dirname(vault)
    rows: list[_Daily] = []
    for relative in engine.daily_files(Path(workspace)):
        if progress[0] == _NEVER:  # the walk is collecting: what is written is all
            break
        row = _daily_row(f"{workspace}/{relative}", relative)
        if row is not None:
            rows.append(row)
        if len(rows) >= _PageWorker.CHUNK:  # a frame stays small in a flat daily/
            write("d", rows)
            rows = []
    write("d", rows)


def _walked_page(entry: os.DirEntry[str]) -> bool:
    """Whether the walk reads this entry of pages/ as a page (a regular file with a page
    name)."""
    try:
        regular = not entry.is_symlink() and entry.is_file(follow_symlinks=False)
    except OSError:
        return False
    return regular and engine.classify_vault_path(f"{_PAGES_PREFIX}{entry.name}") == "page"


def _files_context(root: Path, prefix: str, files: Sequence[str], git: bool,
                   untracked: bool) -> Context:
    scan = engine.Scan(root)
    ancestors: dict[str, bool] = {}

    def load(relative: str, page: bool) -> engine.Document:
        return engine.read_document(root, relative, page)

    for relative in files:
        link = _linked_ancestor(root, relative, ancestors)
        if link is not None:
            if link not in scan.symlinks:
                scan.symlinks.append(link)
            continue
        try:
            info = os.lstat(root / relative)
        except OSError:
            scan.unreadable.append(relative)
            continue
        if stat.S_ISLNK(info.st_mode):
            scan.symlinks.append(relative)
        elif stat.S_ISREG(info.st_mode):
            scan.files[relative] = (info.st_size, info.st_mtime)
            _classify(scan, relative, load)
        elif engine.is_special_mode(info.st_mode):
            scan.special.append(relative)
    index: AbstractSet[str] = frozenset()
    gitlinks: frozenset[str] = frozenset()
    if git:
        listing = _ls_files(root)
        index, gitlinks = listing, listing.gitlinks
        outside = [path for path in scan.files if path not in index] if untracked else []
        ignored = _ignored(root, outside) if outside else set()
        scan.git = engine.GitFacts(True, _tracked_local(index),
                                   tuple(path for path in outside if path not in ignored),
                                   tuple(sorted(ignored)))
    _read_marker(scan, index if git else None)
    engine.finish_scan(scan)
    return Context(scan, prefix, git, index, frozenset(scan.files) | frozenset(scan.symlinks),
                   lambda: _staged_changes(root), gitlinks=gitlinks)


def _tracked_local(index: GitIndex) -> tuple[str, ...]:
    """`GitFacts.tracked` of a check of named or staged files: the local-only paths in Git's
    index, all that Git readiness reads of it (the rules find every path in `Context.index`)."""
    return tuple(path for path in engine.LOCAL_ONLY_PATHS if path in index)


def _staged_context(root: Path, prefix: str) -> Context:
    gitindex.start(str(root), staged=True)  # git lists the index while the staged files are read
    try:
        return _staged_files(root, prefix)
    finally:
        gitindex.discard()


def _staged_files(root: Path, prefix: str) -> Context:
    entries = _staged_entries(root)
    changes = {path: status for status, _mode, _sha, path in entries}
    staged = [(path, mode, sha) for status, mode, sha, path in entries
              if status in "AMT" and path.startswith(VAULT + "/")]
    blobs = _blobs(root, [sha for _path, mode, sha in staged if mode in ("100644", "100755")])
    scan = engine.Scan(root)
    contents: dict[str, bytes] = {}

    def load(relative: str, page: bool) -> engine.Document:
        return engine.document_from_bytes(relative, contents[relative], page)

    for path, mode, sha in staged:
        if mode == "120000":
            scan.symlinks.append(path)
        elif sha in blobs:
            contents[path] = blobs[sha]
            scan.files[path] = (len(blobs[sha]), 0.0)
            _classify(scan, path, load)
    index = _ls_files(root)
    scan.git = engine.GitFacts(True, _tracked_local(index))
    _read_marker(scan, index, contents.get(MARKER_PATH))
    engine.finish_scan(scan)
    return Context(scan, prefix, True, index, frozenset(scan.files) | frozenset(scan.symlinks),
                   lambda: changes, gitlinks=index.gitlinks)


def _classify(scan: engine.Scan, relative: str,
              load: Callable[[str, bool], engine.Document]) -> None:
    """File one vault file exactly as the engine's own scan does."""
    kind = engine.classify_vault_path(relative)
    if kind == "stray":
        scan.page_dir_strays.append(relative)
    elif kind == "nested":
        # The whole-vault scan reports the folder nested in pages/, not each file inside it.
        folder = "/".join(relative.split("/")[:3]) + "/"
        if folder not in scan.page_dir_strays:
            scan.page_dir_strays.append(folder)
        if relative[-3:].casefold() == ".md":  # read for conflict markers, as the scan does
            engine.file_document(scan, load(relative, False), "markdown")
    elif kind != "data":
        engine.file_document(scan, load(relative, kind == "page"), kind)


MARKER_PATH = f"{VAULT}/{engine.MARKER_FILE}"


def _read_marker(scan: engine.Scan, index: Optional[AbstractSet[str]] = None,
                 staged: Optional[bytes] = None) -> None:
    """The marker as the commit will record it: from the staged blob when there is one, and
    missing when Git's index does not hold it (a staged deletion, or never added)."""
    if index is not None and MARKER_PATH not in index:
        # On disk but never added (right after `init`): the message says so, not "missing".
        on_disk = os.path.lexists(scan.vault / engine.MARKER_FILE)
        scan.marker_exists, scan.marker_value, scan.marker_error = \
            False, None, NOT_IN_INDEX if on_disk else None
    elif staged is not None:
        text, problem = engine.decode_text(staged)
        value, error = (engine.parse_marker(text) if text is not None
                        else (None, f"cannot read marker: {problem.message if problem else ''}"))
        scan.marker_exists, scan.marker_value, scan.marker_error = True, value, error
    else:
        scan.marker_exists, scan.marker_value, scan.marker_error = \
            engine.read_marker_file(scan.vault)
        if scan.marker_error:
            engine.note_special(scan, MARKER_PATH)


def _linked_ancestor(root: Path, relative: str, seen: dict[str, bool]) -> Optional[str]:
    """The first folder of `relative` inside the vault that is a symbolic link, if any."""
    parts = relative.split("/")
    for depth in range(1, len(parts)):
        folder = "/".join(parts[:depth])
        if folder not in seen:
            seen[folder] = os.path.islink(root / folder)
        if seen[folder]:
            return folder
    return None


# --- Git --------------------------------------------------------------------------------------


def _ls_files(root: Path) -> GitIndex:
    """The paths in Git's index under the Git scope, and the gitlinks among them."""
    listing, cause = gitindex.output(root)
    if listing is None:
        raise _git_problem(root, cause)
    return GitIndex(listing)


def _ignored(root: Path, paths: Sequence[str]) -> set[str]:
    """The paths that Git's ignore rules hide (`git check-ignore` exits 1 when none are)."""
    data = b"".join(os.fsencode(path) + b"\0" for path in paths)
    output, cause = engine.git_output(root, ["check-ignore", "-z", "--stdin"], data)
    if output is None and cause and not cause.startswith("git check-ignore exited 1"):
        raise _git_problem(root, cause)
    return set(engine.split_nul(output))


def _staged_entries(root: Path) -> list[tuple[str, str, str, str]]:
    """(status, new mode, new blob id, path) for every staged change under the Git scope."""
    output, cause = gitindex.staged_diff(root)
    if output is None:
        raise _git_problem(root, cause)
    items = engine.split_nul(output)
    entries = []
    for meta, path in zip(items[::2], items[1::2]):
        _old_mode, new_mode, _old_sha, new_sha, status = meta.lstrip(":").split(" ")
        entries.append((status[:1], new_mode, new_sha, path))
    return entries


def _staged_changes(root: Path) -> Mapping[str, str]:
    return {path: status for status, _mode, _sha, path in _staged_entries(root)}


def _blobs(root: Path, shas: Sequence[str]) -> dict[str, bytes]:
    """Blob contents by id, from one `git cat-file --batch`."""
    if not shas:
        return {}
    try:
        completed = subprocess.run(
            ["git", "cat-file", "--batch"], cwd=str(root), input="\n".join(shas).encode() + b"\n",
            capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise _git_problem(root, f"cannot read the staged files: {exc}") from exc
    if completed.returncode != 0:
        raise _git_problem(root, completed.stderr.decode("utf-8", "backslashreplace"))
    output, position, blobs = completed.stdout, 0, {}
    while position < len(output):
        header_end = output.index(b"\n", position)
        header = output[position:header_end].decode().split(" ")
        position = header_end + 1
        if len(header) != 3:
            continue  # `<id> missing`
        size = int(header[2])
        blobs[header[0]] = output[position:position + size]
        position += size + 1
    return blobs


# --- suppressions ----------------------------------------------------------------------------


class Suppression(engine._Record):
    """One `<!-- echoes-lint-disable-next-line [CODES] -->` comment. `codes`: upper-cased codes
    or prefixes as written, empty to silence every rule; `used`: the codes that silenced a
    finding; `refused`: codes of findings on the next line that it may not silence."""

    __slots__ = _FIELDS = ("line", "col", "codes", "used", "refused")

    def __init__(self, line: int, col: int, codes: tuple[str, ...],
                 used: Optional[set[str]] = None, refused: Optional[set[str]] = None) -> None:
        self.line, self.col, self.codes = line, col, codes
        self.used: set[str] = set() if used is None else used
        self.refused: set[str] = set() if refused is None else refused


def _comment(line: str) -> Optional[tuple[int, str]]:
    """(0-based column, text after the keyword) of the first suppression comment on a line.

    Each `<!--` is matched with the next `-->` and the scan resumes after it, so a line is read
    a constant number of times however many comments it holds (a regular expression with a lazy
    `.*?-->` rescans the rest of the line from every `<!--`)."""
    start = 0
    while True:
        opening = line.find("<!--", start)
        if opening < 0:
            return None
        closing = line.find("-->", opening + 4)
        if closing < 0:
            return None
        body = line[opening + 4:closing].lstrip()
        rest = body[len(SUPPRESSION):]
        if body.startswith(SUPPRESSION) and not (rest[:1].isalnum() or rest[:1] == "_"):
            return opening, rest
        start = closing + 3


def parse_suppressions(text: str) -> dict[int, Suppression]:
    """Line a comment applies to (the one after it) -> the comment."""
    found: dict[int, Suppression] = {}
    if SUPPRESSION not in text:
        return found
    for number, line in enumerate(text.split("\n"), 1):
        if SUPPRESSION in line:
            comment = _comment(line)
            if comment is not None:
                found[number + 1] = Suppression(number, comment[0] + 1, tuple(
                    comment[1].replace(",", " ").upper().split()))
    return found


def _apply_suppressions(findings: list[Finding], context: Context, config: Config,
                        enabled: frozenset[str], protected: frozenset[str]) -> list[Finding]:
    """Drop what per-file-ignores and suppression comments silence, except findings that
    `status` counts as issues and (in `ci`) protected codes; then report the comments that
    silenced nothing (EV043) or name no rule (EV044)."""
    comments = {context.path(document.path): parse_suppressions(document.text)
                for document in context.documents()
                if document.text is not None and SUPPRESSION in document.text}
    kept = []
    for finding in findings:
        ignored = ignored_by_path(config, finding.path)
        if ignored and finding.code.startswith(ignored) and finding.code not in protected:
            continue
        comment = comments.get(finding.path, {}).get(finding.line)
        matching = ([code for code in comment.codes if finding.code.startswith(code)]
                    if comment is not None and comment.codes else [""])
        if comment is not None and matching:
            if finding.code.startswith(UNSUPPRESSIBLE) or finding.code in protected:
                comment.refused.add(finding.code)
            else:
                comment.used.update(matching)
                continue
        kept.append(finding)
    for path, table in comments.items():
        for comment in table.values():
            for finding in _comment_findings(path, comment, enabled):
                ignored = ignored_by_path(config, path)
                if not (ignored and finding.code.startswith(ignored)):
                    kept.append(finding)
    return kept


def _comment_findings(path: str, comment: Suppression,
                      enabled: frozenset[str]) -> Iterable[Finding]:
    unknown = [code for code in comment.codes if not any(rule.startswith(code) for rule in RULES)]
    if unknown and "EV044" in enabled:
        yield Finding(path, comment.line, comment.col, "EV044",
                      f"suppression comment names no rule: {', '.join(unknown)}; "
                      "run `echoes-lint rule --all` for the codes",
                      RULES["EV044"].severity, f"remove {', '.join(unknown)} from the comment")
    if "EV043" not in enabled:
        return
    # A code is unused only when every rule it names ran: a hook that checks a few rules
    # cannot tell whether a comment for another rule still matters.
    unused = [code for code in (comment.codes or ("",)) if code not in unknown
              and code not in comment.used
              and all(rule in enabled for rule in RULES if rule.startswith(code))]
    if not unused and comment.refused and not comment.used:
        unused = list(comment.codes or ("",))
    if not unused:
        return
    what = ", ".join(unused) if comment.codes else "every rule"
    if comment.refused:
        reason = (f"cannot silence {', '.join(sorted(comment.refused))}: `status` counts it as "
                  "an issue (or the workflow protects it), so fix the finding instead")
    else:
        reason = f"line {comment.line + 1} has no finding for {what} to silence"
    yield Finding(path, comment.line, comment.col, "EV043",
                  f"unused suppression comment: {reason}", RULES["EV043"].severity,
                  "delete the comment" if len(unused) == len(comment.codes or ("",))
                  else f"remove {', '.join(unused)} from the comment")
