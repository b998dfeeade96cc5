"""`echoes-lint resolve [--check]`: guide a merge, rebase, cherry-pick or revert through vault
conflicts (spec section 14).

It lists every conflicted vault file, from Git's unmerged entries (`git ls-files -u -z`) and from
the engine's marker scan, with each conflict block's lines and labels, and for pages which
frontmatter keys and whether the body changed on which side (from index stages 1, 2 and 3).
`--check` exits 1 while a vault file still has markers or invalid frontmatter; once the vault is
consistent it hydrates (initialised workspaces only, with the packaged engine: it never runs
the repository's runtime, see `hydrate.py`) and prints the status card. It never stages or
commits: it prints the `git add` commands for resolved files.
"""

from __future__ import annotations

import argparse
import bisect
import dataclasses
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from echoes_lint import engine
from echoes_lint.cli import PROG
from echoes_lint.engine import printable
from echoes_lint.merge.driver import HEAD, Page, classify, split_page
from echoes_lint.merge.hydrate import hydrate
from echoes_lint.rules.conflicts import Covered
from echoes_lint.rules.context import MAX_PER_FILE

# Git state paths (under `git rev-parse --git-path`, so linked worktrees work) and what they mean.
_OPERATIONS = (
    ("rebase-merge", "rebase"),
    ("rebase-apply", "rebase"),
    ("MERGE_HEAD", "merge"),
    ("CHERRY_PICK_HEAD", "cherry-pick"),
    ("REVERT_HEAD", "revert"),
)


class ResolveError(Exception):
    """Not something resolve can work on (no repository, unreadable Git state): exit 2."""


# ---------------------------------------------------------------------------------------------
# Git facts
# ---------------------------------------------------------------------------------------------


def _git(top: Path, args: Sequence[str], stdin: Optional[bytes] = None) -> bytes:
    output = engine.run_git(top, args, stdin)
    if output is None:
        raise ResolveError(f"`git {' '.join(args)}` failed in {top}")
    return output


def operation_in_progress(top: Path) -> Optional[str]:
    args = ["rev-parse"]
    for name, _operation in _OPERATIONS:
        args += ["--git-path", name]
    paths = os.fsdecode(_git(top, args)).splitlines()
    for (name, operation), relative in zip(_OPERATIONS, paths):
        path = top / relative
        if path.exists():
            if name == "rebase-apply" and (path / "applying").exists():
                return "am"
            return operation
    return None


GITLINK_MODE = "160000"


def unmerged_entries(top: Path) -> Tuple[Dict[str, Dict[int, str]], Set[str]]:
    """(path -> {stage: object id} for every unmerged vault path, the paths that are gitlinks
    (submodules) on some side: their ids name commits, often of another repository)."""
    entries: Dict[str, Dict[int, str]] = {}
    gitlinks: Set[str] = set()
    output = _git(top, ["ls-files", "-u", "-z", "--", engine.VAULT_DIR])
    for record in engine.split_nul(output):
        info, _tab, path = record.partition("\t")
        mode, blob, stage = info.split(" ")
        entries.setdefault(path, {})[int(stage)] = blob
        if mode == GITLINK_MODE:
            gitlinks.add(path)
    return entries, gitlinks


def read_blobs(top: Path, blobs: Sequence[str]) -> Dict[str, bytes]:
    """Blob contents in one `git cat-file --batch` call; a missing object, or one larger than
    the engine reads, is left out."""
    if not blobs:
        return {}
    output = _git(top, ["cat-file", "--batch"], "".join(f"{b}\n" for b in blobs).encode("ascii"))
    contents: Dict[str, bytes] = {}
    offset = 0
    for blob in blobs:
        header_end = output.index(b"\n", offset)
        header = output[offset:header_end].split(b" ")
        offset = header_end + 1
        if len(header) != 3:  # `<id> missing`
            continue
        size = int(header[2])
        if size <= engine.MAX_TEXT_BYTES:
            contents[blob] = output[offset:offset + size]
        offset += size + 1
    return contents


# ---------------------------------------------------------------------------------------------
# Describing one file
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Section:
    """One side of a conflict block: its label and its 1-based content lines (first > last when
    the side has no lines)."""

    label: str
    first: int
    last: int

    def describe(self, side: str) -> str:
        label = f" ({printable(self.label)})" if self.label else ""
        if self.first > self.last:
            return f"{side}{label} no lines"
        if self.first == self.last:
            return f"{side}{label} line {self.first}"
        return f"{side}{label} lines {self.first}-{self.last}"

    def as_json(self) -> Dict[str, Any]:
        return {"label": self.label, "firstLine": self.first, "lastLine": self.last}


