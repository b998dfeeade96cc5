"""Run the rules over one vault: locate it, scan it once, apply selection and suppressions.

`run_checks` has three modes:

* the whole vault (`paths=None`): one `engine.scan_workspace`, Git asked once;
* named files (`paths=[...]`, what pre-commit passes): only those files are read, and the
  repository-wide facts (tracked local files, case collisions, the marker) come from the Git
  index, so a one-file hook costs one file plus `git ls-files -z`;
* the staged snapshot (`staged=True`, the plain Git hook): staged vault files are read from the
  index with one `git cat-file --batch`, never from the working tree.

Paths in the scan are relative to the engine workspace (the folder holding `EchoesVault/`);
findings are relative to the repository root.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from echoes_lint import engine
from echoes_lint.config import (
    Config,
    ConfigError,
    enabled_codes,
    ignored_by_path,
    load_config,
    validate_codes,
)
from echoes_lint.findings import Finding, Severity
from echoes_lint.rules import FAMILIES, GIT_CODES, REPOSITORY_CODES, Context

VAULT = engine.VAULT_DIR
_GIT_SCOPE = (VAULT, *engine.LOCAL_ONLY_PATHS)
_SUPPRESSION = re.compile(r"<!--\s*echoes-lint-disable-next-line\b(.*?)-->")


@dataclass(frozen=True)
class CheckResult:
    workspace: Path
    repo_root: Path
    scan: engine.Scan
    findings: list[Finding]
    """Sorted by `Finding.sort_key`; paths relative to `repo_root`."""
    config: Config
    vault: str
    """The vault folder relative to `repo_root`, POSIX (`EchoesVault` or `docs/EchoesVault`)."""

    @property
    def prefix(self) -> str:
        return self.vault[: -len(VAULT)]

    def sources(self) -> dict[str, list[str]]:
        """Repository-relative path -> lines, for the files that have findings."""
        wanted = {finding.path for finding in self.findings}
        return {self.prefix + document.path: document.text.split("\n")
                for document in self.scan.documents()
                if document.text is not None and self.prefix + document.path in wanted}


def exit_code(findings: Iterable[Finding], fail_on: str) -> int:
    """1 when a finding is at or above the failing severity (`error`, `warning`), else 0."""
    if fail_on == "never":
        return 0
    threshold = (Severity.WARNING if fail_on == "warning" else Severity.ERROR).rank
    return 1 if any(finding.severity.rank >= threshold for finding in findings) else 0


def run_checks(workspace: Path, *, vault_dir: Optional[str] = None,
               paths: Optional[Sequence[str]] = None, config: Optional[Config] = None,
               select: Sequence[str] = (), ignore: Sequence[str] = (),
               staged: bool = False) -> CheckResult:
    """Check the vault of the repository that contains `workspace`.

    `vault_dir` (relative to the repository root) overrides the configuration's `vault-dir`;
    `paths` are files or folders, relative to `workspace` or absolute; `select` replaces the
    configuration's selection and `ignore` adds to its ignores. Raises `ConfigError` for usage
    and configuration problems (no vault, unknown codes, a path that does not exist).
    """
    workspace = _directory(workspace)
    top = (engine.run_git(workspace, ["rev-parse", "--show-toplevel"]) or b"").strip()
    in_git = bool(top)
    repo_root = Path(os.fsdecode(top)).resolve() if in_git else workspace
    if config is None:
        config = load_config(repo_root)
    select_codes = validate_codes(select, "--select") or config.select
    ignore_codes = (*config.ignore, *validate_codes(ignore, "--ignore"))
    enabled = enabled_codes(select_codes, ignore_codes)
    root, prefix = _locate_vault(repo_root, vault_dir or config.vault_dir)
    git = in_git and bool(enabled & GIT_CODES)

    only: Optional[list[str]] = None  # repository-relative files and folders to report on
    if staged:
        if not in_git:
            raise ConfigError("--staged needs a Git repository")
        context = _staged_context(root, prefix)
    elif paths is None:
        context = _whole_context(root, prefix, git)
    else:
        files, folders, whole = _resolve_paths(workspace, root, paths)
        if whole or folders or not in_git:
            context = _whole_context(root, prefix, git)
            only = None if whole else [prefix + path for path in (*files, *folders)]
        else:
            # Without a full scan, link targets come from the Git index.
            index = git or "EV050" in enabled
            context = _files_context(root, prefix, files, index, "EV022" in enabled)

    findings: list[Finding] = []
    for codes, check in FAMILIES:
        if codes & enabled:
            findings.extend(finding for finding in check(context) if finding.code in enabled)
    if only is not None:
        findings = [finding for finding in findings if finding.code in REPOSITORY_CODES
                    or any(finding.path == item or finding.path.startswith(item + "/")
                           for item in only)]
    findings = _apply_suppressions(findings, context, config)
    findings.sort(key=Finding.sort_key)
    return CheckResult(workspace, repo_root, context.scan, findings, config,
                       prefix + VAULT)


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
                      "`vault-dir` in [tool.echoes-lint]")
    return parent, "" if relative == "." else relative + "/"


class NoVault(ConfigError):
    """The repository has no vault where the configuration says, and none to find."""


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


def _whole_context(root: Path, prefix: str, git: bool) -> Context:
    scan = engine.scan_workspace(root, git=git)
    available = scan.git.available
    return Context(scan, prefix, available, frozenset(scan.git.tracked) if available else
                   frozenset(), None, lambda: _staged_changes(root))


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
    index: frozenset[str] = frozenset()
    if git:
        index = frozenset(_ls_files(root))
        outside = [path for path in scan.files if path not in index] if untracked else []
        ignored = _ignored(root, outside) if outside else set()
        scan.git = engine.GitFacts(True, tuple(sorted(index)),
                                   tuple(path for path in outside if path not in ignored),
                                   tuple(sorted(ignored)))
    _read_marker(scan, index if git else None)
    engine.finish_scan(scan)
    return Context(scan, prefix, git, index, frozenset(scan.files) | frozenset(scan.symlinks),
                   lambda: _staged_changes(root))


def _staged_context(root: Path, prefix: str) -> Context:
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
    index = frozenset(_ls_files(root))
    scan.git = engine.GitFacts(True, tuple(sorted(index)))
    _read_marker(scan, index, contents.get(MARKER_PATH))
    engine.finish_scan(scan)
    return Context(scan, prefix, True, index, frozenset(scan.files) | frozenset(scan.symlinks),
                   lambda: changes)


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


def _read_marker(scan: engine.Scan, index: Optional[frozenset[str]] = None,
                 staged: Optional[bytes] = None) -> None:
    """The marker as the commit will record it: from the staged blob when there is one, and
    missing when Git's index does not hold it (a staged deletion, or never added)."""
    if index is not None and MARKER_PATH not in index:
        scan.marker_exists, scan.marker_value, scan.marker_error = False, None, None
    elif staged is not None:
        text, problem = engine.decode_text(staged)
        value, error = (engine.parse_marker(text) if text is not None
                        else (None, f"cannot read marker: {problem.message if problem else ''}"))
        scan.marker_exists, scan.marker_value, scan.marker_error = True, value, error
    else:
        scan.marker_exists, scan.marker_value, scan.marker_error = \
            engine.read_marker_file(scan.vault)


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


