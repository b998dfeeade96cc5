"""Benchmark: `check`, `resolve` and the merge driver stay linear on hostile pages (issue 10).

    python benchmarks/bench_linear.py               # the issue's sizes as 2N
    python benchmarks/bench_linear.py --scale 0.25  # a quick run

For each hostile page of tests/helpers_linear.py (200,000 `[[ok]]` lines, 20,000 conflict blocks
in frontmatter, 80,000 inline-code spans on a line with links, 900,000 `=======` lines, and a
merge of 100,000 conflicting frontmatter keys) it times the real CLI at size N and 2N in a
committed Git repository, with the floor measured in the same run: a fresh interpreter that
reads the same file(s). A linear command shows a ratio near 2 once the floor (start-up and
reading) is taken off; a quadratic one shows 4 or more. Medians of `--repeat` runs after one
warm-up run, byte-code caching on.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Callable, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from bench_check import MARKER, git, timed  # noqa: E402 - found through the path just set
from helpers_linear import HEAD, PAGES, frontmatter_sides  # noqa: E402

PAGE = "EchoesVault/pages/hostile.md"
READ = "import sys\nfor name in sys.argv[1:]:\n    open(name, 'rb').read()\n"
# (case, command after `python -m echoes_lint`, size N, expected exit status or None)
CASES: List[Tuple[str, List[str], int, Optional[int]]] = [
    ("link-lines", ["check"], 100_000, 0),
    ("frontmatter-conflicts", ["check"], 10_000, 1),
    ("frontmatter-conflicts", ["resolve"], 10_000, 0),
    ("inline-code", ["check"], 40_000, None),
    ("separators", ["check"], 450_000, 1),
    ("separators", ["resolve"], 450_000, 0),
]
MERGE_KEYS = 50_000


def repository(folder: Path, files: List[Tuple[str, str]]) -> Path:
    """A Git repository with a vault holding `files` (path, text), committed."""
    repo = folder / "repo"
    (repo / "EchoesVault" / "pages").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "EchoesVault" / ".echoes-vault.json").write_text(MARKER, encoding="utf-8")
    (repo / "EchoesVault" / "pages" / "ok.md").write_text(HEAD + "# OK\n", encoding="utf-8")
    for relative, text in files:
        (repo / relative).write_bytes(text.encode("utf-8"))
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
        "-c", "commit.gpgsign=false", "commit", "-q", "-m", "hostile")
    return repo


def measure(build: Callable[[Path], Tuple[Path, List[str], List[str]]], expect: Optional[int],
            env: dict[str, str], repeat: int) -> Tuple[float, float]:
    """(seconds of the command, seconds of the floor) for one size."""
    with tempfile.TemporaryDirectory(prefix="echoes-bench-linear-") as temporary:
        repo, command, inputs = build(Path(temporary))
        return (timed(command, repo, env, repeat, expect),
                timed([sys.executable, "-c", READ, *inputs], repo, env, repeat))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every size N")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per command")
    args = parser.parse_args(argv)
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONDONTWRITEBYTECODE", "NO_COLOR", "FORCE_COLOR")}
    python = [sys.executable, "-m", "echoes_lint"]
    rows = []
    with tempfile.TemporaryDirectory(prefix="echoes-bench-cache-") as cache:
        env["PYTHONPYCACHEPREFIX"] = cache
        for case, command, base, expect in CASES:
            for size in (int(base * args.scale), 2 * int(base * args.scale)):
                def page(folder: Path, size: int = size, case: str = case,
                         command: List[str] = command) -> Tuple[Path, List[str], List[str]]:
                    repo = repository(folder, [(PAGE, PAGES[case](size))])
                    return repo, [*python, *command], [PAGE]
                print(f"{case} {' '.join(command)} at {size:,} ...", flush=True)
                rows.append((f"{' '.join(command)} {case}", size,
                             *measure(page, expect, env, args.repeat)))
        for size in (int(MERGE_KEYS * args.scale), 2 * int(MERGE_KEYS * args.scale)):
            def merge(folder: Path, size: int = size) -> Tuple[Path, List[str], List[str]]:
                sides = list(zip(("O", "A0", "B"), frontmatter_sides(size)))
                repo = repository(folder, [(name, text) for name, text in sides])
                # The driver overwrites %A: every run starts again from a copy.
                driver = (f"cp A0 A && {' '.join(python)} merge-driver O A B {PAGE} 2>/dev/null"
                          " || test $? -eq 1")
                return repo, ["sh", "-c", driver], ["O", "A0", "B"]
            print(f"merge-driver frontmatter-keys at {size:,} ...", flush=True)
            rows.append(("merge-driver frontmatter-keys", size, *measure(merge, 0, env,
                                                                          args.repeat)))

    print(f"\nPython {sys.version.split()[0]}, median of {args.repeat} runs; floor = a fresh "
          "interpreter reading the same file(s)\n")
    print(f"{'command and page':<38} {'N':>9} {'N ms':>8} {'2N ms':>8} {'ratio':>6} "
          f"{'floor N':>8} {'floor 2N':>9} {'net ratio':>9}")
    for (name, size, small, small_floor), (_name, _size, large, large_floor) in \
            zip(rows[::2], rows[1::2]):
        net = (large - large_floor) / max(small - small_floor, 1e-9)
        print(f"{name:<38} {size:>9,} {small * 1000:>8.0f} {large * 1000:>8.0f} "
              f"{large / small:>6.2f} {small_floor * 1000:>8.0f} {large_floor * 1000:>9.0f} "
              f"{net:>9.2f}")
    print("\nA linear command has a net ratio near 2 (start-up makes the plain ratio lower); "
          "a quadratic one, 4 or more.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
