"""Findings and rule metadata shared by the linter, its reporters, the hooks and the Action.

A finding is plain data: rules produce them, reporters render them. Rule metadata lives here once
so that `echoes-lint rule`, SARIF rule descriptors and the docs agree.
"""

from __future__ import annotations

import enum

from echoes_lint.engine import _Record

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    from typing import Any, Optional, TypeVar


class Record(_Record):
    """What `@dataclass(frozen=True)` gave the linter's records (equality field by field, a hash
    and a repr), as the engine's records have it: a gate imports neither `dataclasses` nor
    `inspect`, nor builds its classes at every start (~8 ms). Never changed once made:
    `replace` makes a changed copy."""

    __slots__ = ()

    def __hash__(self) -> int:
        return hash(self._values())


if TYPE_CHECKING:
    R = TypeVar("R", bound=_Record)


def replace(record: R, **changes: Any) -> R:
    """`dataclasses.replace` for these records: a copy with `changes`."""
    fields = record._FIELDS
    values = dict(zip(fields, map(record.__getattribute__, fields)))
    values.update(changes)
    return type(record)(**values)


class Severity(str, enum.Enum):
    """How bad a finding is; `error` fails a check by default, `warning` only with --fail-on."""

    ERROR = "error"
    WARNING = "warning"

    @property
    def rank(self) -> int:
        return 2 if self is Severity.ERROR else 1


class Edit(Record):
    """Replace the text from (line, col) up to, not including, (end_line, end_col) with
    `content`. Lines and columns are 1-based and count the characters of the file's text with
    its line breaks read as `\\n`, as findings do; ruff's json `edits` carry the same fields."""

    __slots__ = _FIELDS = ("line", "col", "end_line", "end_col", "content")

    def __init__(self, line: int, col: int, end_line: int, end_col: int, content: str) -> None:
        self.line, self.col, self.end_line, self.end_col, self.content = (
            line, col, end_line, end_col, content)


# How an automatic fix may be applied: `safe` with `--fix`, `unsafe` only with `--unsafe-fixes`.
SAFE = "safe"
UNSAFE = "unsafe"


class Finding(Record):
    """One problem at one place. `path` is workspace-relative and POSIX; line and col are
    1-based. `fix`: an exact command or edit that fixes the finding, when one exists; `edit`:
    the text edit `check --fix` applies, when the fix is an edit of this file; `command`: the
    `git` arguments `check --fix` runs, when the fix is a Git command; `applicability`: `SAFE`
    or `UNSAFE` when `edit` or `command` is set (whether `--fix` applies it alone)."""

    __slots__ = _FIELDS = ("path", "line", "col", "code", "message", "severity", "fix", "edit",
                           "command", "applicability")

    def __init__(self, path: str, line: int, col: int, code: str, message: str,
                 severity: Severity, fix: Optional[str] = None, edit: Optional[Edit] = None,
                 command: Optional[tuple[str, ...]] = None,
                 applicability: Optional[str] = None) -> None:
        self.path, self.line, self.col, self.code, self.message, self.severity = (
            path, line, col, code, message, severity)
        self.fix, self.edit, self.command, self.applicability = fix, edit, command, applicability

    @property
    def name(self) -> str:
        return RULES[self.code].name

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.path, self.line, self.col, self.code, self.message)


# Every rule has a page here, generated from its metadata (tests/test_rule_docs.py keeps them equal).
DOCS_URL = "https://github.com/echoes-lint/echoes-lint/blob/main/docs/rules/{code}.md"


