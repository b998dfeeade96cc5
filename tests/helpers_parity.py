"""Parity with the reference engine: observe what an installed runtime decides about a vault,
and generate the random pages and page names that the parity tests feed both engines.

`observe` runs one runtime script as a vault's project runtime (copied to
`.echoes-vault/echoes_vault.py`, run with `python -I`) and records what parity is about: whether
`rebuild-index` accepts the vault, the index bytes, the invalid pages `status` lists, and the
`hash` of every page. An observation is plain data, so the differential test compares two of
them with `==`; a later comparison adds a field here, not a second runner.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from conftest import MARKER

from echoes_lint import engine

ENGINE_FILE = Path(engine.__file__)
RUNTIME = Path(".echoes-vault/echoes_vault.py")
PAGES = Path("EchoesVault/pages")
TIMEOUT = 120


def run_runtime(workspace: Path, *args: str, payload: Optional[Any] = None,
                ) -> subprocess.CompletedProcess[bytes]:
    """The workspace's installed runtime, isolated from every installed package."""
    stdin = None if payload is None else json.dumps(payload).encode("utf-8")
    return subprocess.run([sys.executable, "-I", str(RUNTIME), "--workspace", ".", *args],
                          cwd=workspace, input=stdin, capture_output=True, check=False,
                          timeout=TIMEOUT)


def make_workspace(root: Path, script: Path, pages: Dict[str, bytes]) -> Path:
    """A vault laid out by hand with `script` as its project runtime and `pages` (name -> bytes)
    in pages/; no Git, so that only page handling can differ."""
    (root / RUNTIME.parent).mkdir(parents=True)
    shutil.copyfile(script, root / RUNTIME)
    vault = root / "EchoesVault"
    for name in ("pages", "daily", "assets", "raw"):
        (vault / name).mkdir(parents=True, exist_ok=True)
    (vault / engine.MARKER_FILE).write_text(json.dumps(MARKER, indent=2) + "\n", encoding="utf-8")
    for name, data in pages.items():
        (root / PAGES / name).write_bytes(data)
    return root


def _stem(entry: str) -> str:
    """A page named in `invalidFrontmatter`, by its stem as stored (the reference's form) or
    by its vault path."""
    if not entry.startswith("pages/"):
        return entry
    name = entry[len("pages/"):]
    return name[:-3] if engine.is_page_file_name(name) else name


@dataclasses.dataclass(frozen=True)
class Observation:
    accepted: bool
    index: Optional[bytes]
    invalid: Tuple[str, ...]
    hashes: Tuple[Tuple[str, Optional[str]], ...]
    """(name as asked, sha256 or None when refused) for every page name asked."""
    written: Optional[Tuple[bool, Optional[bytes]]] = None
    """(accepted, index bytes after) of `upsert` of the page asked, if one was."""


UPSERTED = "written-page.md"


def observe(workspace: Path, names: Sequence[str], upsert: Optional[str] = None) -> Observation:
    """What the workspace's runtime decides: `rebuild-index`, then `status`, then `hash` of each
    name in `names`, then (with `upsert`) `upsert` of that content as a new page."""
    rebuilt = run_runtime(workspace, "rebuild-index")
    index_path = workspace / "EchoesVault" / engine.INDEX_FILE
    index = index_path.read_bytes() if index_path.exists() else None
    status = run_runtime(workspace, "status")
    assert status.returncode == 0, status.stderr
    health = json.loads(status.stdout)["health"]
    invalid = tuple(sorted({_stem(entry) for entry in health["invalidFrontmatter"]}))
    hashes: List[Tuple[str, Optional[str]]] = []
    for name in names:
        answer = run_runtime(workspace, "hash", name)
        hashes.append((name, json.loads(answer.stdout)["sha256"] if answer.returncode == 0
                       else None))
    written = None
    if upsert is not None:
        answer = run_runtime(workspace, "upsert", "--payload", "-",
                             payload={"filename": UPSERTED, "content": upsert})
        written = (answer.returncode == 0,
                   index_path.read_bytes() if index_path.exists() else None)
    return Observation(rebuilt.returncode == 0, index, invalid, tuple(hashes), written)


# --- Random pages and names ------------------------------------------------------------------