@dataclasses.dataclass(frozen=True)
class Block:
    block: engine.ConflictBlock
    region: str
    keys: List[str]
    ours: Optional[Section]
    base: Optional[Section]
    theirs: Optional[Section]

    @property
    def line(self) -> int:
        return self.block.first_line

    @property
    def complete(self) -> bool:
        return None not in (self.block.start, self.block.separator, self.block.end)

    def describe(self) -> str:
        where = "the body" if self.region == "body" else "the frontmatter"
        if self.keys:
            where += " (" + ", ".join(f"`{key}`" for key in self.keys) + ")"
        if not self.complete:
            missing = [name for name, line in (("<<<<<<<", self.block.start),
                                               ("=======", self.block.separator),
                                               (">>>>>>>", self.block.end)) if line is None]
            return f"incomplete conflict block in {where}: no {' or '.join(missing)} line"
        last = self.block.end or self.line
        sides = [section.describe(side) for side, section in
                 (("ours", self.ours), ("base", self.base), ("theirs", self.theirs)) if section]
        return f"conflict in {where}, lines {self.line}-{last}: " + "; ".join(sides)

    def as_json(self) -> Dict[str, Any]:
        return {
            "firstLine": self.line,
            "lastLine": self.block.end,
            "complete": self.complete,
            "region": self.region,
            "keys": self.keys,
            "ours": self.ours.as_json() if self.ours else None,
            "base": self.base.as_json() if self.base else None,
            "theirs": self.theirs.as_json() if self.theirs else None,
        }


def _label(lines: List[str], line: Optional[int]) -> str:
    return lines[line - 1][8:] if line is not None else ""


def _section(lines: List[str], label_line: Optional[int], after: Optional[int],
             before: Optional[int]) -> Optional[Section]:
    """The side whose content lies strictly between marker lines `after` and `before`."""
    if after is None or before is None:
        return None
    return Section(_label(lines, label_line), after + 1, before - 1)


def _keys_in(lines: List[str], sections: Sequence[Optional[Section]]) -> List[str]:
    """Frontmatter keys written in any side of a block, read by the engine's parser."""
    # One parse of every side, one after the other: a key written on several sides is
    # listed once, in the order ours, base, theirs.
    chunk = [line for section in sections if section is not None
             for line in lines[section.first - 1:section.last]]
    return list(engine.parse_frontmatter("\n".join(["---", *chunk, "---", ""])).fields)


def describe_blocks(text: str, blocks: Sequence[engine.ConflictBlock],
                    meta: Optional[engine.PageMeta]) -> List[Block]:
    lines = text.split("\n")
    described = []
    for block in blocks:
        ours_end = block.base if block.base is not None else block.separator
        ours = _section(lines, block.start, block.start, ours_end)
        base = _section(lines, block.base, block.base, block.separator)
        theirs = _section(lines, block.end, block.separator, block.end)
        in_frontmatter = (meta is not None and meta.close_line is not None
                          and meta.open_line < block.first_line < meta.close_line)
        keys = _keys_in(lines, (ours, base, theirs)) if in_frontmatter else []
        described.append(Block(block, "frontmatter" if in_frontmatter else "body", keys,
                               ours, base, theirs))
    return described


def _presence(value: Optional[object], base: Optional[object]) -> str:
    if base is None:
        return "added"
    return "deleted" if value is None else "changed"


def describe_change(change: str, base: Optional[object], ours: Optional[object],
                    theirs: Optional[object]) -> str:
    if change == "ours":
        return f"{_presence(ours, base)} on ours only"
    if change == "theirs":
        return f"{_presence(theirs, base)} on theirs only"
    if change == "same":
        return f"{_presence(ours, base)} identically on both sides"
    if _presence(ours, base) == _presence(theirs, base):
        return f"{_presence(ours, base)} differently on both sides"
    return f"{_presence(ours, base)} on ours, {_presence(theirs, base)} on theirs"


@dataclasses.dataclass(frozen=True)
class KeyChange:
    key: str
    change: str
    description: str

    @property
    def name(self) -> str:
        return f"`{self.key}`" if self.key != HEAD else "comments before the first key"


