"""EV050 broken-wikilink: `[[page]]`, `[[page|alias]]`, `[[page#heading]]` and `![[asset]]` that
point at nothing. Fenced code blocks and inline code spans are skipped, as is frontmatter.

A target resolves like it does in Obsidian: by file name anywhere in the vault (a page name
through the engine's page-name rules, compared after NFC and case folding), or by a path suffix
when it contains `/`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from collections.abc import Set as AbstractSet

from echoes_lint import engine
from echoes_lint.engine import _regex
from echoes_lint.findings import Finding
from echoes_lint.rules.context import VAULT_PREFIX, Context, limited

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    from typing import Optional

    from echoes_lint.rules.context import Yielded

CODES = frozenset({"EV050"})
PAGES_PREFIX = f"{VAULT_PREFIX}pages/"

# A literal `[[` prefix lets the regex engine skip ahead; a `!` before it makes an embed.
_LINK = re.compile(r"\[\[([^\[\]\n]*)\]\]")
# Only a page with code needs these: compiled on first use (`engine._regex`).
_FENCE = _regex(r" {0,3}(`{3,}|~{3,})(.*)")
_TICKS = _regex(r"`+")


def mask_inline_code(line: str) -> str:
    """The line with every inline code span blanked out (columns are kept)."""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(line)]
    # The next run of the same length, for each run: one backward pass keeps the pairing
    # linear however many runs stay unmatched.
    following: list[Optional[int]] = [None] * len(runs)
    latest: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        length = runs[index][1] - runs[index][0]
        following[index] = latest.get(length)
        latest[length] = index
    pieces = []
    kept = 0
    index = 0
    while index < len(runs):
        closing = following[index]
        if closing is None:
            index += 1  # An unmatched run is literal text.
            continue
        start, close_end = runs[index][0], runs[closing][1]
        pieces += [line[kept:start], " " * (close_end - start)]
        kept = close_end
        index = closing + 1
    return "".join(pieces) + line[kept:] if pieces else line


def prose_lines(text: str, first_line: int) -> Iterator[tuple[int, str]]:
    """(line number, line with inline code masked) for lines outside fenced code blocks that
    may hold a link."""
    fence: Optional[str] = None
    for number, line in enumerate(text.split("\n"), 1):
        if number < first_line:
            continue
        match = _FENCE.match(line)
        if fence is None:
            if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
                fence = match.group(1)
            elif "[[" in line:
                yield number, mask_inline_code(line) if "`" in line else line
        elif (match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence)
              and not match.group(2).strip()):
            fence = None


class Link:
    """One wikilink: where it starts (the `[[`, or the `!` of an embed) and what it holds."""

    __slots__ = ("col", "embed", "inner", "line")

    def __init__(self, line: int, col: int, embed: bool, inner: str) -> None:
        self.line = line
        self.col = col
        self.embed = embed
        self.inner = inner
        """What is between the brackets: `page`, `page|alias`, `page#heading`."""

    @property
    def text(self) -> str:
        return f"{'!' if self.embed else ''}[[{self.inner}]]"


def _link(line: int, source: str, match: re.Match[str], line_start: int) -> Link:
    start = match.start()
    embed = start > line_start and source[start - 1] == "!"
    return Link(line, start - line_start + (0 if embed else 1), embed, match.group(1))


def links(text: str, first_line: int) -> Iterator[Link]:
    """Every wikilink outside code, from `first_line` on."""
    if "`" in text or "~~~" in text:
        for number, prose in prose_lines(text, first_line):
            for match in _LINK.finditer(prose):
                yield _link(number, prose, match, 0)
        return
    # No code anywhere: search the text directly instead of line by line, counting lines from
    # the previous link on (counting from the top each time is quadratic).
    number, counted, line_start = 1, 0, 0
    for match in _LINK.finditer(text):
        start = match.start()
        newlines = text.count("\n", counted, start)
        if newlines:
            number += newlines
            line_start = text.rfind("\n", counted, start) + 1
        counted = start
        if number >= first_line:
            yield _link(number, text, match, line_start)


class _Targets:
    """The vault files the check knows about, by name; folded lookups are built on first need."""

    def __init__(self, paths: AbstractSet[str]) -> None:
        self.inner = [path[len(VAULT_PREFIX):] for path in paths if path.startswith(VAULT_PREFIX)]
        self.names = {path.rpartition("/")[2] for path in self.inner}
        self._folded_names: Optional[set[str]] = None
        self._folded_paths: Optional[set[str]] = None

    def resolves(self, target: str) -> bool:
        if "/" in target:
            if self._folded_paths is None:
                # Every folded path and each of its `/`-separated tails: a path link is then one
                # set lookup instead of a pass over the vault.
                self._folded_paths = set()
                for path in self.inner:
                    parts = engine.fold_name(path).split("/")
                    self._folded_paths.update("/".join(parts[i:]) for i in range(len(parts)))
            key = engine.fold_name(target.strip("/"))
            return key in self._folded_paths or key + ".md" in self._folded_paths
        if target in self.names or target + ".md" in self.names:
            return True  # The common case: the link spells the file name exactly.
        if self._folded_names is None:
            self._folded_names = {engine.fold_name(name) for name in self.names}
        if engine.fold_name(target) in self._folded_names:
            return True
        try:
            page = engine.normalize_page_name(target)
        except engine.VaultError:
            return False
        return engine.fold_name(page) in self._folded_names


def _target(inner: str) -> str:
    # `[[page\|alias]]` is how a link is written inside a Markdown table.
    target = inner.split("|", 1)[0]
    target = target[:-1] if target.endswith("\\") else target
    return target.split("#", 1)[0].strip()


# What can make the target of a link differ from the text between its brackets (see
# `_target`: an alias, a heading, a trailing backslash, blanks around it) or make it a path;
# blanks inside (`[[My Page]]`) take the longer way too. One character class: a fast search.
_UNUSUAL_INNER = re.compile(r"[|#\\/\s]")


def _stems(names: frozenset[str]) -> frozenset[str]:
    """The stem of every name ending in `.md`: when they all do (the common pages/), in a few
    passes in C instead of a slice per name (a whole-vault gate does this in two processes)."""
    joined = "\0".join(names)
    if (joined.endswith(".md") and joined.count(".md\0") == len(names) - 1
            and joined.count("\0") == len(names) - 1):
        return frozenset(joined[:-3].replace(".md\0", "\0").split("\0"))
    return frozenset(name[:-3] for name in names if name.endswith(".md"))


class PageLinks:
    """Which links resolve to one of `pages` (names of files in `pages/` that the vault is known
    to hold) or into their own page: fewer than the check resolves, never more. Whole-vault
    gates let go of the text of a page whose every link is one of these."""

    def __init__(self, pages: frozenset[str]) -> None:
        self.pages = pages
        self.stems = _stems(pages)
        self.resolved: set[str] = set()
        self.unresolved: set[str] = set()

    def settled(self, text: str) -> bool:
        """Whether no link of `text` can be broken: every `[[...]]` in it, in code or not,
        resolves. Set operations keep the common page, whose links repeat, out of Python."""
        if "[[" not in text:
            return True
        inners = _LINK.findall(text)
        # Links repeat from page to page: one lookup in C per link settles those seen before.
        if self.resolved.issuperset(inners):
            return True
        # The common page links pages by their plain stem: then what is between the brackets
        # is the target, and one lookup in C per link settles it.
        if (not _UNUSUAL_INNER.search("]".join(inners))  # `]` ends a link: never inside
                and self.stems.issuperset(inners)):
            self.resolved.update(inners)
            return True
        unknown = set(inners)
        unknown.difference_update(self.resolved)
        if not unknown:
            return True
        if not self.unresolved.isdisjoint(unknown):
            return False
        for inner in unknown:
            target = _target(inner)
            if target and ("/" in target or (target not in self.pages
                                             and f"{target}.md" not in self.pages)):
                self.unresolved.add(inner)
                return False
            self.resolved.add(inner)
        return True


def check(ctx: Context) -> Iterator[Yielded]:
    targets: Optional[_Targets] = None
    # Whether the text between the brackets of a link resolves, for the whole vault: most links
    # repeat, and a page may link 200,000 times to one target.
    verdicts: dict[str, bool] = {}

    def resolves(inner: str) -> bool:
        nonlocal targets
        verdict = verdicts.get(inner)
        if verdict is None:
            target = _target(inner)
            if not target:  # `[[#heading]]` points into the same page.
                verdict = True
            elif (not ctx.gitlinks and "/" not in target
                  and f"{PAGES_PREFIX}{target}.md" in ctx.index):
                # A page Git knows by exactly this name: no need to gather every vault name,
                # which a one-file hook would otherwise do for its first link.
                verdict = True
            else:
                if targets is None:
                    targets = _Targets(ctx.vault_paths())
                verdict = targets.resolves(target)
            verdicts[inner] = verdict
        return verdict

    resolved: set[str] = set()  # the texts between brackets known to resolve
    for document in [*ctx.scan.pages, *ctx.scan.daily]:
        text = document.text
        if text is None or "[[" not in text:
            continue
        # Without code, the links are exactly the matches in the text (frontmatter's too): when
        # every one resolves, which is the common page, nothing is located or reported. Set
        # operations keep the common case out of Python-level loops.
        if "`" not in text and "~~~" not in text:
            unknown = set(_LINK.findall(text)).difference(resolved)
            resolved.update(inner for inner in unknown if resolves(inner))
            if resolved.issuperset(unknown):
                continue
        meta = document.meta
        first = meta.body_start if meta is not None and meta.close_line else 1
        broken = [(link, _target(link.inner)) for link in links(text, first)
                  if not resolves(link.inner)]
        yield from limited(broken, functools.partial(_finding, ctx, document.path))


def _finding(ctx: Context, path: str, broken: tuple[Link, str]) -> Finding:
    link, target = broken
    return ctx.finding("EV050", path, link.line, link.col,
                       _message(ctx, link.text, target, link.embed))


def _message(ctx: Context, link: str, target: str, embed: bool) -> str:
    if embed and "." in target.rsplit("/", 1)[-1] and not target.endswith(".md"):
        return (f"`{link}` embeds a file that is not in the vault; add it under "
                f"`{ctx.path(engine.VAULT_DIR)}/assets/` or fix the link")
    try:
        page = f"`{ctx.path(engine.VAULT_DIR)}/pages/{engine.normalize_page_name(target)}`"
    except engine.VaultError:
        return f"`{link}` does not name a valid page; fix the link"
    return f"`{link}` points to no page: there is no {page}; fix the link or create the page"
