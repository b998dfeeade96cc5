"""Pathological pages for the linear-time tests and benchmarks/bench_linear.py (issue 10 item 9).

Each generator returns the text of one vault page (valid frontmatter unless the case is about
frontmatter) whose size grows linearly with `n`; every one stays below the engine's 8 MiB limit
at the sizes the tests use.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, Tuple

HEAD = "---\ntype: note\nstack: [python]\nstatus: active\nsummary: A hostile page.\n---\n\n"


def link_lines(n: int) -> str:
    """`n` lines of `[[ok]]` (the page `ok.md` exists)."""
    return HEAD + "[[ok]]\n" * n


def frontmatter_conflicts(n: int) -> str:
    """`n` complete conflict blocks inside the frontmatter, each over one key."""
    blocks = "".join(f"<<<<<<< ours\nkey{i}: a\n=======\nkey{i}: b\n>>>>>>> theirs\n"
                     for i in range(n))
    return "---\ntype: note\n" + blocks + "stack: [python]\nstatus: active\nsummary: S.\n---\n"


def inline_code(n: int) -> str:
    """One line with `n` inline code spans that each hold a link (to a missing page, but code
    is not a link), and a real link to a missing page at its end."""
    return HEAD + "[[ok]] " + "`[[nope]]` " * n + "[[missing]]\n"


def separators(n: int) -> str:
    """`n` bare `=======` lines."""
    return HEAD + "=======\n" * n


def frontmatter_sides(n: int) -> Tuple[str, str, str]:
    """(base, ours, theirs) of a page whose `n` extra frontmatter keys all changed differently
    on both sides."""
    def side(value: str) -> str:
        keys = "".join(f"k{i}: {value}\n" for i in range(n))
        return f"---\ntype: note\nstack: [python]\nstatus: active\nsummary: S.\n{keys}---\n\n# T\n"
    return side("0"), side("1"), side("2")


PAGES: Dict[str, Callable[[int], str]] = {
    "link-lines": link_lines,
    "frontmatter-conflicts": frontmatter_conflicts,
    "inline-code": inline_code,
    "separators": separators,
}


# A hang guard, not a timing assertion: every case runs in well under a second after the fix
# and in tens of seconds or minutes with a quadratic algorithm.
GUARD_SECONDS = 20


def run_guarded(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m echoes_lint ARGS` in `cwd`, killed (and the test failed) after the guard."""
    return subprocess.run([sys.executable, "-m", "echoes_lint", *args], cwd=cwd,
                          capture_output=True, text=True, encoding="utf-8",
                          errors="backslashreplace", timeout=GUARD_SECONDS, check=False)