def compare_sides(base: Optional[Page], ours: Page, theirs: Page,
                  ) -> Tuple[List[KeyChange], Optional[str]]:
    """Frontmatter keys that differ among base, ours and theirs, and how the body changed."""
    base_units = base.units if base is not None else {}
    order = list(dict.fromkeys([*ours.units, *theirs.units, *base_units]))
    changes = []
    for key in order:
        sides = (base_units.get(key), ours.units.get(key), theirs.units.get(key))
        change = classify(*sides)
        if change != "unchanged":
            changes.append(KeyChange(key, change, describe_change(change, *sides)))
    bodies = (base.body if base is not None else None, ours.body, theirs.body)
    body_change = classify(*bodies)
    body = None if body_change == "unchanged" else describe_change(body_change, *bodies)
    return changes, body


def describe_stages(stages: Sequence[int]) -> str:
    present = set(stages)
    if present == {1, 2, 3}:
        return "changed on both sides"
    if present == {2, 3}:
        return "added on both sides"
    if present == {1, 2}:
        return "changed on ours, deleted on theirs"
    if present == {1, 3}:
        return "deleted on ours, changed on theirs"
    return "only on " + ("ours" if 2 in present else "theirs" if 3 in present else "the base")


@dataclasses.dataclass(frozen=True)
class Dropped:
    """A change one side made that the resolved file does not hold: it keeps the base's or the
    other side's version there (what Git leaves when a merge driver could not run)."""

    side: str
    key: Optional[str]
    first: int
    last: int
    """Lines in that side's version (stage 2 or 3); for a key, its line there."""
    kept: str
    """`base` or the other side: whose version the file holds instead."""
    sample: str = ""

    def describe(self) -> str:
        whose = "our" if self.side == "ours" else "their"
        stage = 2 if self.side == "ours" else 3
        if self.key is not None:
            what = "comments before the first key" if self.key == HEAD else \
                f"`{printable(self.key)}`"
            place = f"{whose} change to {what} (line {self.first} of `:{stage}:`) is" \
                if self.first else f"{whose} deletion of {what} is"
        else:
            lines = f"line {self.first}" if self.first == self.last else \
                f"lines {self.first}-{self.last}"
            place = f"{whose} {lines} of `:{stage}:`" + (
                f" (`{self.sample}`)" if self.sample else "") + (
                " is" if self.first == self.last else " are")
        kept = {"base": "the base version", "ours": "our version", "theirs": "their version"}
        return f"{place} absent: the file keeps {kept[self.kept]}"

    def as_json(self) -> Dict[str, Any]:
        return {"side": self.side, "key": self.key, "firstLine": self.first,
                "lastLine": self.last, "kept": self.kept}


_SIDES = ((2, "ours", 3, "theirs"), (3, "theirs", 2, "ours"))
_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.M)
Hunk = Tuple[int, int, int, int]
"""(first base line, base line count, first side line, side line count), as `git diff -U0`."""


def diff_hunks(top: Path, base: Optional[str], side: str, side_text: str) -> List[Hunk]:
    """The changes from base to side, by Git's own diff of the two blobs (linear in practice,
    where a pure-Python diff is quadratic); no base (an add/add conflict) is one added hunk.
    External diff and textconv programs never run."""
    if base is None:
        return [(0, 0, 1, side_text.count("\n") + (not side_text.endswith("\n")))]
    output = _git(top, ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames",
                        "-U0", base, side])
    return [(int(a), int(b or 1), int(c), int(d or 1))
            for a, b, c, d in (match.groups() for match in _HUNK.finditer(output))]


def _written(lines: Sequence[str], first: int, count: int) -> List[str]:
    """The non-blank lines `first` .. `first + count - 1` (1-based): blank lines say nothing
    about which version a file holds."""
    return [line for line in lines[first - 1:first - 1 + count] if line.strip()]


