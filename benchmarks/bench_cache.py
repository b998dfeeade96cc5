#!/usr/bin/env python3
"""Measure what the local cache buys: `upsert` of one page at N pages against the same at 1,000,
and `status` with a warm cache against the I/O floor, in one run (medians), with peak memory.

Builds (or reuses, with --keep DIR) two committed vaults of N and 1,000 pages (N/5 and 200 daily
entries) with `benchmarks/bench_status.py`'s builder, runs `init` (which writes the cache), then
alternates: floor (one process reading every vault file), `status`, and `upsert` of a new page in
each vault. Usage:

    python3 benchmarks/bench_cache.py [--pages 100000] [--rounds 5] [--keep DIR]
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
from typing import List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_status import ENGINE, FLOOR, build

# Runs a command and prints its peak resident memory (KB): one process per measure.
PEAK = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
        "stdout=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def timed(command: List[str], payload: Optional[str] = None) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, input=payload, text=True)
    return time.perf_counter() - start


def peak_mb(command: List[str], payload: Optional[str] = None) -> float:
    done = subprocess.run([sys.executable, "-c", PEAK, *command], check=True, input=payload,
                          capture_output=True, text=True)
    return int(done.stdout.strip()) / 1024


def prepare(repo: Path, pages: int) -> List[str]:
    if not (repo / ".git").is_dir():
        repo.mkdir(parents=True)
        build(repo, pages, pages // 5)
    shutil.copyfile(ENGINE, repo / ".echoes-vault" / "echoes_vault.py")
    runtime = [sys.executable, str(repo / ".echoes-vault" / "echoes_vault.py"), "--workspace",
               str(repo)]
    subprocess.run([*runtime, "init"], check=True, stdout=subprocess.DEVNULL)
    return runtime


def upsert(runtime: List[str], name: str) -> Tuple[List[str], str]:
    content = f"---\ntype: note\nstack: [x]\nstatus: active\nsummary: {name}.\n---\n\nBody.\n"
    return [*runtime, "upsert", "--payload", "-"], json.dumps({"filename": name,
                                                              "content": content})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--keep", default=None, help="build the vaults here once and reuse them")
    args = parser.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp())
    large, small = prepare(root / f"vault-{args.pages}", args.pages), prepare(root / "vault-1000",
                                                                              1000)
    floor_command = [sys.executable, "-c", FLOOR, str(root / f"vault-{args.pages}/EchoesVault")]
    report = json.loads(subprocess.run([*large, "status"], check=True, capture_output=True).stdout)
    print("cache:", report["cache"])
    floors, statuses, big, little = [], [], [], []
    stamp = int(time.time())
    for round_number in range(args.rounds):  # alternate so machine noise hits all alike
        floors.append(timed(floor_command))
        statuses.append(timed([*large, "status"]))
        big.append(timed(*upsert(large, f"bench-{stamp}-{round_number}")))
        little.append(timed(*upsert(small, f"bench-{stamp}-{round_number}")))
    status_peak = peak_mb([*large, "status"])
    upsert_peak = peak_mb(*upsert(large, f"bench-{stamp}-peak"))
    floor, status = statistics.median(floors), statistics.median(statuses)
    upsert_large, upsert_small = statistics.median(big), statistics.median(little)
    print(f"{args.pages} pages, {args.rounds} rounds, medians")
    print(f"floor (read every file):      {floor * 1000:8.1f} ms")
    print(f"status, warm cache:           {status * 1000:8.1f} ms  ({status / floor:.2f}x floor)")
    print(f"upsert at {args.pages:>7}:          {upsert_large * 1000:8.1f} ms")
    print(f"upsert at    1000:          {upsert_small * 1000:8.1f} ms  "
          f"(ratio {upsert_large / upsert_small:.1f}x, target <= 3x)")
    print(f"peak memory at {args.pages}: status {status_peak:.0f} MB, upsert {upsert_peak:.0f} MB")
    if not args.keep:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