# Frontmatter lines an editor, a merge or a hand may leave; each is one line without its ending.
KEY_LINES = (
    "type: note", "type: 'architecture'", 'type: "decision"', "type: ''", 'type: ""',
    "type:", "type: [a, b]", "type: >", "type: 'it''s'", "type: 'open", "type: 'a'b'",
    "stack: []", "stack: [python", "stack: [python, go]", "stack:", "stack: {a: 1}",
    "status: active", "status: Deprecated", "status: DEPRECATED", 'status: " deprecated"',
    "status: 'deprecated'", "status:", "status: |", 'status: "\\u0064eprecated"',
    "summary: A page.", "summary: Deprecated thing", "summary: " + "x" * 160,
    "summary: " + "y" * 161, "summary:", 'summary: "two\\nlines"', 'summary: "bad \\q"',
    'summary: "unterminated', "summary: 'quoted'", "summary: - [[p]]: legacy row",
    "summary: =======", "summary: |||||||", "summary: <<<<<<< ours", "summary: a   b\tc",
    'summary: "  "', "summary: >", "summary: [x]", 'summary: "x" # comment', "summary: 5",
    "due date: 2026-12-01", '"quoted": v', "x.y: 1", "tags:", "  - one", "  - two", "- item",
    "# comment", "   # indented comment", "", "   ", "\tindented", "\xa0nbsp: v", "aliases: [a]",
    "nested:", "  child: 1", "  deeper:", "    leaf: x", "text: |", "  folded line", "Type: x",
    "key:value", "key :v", ":empty", "created: 2026-01-01", "ok-key_2: v", "---x", "--- ",
    "summary:    spaced   out   ", "summary: a\x85b", 'summary: "\u2028"', "status: 'DEPRECATED'",
    "summary: deprecated: old", 'summary: "DEPRECATED \u2014 x"', "summary: caf\u00e9 \u00a0x",
    "type: note\u00a0", "stack: \u3000", "summary: >>>>>>> theirs", "---",
)
BODY_LINES = (
    "# Title", "Some text.", "=======", "<<<<<<< HEAD", ">>>>>>> branch", "|||||||", "---",
    "", "see [[other]]", "=======  ", "line\x0bwith vertical tab", "a\u2028b", "c\x85d",
)
SEPARATORS = ("\n", "\n", "\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028")
STEMS = ("notes", "Notes", "NOTES", "caf\u00e9", "cafe\u0301", "Stra\u00dfe", "STRASSE", "a.b",
         "a..b", ".hidden", ".", "x y", "\u00e9t\u00e9", "tab\tname", "CON", "deep-dive_2")
SUFFIXES = (".md", ".md", ".md", ".MD", ".Md", ".mD", ".txt", "", ".md.bak")


def random_frontmatter(rng: random.Random) -> List[str]:
    """Frontmatter lines, mostly a valid page with some lines replaced, added or dropped."""
    lines = ["type: note", "stack: [python]", "status: active", "summary: A page."]
    for _ in range(rng.randrange(4)):
        action = rng.randrange(3)
        if action == 0 and lines:
            lines[rng.randrange(len(lines))] = rng.choice(KEY_LINES)
        elif action == 1:
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(KEY_LINES))
        elif lines:
            del lines[rng.randrange(len(lines))]
    return lines


def random_page(rng: random.Random) -> bytes:
    """One page's bytes: frontmatter, body, a newline style, and sometimes damage (a BOM,
    whitespace around the page, a missing delimiter, invalid UTF-8, a NUL)."""
    lines = ["---", *random_frontmatter(rng), "---"]
    if rng.random() < 0.05:
        del lines[rng.choice((0, -1))]
    lines += [rng.choice(BODY_LINES) for _ in range(rng.randrange(4))]
    separator = rng.choice(SEPARATORS)
    text = "".join(line + (separator if rng.random() < 0.7 else "\n") for line in lines)
    if rng.random() < 0.15:
        text = rng.choice(("\ufeff", "  ", "\n\n", " \t\n", "\x1c")) + text
    if rng.random() < 0.15:
        text += rng.choice(("  ", "\n\n\n", "=======", "======= ", "\t", "\u2029"))
    if rng.random() < 0.02:
        text = rng.choice(("", " \n\t", "---", "---\n---\n", "\n---\n\n---"))
    data = text.encode("utf-8")
    if rng.random() < 0.04:
        data += b"\xff"
    if rng.random() < 0.03:
        data = data.replace(b"Some", b"So\0me")
    return data


def random_name(rng: random.Random) -> str:
    name = rng.choice(STEMS) + rng.choice(SUFFIXES)
    return "dot.md" if name == "." else name


def random_pages(rng: random.Random, most: int = 5) -> Dict[str, bytes]:
    """Page files by name; names may collide after case folding, as in real vaults."""
    return {random_name(rng): random_page(rng) for _ in range(rng.randrange(most + 1))}