def dropped_lines(top: Path, blobs: Dict[int, str], texts: Dict[int, str], current: str,
                  skip: Dict[int, int]) -> List[Dropped]:
    """Each side's changed lines that the resolved file reverted: none of the lines the change
    wrote is in the file, and the file still holds every line it replaced, or the lines the other
    side wrote in the same place. A reconciled rewrite (new text) is not a drop. Lines up to
    `skip[stage]` (a page's frontmatter, compared key by key) are left out.

    Linear in the sizes: hunks come sorted by base line, so the other side's hunks that overlap
    one are found by bisection, and presence is a set lookup per line."""
    present = set(current.replace("\r\n", "\n").split("\n"))
    lines = {stage: text.split("\n") for stage, text in texts.items()}
    base_lines = lines.get(1, [""])
    hunks = {stage: diff_hunks(top, blobs.get(1), blobs[stage], texts[stage]) for stage in (2, 3)}
    dropped = []
    # Whether the file holds all an other-side hunk wrote, judged once per hunk: one large hunk
    # overlaps many small ones, and judging it again for each would be quadratic.
    held: Dict[Tuple[int, int], bool] = {}
    for stage, side, other_stage, other in _SIDES:
        others = hunks[other_stage]
        starts = [hunk[0] for hunk in others]
        for start, count, first, length in hunks[stage]:
            if first + length - 1 <= skip.get(stage, 0):
                continue
            wrote = _written(lines[stage], first, length)
            replaced = _written(base_lines, start, count)
            if (not wrote and not replaced) or any(line in present for line in wrote):
                continue
            kept = "base" if replaced and all(line in present for line in replaced) else None
            # The other side's hunks that start before this one ends, walked back while they
            # still reach into it (disjoint and sorted, so each overlap is met once per side).
            index = bisect.bisect_right(starts, start + count) - 1
            while kept is None and index >= 0 and sum(others[index][:2]) >= start:
                if (other_stage, index) not in held:
                    _o_start, _o_count, o_first, o_length = others[index]
                    theirs = _written(lines[other_stage], o_first, o_length)
                    held[other_stage, index] = bool(theirs) and all(
                        line in present for line in theirs)
                if held[other_stage, index]:
                    kept = other
                index -= 1
            if kept is not None:
                sample = printable(wrote[0][:60]) if wrote else ""
                dropped.append(Dropped(side, None, first, max(first, first + length - 1), kept,
                                       sample))
    return dropped


def dropped_keys(pages: Dict[int, Optional[Page]], current: Page,
                 texts: Dict[int, str]) -> List[Dropped]:
    """Frontmatter keys a side changed whose resolved value is the base's or the other side's."""
    base = pages.get(1)
    base_units = base.units if base is not None else {}
    # Where each key starts on each side: the first line of its unit, found once per side.
    starts = {stage: {line: number for number, line in reversed(list(enumerate(
        texts[stage].split("\n"), 1)))} for stage in (2, 3)}
    dropped = []
    for stage, side, other_stage, other in _SIDES:
        page, other_page = pages[stage], pages[other_stage]
        if page is None or other_page is None:
            continue
        for key in dict.fromkeys([*base_units, *page.units]):
            mine, before = page.units.get(key), base_units.get(key)
            now = current.units.get(key)
            if mine == before or now == mine:
                continue
            kept = "base" if now == before else other if now == other_page.units.get(key) \
                else None
            if kept is not None:
                line = starts[stage].get(mine[0], 0) if mine else 0
                dropped.append(Dropped(side, key, line, line, kept))
    return dropped


def _kind(path: str) -> str:
    kind = engine.classify_vault_path(path)
    return kind if kind in ("page", "daily") else "file"


