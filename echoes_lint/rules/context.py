"""What every rule sees: one engine `Scan` plus the Git snapshot around it.

Rules are pure functions of a `Context`. Paths inside the scan are relative to the engine workspace
(the folder that holds `EchoesVault/`); findings carry paths relative to the repository root, so
`prefix` (for example `docs/`) is prepended by `finding()`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Callable, Optional, TypeVar, Union

from echoes_lint import engine
from echoes_lint.findings import RULES, Finding, Severity

VAULT_PREFIX = f"{engine.VAULT_DIR}/"
INDEX_PATH = f"{engine.VAULT_DIR}/{engine.INDEX_FILE}"
# What a Git listing of the vault and the local-only paths can hold outside the vault.
OUTSIDE_VAULT = frozenset(path for path in (engine.VAULT_DIR, *engine.LOCAL_ONLY_PATHS)
                          if not path.startswith(VAULT_PREFIX))
# Findings of one code in one file beyond this many are summed up in one last finding: a page of
# 900,000 `=======` lines must not print (or hold) 900,000 findings.
MAX_PER_FILE = 100
T = TypeVar("T")


@dataclass(frozen=True)
class More:
    """`count` more findings like `first`, from a rule that can count them without building
    each one (see `rules.capped`)."""

    first: Finding
    count: int


Yielded = Union[Finding, More]


def limited(items: Sequence[T], make: Callable[[T], Finding]) -> Iterator[Yielded]:
    """A finding for each of the first `MAX_PER_FILE` items, then one `More` for the rest."""
    for item in items[:MAX_PER_FILE]:
        yield make(item)
    if len(items) > MAX_PER_FILE:
        yield More(make(items[MAX_PER_FILE]), len(items) - MAX_PER_FILE)


@dataclass
class Context:
    scan: engine.Scan
    prefix: str = ""
    """The engine workspace relative to the repository root: `""` or `docs/`."""
    in_git: bool = False
    index: frozenset[str] = frozenset()
    """Workspace-relative paths in Git's index (tracked or staged) under the vault and the
    local-only paths (the set of `scan.git.tracked`). Staged deletions are absent, staged
    additions present."""
    passed: Optional[frozenset[str]] = None
    """Vault files named on the command line or staged (workspace-relative); None when the whole
    vault is checked."""
    load_changes: Callable[[], Mapping[str, str]] = dict
    """Staged status letter (`A`, `M`, `D`, `T`) by path, fetched only if a rule asks."""
    gitlinks: frozenset[str] = frozenset()
    """Index entries that are gitlinks (submodules), workspace-relative."""
    _changes: Optional[Mapping[str, str]] = field(default=None, repr=False)
    _vault_paths: Optional[frozenset[str]] = field(default=None, repr=False)

    def path(self, relative: str) -> str:
        """A workspace-relative path as findings and fix commands show it."""
        return self.prefix + relative

    def finding(self, code: str, relative: str, line: int, col: int, message: str,
                fix: Optional[str] = None, severity: Optional[Severity] = None) -> Finding:
        return Finding(self.path(relative), line, col, code, message,
                       severity or RULES[code].severity, fix)

    def documents(self) -> Iterator[engine.Document]:
        """Every vault Markdown file read by the scan, except the generated index."""
        return (document for document in self.scan.documents() if document.path != INDEX_PATH)

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
        # Git's listing holds the paths of the index (its set): a tuple joins faster than a set.
        return "".join(self.scan.git.tracked if paths is self.index else paths).isascii()

    def vault_paths(self) -> frozenset[str]:
        """Every vault path this check knows to exist: the Git index, the files passed, and (for
        a whole-vault check) what the scan found on disk."""
        if self._vault_paths is None:
            if (self.passed is not None and not self.gitlinks and self.passed <= self.index
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
            else:
                paths = {path for path in self.index if path.startswith(VAULT_PREFIX)}
            paths.update(self.passed or ())
            if self.passed is None:
                paths.update(self.scan.files)
                paths.update(path for path in self.scan.symlinks if path.startswith(VAULT_PREFIX))
            if self.gitlinks:  # a submodule's files belong to another repository
                inside = tuple(link + "/" for link in self.gitlinks)
                paths = {path for path in paths
                         if path not in self.gitlinks and not path.startswith(inside)}
            self._vault_paths = frozenset(paths)
        return self._vault_paths