class Rule(Record):
    """A rule's metadata. `fix_applicability`: `SAFE` or `UNSAFE` when `check --fix` can fix
    findings of this rule, else None; `fix_always`: whether every finding has the automatic
    fix, or only some (ruff's "always/sometimes"); `fix`: how to fix any finding of the rule,
    the `help:` of a finding without its own exact fix."""

    __slots__ = _FIELDS = ("code", "name", "severity", "summary", "explanation",
                           "fix_applicability", "fix_always", "fix")

    def __init__(self, code: str, name: str, severity: Severity, summary: str, explanation: str,
                 fix_applicability: Optional[str] = None, fix_always: bool = False,
                 fix: str = "") -> None:
        self.code, self.name, self.severity, self.summary, self.explanation = (
            code, name, severity, summary, explanation)
        self.fix_applicability, self.fix_always, self.fix = fix_applicability, fix_always, fix

    @property
    def fix_availability(self) -> str:
        """The line `echoes-lint rule` and the docs print about automatic fixes ("" without)."""
        if self.fix_applicability is None:
            return ""
        when = "always" if self.fix_always else "sometimes"
        how = ("`echoes-lint check --fix` applies it" if self.fix_applicability == SAFE
               else "only `echoes-lint check --fix --unsafe-fixes` applies it")
        return f"Fix is {when} available ({self.fix_applicability}: {how})."

    @property
    def url(self) -> str:
        return DOCS_URL.format(code=self.code)

    def document(self) -> str:
        """The rule's Markdown page: what `echoes-lint rule CODE` prints and docs/rules holds."""
        fix = f"\n{self.fix_availability}\n" if self.fix_applicability else ""
        return (f"# {self.code} {self.name} ({self.severity.value})\n\n{self.summary}\n\n"
                f"{self.explanation}\n\n## How to fix\n\n{self.fix}\n{fix}")


def _rule(code: str, name: str, severity: Severity, summary: str, explanation: str,
          applicability: Optional[str] = None, always: bool = False) -> Rule:
    return Rule(code, name, severity, summary, explanation.strip(), applicability, always)


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

`check --fix` never touches a conflict: `echoes-lint resolve` helps reconcile it.
""",
        ),
        _rule(
            "EV002", "bare-separator-line", _E,
            "A line that is exactly `=======` outside any conflict block.",
            """
In Markdown this is usually a setext heading underline, but every Protocol 1.0.0 engine treats
a bare `=======` line as a conflict marker and refuses the page.

`check --fix` lengthens the line to `========` only where it underlines a plain paragraph line
(a setext heading, which renders the same with any number of `=`); elsewhere (after a blank
line, in a list, quote or code block) the line is text, and the fix is left to you.
""", SAFE,
        ),
        _rule(
            "EV010", "frontmatter-missing", _E,
            "A page does not begin with a `---` frontmatter block.",
            """
Every knowledge page must begin (after leading blank lines) with a `---` line opening the
frontmatter block that holds `type`, `stack`, `status` and `summary`.

`check --fix` removes a UTF-8 byte-order mark before the opening `---` and blanks after it:
YAML tools already read that line as the delimiter.
""", SAFE,
        ),
        _rule(
            "EV011", "frontmatter-unclosed", _E,
            "The frontmatter block has no closing `---` line.",
            """
Engines need a line that is exactly `---` after the last frontmatter key. `check --fix` removes
the blanks after a closing `---`, the usual cause, which YAML tools already read as the delimiter.
""", SAFE,
        ),
        _rule(
            "EV012", "frontmatter-empty", _E,
            "The frontmatter block holds no keys.",
            "An empty block, or one of only blank lines and comments, gives engines no keys.",
        ),
        _rule(
            "EV014", "frontmatter-duplicate-key", _E,
            "A frontmatter key appears twice.",
            """
Duplicate top-level keys are invalid: engines refuse the page. `check --fix` deletes a later
line that repeats an earlier one exactly (same key, same value, no indented lines).
""", SAFE,
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
            "Engines refuse a page they cannot decode as UTF-8 or cannot open.",
        ),
        _rule(
            "EV020", "tracked-generated-index", _E,
            "`EchoesVault/index.md` is tracked or staged.",
            """
The index is generated locally from page frontmatter and must never be committed: two
branches would conflict on it constantly.

`check --fix` runs `git rm --cached`; the file stays on disk.
""", SAFE, True,
        ),
        _rule(
            "EV021", "tracked-local-state", _E,
            "A machine-local state or lock file is tracked or staged.",
            """
