"""Reference parity on realistic pages: what editors (Obsidian, VS Code, Git merges, Windows
tools) actually write, through the installed runtime, against facts recorded from the reference
engine 1.1.1 (spec section 21).

The expected values were produced by running the reference engine on exactly these bytes, one
page alone in a vault: whether `rebuild-index` accepts it, its index row, and its `hash` (None
where the reference cannot address the name). The checks run our installed runtime on a vault
of the accepted pages, a vault of all pages, and each refused page alone.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from helpers_parity import ENGINE_FILE, make_workspace, observe, run_runtime

from echoes_lint import engine

V = "---\ntype: note\nstack: [python]\nstatus: active\nsummary: A page.\n---\n\n# Body\n"
BASE = ("type: note", "stack: [python]", "status: active")


def fm(*lines: str, body: str = "\n# Body\n") -> str:
    return "---\n" + "".join(line + "\n" for line in lines) + "---\n" + body


# (id, file name, page text)
PAGES = [
    ("plain", "plain.md", V),
    (
        "obsidian-property-with-space",
        "meeting.md",
        fm(*BASE, "summary: Weekly sync.", "due date: 2026-12-01"),
    ),
    ("quoted-key", "quoted.md", fm(*BASE, "summary: Quoted key.", '"quoted key": value')),
    ("dotted-key", "dotted.md", fm(*BASE, "summary: Dotted key.", "x.y: 1")),
    (
        "nested-map",
        "nested.md",
        fm(*BASE, "summary: Nested map.", "author:", "  name: Ada", "  email: ada@example.invalid"),
    ),
    ("block-list", "tags.md", fm(*BASE, "summary: Tags.", "tags:", "  - alpha", "  - beta")),
    ("flow-list", "aliases.md", fm(*BASE, "summary: Aliases.", "aliases: [one, two]")),
    (
        "folded-extra",
        "folded.md",
        fm(*BASE, "summary: Folded extra.", "description: >", "  long folded", "  text"),
    ),
    (
        "literal-extra",
        "literal.md",
        fm(*BASE, "summary: Literal extra.", "notes: |", "  line one", "  line two"),
    ),
    ("comments", "comments.md", fm("# leading comment", *BASE, "  # indented comment", "summary: Comments.")),
    (
        "dates",
        "dates.md",
        fm(*BASE, "summary: Dates.", "created: 2026-01-01T10:00:00Z", "updated: 2026-02-03"),
    ),
    ("crlf", "crlf.md", V.replace("\n", "\r\n")),
    ("lone-cr", "cr.md", V.replace("\n", "\r")),
    ("bom", "bom.md", "\ufeff" + V),
    (
        "unclosed-stack",
        "unclosed.md",
        fm("type: note", "stack: [python", "status: active", "summary: Unclosed stack."),
    ),
    ("upper-md-suffix", "Notes.MD", fm(*BASE, "summary: Upper suffix.")),
    ("hidden-name", ".draft.md", fm(*BASE, "summary: Hidden draft.")),
    ("duplicate-key", "dup.md", fm(*BASE, "type: other", "summary: Duplicate.")),
    ("block-summary-indicator", "folded-summary.md", fm(*BASE, "summary: >", "  Folded summary text.")),
    ("block-summary-bare", "bare-summary.md", fm(*BASE, "summary:", "  Summary on the next line.")),
    (
        "block-stack",
        "stack-block.md",
        fm("type: note", "stack:", "  - python", "  - go", "status: active", "summary: Block stack."),
    ),
    ("deprecated", "old.md", fm("type: note", "stack: []", "status: Deprecated", "summary: Old approach.")),
    (
        "deprecated-summary-prefixed",
        "older.md",
        fm("type: note", "stack: []", "status: deprecated", "summary: Deprecated: use new."),
    ),
    ("json-escapes", "json.md", fm(*BASE, 'summary: "Tokens \\u2014 \\"JWT\\""')),
    ("single-quoted", "single.md", fm(*BASE, "summary: 'It''s fine'")),
    ("unterminated-single", "open-single.md", fm(*BASE, "summary: 'open quote")),
    ("unterminated-double", "open-double.md", fm(*BASE, 'summary: "open quote')),
    ("summary-too-long", "long.md", fm(*BASE, "summary: " + "x" * 161)),
    ("summary-whitespace", "spaces.md", fm(*BASE, "summary:   many    spaces\there  ")),
    ("conflict-block", "conflict.md", V + "<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> topic\n"),
    ("setext-separator", "setext.md", V + "Heading\n=======\n"),
    ("leading-blank-lines", "leading.md", "\n\n  \n" + V),
    ("closing-with-space", "closing.md", V.replace("A page.\n---", "A page.\n--- ")),
    (
        "empty-quoted-type",
        "empty-type.md",
        fm('type: ""', "stack: []", "status: active", "summary: Empty type."),
    ),
    (
        "space-before-colon",
        "colon.md",
        fm("type : note", "stack: []", "status: active", "summary: Spaced colon."),
    ),
    ("nul-in-body", "nul-body.md", V + "a\0b\n"),
    ("summary-index-row", "row.md", fm(*BASE, "summary: - [[other]]: Legacy row text.")),
    ("trailing-separator-after-trim", "trailing.md", V + "=======   \n"),
    (
        "padded-quoted-status",
        "padded.md",
        fm("type: note", "stack: []", 'status: " deprecated"', "summary: Padded status."),
    ),
    (
        "line-separator-in-frontmatter",
        "lsep.md",
        "---\ntype: note\u2028stack: []\nstatus: active\nsummary: Line separator.\n---\n",
    ),
    (
        "tab-continuation",
        "tab.md",
        fm("type: note", "\tmore", "stack: []", "status: active", "summary: Tab continuation."),
    ),
    ("nfd-name", "cafe\u0301.md", fm(*BASE, "summary: Decomposed name.")),
    ("no-frontmatter", "plain-note.md", "# Just a note\n\nText.\n"),
    ("summary-continuation", "cont.md", fm(*BASE, "summary: First line", "  second line")),
]

# id -> (accepted by `rebuild-index`, index row or None, `hash` or None), from the reference.
REFERENCE = {
    "plain": (
        True,
        "- [[plain]]: A page.",
        "58ea4471ca0eeeb3fd0462379b68e42abc3566399b8be6c287cebcc62f0184dc",
    ),
    "obsidian-property-with-space": (
        True,
        "- [[meeting]]: Weekly sync.",
        "dfca88475bc119dc447e50f31ffa68a6e2024a8444a341fac3d23b7f4cf4a047",
    ),
    "quoted-key": (
        True,
        "- [[quoted]]: Quoted key.",
        "1c1ae0cbdc4b8c198bb013d557cff741b9a9a35c887daeaa4390f415d6051896",
    ),
    "dotted-key": (
        True,
        "- [[dotted]]: Dotted key.",
        "b467fa3c70b6ec6c9f8ccbfa3ba637236919a89e4b6f10faaf9ab996b06ad85f",
    ),
    "nested-map": (
        True,
        "- [[nested]]: Nested map.",
        "f816c5cf7291ebe38a64929bdc6ce43b3d01c24b7bac703404bf247ba50b0b93",
    ),
    "block-list": (
        True,
        "- [[tags]]: Tags.",
        "17b02b11b7b741b22685c7541de108a4d15371bd5b679e6ca1357248ea9f643d",
    ),
    "flow-list": (
        True,
        "- [[aliases]]: Aliases.",
        "2f2d34692fd6a9a1655d8f897bf403bdcbba80467ecaec513cf94bf267314954",
    ),
    "folded-extra": (
        True,
        "- [[folded]]: Folded extra.",
        "eca24188344d90526c6e4cf5d433da34d92cceb7c448eb63274e60b6ee4fa622",
    ),
    "literal-extra": (
        True,
        "- [[literal]]: Literal extra.",
        "cd5d2c10b97b245b889006f99fcd58bdb596efd05703a7fffea4b24b74f3d7d5",
    ),
    "comments": (
        True,
        "- [[comments]]: Comments.",
        "5023abf4944cfc48125099538613caccee5a9a19080af40a0d82466eb654c227",
    ),
    "dates": (
        True,
        "- [[dates]]: Dates.",
        "86c1d8a2172e74f73b4aba3a2b6e61ffc88fb88c83918d2d534467fc2ca675a8",
    ),
    "crlf": (True, "- [[crlf]]: A page.", "58ea4471ca0eeeb3fd0462379b68e42abc3566399b8be6c287cebcc62f0184dc"),
    "lone-cr": (
        True,
        "- [[cr]]: A page.",
        "58ea4471ca0eeeb3fd0462379b68e42abc3566399b8be6c287cebcc62f0184dc",
    ),
    "bom": (False, None, "45f86a22638fcbe71a0735ef0aa225ee6c331d8207b6858045f30ca8ae1ccae1"),
    "unclosed-stack": (
        True,
        "- [[unclosed]]: Unclosed stack.",
        "b41ccbd4f99f76ef9f36d205656d4fe10233bb0262b292407c35eb1c683f0f6b",
    ),
    "upper-md-suffix": (True, "- [[Notes]]: Upper suffix.", None),
    "hidden-name": (True, "- [[.draft]]: Hidden draft.", None),
    "duplicate-key": (False, None, "21cc7d42e6b9e7cd34cb8c888b161cc2783d31fb3ffadac73913a11eca11ba88"),
    "block-summary-indicator": (
        True,
        "- [[folded-summary]]: >",
        "173a90d1bcdfd71983cace6c7c7743284a380f6114bcbf420865d744c8d7abff",
    ),
    "block-summary-bare": (False, None, "7ca65f099045731c8e949ea754c4a1ff389b6ee6867ad81badb22851a97ae417"),
    "block-stack": (
        True,
        "- [[stack-block]]: Block stack.",
        "38828b23015fa8cdfe0eda5f8e1b08db5015f32f0553cbae825759abb31670a2",
    ),
    "deprecated": (
        True,
        "- [[old]]: DEPRECATED — Old approach.",
        "e282453082a2f4f30b5f8ead34eb34d77b4d773e7c9ad2b932d3c6ba261aee8b",
    ),
    "deprecated-summary-prefixed": (
        True,
        "- [[older]]: Deprecated: use new.",
        "0c830c59ce59239bdfd3e53ea95a54b133e27843df137711da48748179135d09",
    ),
    "json-escapes": (
        True,
        '- [[json]]: Tokens — "JWT"',
        "1003928d0b1be7575cac403d620f6a4c18469a1db2e6af16e45f07512055dd0a",
    ),
    "single-quoted": (
        True,
        "- [[single]]: It's fine",
        "ba2040fedcb769de87e6e8264102cf902cef1aaeb78b4b227cfa365997f4474b",
    ),
    "unterminated-single": (
        True,
        "- [[open-single]]: 'open quote",
        "f0a4c73cf9914dfc93c12a0c9b1a0a4c246a478e4982e4886d85e788082ce7d7",
    ),
    "unterminated-double": (False, None, "99ad2dfc42799c7c0195ad7c43d0df82f7320f79dcde7b55b5fc0284929974c4"),
    "summary-too-long": (False, None, "1c848469955377d4ef40020fbe9d947ce44d686fefcb0206d047e8974322af6c"),
    "summary-whitespace": (
        True,
        "- [[spaces]]: many spaces here",
        "6f7afa2b461af7cdf3353caa9c42937a9da519085b0947a59b34ab60d0195f5d",
    ),
    "conflict-block": (False, None, "6c109d1867fdbba1f97314ac43038f9712f00db5aa9556a543a1312a3d1c70fd"),
    "setext-separator": (False, None, "788309cc84f7aa72ac77a8acd17f8c90dc03a5185e08e4358f5f07b88a335935"),
    "leading-blank-lines": (
        True,
        "- [[leading]]: A page.",
        "f8214c2a14d98f58b7f207696df02985a9424f8f55bd9dcf5f106f9ecde62604",
    ),
    "closing-with-space": (False, None, "ee1f050c0ec21ca1ed4399b72e8f1b28ea76be7b7c5003c668674dddf18aed4c"),
    "empty-quoted-type": (
        True,
        "- [[empty-type]]: Empty type.",
        "c2e3d29ea1527dbf3621e847cf46a2a54c8e0e2f61cadb70612e4e946f87a3bb",
    ),
    "space-before-colon": (False, None, "81b30d280d1ce840f2a1f22894a19af52dcebaddc25e38ce6bed3fac984fcb5b"),
    "nul-in-body": (
        True,
        "- [[nul-body]]: A page.",
        "628e6795bef5ec04d8b24e63cb4dbce9de32e38b0df65be710aaefb744bbbbd7",
    ),
    "summary-index-row": (
        True,
        "- [[row]]: Legacy row text.",
        "f9086072c4b1b8c432ca65b5003e68baad9511484fae0d571dba7444b195fe79",
    ),
    "trailing-separator-after-trim": (
        False,
        None,
        "3bb66626a6090c156e7b8710de4d59be9e6e1cf2a43cc7b60addd76878c44d9d",
    ),
    "padded-quoted-status": (
        True,
        "- [[padded]]: Padded status.",
        "27555b6ce9426a252f86b64a5c2ed0b08811c7f42bc528e1f4c2cbfc1b3a9f38",
    ),
    "line-separator-in-frontmatter": (
        True,
        "- [[lsep]]: Line separator.",
        "de535f4bfe1bfa809ce6096637ad4972962679ed455e1e9df9aac699518e790c",
    ),
    "tab-continuation": (
        True,
        "- [[tab]]: Tab continuation.",
        "27d4daa147971c4a8f5fcca45d5ff08bbbe614c34a1b20b89069b657f1aaa0e4",
    ),
    "nfd-name": (True, "- [[café]]: Decomposed name.", None),
    "no-frontmatter": (False, None, "ff6e9ff846e29fe5f500a13af1254f7b0c8fd0bfc2b3fcba65eb7ef26006720c"),
    "summary-continuation": (
        True,
        "- [[cont]]: First line",
        "de5fa0e20c1d12ca134123e6cb19f9318c43efb3076a799c2114461832db7039",
    ),
}


# sha256 of the reference's index of every accepted page above, in one vault.
REFERENCE_INDEX_SHA256 = "5dc94d8ff78acc9238b54985e478f97e2d086d49f0cb82abb500d87485471245"


def test_the_table_covers_what_editors_write() -> None:
    assert len(PAGES) >= 30 and set(REFERENCE) == {ident for ident, _name, _text in PAGES}


def test_accepted_pages_index_as_the_reference_indexes_them(tmp_path: Path) -> None:
    accepted = [(name, text) for ident, name, text in PAGES if REFERENCE[ident][0]]
    workspace = make_workspace(tmp_path, ENGINE_FILE, {name: text.encode() for name, text in accepted})
    observed = observe(workspace, [])
    assert observed.accepted and observed.invalid == ()
    # The rows in the index order of spec section 8: NFC file name, case-folded, then itself.
    order = sorted(accepted, key=lambda item: (engine.nfc(item[0]).casefold(), engine.nfc(item[0])))
    rows = [REFERENCE[ident][1] for name, _text in order for ident, other, _ in PAGES if other == name]
    assert observed.index == (engine.INDEX_HEADER + "\n" + "\n".join(rows) + "\n").encode()
    assert hashlib.sha256(observed.index).hexdigest() == REFERENCE_INDEX_SHA256


def test_every_page_hashes_and_is_judged_as_the_reference_does(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path, ENGINE_FILE, {name: text.encode() for _i, name, text in PAGES})
    observed = observe(workspace, [name for _ident, name, _text in PAGES])
    assert not observed.accepted
    assert observed.invalid == tuple(
        sorted(name[:-3] for ident, name, _text in PAGES if not REFERENCE[ident][0])
    )
    expected = []
    for ident, name, text in PAGES:
        sha = REFERENCE[ident][2]
        if engine.nfc(name) != name:
            # Documented leniency: the reference does not find a page stored under a non-NFC name.
            assert sha is None
            sha = hashlib.sha256(text.encode()).hexdigest()
        expected.append((name, sha))
    assert observed.hashes == tuple(expected)


@pytest.mark.parametrize(
    ("name", "text"),
    [(name, text) for ident, name, text in PAGES if not REFERENCE[ident][0]],
    ids=[ident for ident, _name, _text in PAGES if not REFERENCE[ident][0]],
)
def test_each_refused_page_alone_keeps_the_index_from_being_built(
    tmp_path: Path, name: str, text: str
) -> None:
    index = tmp_path / "EchoesVault" / engine.INDEX_FILE
    workspace = make_workspace(tmp_path, ENGINE_FILE, {name: text.encode()})
    refused = run_runtime(workspace, "rebuild-index")
    assert refused.returncode == 2 and name.encode() in refused.stderr
    assert not index.exists()


def test_writers_write_every_accepted_page_whose_name_they_can_address(tmp_path: Path) -> None:
    # The case: one page an editor wrote (`due date: ...`) must not block `end`.
    meeting = next(text for ident, _name, text in PAGES if ident == "obsidian-property-with-space")
    workspace = make_workspace(tmp_path, ENGINE_FILE, {"meeting.md": meeting.encode()})
    writable = [
        (name, text)
        for ident, name, text in PAGES
        if REFERENCE[ident][0]
        and name != "meeting.md"
        and engine.nfc(name) == name
        and not name.startswith(".")
        and name.endswith(".md")
    ]
    payload = {
        "dailySummary": "Saved every page.",
        "pages": [{"filename": name, "content": text} for name, text in writable],
    }
    saved = run_runtime(workspace, "end", "--confirm-explicit-user-end", "--payload", "-", payload=payload)
    assert saved.returncode == 0, saved.stderr
    for name, text in writable:
        stored = (workspace / "EchoesVault" / "pages" / name).read_bytes()
        # What the reference stores (content trimmed, one final newline), with Unix newlines.
        assert stored == (text.replace("\r\n", "\n").replace("\r", "\n").strip() + "\n").encode()
    updated = run_runtime(
        workspace,
        "upsert",
        "--payload",
        "-",
        payload={
            "filename": "meeting.md",
            "content": meeting.replace("Weekly", "Monthly"),
            "expectedSha256": REFERENCE["obsidian-property-with-space"][2],
        },
    )
    assert updated.returncode == 0, updated.stderr
    index = (workspace / "EchoesVault" / engine.INDEX_FILE).read_text(encoding="utf-8")
    assert "- [[meeting]]: Monthly sync.\n" in index
