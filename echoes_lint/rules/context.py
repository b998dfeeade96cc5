"""What every rule sees: one engine `Scan` plus the Git snapshot around it.

Rules are pure functions of a `Context`. Paths inside the scan are relative to the engine workspace
(the folder that holds `EchoesVault/`); findings carry paths relative to the repository root, so
`prefix` (for example `docs/`) is prepended by `finding()`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet

from echoes_lint import engine, gitindex
from echoes_lint.engine import _Record
from echoes_lint.findings import RULES, Finding, Record, Severity

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    from typing import Callable, Optional, TypeVar, Union

    T = TypeVar("T")

VAULT_PREFIX = f"{engine.VAULT_DIR}/"
INDEX_PATH = f"{engine.VAULT_DIR}/{engine.INDEX_FILE}"
# What a Git listing of the vault and the local-only paths can hold outside the vault.
OUTSIDE_VAULT = frozenset(path for path in (engine.VAULT_DIR, *engine.LOCAL_ONLY_PATHS)
                          if not path.startswith(VAULT_PREFIX))
# Findings of one code in one file beyond this many are summed up in one last finding: a page of
# 900,000 `=======` lines must not print (or hold) 900,000 findings.
MAX_PER_FILE = 100


class More(Record):
    """`count` more findings like `first`, from a rule that can count them without building
    each one (see `rules.capped`)."""

    __slots__ = _FIELDS = ("first", "count")

    def __init__(self, first: Finding, count: int) -> None:
        self.first, self.count = first, count


if TYPE_CHECKING:
    Yielded = Union[Finding, More]


def limited(items: Sequence[T], make: Callable[[T], Finding]) -> Iterator[Yielded]:
    """A finding for each of the first `MAX_PER_FILE` items, then one `More` for the rest."""
    for item in items[:MAX_PER_FILE]:
        yield make(item)
    if len(items) > MAX_PER_FILE:
        yield More(make(items[MAX_PER_FILE]), len(items) - MAX_PER_FILE)


class GitIndex(AbstractSet[str]):
    """The paths of a listing of Git's index (`gitindex.output`), as a set. Of the common index
    (`gitindex.Written`: Git's output itself, ASCII, sorted by Git) a path is found by a binary
    search of that output (undecoded, as bytes, until a rule needs its text), and no path
    becomes a string of its own unless a rule goes through them all: the one-file hook at
    100,000 pages makes none, and decodes nothing."""

    def __init__(self, listed: gitindex.Listed) -> None:
        self._text: Optional[str] = None
        self._data: Optional[gitindex.Buffer] = None  # the common index, undecoded
        self._capitals: Optional[gitindex.Capitals] = None  # its capitals
        self._survey: Optional[tuple[Optional[gitindex.Survey]]] = None
        self._paths: Optional[tuple[str, ...]] = None
        self.gitlinks: frozenset[str] = frozenset()
        if isinstance(listed, str):
            self._text = listed
        elif isinstance(listed, tuple):
            self._paths, self.gitlinks = listed
        else:
            self._data, self._capitals = listed.data, listed.capitals
        self._set: Optional[frozenset[str]] = None

    @property
    def text(self) -> Optional[str]:
        """Git's output (`<path>NUL` each) when it is the common index."""
        if self._text is None and self._data is not None:
            self._text = gitindex.text_of(self._data)
        return self._text

    def part(self, start: int, end: int) -> str:
        """`text[start:end]`, of the common index, without a decode of the rest."""
        if self._text is None and self._data is not None:
            return gitindex.text_of(self._data[start:end])
        return (self._text or "")[start:end]

    def survey(self) -> Optional[gitindex.Survey]:
        """`gitindex.survey` of the common index (of its bytes while they are not decoded)."""
        if self._survey is None:
            if self._data is not None:
                self._survey = (gitindex.survey(self._data, self._capitals),)
            else:
                self._survey = (None if self._text is None else gitindex.survey(self._text),)
        return self._survey[0]

    @property
    def listed(self) -> tuple[str, ...]:
        """The paths in Git's order (sorted; an unmerged path once per stage)."""
        if self._paths is None:
            self._paths = tuple(gitindex.fields(self.text or ""))
        return self._paths

    def frozen(self) -> frozenset[str]:
        if self._set is None:
            self._set = frozenset(self.listed)
        return self._set

    def __contains__(self, item: object) -> bool:
        if not isinstance(item, str) or "\0" in item or (self._text is None
                                                          and self._data is None):
            return item in self.frozen()
        if self._text is None and self._data is not None:
            # Searched undecoded, as bytes: the listing is ASCII, so a path beyond is not in it.
            data = self._data
            if not item.isascii():
                return False
            key = f"{item}\0".encode("ascii")
            start = gitindex.at(data, key[:-1])
            return data[start:start + len(key)] == key
        text = self.text or ""
        return text.startswith(f"{item}\0", gitindex.at(text, item))

    def __iter__(self) -> Iterator[str]:
        return iter(self.frozen())

    def __len__(self) -> int:
        return len(self.frozen())

    def ascii(self) -> bool:
        return self._data is not None or self._text is not None or "".join(self.listed).isascii()


class Context(_Record):
    """`prefix`: the engine workspace relative to the repository root, `""` or `docs/`.
    `index`: workspace-relative paths in Git's index (tracked or staged) under the vault and
    the local-only paths: the set of `scan.git.tracked` for a whole-vault check, a `GitIndex`
    for checks of named or staged files; staged deletions are absent, staged additions
    present. `passed`: vault files named on the command line or staged (workspace-relative),
    None when the whole vault is checked. `load_changes`: staged status letter (`A`, `M`, `D`,
    `T`) by path, fetched only if a rule asks. `gitlinks`: index entries that are gitlinks
    (submodules), workspace-relative."""

    _FIELDS = ("scan", "prefix", "in_git", "index", "passed", "load_changes", "gitlinks")
    # What is worked out from the fields is neither compared nor shown.
    __slots__ = (*_FIELDS, "_changes", "_vault_paths")

    def __init__(self, scan: engine.Scan, prefix: str = "", in_git: bool = False,
                 index: AbstractSet[str] = frozenset(), passed: Optional[frozenset[str]] = None,
                 load_changes: Callable[[], Mapping[str, str]] = dict,
                 gitlinks: frozenset[str] = frozenset()) -> None:
        self.scan, self.prefix, self.in_git, self.index, self.passed = (
            scan, prefix, in_git, index, passed)
        self.load_changes, self.gitlinks = load_changes, gitlinks
        self._changes: Optional[Mapping[str, str]] = None
        self._vault_paths: Optional[AbstractSet[str]] = None

    def path(self, relative: str) -> str:
        """A workspace-relative path as findings and fix commands show it."""
        return self.prefix + relative

    def finding(self, code: str, relative: str, line: int, col: int, message: str,
                fix: Optional[str] = None, severity: Optional[Severity] = None) -> Finding:
        return Finding(self.path(relative), line, col, code, message,
                       severity or RULES[code].severity, fix)

    def documents(self) -> Iterator[engine.Document]:
        """Every vault Markdown file read by the scan, except the generated index."""
        scan = self.scan
        # Only other Markdown can be the index: the pages and daily files pass in C.
        return itertools.chain(scan.pages, scan.daily, (
            document for document in scan.other_markdown if document.path != INDEX_PATH))

    def staged_changes(self) -> Mapping[str, str]:
        if self._changes is None:
            self._changes = self.load_changes() if self.in_git else {}
        return self._changes

    def is_new(self, relative: str) -> bool:
        """Not in the last commit: untracked, ignored, staged as added, or outside Git."""
        return (not self.in_git or relative not in self.index
                or self.staged_changes().get(relative) == "A")

    def vault_ascii(self) -> bool:
        """Whether every path of `vault_paths()` is ASCII, checked in one pass in C."""
        paths = self.vault_paths()
        return paths.ascii() if isinstance(paths, GitIndex) else "".join(paths).isascii()

    def vault_paths(self) -> AbstractSet[str]:
        """Every vault path this check knows to exist: the Git index, the files passed, and (for
        a whole-vault check) what the scan found on disk."""
        if self._vault_paths is None:
            if (self.passed is not None and not self.gitlinks
                    and all(path in self.index for path in self.passed)
                    and self.index.isdisjoint(OUTSIDE_VAULT)):
                # The common hook: every path named is in Git's index, which lists the vault
                # only. The index itself, not a copy of 120,000 paths.
                self._vault_paths = self.index
                return self.index
            if self.passed is not None:
                # Checks of named or staged files list Git's index over the vault and the
                # local-only paths only: a copy is cheaper than a test of every path.
                paths = set(self.index)
                paths.difference_update(OUTSIDE_VAULT)
                paths.update(self.passed)
            else:
                # The files on disk, and of Git's paths only those not among them (in C: the
                # deleted, the gitlinks and the local-only paths) are tested one by one.
                paths = set(self.scan.files)
                paths.update(path for path in frozenset(self.index).difference(self.scan.files)
                             if path.startswith(VAULT_PREFIX))
                paths.update(path for path in self.scan.symlinks if path.startswith(VAULT_PREFIX))
            if self.gitlinks:  # a submodule's files belong to another repository
                inside = tuple(link + "/" for link in self.gitlinks)
                paths = {path for path in paths
                         if path not in self.gitlinks and not path.startswith(inside)}
            self._vault_paths = frozenset(paths)
        return self._vault_paths