`.echoes-vault/state.json`, `.echoes-vault/lock`, `.echoes-vault/intent.json`,
`.echoes-vault/cache.json`, `.opencode/echoes-state.json` and `.codex/echoes-vault-state.json` are
local bookkeeping, not knowledge. A committed intent or cache is never trusted: the engine ignores
it, and every clone would share one checkout's bookkeeping.

`check --fix` runs `git rm --cached`; the file stays on disk.
""", SAFE, True,
        ),
        _rule(
            "EV022", "untracked-durable-file", _W,
            "A page, daily entry, asset or raw file is untracked or ignored by Git.",
            """
Durable knowledge only reaches the team when it is committed. The protocol files every clone
needs (the marker, the portable runtime, the agent adapters) are reported the same way.

A warning while you commit, it fails a push: the `echoes-lint` and `echoes-untracked-files`
pre-commit hooks fail at the `pre-push` stage unless `fail-on-untracked-at-push = false`.
`check --fix` runs `git add`; a tracked file that an ignore rule matches needs the rule changed.
""", SAFE,
        ),
        _rule(
            "EV030", "case-collision", _E,
            "Two vault paths are equal after Unicode NFC normalisation and case folding.",
            """
`Alpha.md` and `alpha.md`, `Straße.md` and `STRASSE.md`, or a composed and a decomposed `é`
are one file on macOS and Windows.
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

`check --fix --unsafe-fixes` runs the `git mv` of a tracked file (a stray file to `assets/`, a
name to NFC): a file name is a page's identity.
""", UNSAFE,
        ),
        _rule(
            "EV032", "hidden-page", _E,
            "A page name starts with `.`.",
            """
Protocol engines index `pages/.name.md` like any page, but writers refuse to address a hidden
name (no `hash`, no `upsert`), and editors, file browsers and many tools hide it.

`check --fix --unsafe-fixes` runs the `git mv` for a tracked page: the file name is the page's
identity.
""", UNSAFE,
        ),
        _rule(
            "EV033", "page-suffix-case", _E,
            "A page ends in `.MD`, `.Md` or `.mD` instead of `.md`.",
            """