def _ls_files(root: Path) -> list[str]:
    return engine.split_nul(engine.run_git(root, ["ls-files", "-z", "--cached", "--",
                                                  *_GIT_SCOPE]))


def _ignored(root: Path, paths: Sequence[str]) -> set[str]:
    """The paths that Git's ignore rules hide (`git check-ignore` exits 1 when none are)."""
    data = b"".join(os.fsencode(path) + b"\0" for path in paths)
    return set(engine.split_nul(engine.run_git(root, ["check-ignore", "-z", "--stdin"], data)))


def _staged_entries(root: Path) -> list[tuple[str, str, str, str]]:
    """(status, new mode, new blob id, path) for every staged change under the Git scope."""
    output = engine.run_git(root, ["diff", "--cached", "--raw", "-z", "--no-renames",
                                   "--no-abbrev", "--", *_GIT_SCOPE])
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
        raise ConfigError(f"cannot read the staged files: {exc}") from exc
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


def _suppressed_lines(text: str) -> dict[int, tuple[str, ...]]:
    """Line -> codes silenced there by a comment on the line before (empty tuple: all)."""
    lines: dict[int, tuple[str, ...]] = {}
    if "echoes-lint-disable-next-line" not in text:
        return lines
    for number, line in enumerate(text.split("\n"), 1):
        match = _SUPPRESSION.search(line)
        if match:
            lines[number + 1] = tuple(match.group(1).replace(",", " ").upper().split())
    return lines


def _apply_suppressions(findings: list[Finding], context: Context,
                        config: Config) -> list[Finding]:
    if not findings:
        return findings
    texts = {context.path(document.path): document.text for document in context.scan.documents()
             if document.text is not None}
    cache: dict[str, dict[int, tuple[str, ...]]] = {}
    kept = []
    for finding in findings:
        ignored = ignored_by_path(config, finding.path)
        if ignored and finding.code.startswith(ignored):
            continue
        text = texts.get(finding.path)
        if text is not None:
            if finding.path not in cache:
                cache[finding.path] = _suppressed_lines(text)
            codes = cache[finding.path].get(finding.line)
            if codes is not None and (not codes or finding.code.startswith(codes)):
                continue
        kept.append(finding)
    return kept
