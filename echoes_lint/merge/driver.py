"""`echoes-lint merge-driver %O %A %B %P`: a frontmatter-aware Git merge driver for pages.

Git's merge-driver contract: %O holds the common ancestor, %A our version and %B theirs; the
driver writes the result into %A and exits 0 when the merge is clean, non-zero (with conflict
markers left in %A) otherwise. Git runs it from the top of the work tree, with %P as the page's
path: labels and messages escape its control characters and non-UTF-8 bytes (`printable`).
Conflict labels are the names Git gives (`--names %S %X %Y`, Git 2.44 and later); an older Git
passes those placeholders through unexpanded, and the driver then labels as Git's own text merge
does (see `labels`). A conflict exits `--conflict-status` (1 by default); every other non-zero
status means %A was left untouched, which the command `install-merge-driver` records tells from
a conflict and answers with `git merge-file` (see install.py).

Frontmatter is merged key by key (see `merge_frontmatter`), the body line by line with
`git merge-file`, and the result is validated by the engine: a merge that would leave an invalid
page is reported as a conflict, never written as a silently broken page. A side whose frontmatter
cannot be split into keys falls back to a plain `git merge-file` of the whole file.

A conflict always carries markers. Inputs are read with the engine's size limit (as `check` reads
pages); whenever the page merge cannot run (an error, an oversized or unreadable input) the
driver falls back to `git merge-file` with the same labels and marker size, and where that is
clean or impossible (binary content), or the merged page would be invalid, it writes one block
holding both whole versions. It exits 1 in all those cases, so Git records the conflict.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple, TypeVar

from echoes_lint import engine
from echoes_lint.engine import printable

Lines = Tuple[str, ...]
T = TypeVar("T")
# Lines of the frontmatter before its first key (comments, blank lines) merge as one unit under
# this name, which no real key can have.
HEAD = ""
# Problems that leave no trustworthy key layout to merge key by key.
_STRUCTURAL_KINDS = frozenset({
    "frontmatter-missing",
    "frontmatter-unclosed",
    "frontmatter-key-syntax",
    "frontmatter-duplicate-key",
})
STYLES = ("merge", "diff3", "zdiff3")


class DriverError(Exception):
    """The merge could not be attempted; %A is left untouched (Git then reports a conflict)."""


@dataclasses.dataclass(frozen=True)
class Page:
    """A page split for merging. `units` maps each key (and HEAD) to its raw lines: the key line
    and every following line up to the next key, in file order."""

    prefix: Lines
    units: Dict[str, Lines]
    close: str
    body: str


def split_page(text: str) -> Optional[Page]:
    """Split page text at the engine's frontmatter boundaries, or None when it has none usable."""
    meta = engine.parse_frontmatter(text)
    if meta.close_line is None or any(p.kind in _STRUCTURAL_KINDS for p in meta.problems):
        return None
    lines = text.split("\n")
    starts = [field.line for field in meta.fields.values()]
    bounds = [meta.open_line, *starts, meta.close_line]
    units: Dict[str, Lines] = {HEAD: tuple(lines[meta.open_line:bounds[1] - 1])}
    for position, key in enumerate(meta.fields):
        units[key] = tuple(lines[bounds[position + 1] - 1:bounds[position + 2] - 1])
    head = "\n".join(lines[:meta.close_line]) + "\n"
    return Page(tuple(lines[:meta.open_line]), units, lines[meta.close_line - 1],
                text[len(head):])


def classify(base: Optional[T], ours: Optional[T], theirs: Optional[T]) -> str:
    """How one unit changed: `unchanged`, `ours` or `theirs` (one side only), `same` (both sides,
    identically) or `conflict` (both sides, differently). None means absent on that side."""
    if ours == theirs:
        return "unchanged" if ours == base else "same"
    if ours == base:
        return "theirs"
    if theirs == base:
        return "ours"
    return "conflict"


@dataclasses.dataclass(frozen=True)
class Markers:
    """How conflicts are written: Git's labels, `merge.conflictStyle` and marker size (%L)."""

    ours: str = "ours"
    base: str = "base"
    theirs: str = "theirs"
    style: str = "merge"
    size: int = 7

    def block(self, ours: Lines, base: Lines, theirs: Lines) -> List[str]:
        lines = ["<" * self.size + " " + self.ours, *ours]
        if self.style != "merge":
            lines += ["|" * self.size + " " + self.base, *base]
        return [*lines, "=" * self.size, *theirs, ">" * self.size + " " + self.theirs]


@dataclasses.dataclass(frozen=True)
class FrontmatterMerge:
    """The merged lines between the fences (with conflict markers) and the conflicting keys."""

    lines: List[str]
    conflicts: List[str]