@dataclasses.dataclass
class FileReport:
    path: str
    document: Optional[engine.Document]
    stages: List[int]
    exists: bool = True
    blocks: List[Block] = dataclasses.field(default_factory=list)
    """The first `MAX_PER_FILE` conflict blocks; `more_blocks` counts the rest."""
    bare: List[int] = dataclasses.field(default_factory=list)
    keys: List[KeyChange] = dataclasses.field(default_factory=list)
    body: Optional[str] = None
    notes: List[str] = dataclasses.field(default_factory=list)
    more_blocks: int = 0
    more_bare: int = 0
    in_blocks: Covered = dataclasses.field(default_factory=lambda: Covered(()))
    """The lines of every conflict block, listed or not."""
    dropped: List[Dropped] = dataclasses.field(default_factory=list)
    accepted: bool = False
    """`--accept-dropped` named this file: its dropped changes are intended."""

    def add_markers(self, text: str, markers: Sequence[Tuple[int, str]],
                    meta: Optional[engine.PageMeta]) -> None:
        """Describe the conflict blocks and bare separators, at most `MAX_PER_FILE` of each: a
        page of 900,000 marker lines must not print (or hold) 900,000 descriptions."""
        blocks, bare = engine.conflict_blocks(markers)
        self.in_blocks = Covered((block.first_line, block.end or sys.maxsize) for block in blocks)
        self.blocks = describe_blocks(text, blocks[:MAX_PER_FILE], meta)
        self.bare = bare[:MAX_PER_FILE]
        self.more_blocks = max(0, len(blocks) - MAX_PER_FILE)
        self.more_bare = max(0, len(bare) - MAX_PER_FILE)

    @property
    def kind(self) -> str:
        return _kind(self.path)


    @property
    def all_problems(self) -> List[engine.Problem]:
        """Page problems; other vault files only need to be free of markers."""
        if self.document is None or self.kind != "page":
            return []
        return self.document.page_problems

    @property
    def problems(self) -> List[engine.Problem]:
        """Problems worth showing: the markers themselves, and what they break inside their
        blocks, are already described by `blocks` and `bare`."""
        return [problem for problem in self.all_problems if problem.kind != "conflict-marker"
                and problem.line not in self.in_blocks]

    @property
    def clean(self) -> bool:
        markers = self.document.markers if self.document is not None else []
        return not engine.has_protocol_conflict(markers) and not self.all_problems \
            and (self.accepted or not self.dropped)

    @property
    def shown(self) -> str:
        """The path as printed: a newline or a byte that is not UTF-8 must not break a line."""
        return printable(self.path)

    @property
    def stage_command(self) -> Optional[str]:
        if not self.stages or not self.clean:
            return None
        verb = "add" if self.exists else "rm"
        return f"git {verb} -- {command_path(self.path)}"

    def lines(self) -> List[str]:
        """Concise output: `path:line:col: message` where there is a place, else `path: ...`."""
        out = []
        summary = []
        if self.stages:
            summary.append(f"unmerged, {describe_stages(self.stages)}")
        if not self.exists:
            summary.append("missing from the work tree")
        summary += [f"frontmatter {change.name} {change.description}"
                    for change in self.keys[:MAX_PER_FILE]]
        if len(self.keys) > MAX_PER_FILE:
            summary.append(f"{len(self.keys) - MAX_PER_FILE} more frontmatter keys changed")
        if self.body:
            summary.append(f"body {self.body}")
        summary += self.notes
        if summary:
            out.append(f"{self.shown}: " + "; ".join(summary))
        for block in self.blocks:
            out.append(f"{self.shown}:{block.line}:1: {block.describe()}")
        if self.more_blocks:
            out.append(f"{self.shown}: and {self.more_blocks} more conflict blocks after line "
                       f"{self.blocks[-1].line}")
        for line in self.bare:
            out.append(f"{self.shown}:{line}:1: bare `=======` line outside a conflict block "
                       "(a setext heading underline? protocol engines read it as a marker)")
        if self.more_bare:
            out.append(f"{self.shown}: and {self.more_bare} more bare `=======` lines after "
                       f"line {self.bare[-1]}")
        for drop in self.dropped[:MAX_PER_FILE]:
            out.append(f"{self.shown}: {drop.describe()}"
                       + (" (accepted)" if self.accepted else ""))
        if len(self.dropped) > MAX_PER_FILE:
            out.append(f"{self.shown}: and {len(self.dropped) - MAX_PER_FILE} more dropped "
                       "changes")
        problems = self.problems
        for problem in problems[:MAX_PER_FILE]:
            out.append(f"{self.shown}:{problem.line}:{problem.col}: {problem.message} "
                       f"({problem.kind})")
        if len(problems) > MAX_PER_FILE:
            out.append(f"{self.shown}: and {len(problems) - MAX_PER_FILE} more problems after "
                       f"line {problems[MAX_PER_FILE - 1].line}")
        return out

    def as_json(self) -> Dict[str, Any]:
        problems = self.problems
        return {
            "path": self.path,
            "kind": self.kind,
            "exists": self.exists,
            "unmerged": bool(self.stages),
            "stages": self.stages,
            "sides": describe_stages(self.stages) if self.stages else None,
            "clean": self.clean,
            "blocks": [block.as_json() for block in self.blocks],
            "moreBlocks": self.more_blocks,
            "bareSeparators": self.bare,
            "moreBareSeparators": self.more_bare,
            "frontmatter": [{"key": change.key, "change": change.change,
                             "description": change.description}
                            for change in self.keys[:MAX_PER_FILE]],
            "moreFrontmatter": max(0, len(self.keys) - MAX_PER_FILE),
            "body": self.body,
            "notes": self.notes,
            "dropped": [drop.as_json() for drop in self.dropped[:MAX_PER_FILE]],
            "acceptedDropped": self.accepted,
            "problems": [{"line": p.line, "col": p.col, "kind": p.kind, "message": p.message}
                         for p in problems[:MAX_PER_FILE]],
            "moreProblems": max(0, len(problems) - MAX_PER_FILE),
        }


