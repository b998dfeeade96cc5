"""Findings and rule metadata shared by the linter, its reporters, the hooks and the Action.

A finding is plain data: rules produce them, reporters render them. Rule metadata lives here once
so that `echoes-lint rule`, SARIF rule descriptors and the docs agree.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional


class Severity(str, enum.Enum):
    """How bad a finding is; `error` fails a check by default, `warning` only with --fail-on."""

    ERROR = "error"
    WARNING = "warning"

    @property
    def rank(self) -> int:
        return 2 if self is Severity.ERROR else 1


@dataclass(frozen=True)
class Finding:
    """One problem at one place. `path` is workspace-relative and POSIX; line and col are 1-based."""

    path: str
    line: int
    col: int
    code: str
    message: str
    severity: Severity
    fix: Optional[str] = None
    """An exact command or edit that fixes the finding, when one exists."""

    @property
    def name(self) -> str:
        return RULES[self.code].name

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.path, self.line, self.col, self.code, self.message)


# Every rule has a page here, generated from its metadata (tests/test_rule_docs.py keeps them equal).
DOCS_URL = "https://github.com/echoes-lint/echoes-lint/blob/main/docs/rules/{code}.md"


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    summary: str
    explanation: str

    @property
    def url(self) -> str:
        return DOCS_URL.format(code=self.code)

    def document(self) -> str:
        """The rule's Markdown page: what `echoes-lint rule CODE` prints and docs/rules holds."""
        return (f"# {self.code} {self.name} ({self.severity.value})\n\n{self.summary}\n\n"
                f"{self.explanation}\n")


def _rule(code: str, name: str, severity: Severity, summary: str, explanation: str) -> Rule:
    return Rule(code, name, severity, summary, explanation.strip())


_E = Severity.ERROR
_W = Severity.WARNING