def merge_frontmatter(base: Optional[Page], ours: Page, theirs: Page,
                      markers: Markers) -> FrontmatterMerge:
    """Merge frontmatter key by key in three ways.

    A key changed on one side takes that side (a deletion included); the same change on both
    sides is taken once; different changes, or a deletion against a modification, conflict. Keys
    keep our order, keys only on their side follow in their order. A key the merge changed is
    turned into a conflict when the engine finds it invalid in the result (a summary over the
    length limit or on several lines, a deleted required key, ...).
    """
    base_units = base.units if base is not None else {HEAD: ()}
    order = list(ours.units) + [key for key in theirs.units if key not in ours.units]
    taken: Dict[str, Lines] = {}
    changed: Set[str] = set()
    conflicts: Set[str] = set()  # a set: a page may have 100,000 conflicting keys
    for key in order:
        sides = (base_units.get(key), ours.units.get(key), theirs.units.get(key))
        change = classify(*sides)
        if change == "conflict":
            conflicts.add(key)
            continue
        if change != "unchanged":
            changed.add(key)
        taken[key] = (sides[2] if change == "theirs" else sides[1]) or ()
    if changed:  # Only a key the merge changed can turn invalid.
        validated = "\n".join(["---", *(line for key in order if key in taken
                                        for line in taken[key]), "---", ""])
        meta = engine.parse_frontmatter(validated)
        # Notes too: a merge must not produce what other tools misread (a multi-line summary).
        for problem in (*meta.problems, *meta.notes):
            if problem.key in changed:
                conflicts.add(problem.key)
    lines: List[str] = []
    for key in order:
        if key in conflicts:
            lines += markers.block(ours.units.get(key) or (), base_units.get(key) or (),
                                   theirs.units.get(key) or ())
        else:
            lines += taken[key]
    return FrontmatterMerge(lines, [key for key in order if key in conflicts])


def trivial_merge(base: str, ours: str, theirs: str) -> Optional[str]:
    """The result when at most one side changed, without running a line merge."""
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    return None


def git_merge_file(ours: Path, base: Path, theirs: Path, markers: Markers,
                   cwd: Path) -> Tuple[bytes, bool]:
    """(result, clean) of `git merge-file -p` with the given labels, style and marker size."""
    style = [] if markers.style == "merge" else [f"--{markers.style}"]
    command = ["git", "merge-file", "-p", "-q", *style, f"--marker-size={markers.size}",
               "-L", markers.ours, "-L", markers.base, "-L", markers.theirs,
               str(ours), str(base), str(theirs)]
    try:
        completed = subprocess.run(command, cwd=str(cwd), capture_output=True, check=False)
    except OSError as exc:
        raise DriverError(f"cannot run git merge-file: {exc}") from exc
    # Exit status: the number of conflicts (0 = clean); 128 and above (or negative) is an error.
    if not 0 <= completed.returncode < 128:
        detail = completed.stderr.decode("utf-8", "replace").strip()
        raise DriverError(f"git merge-file failed: {detail or completed.returncode}")
    return completed.stdout, completed.returncode == 0


def merge_texts(base: str, ours: str, theirs: str, markers: Markers, cwd: Path) -> Tuple[str, bool]:
    """Line-merge three texts with `git merge-file` semantics: (result, clean)."""
    trivial = trivial_merge(base, ours, theirs)
    if trivial is not None:
        return trivial, True
    with tempfile.TemporaryDirectory(prefix="echoes-merge-") as folder:
        paths = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(folder) / name
            path.write_bytes(text.encode("utf-8"))
            paths.append(path)
        result, clean = git_merge_file(paths[0], paths[1], paths[2], markers, cwd)
    return result.decode("utf-8"), clean


@dataclasses.dataclass(frozen=True)
class PageMerge:
    text: str
    clean: bool
    conflicting_keys: List[str]
    body_conflict: bool


def merge_pages(base: Optional[Page], ours: Page, theirs: Page, markers: Markers,
                cwd: Path) -> PageMerge:
    frontmatter = merge_frontmatter(base, ours, theirs, markers)
    body, body_clean = merge_texts(base.body if base else "", ours.body, theirs.body, markers, cwd)
    text = "\n".join([*ours.prefix, *frontmatter.lines, ours.close]) + "\n" + body
    return PageMerge(text, body_clean and not frontmatter.conflicts, frontmatter.conflicts,
                     not body_clean)


def conflict_style(cwd: Path) -> str:
    configured = engine.run_git(cwd, ["config", "--get", "merge.conflictStyle"])
    style = (configured or b"").decode("utf-8", "replace").strip().casefold()
    return style if style in STYLES else "merge"