def command_path(path: str) -> str:
    """`path` quoted for a POSIX shell; a name with control characters or bytes that are not
    UTF-8 is spelled byte by byte in bash's `$'...'` instead, so the command stays one line."""
    if printable(path) == path:
        return engine.shell_quote(path)
    return "$'" + "".join(f"\\x{byte:02x}" if byte < 0x20 or byte >= 0x7F or byte in b"'\\"
                          else chr(byte) for byte in os.fsencode(path)) + "'"


def _text_of(data: Optional[bytes]) -> Optional[str]:
    if data is None:
        return None
    text, _problem = engine.decode_text(data)
    return text


def _compare_stages(report: FileReport, stage_texts: Dict[int, Optional[str]]) -> None:
    ours_text, theirs_text = stage_texts.get(2), stage_texts.get(3)
    if ours_text is None or theirs_text is None:
        return
    ours, theirs = split_page(ours_text), split_page(theirs_text)
    base_text = stage_texts.get(1)
    base = split_page(base_text) if base_text is not None else None
    unreadable = [side for side, page, text in (("base", base, base_text), ("ours", ours, ours_text),
                                                ("theirs", theirs, theirs_text))
                  if text is not None and page is None]
    if ours is None or theirs is None or unreadable:
        report.notes.append("frontmatter cannot be compared: unreadable on "
                            + " and ".join(unreadable))
        return
    report.keys, report.body = compare_sides(base, ours, theirs)


def _find_dropped(top: Path, report: FileReport, blobs: Dict[int, str],
                  contents: Dict[int, Optional[str]]) -> None:
    """Fill `report.dropped` for a conflicted text file that no longer has markers."""
    document = report.document
    if 2 not in blobs or 3 not in blobs or document is None or document.text is None \
            or document.markers:
        return
    texts = {stage: text for stage, text in contents.items() if text is not None}
    if 2 not in texts or 3 not in texts or (1 in blobs and 1 not in texts):
        return
    skip: Dict[int, int] = {}
    if report.kind == "page":
        pages = {stage: split_page(text) for stage, text in texts.items()}
        current = split_page(document.text)
        if current is not None:
            report.dropped += dropped_keys(pages, current, texts)
        for stage, text in texts.items():
            meta = engine.parse_frontmatter(text)
            skip[stage] = meta.close_line or 0
    report.dropped += dropped_lines(top, blobs, texts, document.text, skip)


class _LeanReader(engine.FileCache):
    """The whole-vault scan of `resolve`: every file read from the disk (the local cache is
    never opened: a gate treats the repository as hostile), keeping the text and frontmatter
    fields of a file only when `collect` may report it (markers, an invalid page, unmerged)
    or the health report reads it. At 100,000 pages the texts were 150 MB."""

    def __init__(self, workspace: Path, unmerged: FrozenSet[str]) -> None:
        super().__init__(workspace)
        self.opened = True  # nothing to read: the scan must not open it
        self.unmerged = unmerged

    def load(self, entry: os.DirEntry[str], relative: str, kind: str,
             limit: int = engine.MAX_TEXT_BYTES) -> Tuple[engine.Document, Optional[os.stat_result]]:
        document, info = engine._load_document(entry.path, relative, kind == "page", limit)
        if not (document.text is None or document.markers or relative in self.unmerged
                or relative in engine._UNCACHED
                or (document.meta is not None and document.page_problems)):
            engine._settle(document, kind)  # what health reads of it, while the text is here
            engine._let_go(document)
        return document, info


def collect(top: Path, scan: engine.Scan, accepted: FrozenSet[str] = frozenset(),
            unmerged_found: Optional[Tuple[Dict[str, Dict[int, str]], Set[str]]] = None,
            ) -> List[FileReport]:
    unmerged, gitlinks = unmerged_found or unmerged_entries(top)
    documents = {document.path: document for document in scan.documents()}
    reports: Dict[str, FileReport] = {}
    for path, document in documents.items():
        if document.markers or (document.meta is not None and document.page_problems) or \
                path in unmerged:
            reports[path] = FileReport(path, document, sorted(unmerged.get(path, {})))
    for path, stages in unmerged.items():
        if path not in reports:
            # Unmerged files the scan does not read: assets, raw sources, deleted files.
            exists = os.path.lexists(top / path)
            unscanned = engine.read_document(top, path, page=False) if exists else None
            report = FileReport(path, unscanned, sorted(stages), exists)
            if path in gitlinks:
                report.notes.append("a submodule (gitlink): check out the commit to keep in "
                                    f"the submodule, then `git add -- {command_path(path)}`")
            elif unscanned is not None and unscanned.text is None:
                report.notes.append("not text, so Git kept our version; take theirs with "
                                    f"`git checkout --theirs -- {command_path(path)}`")
            reports[path] = report
    blobs = read_blobs(top, sorted({blob for path, stages in unmerged.items()
                                    if path not in gitlinks for blob in stages.values()}))
    for path, report in reports.items():
        read = report.document
        if read is not None and read.text is not None:
            report.add_markers(read.text, read.markers, read.meta)
        if path in unmerged and path not in gitlinks:
            contents = {stage: _text_of(blobs.get(blob))
                        for stage, blob in unmerged[path].items()}
            if report.kind == "page":
                _compare_stages(report, contents)
            _find_dropped(top, report, unmerged[path], contents)
            report.accepted = path in accepted
    return [reports[path] for path in sorted(reports)]


