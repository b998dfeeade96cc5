"""EV031 unsafe-page-name: entries of `pages/` that are not pages, page names not in NFC, and
vault names Windows cannot check out (a warning). EV032-EV034: pages that engines index but
writers cannot address (the engine's `page_name_notes`). EV035 page-name-too-long: a page name
the engine cannot replace atomically on common file systems."""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable, Iterator, Sequence

from echoes_lint import engine
from echoes_lint.engine import _regex
from echoes_lint.findings import UNSAFE, Finding, Severity, replace
from echoes_lint.rules.context import VAULT_PREFIX, Context

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    from typing import Optional

NOTE_CODES = {"hidden-page": "EV032", "page-suffix-case": "EV033", "unsafe-page-name": "EV034"}
CODES = frozenset({"EV031", *NOTE_CODES.values(), "EV035"})

PAGES_PREFIX = f"{engine.VAULT_DIR}/pages/"
# Compiled on first use (`engine._regex`): most vaults never need them (`_any_suspect`).
_WINDOWS_RESERVED = _regex(r"(?:CON|PRN|AUX|NUL|COM[0-9¹²³]|LPT[0-9¹²³])", re.IGNORECASE)
_WINDOWS_FORBIDDEN = _regex(r'[<>:"|?*\\\x00-\x1f]')
# One cheap search rules out almost every name before the precise checks.
_SUSPECT = _regex(r'(?:^|/)(?:CON|PRN|AUX|NUL|COM|LPT)|[. ](?:/|$)|[<>:"|?*\\\x00-\x1f]',
                      re.IGNORECASE)


def windows_problem(name: str) -> Optional[str]:
    """Why Windows cannot create a file or folder with this name, or None."""
    if not _SUSPECT.search(name):
        return None
    if _WINDOWS_RESERVED.fullmatch(name.split(".", 1)[0].rstrip(" ")):
        return "is a reserved device name on Windows"
    if name.endswith((".", " ")):
        return "ends with a dot or a space, which Windows strips"
    bad = _WINDOWS_FORBIDDEN.search(name)
    if bad:
        return f"contains {bad.group()!r}, which Windows forbids in names"
    return None


def _move(ctx: Context, source: str, target: str) -> str:
    tool = "git mv" if source in ctx.index else "mv"
    return f"{tool} -- {engine.shell_quote(ctx.path(source))} {engine.shell_quote(ctx.path(target))}"


def _renaming(ctx: Context, finding: Finding, source: str, target: str) -> Finding:
    """A tracked file's `git mv` as the finding's automatic fix: unsafe, since a file name is a
    page's identity (links and the index name it), so only `--unsafe-fixes` runs it."""
    if source not in ctx.index:
        return finding
    return replace(finding, applicability=UNSAFE, command=(
        "mv", "--", ctx.path(source), ctx.path(target)))


def _stray(ctx: Context, relative: str) -> Optional[Finding]:
    if relative.endswith("/"):
        return ctx.finding(
            "EV031", relative.rstrip("/"), 1, 1,
            f"folder `{ctx.path(relative)}` inside pages/: engines only read pages directly in "
            f"`{ctx.path(PAGES_PREFIX)}`; move its pages up (or the material to `raw/`)")
    if relative in ctx.scan.git.ignored:
        return None  # Never committed (editor and OS droppings such as .DS_Store).
    name = relative[len(PAGES_PREFIX):]
    target = f"{engine.VAULT_DIR}/assets/{name}"
    fix = _move(ctx, relative, target)
    return _renaming(ctx, ctx.finding(
        "EV031", relative, 1, 1,
        f"`{name}` in pages/ is not a page (pages are `.md` files); keep other files in "
        f"assets/: run `{fix}`", fix), relative, target)


# A name that is its own NFC `<stem>.md`, with no note: most page names; nothing to check.
_PLAIN_PAGE_PATTERN = r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.md"
_PLAIN_PAGE = _regex(_PLAIN_PAGE_PATTERN)


def _page(ctx: Context, document: engine.Document) -> Optional[Finding]:
    name = document.name
    if _PLAIN_PAGE.fullmatch(name):
        return None
    for note in engine.page_name_notes(name):
        code = NOTE_CODES[note.kind]
        target = engine.page_stem(name).lstrip(".") + ".md" if code != "EV034" else ""
        if target in ("", ".md", name):
            return ctx.finding(code, document.path, 1, 1, f"{note.message}; rename it")
        fix = _move(ctx, document.path, PAGES_PREFIX + target)
        finding = ctx.finding(code, document.path, 1, 1, f"{note.message}; run `{fix}`", fix)
        return _renaming(ctx, finding, document.path, PAGES_PREFIX + target)
    normalized = engine.normalize_page_name(name)
    if normalized != name:
        fix = _move(ctx, document.path, PAGES_PREFIX + normalized)
        return _renaming(ctx, ctx.finding(
            "EV031", document.path, 1, 1,
            f"page name `{name}` is not in Unicode NFC form, so engines look for "
            f"`{normalized}` instead; run `{fix}`", fix), document.path, PAGES_PREFIX + normalized)
    return None