def _decode(data: bytes) -> Optional[str]:
    text, _problem = engine.decode_text(data)
    return text


def _side(data: bytes) -> bytes:
    return data if not data or data.endswith(b"\n") else data + b"\n"


def whole_file_conflict(base: bytes, ours: bytes, theirs: bytes, markers: Markers) -> bytes:
    """One conflict block holding both whole files: what is left when no merge can be trusted,
    so that the conflict Git records still carries markers."""
    parts = [f"{'<' * markers.size} {markers.ours}\n".encode(), _side(ours)]
    if markers.style != "merge":
        parts += [f"{'|' * markers.size} {markers.base}\n".encode(), _side(base)]
    parts += [f"{'=' * markers.size}\n".encode(), _side(theirs),
              f"{'>' * markers.size} {markers.theirs}\n".encode()]
    return b"".join(parts)


def _read_input(path: Path) -> bytes:
    # The engine's reader and size limit: the same files are too large for `check`, `check
    # --staged` and this driver.
    try:
        return engine.read_bytes(path)
    except OSError as exc:
        raise DriverError(f"cannot read a merge input: {exc.strerror or exc}") from exc


def _listed(keys: Sequence[str], limit: int = 20) -> str:
    names = [f"`{printable(key)}`" if key else "comments" for key in keys[:limit]]
    more = f" and {len(keys) - limit} more keys" if len(keys) > limit else ""
    return ", ".join(names) + more


def run_driver(base_path: Path, ours_path: Path, theirs_path: Path, markers: Markers,
               cwd: Path) -> Tuple[bytes, bool, List[str]]:
    """(result bytes for %A, clean, explanations for stderr). A result that is not clean always
    holds conflict markers."""
    raw = [_read_input(path) for path in (base_path, ours_path, theirs_path)]
    texts = [_decode(data) for data in raw]
    pages = [split_page(text) if text is not None else None for text in texts]
    # No common ancestor (an add/add conflict): Git passes an empty %O.
    no_base = texts[0] is not None and not texts[0].strip()
    notes: List[str] = []
    if pages[1] is not None and pages[2] is not None and (no_base or pages[0] is not None):
        merged = merge_pages(None if no_base else pages[0], pages[1], pages[2], markers, cwd)
        text, clean = merged.text, merged.clean
        if merged.conflicting_keys:
            notes.append(f"frontmatter conflict in {_listed(merged.conflicting_keys)}")
        if merged.body_conflict:
            notes.append("body conflict")
    else:
        notes.append("frontmatter not readable on every side; merged as plain text")
        result, clean = git_merge_file(ours_path, base_path, theirs_path, markers, cwd)
        if not clean:
            return result, False, notes  # Git wrote the markers.
        decoded = _decode(result)
        if decoded is None:
            notes.append("merged page is not text; both whole versions are kept in one "
                         "conflict block")
            return whole_file_conflict(raw[0], raw[1], raw[2], markers), False, notes
        text = decoded
    if clean:
        _meta, problems = engine.validate_page_text(text)
        if problems:
            notes += [f"merged page would be invalid, line {problem.line}: "
                      f"{printable(problem.message)}" for problem in problems[:20]]
            notes.append("both whole versions are kept in one conflict block")
            return whole_file_conflict(raw[0], raw[1], raw[2], markers), False, notes
    newline = "\r\n" if b"\r\n" in raw[1] else "\n"
    return text.replace("\n", newline).encode("utf-8"), clean, notes