# ---------------------------------------------------------------------------------------------
# Hydrate and output
# ---------------------------------------------------------------------------------------------


def _headline(operation: Optional[str], reports: Sequence[FileReport]) -> str:
    doing = f"{operation} in progress" if operation else \
        "no merge, rebase, cherry-pick or revert in progress"
    dirty = sum(1 for report in reports if not report.clean)
    if dirty:
        return f"{doing}; {dirty} vault file{'s' if dirty != 1 else ''} to resolve."
    if any(report.stages for report in reports):
        return f"{doing}; every conflicted vault file is resolved."
    return f"{doing}; no vault conflicts."


_ADVICE = ("Reconcile each block, delete every marker line, keep valid frontmatter and an accurate "
           "summary, then run `echoes-lint resolve --check`.")
_DROPPED_ADVICE = ("Bring each absent change back (`git show :2:PATH` is ours, `git show :3:PATH` "
                   "theirs, `:1:` the base); if dropping it is intended, run `echoes-lint "
                   "resolve --check --accept-dropped PATH`.")
_CONTINUE = {"merge": "git merge --continue", "rebase": "git rebase --continue",
             "cherry-pick": "git cherry-pick --continue", "revert": "git revert --continue",
             "am": "git am --continue"}


def sides_explained(top: Path, operation: Optional[str]) -> Optional[str]:
    """Which side is "ours" during a rebase, where it is the other way round from a merge."""
    if operation != "rebase":
        return None
    state = {}
    for name in ("onto", "stopped-sha", "head-name"):
        relative = engine.run_git(top, ["rev-parse", "--git-path", f"rebase-merge/{name}"])
        try:
            state[name] = (top / os.fsdecode((relative or b"").strip())).read_text(
                encoding="utf-8", errors="replace").strip() if relative else ""
        except OSError:
            state[name] = ""
    onto = f" ({printable(state['onto'][:7])})" if state["onto"] else ""
    branch = state["head-name"].removeprefix("refs/heads/") if state["head-name"] else ""
    commit = f" ({printable(state['stopped-sha'][:7])})" if state["stopped-sha"] else ""
    mine = f"your commit from {printable(branch)}" if branch else "your commit"
    return (f"During a rebase the sides are swapped: \"ours\" (HEAD) is the branch you rebase "
            f"onto{onto} with the commits replayed so far, \"theirs\" is {mine} being replayed"
            f"{commit}.")


def other_conflicts(top: Path) -> int:
    """Unmerged paths outside the vault: Git will not continue while they remain."""
    output = _git(top, ["ls-files", "-u", "-z", "--", ".", f":(exclude){engine.VAULT_DIR}"])
    return len({record.partition("\t")[2] for record in engine.split_nul(output)})


def next_step(operation: Optional[str], reports: Sequence[FileReport],
              others: int) -> Optional[str]:
    """The command that finishes the operation once every vault file is resolved."""
    if operation not in _CONTINUE or not all(report.clean for report in reports):
        return None
    if others:
        return (f"Then resolve the {others} other conflicted file{'s' if others != 1 else ''} "
                f"outside the vault and run: {_CONTINUE[operation]}")
    return f"Then continue with: {_CONTINUE[operation]}"


