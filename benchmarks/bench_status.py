#!/usr/bin/env python3
"""Benchmark `status` of the portable runtime against a floor measured in the same run.

Builds a committed Git repository holding a vault of N pages (default 5,000) and M daily entries
(default 1,000), then times, alternately and several times each:

- floor:  one Python process that reads every file of the vault once;
- status: `python3 .echoes-vault/echoes_vault.py --workspace REPO status`.

Both include interpreter start-up; `status` also includes its Git calls. The figure that matters
is the ratio of the medians (target: at most 2x). Usage:

    python3 benchmarks/bench_status.py [--pages 5000] [--daily 1000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "echoes_lint" / "engine.py"
sys.path.insert(0, str(ROOT))
from echoes_lint.engine import MARKER_VALUE  # noqa: E402 - the checkout's engine, not an install

FLOOR = """
import os, sys
total = 0
for directory, _dirs, files in os.walk(sys.argv[1]):
    for name in files:
        with open(os.path.join(directory, name), "rb") as handle:
            total += len(handle.read())
print(total)
"""



def build(repo: Path, pages: int, daily: int) -> None:
    vault = repo / "EchoesVault"
    for name in ("pages", "assets", "raw"):
        (vault / name).mkdir(parents=True)
    (vault / ".echoes-vault.json").write_text(json.dumps(MARKER_VALUE, indent=2) + "\n")
    (vault / ".gitignore").write_text("# Generated locally by EchoesVault\n/index.md\n")
    runtime = repo / ".echoes-vault"
    runtime.mkdir()
    shutil.copyfile(ENGINE, runtime / "echoes_vault.py")
    (runtime / ".gitignore").write_text("# EchoesVault runtime files\n/state.json\n/lock\n")
    body = "\n".join(f"Paragraph {i} about services, tokens and [[page-{i}]]." for i in range(40))
    for number in range(pages):
        status = "deprecated" if number % 50 == 0 else "active"
        (vault / "pages" / f"page-{number:05d}.md").write_text(
            f"---\ntype: architecture\nstack: [python, postgresql]\nstatus: {status}\n"
            f"summary: Page {number} describes one durable decision of the project.\n---\n\n"
            f"# Page {number}\n\n{body}\n"
        )
    for number in range(daily):
        day = vault / "daily" / f"2026-{1 + number % 12:02d}-{1 + number % 28:02d}"
        day.mkdir(parents=True, exist_ok=True)
        (day / f"2026{1 + number % 12:02d}{1 + number % 28:02d}T120000{number:06d}Z-session-"
               f"codex-{number:08x}.md").write_text(
            f"### Session — 2026-01-01T12:00:00+00:00\n\nAgent: `codex`\n\n- Entry {number}.\n"
        )
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b",
                                                     "commit", "-qm", "vault"]):
        subprocess.run(["git", *command], cwd=repo, check=True)


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=5000)
    parser.add_argument("--daily", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        repo = Path(temporary) / "repo"
        repo.mkdir()
        build(repo, args.pages, args.daily)
        floor_command = [sys.executable, "-c", FLOOR, str(repo / "EchoesVault")]
        status_command = [sys.executable, str(repo / ".echoes-vault" / "echoes_vault.py"),
                          "--workspace", str(repo), "status"]
        report = json.loads(subprocess.run(status_command, check=True, capture_output=True).stdout)
        assert report["health"]["totalPages"] == args.pages, report["health"]
        floors, runs = [], []
        for _ in range(args.rounds):  # alternate so machine noise hits both alike
            floors.append(timed(floor_command))
            runs.append(timed(status_command))
    floor, status = statistics.median(floors), statistics.median(runs)
    print(f"vault: {args.pages} pages, {args.daily} daily entries; {args.rounds} rounds, medians")
    print(f"floor (read every file once): {floor * 1000:8.1f} ms")
    print(f"status (portable runtime):    {status * 1000:8.1f} ms")
    print(f"ratio status/floor:           {status / floor:8.2f}x  (target <= 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