def fallback(base_path: Path, ours_path: Path, theirs_path: Path, markers: Markers,
             cwd: Path) -> Tuple[bytes, List[str]]:
    """Git's own text merge with markers, when the page merge could not run; a merge Git finds
    clean (or cannot do: binary content) becomes one whole-file conflict block. Raises
    DriverError when an input cannot be read at all."""
    try:
        result, clean = git_merge_file(ours_path, base_path, theirs_path, markers, cwd)
    except DriverError as exc:
        note = f"{exc}; both whole versions are kept in one conflict block"
    else:
        if not clean:
            return result, ["merged as plain text by `git merge-file`"]
        note = "a plain text merge would be unchecked; both whole versions are kept in one " \
               "conflict block"
    try:
        sides = [path.read_bytes() for path in (base_path, ours_path, theirs_path)]
    except OSError as exc:
        raise DriverError(f"cannot read a merge input: {exc.strerror or exc}") from exc
    return whole_file_conflict(sides[0], sides[1], sides[2], markers), [note]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="echoes-lint merge-driver",
        description="Git merge driver for EchoesVault pages (configure it with "
                    "`echoes-lint install-merge-driver`).")
    parser.add_argument("--workspace", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--marker-size", type=int, default=7, help="conflict marker size (%%L)")
    parser.add_argument("--names", nargs=3, metavar=("BASE", "OURS", "THEIRS"), default=None,
                        help="Git's conflict labels (%%S %%X %%Y, Git 2.44 and later)")
    parser.add_argument("--conflict-status", type=int, default=1, metavar="N",
                        help="exit status for a conflict written with markers (default 1), so "
                             "that a wrapper tells it from a driver that could not run")
    parser.add_argument("base", help="common ancestor (%%O)")
    parser.add_argument("ours", help="our version, replaced by the result (%%A)")
    parser.add_argument("theirs", help="their version (%%B)")
    parser.add_argument("path", nargs="?", default=None, help="path in the repository (%%P)")
    return parser


# What Git < 2.44 leaves in place of %S %X %Y: it passes unknown placeholders through.
_UNEXPANDED = ("%S", "%X", "%Y")


def git_labels(cwd: Path) -> Optional[Tuple[str, str]]:
    """(ours, theirs) as Git's own text merge labels them, for a Git that does not pass them to
    drivers: `git merge` names the merged branch in a GITHEAD_<id> variable, a rebase names the
    commit it replays on the last line of `rebase-merge/done`. None when neither says."""
    names = [value for key, value in os.environ.items() if key.startswith("GITHEAD_")]
    if len(names) == 1:
        return "HEAD", names[0]
    relative = engine.run_git(cwd, ["rev-parse", "--git-path", "rebase-merge/done"])
    if relative is None:
        return None
    try:
        done = (cwd / os.fsdecode(relative.strip())).read_bytes()[-4096:]
    except OSError:
        return None
    words = done.decode("utf-8", "replace").rstrip("\n").rsplit("\n", 1)[-1].split(" ", 2)
    if len(words) == 3 and words[0] in ("pick", "p", "edit", "e", "reword", "r"):
        return "HEAD", f"{words[1][:7]} ({words[2]})"
    return None


def labels(names: Optional[Sequence[str]], path: str, cwd: Path) -> Tuple[str, str, str]:
    """(ours, base, theirs) conflict labels: the names Git gives (%X %Y %S), else Git's own text
    merge labels, else `ours:<path>`-style labels."""
    if names is not None and tuple(names) != _UNEXPANDED:
        base, ours, theirs = (printable(name) for name in names)
        return ours, base or "base", theirs
    suffix = f":{path}" if path else ""
    guessed = git_labels(cwd)
    if guessed is not None:
        return printable(guessed[0]), f"base{suffix}", printable(guessed[1])
    return f"ours{suffix}", f"base{suffix}", f"theirs{suffix}"


def write_result(target: Path, data: bytes) -> None:
    """Replace %A atomically: a driver that fails half-way must leave "ours" whole, since the
    wrapper installed by `install-merge-driver` then merges it with `git merge-file`."""
    descriptor, temporary = tempfile.mkstemp(prefix=".echoes-merge-", dir=str(target.parent))
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv))
    if not 0 < args.conflict_status < 126 or args.conflict_status == 2:
        parser.error("--conflict-status must be 1 or 3 to 125")
    cwd = Path(args.workspace or os.getcwd())
    shown = printable(args.path) if args.path else ""
    ours, base, theirs = labels(args.names, shown, cwd)
    # Git asks for longer markers in the inner merges of a criss-cross merge; shorter ones would
    # be invisible to every protocol engine, so never go below the standard seven.
    markers = Markers(ours, base, theirs, conflict_style(cwd), max(7, args.marker_size))
    label = shown or printable(args.ours)
    paths = Path(args.base), Path(args.ours), Path(args.theirs)
    try:
        try:
            result, clean, notes = run_driver(*paths, markers, cwd)
        except Exception as exc:  # Whatever failed, Git must get a file with markers.
            reason = str(exc) if isinstance(exc, DriverError) else \
                f"internal error ({type(exc).__name__}: {exc})"
            result, notes = fallback(*paths, markers, cwd)
            notes.insert(0, printable(reason))
            clean = False
        write_result(Path(args.ours), result)
    except DriverError as exc:
        sys.stderr.write(f"echoes-lint merge-driver: {label}: {printable(str(exc))}\n")
        return 2
    except OSError as exc:
        sys.stderr.write(f"echoes-lint merge-driver: {label}: cannot write the result: "
                         f"{printable(str(exc.strerror or exc))}\n")
        return 2
    for note in notes:
        sys.stderr.write(f"echoes-lint merge-driver: {label}: {note}\n")
    return 0 if clean else args.conflict_status