Protocol engines select pages by a case-insensitive `.md` suffix and index `Notes.MD` as
`[[Notes]]`, but writers address `Notes.MD.md` when asked for `Notes.MD`, and case-sensitive
tools (globs such as `*.md`, Git attributes, the Action's path filters) skip the page.

`check --fix --unsafe-fixes` runs the `git mv` for a tracked page when no file has that name:
the file name is the page's identity.
""", UNSAFE,
        ),
        _rule(
            "EV034", "unaddressable-page-name", _E,
            "A page name that writers refuse: `..`, a control character or bytes that are not UTF-8.",
            """
Engines index such a page, but no writer can update it, and a control character in a slug
breaks the index row it produces.
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
""",
        ),
        _rule(
            "EV040", "symlink-in-vault", _E,
            "A symbolic link inside the vault.",
            "Engines refuse to read or write through links.",
        ),
        _rule(
            "EV041", "unsupported-marker", _E,
            "`EchoesVault/.echoes-vault.json` is missing, invalid or of another protocol.",
            """
Writers read the marker before every mutation and stop unless it declares protocol 1.0.0.
""",
        ),
        _rule(
            "EV042", "special-file", _E,
            "A FIFO, socket or device file where the tools read files.",
            """
Vault files, the marker, the state file, the runtime and the agent adapters must be regular
files. A FIFO would block every reader that opens it and a device may act when opened, so
engines and gates never open them and report them instead.
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
""",
        ),
        _rule(
            "EV044", "unknown-suppression", _W,
            "A suppression comment names a code that matches no rule.",
            """
A typo such as `EV05O` silences nothing. Codes and prefixes (`EV05`) must match a rule.
""",
        ),
        _rule(
            "EV045", "non-utf8-path", _E,
            "A vault path that is not valid UTF-8.",
            """
Git stores names as bytes; Git hosts, macOS, Windows and protocol engines show, normalise or
refuse a name that is not UTF-8 differently. Findings show such bytes as `\\xNN` escapes.
""",
        ),
        _rule(
            "EV046", "gitlink-in-vault", _E,
            "A Git submodule (gitlink) inside the vault.",
            """
A submodule's files belong to another repository: a plain clone has an empty folder, and
engines that read the checked-out folder treat another repository's files as vault files.
""",
        ),
        _rule(
            "EV050", "broken-wikilink", _W,
            "A `[[page]]` or `![[asset]]` link points at nothing.",
            """
Links inside code fences and inline code are ignored.
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
""",
        ),
        _rule(
            "EV071", "frontmatter-scalar-continuation", _E,
            "`type`, `status` or `summary` continues on indented lines.",
            """
Engines read only the text on the key's own line; YAML tools join the indented lines into the
value. The index then shows less than an editor does.
""",
        ),
        _rule(
            "EV072", "frontmatter-non-scalar", _E,
            "`type`, `status` or `summary` starts with `[`, `{`, `|` or `>`.",
            """
Engines take such a value as plain text (`summary: >` indexes the page as `>`), while YAML
tools read a list, a mapping or a block of the following lines.
""",
        ),
        _rule(
            "EV073", "frontmatter-single-quote", _E,
            "A single-quoted `type`, `status` or `summary` is unterminated or holds a lone `'`.",
            """
Engines keep the text as it is, YAML tools fail on it.
""",
        ),
        _rule(
            "EV074", "frontmatter-empty-scalar", _W,
            "`type` or `status` is an empty quoted string.",
            "Engines accept `type: \"\"`; the protocol asks for a value.",
        ),
        _rule(
            "EV075", "stack-unclosed", _E,
            "`stack` opens `[` or `{` without closing it.",
            """
Engines never decode `stack` and accept `[python`, YAML tools fail on the whole block.
""",
        ),
        _rule(
            "EV076", "summary-index-row", _E,
            "`summary` is written as an index row `- [[slug]]: text`.",
            """
Engines index only the text after the link, YAML tools fail on a value starting with `- `.
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
""",
        ),
        _rule(
            "EV090", "merge-driver-missing-interpreter", _W,
            "The recorded merge driver's interpreter is missing.",
            """
`install-merge-driver` records the absolute path of the Python that runs the driver. After that
environment moved or was deleted, the driver cannot run: the command recorded by this version
then merges pages with Git's own text merge (markers on every conflict), an earlier version's
command leaves Git with only our side of the page and no markers.
""",
        ),
        _rule(
            "EV091", "merge-driver-partial", _W,
            "A merge-driver configuration without a driver command.",
            """
Keys of `merge.echoes-vault` without `merge.echoes-vault.driver` make Git stop every merge that
touches a page (`custom merge driver echoes-vault lacks command line`); a `merge=echoes-vault`
line in `.git/info/attributes` without any driver configured means pages merge as plain text.
A committed `.gitattributes` line alone is what every fresh clone has, and is not reported.
""",
        ),
        _rule(
            "EV092", "merge-driver-without-fallback", _W,
            "The recorded merge driver has no fallback to Git's text merge.",
            """
Earlier versions recorded a command that only runs the interpreter: if it goes away, Git keeps
our side of a page without conflict markers and the other side's changes are silently lost.
""",
        ),
        _rule(
            "EV080", "deprecated-page-banner", _W,
            "A page with `status: deprecated` whose body does not begin with the banner.",
            """
Spec 7.5: a deprecated page should begin its body with `> [!warning] DEPRECATED`, so that a
reader who opens it (not only the index) sees it is obsolete, and link to its replacement.

`check --fix` inserts it, followed by a blank line, before the first body line.
""", SAFE, True,
        ),
    )
}

# How to fix each rule's findings: `full`'s `help:` line when a finding carries no exact fix of
# its own, and the "How to fix" section of the rule's page.
_FIXES = {
    "EV001": "Reconcile both sides, delete every marker line, keep valid frontmatter, then run "
             "`echoes-lint resolve --check`.",
    "EV002": "Use an ATX heading (`# Title`) or an underline of another length (`========`).",
    "EV010": "Start the page with a `---` line, then `type`, `stack`, `status` and `summary`, "
             "then a closing `---` line.",
    "EV011": "Add a line that is exactly `---` after the last frontmatter key (no spaces after "
             "it).",
    "EV012": "Add the required keys `type`, `stack`, `status` and `summary`.",
    "EV014": "Keep one of the two keys and delete the other.",
    "EV015": "Add the key as `key: value` on its own unindented line (keys are lower case), "
             "for example `status: active`.",
    "EV016": "Write the value on the key's line, for example `status: active` or `stack: []`.",
    "EV017": "Close the quote, or write the value without quotes; inside double quotes escape "
             "`\\` and `\"` as JSON does.",
    "EV018": "Shorten the summary to one line of at most 160 characters; details belong in the "
             "page body.",
    "EV019": "Re-save the file as UTF-8, and make it a readable regular file.",
    "EV020": "Run `git rm --cached -- EchoesVault/index.md` (the file stays on disk; it is "
             "already ignored).",
    "EV021": "Run `git rm --cached -- <path>` (the file stays on disk).",
    "EV022": "Run `git add -- <path>`, or `git add -f -- <path>` when an ignore rule hides it; "
             "`check` ends with one grouped command for every such file.",
    "EV030": "Rename (`git mv`) or merge one of the two files, and update links to it.",
    "EV031": "Move a file that is not a page to `assets/`, or rename the page (`git mv`) to an "
             "NFC name that Windows accepts.",
    "EV032": "Run `git mv` to the same name without the leading dots.",
    "EV033": "Run `git mv` to the same stem with `.md`.",
    "EV034": "Rename the page (`git mv`) to a plain name.",
    "EV035": "Rename the page (`git mv`) to a name of at most 234 bytes and update links to it.",
    "EV040": "Replace the link with the regular file it points at.",
    "EV041": "Run `echoes-lint init` (it also migrates a legacy vault), or restore the committed "
             "marker.",
    "EV042": "Remove it (`rm -- <path>`) or replace it with a regular file.",
    "EV043": "Delete the comment, or remove the unused codes from it.",
    "EV044": "Correct or remove the code (`echoes-lint rule --all` lists them).",
    "EV045": "Rename the file (`git mv`) to a UTF-8 name.",
    "EV046": "Move the submodule out of the vault (`git rm --cached -- <path>`, then remove the "
             "folder).",
    "EV050": "Correct the link target, or create the page or asset it names.",
    "EV060": "Move each entry of the shared file into its own file under "
             "`daily/YYYY-MM-DD/` (as `append` writes them), then delete the shared file.",
    "EV070": "Write `key: value` with a key of letters, digits, `_` and `-` (`due_date`), or "
             "indent the line under its key.",
    "EV071": "Put the whole value on the key's line.",
    "EV072": "Write the value as one plain or quoted string on the key's line.",
    "EV073": "Close the quote, and write `''` for a quote inside single quotes.",
    "EV074": "Write a value, for example `status: active`.",
    "EV075": "Close the bracket: `stack: [python]`.",
    "EV076": "Keep only the text after `- [[slug]]: `.",
    "EV077": "Remove the NUL bytes; binary content belongs in `assets/`.",
    "EV078": "Delete the line, or make it a heading of another form.",
    "EV080": "Put `> [!warning] DEPRECATED` on the first line of the body, and link to the "
             "page that replaces it.",
    "EV090": "Run `echoes-lint install-merge-driver` with the echoes-lint you use now.",
    "EV091": "Run `echoes-lint install-merge-driver`, which completes the configuration.",
    "EV092": "Run `echoes-lint install-merge-driver` to record the current command.",
}
RULES = {code: replace(rule, fix=_FIXES[code]) for code, rule in sorted(RULES.items())}