RULES: dict[str, Rule] = {
    rule.code: rule
    for rule in (
        _rule(
            "EV001", "conflict-marker", _E,
            "Unresolved Git conflict block in a vault Markdown file.",
            """
A `<<<<<<<`, `|||||||`, `=======` or `>>>>>>>` block left behind by a merge, rebase or
cherry-pick. Protocol engines refuse to write or index a page that contains one.

Fix: reconcile both sides, delete every marker line, keep valid frontmatter, then run
`echoes-lint resolve --check`.
""",
        ),
        _rule(
            "EV002", "bare-separator-line", _E,
            "A line that is exactly `=======` outside any conflict block.",
            """
In Markdown this is usually a setext heading underline, but every Protocol 1.0.0 engine treats
a bare `=======` line as a conflict marker and refuses the page.

Fix: use an ATX heading (`# Title`) or an underline of a different length (`========`).
""",
        ),
        _rule(
            "EV010", "frontmatter-missing", _E,
            "A page does not begin with a `---` frontmatter block.",
            """
Every knowledge page must begin (after leading blank lines) with a `---` line opening the
frontmatter block that holds `type`, `stack`, `status` and `summary`.
""",
        ),
        _rule(
            "EV011", "frontmatter-unclosed", _E,
            "The frontmatter block has no closing `---` line.",
            "Add a line that is exactly `---` after the last frontmatter key.",
        ),
        _rule(
            "EV012", "frontmatter-empty", _E,
            "The frontmatter block holds no keys.",
            "Add the required keys `type`, `stack`, `status` and `summary`.",
        ),
        _rule(
            "EV014", "frontmatter-duplicate-key", _E,
            "A frontmatter key appears twice.",
            "Duplicate top-level keys are invalid. Keep one and delete the other.",
        ),
        _rule(
            "EV015", "frontmatter-missing-key", _E,
            "A required frontmatter key is missing.",
            "Pages must define `type`, `stack`, `status` and `summary`.",
        ),
        _rule(
            "EV016", "frontmatter-empty-value", _E,
            "A required key has an empty, block or non-scalar value.",
            """
`type`, `status` and `summary` need a non-empty inline scalar on the key's own line; `stack`
needs an inline value such as `[]` or `[python]`, or an indented value on the following lines.
""",
        ),
        _rule(
            "EV017", "frontmatter-quoting", _E,
            "A quoted frontmatter value is not valid.",
            """
Values may be plain, single-quoted (`'it''s'`) or JSON-compatible double-quoted
(`"a \\"quoted\\" word"`). An unterminated quote or an invalid escape is an error.
""",
        ),
        _rule(
            "EV018", "summary-invalid", _E,
            "`summary` is longer than 160 characters or spans several lines.",
            """
The summary is the only text the generated index uses: it must fit on one physical line and
hold at most 160 Unicode characters after whitespace runs are collapsed.
""",
        ),
        _rule(
            "EV019", "invalid-text", _E,
            "A vault Markdown file is not valid UTF-8 text, or cannot be read.",
            "Re-save the file as UTF-8 (and make it a readable regular file).",
        ),
        _rule(
            "EV020", "tracked-generated-index", _E,
            "`EchoesVault/index.md` is tracked or staged.",
            """
The index is generated locally from page frontmatter and must never be committed: two
branches would conflict on it constantly.

Fix: `git rm --cached -- EchoesVault/index.md` (the file stays on disk; it is already ignored).
""",
        ),
        _rule(
            "EV021", "tracked-local-state", _E,
            "A machine-local state or lock file is tracked or staged.",
            """
`.echoes-vault/state.json`, `.echoes-vault/lock`, `.echoes-vault/intent.json`,
`.echoes-vault/cache.json`, `.opencode/echoes-state.json` and `.codex/echoes-vault-state.json` are
local bookkeeping, not knowledge. A committed intent or cache is never trusted: the engine ignores
it, and every clone would share one checkout's bookkeeping.

Fix: `git rm --cached -- <path>`.
""",
        ),
        _rule(
            "EV022", "untracked-durable-file", _W,
            "A page, daily entry, asset or raw file is untracked or ignored by Git.",
            """
Durable knowledge only reaches the team when it is committed. The protocol files every clone
needs (the marker, the portable runtime, the agent adapters) are reported the same way.

Fix: `git add -- <path>`, or `git add -f -- <path>` when an ignore rule hides it.
""",
        ),
        _rule(
            "EV030", "case-collision", _E,
            "Two vault paths are equal after Unicode NFC normalisation and case folding.",
            """
`Alpha.md` and `alpha.md`, `Straße.md` and `STRASSE.md`, or a composed and a decomposed `é`
are one file on macOS and Windows. Rename or merge one of them.
""",
        ),
        _rule(
            "EV031", "unsafe-page-name", _E,
            "An entry of `pages/` is nested or not a page, or a name is not NFC or breaks on Windows.",
            """
Knowledge pages are `.md` files directly inside `EchoesVault/pages/`; other files belong in
`assets/`. A page name not in Unicode NFC is looked up under its NFC form by engines. Names
that Windows cannot check out (reserved names such as `CON`, a trailing dot or space, or one of
`<>:"|?*`) are reported as warnings. Hidden pages, `.MD` suffixes and names writers refuse are
EV032-EV034.
""",
        ),
        _rule(
            "EV032", "hidden-page", _E,
            "A page name starts with `.`.",
            """
Protocol engines index `pages/.name.md` like any page, but writers refuse to address a hidden
name (no `hash`, no `upsert`), and editors, file browsers and many tools hide it.

Fix: `git mv` it to the same name without the leading dots.
""",
        ),
        _rule(
            "EV033", "page-suffix-case", _E,
            "A page ends in `.MD`, `.Md` or `.mD` instead of `.md`.",
            """
Protocol engines select pages by a case-insensitive `.md` suffix and index `Notes.MD` as
`[[Notes]]`, but writers address `Notes.MD.md` when asked for `Notes.MD`, and case-sensitive
tools (globs such as `*.md`, Git attributes, the Action's path filters) skip the page.

Fix: `git mv` it to the same stem with `.md`.
""",
        ),
        _rule(
            "EV034", "unaddressable-page-name", _E,
            "A page name that writers refuse: `..`, a control character or bytes that are not UTF-8.",
            """
Engines index such a page, but no writer can update it, and a control character in a slug
breaks the index row it produces.

Fix: rename the page to a plain name.
""",
        ),
        _rule(
            "EV035", "page-name-too-long", _E,
            "A page name too long for the temporary file an engine writes it through.",
            """
Engines replace a page atomically through a temporary file in `pages/` named
`.<name>.<8 hex digits>.echoes-tmp`, 21 bytes longer than the page name. Most file systems limit
a name to 255 bytes, so a page name over 234 bytes (UTF-8) can be read but never updated, and the
engine refuses to create one.

Fix: rename the page (`git mv`) to a name of at most 234 bytes and update links to it.
""",
        ),
        _rule(
            "EV040", "symlink-in-vault", _E,
            "A symbolic link inside the vault.",
            "Engines refuse to read or write through links. Replace the link with a regular file.",
        ),
        _rule(
            "EV041", "unsupported-marker", _E,
            "`EchoesVault/.echoes-vault.json` is missing, invalid or of another protocol.",
            """
Writers read the marker before every mutation and stop unless it declares protocol 1.0.0.

Fix: run `echoes-lint init` (or restore the committed marker).
""",
        ),
        _rule(
            "EV042", "special-file", _E,
            "A FIFO, socket or device file where the tools read files.",
            """
Vault files, the marker, the state file, the runtime and the agent adapters must be regular
files. A FIFO would block every reader that opens it and a device may act when opened, so
engines and gates never open them and report them instead.

Fix: remove it (`rm -- <path>`) or replace it with a regular file.
""",
        ),
        _rule(
            "EV043", "unused-suppression", _W,
            "A suppression comment that silences nothing.",
            """
`<!-- echoes-lint-disable-next-line CODES -->` silences the listed rules (all rules when it
names none) on the next line. A comment that no longer matches a finding is stale, and one whose
finding `status` counts as an issue (conflict markers, invalid frontmatter) cannot silence it:
those findings must be fixed. A code is only reported unused when its rules ran.

Fix: delete the comment, or remove the unused codes from it.
""",
        ),
        _rule(
            "EV044", "unknown-suppression", _W,
            "A suppression comment names a code that matches no rule.",
            """
A typo such as `EV05O` silences nothing. Codes and prefixes (`EV05`) must match a rule.

Fix: correct or remove the code (`echoes-lint rule --all` lists them).
""",
        ),
        _rule(
            "EV045", "non-utf8-path", _E,
            "A vault path that is not valid UTF-8.",
            """
Git stores names as bytes; Git hosts, macOS, Windows and protocol engines show, normalise or
refuse a name that is not UTF-8 differently. Findings show such bytes as `\\xNN` escapes.

Fix: rename the file with a UTF-8 name (`git mv`).
""",
        ),
        _rule(
            "EV046", "gitlink-in-vault", _E,
            "A Git submodule (gitlink) inside the vault.",
            """
A submodule's files belong to another repository: a plain clone has an empty folder, and
engines that read the checked-out folder treat another repository's files as vault files.

Fix: move the submodule out of the vault (`git rm --cached -- <path>`, then remove the folder).
""",
        ),
        _rule(
            "EV050", "broken-wikilink", _W,
            "A `[[page]]` or `![[asset]]` link points at nothing.",
            """
Links inside code fences and inline code are ignored. Fix the link target or create the page.
""",
        ),
        _rule(
            "EV060", "shared-daily-file", _E,
            "A date-level `daily/YYYY-MM-DD.md` file (the legacy shared log).",
            """
Protocol 1.0.0 writers create one unique file per entry under `daily/YYYY-MM-DD/`. A shared
date-level file conflicts whenever two branches write on the same day.
""",
        ),
        _rule(
            "EV070", "frontmatter-ignored-line", _E,
            "A frontmatter line that protocol engines skip: not `key: value` with a protocol key.",
            """
Engines read only unindented lines `key: value` whose key matches `[A-Za-z][A-Za-z0-9_-]*`
and skip every other line, so `due date: 2026-12-01`, `"quoted": v` or `x.y: 1` are invisible
to them while YAML tools (Obsidian, static-site generators) read them, and a top-level `- item`
or an indented line under no key is a YAML error.

Fix: rename the key to letters, digits, `_` and `-` (`due_date`), or indent the line under its
key.
""",
        ),
        _rule(
            "EV071", "frontmatter-scalar-continuation", _E,
            "`type`, `status` or `summary` continues on indented lines.",
            """
Engines read only the text on the key's own line; YAML tools join the indented lines into the
value. The index then shows less than an editor does.

Fix: put the whole value on the key's line.
""",
        ),
        _rule(
            "EV072", "frontmatter-non-scalar", _E,
            "`type`, `status` or `summary` starts with `[`, `{`, `|` or `>`.",
            """
Engines take such a value as plain text (`summary: >` indexes the page as `>`), while YAML
tools read a list, a mapping or a block of the following lines.

Fix: write the value as one plain or quoted string on the key's line.
""",
        ),
        _rule(
            "EV073", "frontmatter-single-quote", _E,
            "A single-quoted `type`, `status` or `summary` is unterminated or holds a lone `'`.",
            """
Engines keep the text as it is, YAML tools fail on it.

Fix: close the quote, and write `''` for a quote inside single quotes.
""",
        ),
        _rule(
            "EV074", "frontmatter-empty-scalar", _W,
            "`type` or `status` is an empty quoted string.",
            "Engines accept `type: \"\"`; the protocol asks for a value. Fix: write one.",
        ),
        _rule(
            "EV075", "stack-unclosed", _E,
            "`stack` opens `[` or `{` without closing it.",
            """
Engines never decode `stack` and accept `[python`, YAML tools fail on the whole block.

Fix: close the bracket: `stack: [python]`.
""",
        ),
        _rule(
            "EV076", "summary-index-row", _E,
            "`summary` is written as an index row `- [[slug]]: text`.",
            """
Engines index only the text after the link, YAML tools fail on a value starting with `- `.

Fix: keep only the text.
""",
        ),
        _rule(
            "EV077", "binary-content", _E,
            "A vault Markdown file holds a NUL byte.",
            """
Engines read the file, but Git treats it as binary: no text diff and no merge, so every
concurrent edit conflicts. Binary content belongs in `assets/`.
""",
        ),
        _rule(
            "EV078", "trimmed-conflict-marker", _E,
            "A first or last line that becomes a conflict marker once the page is trimmed.",
            """
Engines trim surrounding whitespace before looking for conflict markers, so a last line
`======= ` (with trailing blanks) is the marker `=======` to them and the page is refused.

Fix: delete the line, or make it a heading of another form.
""",
        ),
    )
}