# `_SUSPECT`'s first branch where a `/` starts every name (`_any_suspect`), searched in the
# upper-cased names: only ASCII letters match these case-insensitively (a search without
# IGNORECASE is three times faster), and `str.upper` keeps each of them in its place.
_RESERVED_START = re.compile(r"/(?:CON|PRN|AUX|NUL|COM|LPT)")
# `_WINDOWS_FORBIDDEN`'s characters, deleted from ASCII names in one pass in C.
_FORBIDDEN_BYTES = b'<>:"|?*\\' + bytes(range(32))


def _any_suspect(paths: Iterable[str]) -> bool:
    """Whether `_SUSPECT` may match one of `paths`, by searches of all of them at once:
    between `/`s, each name starts after a `/` and ends before one, and each of the three
    branches of `_SUSPECT` has a search that finds whatever it finds."""
    joined = "/" + "/".join(paths) + "/"
    if "./" in joined or " /" in joined:
        return True
    if joined.isascii():
        data = joined.encode("ascii")
        if len(data.translate(None, _FORBIDDEN_BYTES)) != len(data):
            return True
    elif _WINDOWS_FORBIDDEN.search(joined):
        return True
    return bool(_RESERVED_START.search(joined.upper()))


# Page paths that are all plain names (see _PLAIN_PAGE), each followed by a newline.
_PLAIN_PAGES = re.compile(rf"(?:{re.escape(PAGES_PREFIX)}{_PLAIN_PAGE_PATTERN}\n)*")


def check(ctx: Context) -> Iterator[Finding]:
    for relative in ctx.scan.page_dir_strays:
        stray = _stray(ctx, relative)
        if stray:
            yield stray
    page_paths = list(map(_PATH, ctx.scan.pages))
    # One match over every page path first: in most vaults no name needs a closer look.
    if not _PLAIN_PAGES.fullmatch("\n".join(page_paths) + "\n" if page_paths else ""):
        for document in ctx.scan.pages:
            page = _page(ctx, document)
            if page:
                yield page
    # Each offending name once, however many files sit below it.
    unsafe: dict[str, str] = {}
    for relative in ctx.scan.files if _any_suspect(ctx.scan.files) else ():
        if not _SUSPECT.search(relative):
            continue
        parts = relative[len(VAULT_PREFIX):].split("/")
        for depth, part in enumerate(parts, 1):
            problem = windows_problem(part)
            if problem:
                unsafe.setdefault(VAULT_PREFIX + "/".join(parts[:depth]), problem)
                break
    for relative, problem in sorted(unsafe.items()):
        name = relative.rsplit("/", 1)[-1]
        yield ctx.finding("EV031", relative, 1, 1,
                          f"name `{name}` {problem}; rename it so the vault checks out there",
                          severity=Severity.WARNING)
    yield from _too_long(ctx, page_paths)


# A name of this many characters or fewer cannot overflow: UTF-8 takes at most 4 bytes a one.
_SHORT_NAME = (engine.PORTABLE_NAME_MAX - engine.TEMP_NAME_OVERHEAD) // 4


_PATH = operator.attrgetter("path")


def _too_long(ctx: Context, page_paths: Sequence[str]) -> Iterator[Finding]:
    longest = max(map(len, page_paths), default=0)
    if longest <= len(PAGES_PREFIX) + _SHORT_NAME:
        return
    for document in ctx.scan.pages:
        if len(document.name) <= _SHORT_NAME:
            continue
        length = engine.temporary_name_overflow(document.name)
        if length is not None:
            limit = engine.PORTABLE_NAME_MAX - engine.TEMP_NAME_OVERHEAD
            yield ctx.finding(
                "EV035", document.path, 1, 1,
                f"page name `{document.name}` is {len(document.name.encode('utf-8'))} bytes; "
                f"engines write a page through a temporary file with a {length}-byte name, over "
                f"the {engine.PORTABLE_NAME_MAX}-byte limit of common file systems, so no update "
                f"of it can be saved; rename it to at most {limit} bytes (UTF-8)")
