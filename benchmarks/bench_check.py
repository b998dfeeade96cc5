"""Benchmark `echoes-lint check` against baselines measured in the same run.

    python benchmarks/bench_check.py               # 10,000 pages
    python benchmarks/bench_check.py --pages 500   # a quick run

Builds a vault of N valid pages (each with a wikilink) in a committed Git repository in a
temporary folder, then reports the median wall time of:

* the whole-vault check, `python -m echoes_lint check`, against a plain Python loop that reads
  every page (also a fresh interpreter, so both pay the start-up). Target: within 3x;
* the one-file pre-commit hook (`echoes-lint-hook <page>`, what pre-commit runs for one staged
  page) and the plain Git hook (`check --staged`) against `git ls-files -z` plus an interpreter
  that does nothing. Target: within 2x.

Every command runs as a subprocess with byte-code caching on (in a temporary cache folder), after
one warm-up run, as it would for an installed package.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

MARKER = """{
  "schemaVersion": 3,
  "protocolVersion": "1.0.0",
  "generatedIndex": true,
  "dailyLayout": "unique-files-v1",
  "runtime": ".echoes-vault/echoes_vault.py",
  "requiredFrontmatter": ["type", "stack", "status", "summary"]
}
"""
PAGE = """---
type: note
stack: [python]
status: active
summary: Page {n} of the benchmark vault, about one subsystem.
---

# Page {n}

Facts about subsystem {n}. Related: [[page-{next:05d}]].
"""
READ_LOOP = """
import os, sys
folder = os.path.join(sys.argv[1], "EchoesVault", "pages")
for name in os.listdir(folder):
    with open(os.path.join(folder, name), "rb") as handle:
        handle.read()
"""
HOOK = "import sys; from echoes_lint.precommit import lint_main; sys.exit(lint_main(sys.argv[1:]))"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def build_vault(repo: Path, pages: int) -> str:
    """A committed vault of `pages` pages, with one page modified and staged; returns its path."""
    git(repo, "init", "-q", "-b", "main")
    vault = repo / "EchoesVault"
    folder = vault / "pages"
    folder.mkdir(parents=True)
    (vault / ".echoes-vault.json").write_text(MARKER, encoding="utf-8")
    (vault / ".gitignore").write_text("# Generated locally by EchoesVault\n/index.md\n",
                                      encoding="utf-8")
    for n in range(pages):
        (folder / f"page-{n:05d}.md").write_bytes(
            PAGE.format(n=n, next=(n + 1) % pages).encode("utf-8"))
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
        "-c", "commit.gpgsign=false", "commit", "-q", "-m", "vault")
    staged = "EchoesVault/pages/page-00000.md"
    with (repo / staged).open("ab") as handle:
        handle.write(b"\nOne more fact.\n")
    git(repo, "add", "--", staged)
    return staged


def timed(command: list[str], cwd: Path, env: dict[str, str], repeat: int,
          expect: Optional[int] = 0) -> float:
    """Median seconds of `repeat` runs after one warm-up run."""
    samples = []
    for attempt in range(repeat + 1):
        start = time.perf_counter()
        completed = subprocess.run(command, cwd=cwd, env=env, capture_output=True, check=False)
        elapsed = time.perf_counter() - start
        if expect is not None and completed.returncode != expect:
            sys.exit(f"{' '.join(command)} exited {completed.returncode}:\n"
                     f"{completed.stdout.decode()}{completed.stderr.decode()}")
        if attempt:
            samples.append(elapsed)
    return statistics.median(samples)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=10_000, help="pages in the vault")
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per command")
    args = parser.parse_args(argv)
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="echoes-bench-") as temporary:
        repo = Path(temporary) / "repo"
        repo.mkdir()
        print(f"Building a {args.pages}-page vault in a Git repository ...", flush=True)
        staged = build_vault(repo, args.pages)
        env = {key: value for key, value in os.environ.items()
               if key not in ("PYTHONDONTWRITEBYTECODE", "NO_COLOR", "FORCE_COLOR")}
        env["PYTHONPYCACHEPREFIX"] = str(Path(temporary) / "pycache")

        def run(command: list[str], expect: Optional[int] = 0) -> float:
            return timed(command, repo, env, args.repeat, expect)

        read_loop = run([python, "-c", READ_LOOP, str(repo)])
        whole = run([python, "-m", "echoes_lint", "check"])
        startup = run([python, "-c", "pass"])
        ls_files = run(["git", "ls-files", "-z"])
        hook = run([python, "-c", HOOK, staged])
        plain_hook = run([python, "-m", "echoes_lint", "check", "--staged"])

    hook_baseline = startup + ls_files
    rows = [
        ("baseline: python loop reading every page", read_loop, None, None),
        ("echoes-lint check (whole vault)", whole, whole / read_loop, 3.0),
        ("baseline: interpreter start-up", startup, None, None),
        ("baseline: git ls-files -z", ls_files, None, None),
        ("echoes-lint-hook <one staged page>", hook, hook / hook_baseline, 2.0),
        ("echoes-lint check --staged (plain hook)", plain_hook, plain_hook / hook_baseline, 2.0),
    ]
    print(f"\n{args.pages} pages, Python {sys.version.split()[0]}, median of {args.repeat} runs\n")
    print(f"{'command':<44} {'ms':>8} {'ratio':>7} {'target':>7}")
    for name, seconds, ratio, target in rows:
        ratio_text = f"{ratio:.2f}x" if ratio is not None else ""
        target_text = f"<={target:.0f}x" if target is not None else ""
        print(f"{name:<44} {seconds * 1000:>8.1f} {ratio_text:>7} {target_text:>7}")
    print("\nHook ratios are against interpreter start-up plus `git ls-files -z`.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