def render_concise(operation: Optional[str], reports: Sequence[FileReport], check: bool,
                   card: Optional[str], note: Optional[str], sides: Optional[str] = None,
                   then: Optional[str] = None) -> str:
    out = [_headline(operation, reports)]
    if sides:
        out.append(sides)
    for report in reports:
        out += report.lines()
    if any(not report.clean and (not report.dropped or report.blocks or report.problems)
           for report in reports):
        out.append(_ADVICE)
    if any(report.dropped and not report.accepted for report in reports):
        out.append(_DROPPED_ADVICE)
    commands = [report.stage_command for report in reports if report.stage_command]
    if note:
        out.append(note)
    text = "\n".join(out) + "\n"
    if card:
        text += "\n" + card
    if commands:
        text += "\nResolved; stage with:\n" + "".join(f"  {command}\n" for command in commands)
    elif check and not any(report.stages for report in reports):
        text += "\nNothing to stage.\n"
    if then:
        text += then + "\n"
    return text


def render_json(operation: Optional[str], reports: Sequence[FileReport], check: bool,
                hydrate_state: Optional[Dict[str, Any]], integrity: Optional[str],
                continue_command: Optional[str] = None) -> str:
    document = {
        "ok": all(report.clean for report in reports),
        "operation": operation,
        "continueCommand": continue_command,
        "check": check,
        "files": [report.as_json() for report in reports],
        "stageCommands": [report.stage_command for report in reports if report.stage_command],
        "hydrate": hydrate_state,
        "integrity": integrity,
    }
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="echoes-lint resolve",
        description="List conflicted EchoesVault files during a merge, rebase, cherry-pick or "
                    "revert; with --check, verify, hydrate and print the status card.")
    parser.add_argument("--workspace", default=None, help="repository (default: current directory)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 while markers or invalid frontmatter remain; then hydrate")
    parser.add_argument("--output-format", choices=("concise", "json"), default="concise")
    parser.add_argument("--accept-dropped", action="append", default=[], metavar="PATH",
                        help="PATH drops a side's change on purpose (repeatable)")
    return parser


def run(top: Path, check: bool, output_format: str, accepted: Sequence[str] = ()) -> int:
    operation = operation_in_progress(top)
    unmerged = unmerged_entries(top)
    scan = engine.scan_workspace(top, cache=_LeanReader(top, frozenset(unmerged[0])))
    reports = collect(top, scan, frozenset(_relative(top, path) for path in accepted), unmerged)
    clean = all(report.clean for report in reports)
    card = note = integrity = None
    hydrate_state: Optional[Dict[str, Any]] = None
    status = 0
    if check and not clean:
        status = 1
    elif check:
        initialised = scan.marker_valid and scan.runtime_source is not None
        if initialised:  # let go before hydrate walks the vault itself; scanned again after
            del scan
        ran, error, skipped = hydrate(top) if initialised else (False, None, None)
        hydrate_state = {"ran": ran, "error": error}
        if skipped:
            hydrate_state["skipped"] = skipped
        if error:
            note, status = error, 2
        elif not initialised:
            note = "Not an initialised vault: hydrate skipped."
        else:
            note = skipped
        if initialised:  # the vault as hydrate left it
            scan = engine.scan_workspace(top, cache=_LeanReader(top, frozenset()))
        report = engine.inspect_report(scan)
        card, integrity = engine.status_card(report, PROG), report["health"]["integrity"]
    then = next_step(operation, reports, other_conflicts(top)) if operation else None
    if output_format == "json":
        command = _CONTINUE[operation] if then and operation else None
        output = render_json(operation, reports, check, hydrate_state, integrity, command)
    else:
        output = render_concise(operation, reports, check, card, note,
                                sides_explained(top, operation), then)
    # A file name that is not UTF-8 is held as lone surrogates: JSON gets its `\udcXX` escape,
    # whatever the locale's encoding.
    sys.stdout.buffer.write(output.encode("utf-8", "backslashreplace"))
    sys.stdout.flush()
    return status


def _relative(top: Path, path: str) -> str:
    """A path as given (relative to the current directory, absolute, or relative to the
    repository when the current directory is outside it) as Git names it."""
    absolute = os.path.normpath(os.path.join(os.getcwd(), path))
    relative = os.path.relpath(absolute, top)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return Path(os.path.normpath(path)).as_posix()  # repository-relative, from elsewhere
    return Path(relative).as_posix()


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    try:
        top = engine.resolve_workspace(args.workspace)
        if engine.run_git(top, ["rev-parse", "--show-toplevel"]) is None:
            raise ResolveError(f"not inside a Git work tree: {top}")
        return run(top, args.check, args.output_format, args.accept_dropped)
    except (ResolveError, engine.VaultError) as exc:
        sys.stderr.write(f"echoes-lint resolve: {exc}\n")
        return 2
