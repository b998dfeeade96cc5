#!/usr/bin/env python3
"""Benchmark every command at 1,000, 5,000 and (with --large) 100,000 pages (issue 13).

    python benchmarks/bench_scale.py                  # 1,000 and 5,000 pages
    python benchmarks/bench_scale.py --large          # and 100,000 (the build takes minutes)
    python benchmarks/bench_scale.py --sizes 500      # a quick run

For each size N it builds ONCE a committed Git repository holding a vault of N pages and N/5
daily entries with the portable runtime installed, and keeps it under $ECHOES_BENCH_CACHE
(default: /tmp/echoes-bench-scale) for the next run; each run first puts the repository back to
its commit and installs the checkout's engine as the runtime. Every command runs with the Python
of a virtual environment kept there too, into which each run installs the checkout as users get
it (a built wheel; `--no-install` times the running Python's echoes_lint instead, whose editable
install costs every process about 9 ms at start, the floor's included). It then runs one write
(`rebuild-index`), so that read-only commands meet a vault with nothing changed since the last
write, and times every command as a fresh subprocess, interleaved round by round so that machine
noise hits all alike: the I/O floor (one Python process reading every vault file), `status`,
`inspect`, `search` (a word on every page, and one on none), `check`, `ci`, the one-file
pre-commit hook (its console script, as pre-commit runs it), then the writers `start`,
`upsert` (one new page), `append` and `end` (one new page), then the cold paths, which read
every file whatever the cache holds: `rebuild-index` (with nothing changed: it leaves the vault
and the cache as they were) and `status` with the cache moved aside for the run (a fresh
clone's), timed with the read-only commands and printed last. It prints the median wall time
and the peak resident memory of each command (the child's own `ru_maxrss`, from wait4), then
the issue's ratios measured in this run. After the steady-state writers it times one more
scenario, printed under the table: one page edited outside the engine, then `upsert` twice (the
write that meets the change, and the one after it, which should cost what a steady-state
`upsert` costs: the first left a cache that describes the vault as it left it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from bench_status import FLOOR  # one I/O floor for every benchmark

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "echoes_lint" / "engine.py"
RUNTIME = ".echoes-vault/echoes_vault.py"
CACHE = ".echoes-vault/cache.json"
# Bump when the generated vault changes, so that a cached repository of another shape is rebuilt.
LAYOUT = 1
GIT_IDENTITY = ("-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
                "-c", "commit.gpgsign=false")

# The scenario after an outside edit (printed under the table, not in it): the write that meets
# the change, then the one after it.
CLIFF = ("upsert (edited outside)", "upsert (the next)")
EDITED = "EchoesVault/pages/page-000005.md"

BODY = "\n".join(f"Paragraph {i} about services, tokens and [[page-{i:06d}]]." for i in range(20))


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *GIT_IDENTITY, *args], cwd=repo, check=True, capture_output=True)


def page(number: int) -> str:
    status = "deprecated" if number % 50 == 0 else "active"
    return (f"---\ntype: architecture\nstack: [python, postgresql]\nstatus: {status}\n"
            f"summary: Page {number} describes one durable decision of the project.\n---\n\n"
            f"# Page {number}\n\nThe common word everywhere.\n\n{BODY}\n")


def build(repo: Path, pages: int, env: Dict[str, str]) -> None:
    """A committed repository with an initialised vault of `pages` pages and pages/5 entries."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    subprocess.run([sys.executable, str(ENGINE), "--workspace", str(repo), "init"], check=True,
                   capture_output=True, env=env)
    vault = repo / "EchoesVault"
    for number in range(pages):
        (vault / "pages" / f"page-{number:06d}.md").write_text(page(number), encoding="utf-8")
    for number in range(pages // 5):
        month, day = 1 + number % 12, 1 + number % 28
        folder = vault / "daily" / f"2026-{month:02d}-{day:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"2026{month:02d}{day:02d}T120000{number:06d}Z-session-codex-"
                  f"{number:08x}.md").write_text(
            f"### Session — 2026-01-01T12:00:00+00:00\n\nAgent: `codex`\n\n- Entry {number}.\n",
            encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "vault")


def prepare(cache: Path, pages: int, env: Dict[str, str]) -> Path:
    """The cached repository of `pages` pages, back at its commit, running this checkout's
    engine, with one page staged for the hook."""
    repo = cache / f"layout{LAYOUT}-{pages}" / "repo"
    if not (repo / ".git").is_dir():
        shutil.rmtree(repo.parent, ignore_errors=True)
        print(f"Building a {pages:,}-page repository in {repo} (once) ...", flush=True)
        started = time.perf_counter()
        build(repo, pages, env)
        print(f"  built in {time.perf_counter() - started:.0f} s", flush=True)
    git(repo, "reset", "-q", "--hard")
    git(repo, "clean", "-q", "-f", "-d")  # what the last run's writers added; ignored files stay
    shutil.copyfile(ENGINE, repo / RUNTIME)
    if "/cache.json" not in (repo / ".echoes-vault" / ".gitignore").read_text(encoding="utf-8"):
        # A repository built by an engine older than the cache: writers create the cache only
        # where the runtime's ignore rules list it, so commit `upgrade`'s files once.
        subprocess.run([sys.executable, "-I", RUNTIME, "--workspace", ".", "upgrade"], cwd=repo,
                       check=True, capture_output=True, env=env)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "upgrade")
    staged = repo / "EchoesVault" / "pages" / "page-000001.md"
    staged.write_text(page(1) + "\nOne more fact.\n", encoding="utf-8")
    git(repo, "add", "--", str(staged.relative_to(repo)))
    return repo


def install(cache: Path, env: Dict[str, str]) -> str:
    """The Python of a virtual environment under `cache` holding this checkout installed as
    users get it (pip builds and installs a wheel, as pre-commit and `pip install` do),
    reinstalled each run. A development venv's editable install loads an import finder at every
    interpreter start (about 9 ms, pathlib included): every timed command, the floor too, runs
    with this Python instead, so that no row pays for the development set-up."""
    venv = cache / "venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        # Once, for the dependencies (tomli before Python 3.11).
        subprocess.run([str(python), "-m", "pip", "install", "-q", str(ROOT)], check=True,
                       capture_output=True, env=env)
    print(f"Installing this checkout into {venv} ...", flush=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps",
                    str(ROOT)], check=True, capture_output=True, env=env)
    return str(python)


def hook_command(python: str) -> List[str]:
    """What pre-commit runs for the `echoes-lint` hook: its console script, installed next to
    `python`, else the script's entry function (the same run, without the installed wrapper)."""
    script = Path(python).parent / "echoes-lint-hook"
    return [str(script)] if script.is_file() else \
        [python, "-c", "from echoes_lint.precommit import lint_entry; lint_entry()"]


def run(command: Sequence[str], cwd: Path, env: Dict[str, str],
        stdin: Optional[Path] = None) -> Tuple[float, int, int]:
    """(seconds, peak resident memory in KiB, exit status) of one subprocess."""
    with open(os.devnull, "wb") as sink, open(stdin or os.devnull, "rb") as source:
        started = time.perf_counter()
        process = subprocess.Popen(list(command), cwd=cwd, env=env, stdin=source, stdout=sink,
                                   stderr=subprocess.PIPE)
        assert process.stderr is not None
        errors = process.stderr.read()
        _pid, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        process.stderr.close()
    if process.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} exited {process.returncode}: {errors.decode()[-2000:]}")
    # ru_maxrss is KiB on Linux, bytes on macOS.
    return elapsed, usage.ru_maxrss // (1024 if sys.platform == "darwin" else 1), process.returncode


def commands(scratch: Path, python: str) -> Tuple[Dict[str, List[str]], Dict[str, List[str]],
                                                 Dict[str, List[str]]]:
    """(read-only commands, writers, cold paths) by name, run by `python`; writers get a fresh
    payload file each run."""
    runtime = [python, "-I", RUNTIME, "--workspace", "."]
    lint = [python, "-m", "echoes_lint"]
    read_only = {
        "floor": [python, "-c", FLOOR, "EchoesVault"],
        "status": [*runtime, "status"],
        "inspect": [*runtime, "inspect"],
        "search (hits)": [*runtime, "search", "common word"],
        "search (none)": [*runtime, "search", "no page says this"],
        "check": [*lint, "check", "--exit-zero"],
        "ci": [*lint, "ci", "--summary", "false", "--fail-on", "never"],
        "hook (1 file)": [*hook_command(python), "EchoesVault/pages/page-000001.md"],
    }
    writers = {
        "start": [*runtime, "start"],
        "upsert": [*runtime, "upsert", "--payload", str(scratch / "upsert.json")],
        "append": [*runtime, "append", "--payload", str(scratch / "append.json")],
        "end": [*runtime, "end", "--confirm-explicit-user-end", "--payload",
                str(scratch / "end.json")],
    }
    cold = {
        "rebuild-index": [*runtime, "rebuild-index"],
        "status (no cache)": [*runtime, "status"],
    }
    return read_only, writers, cold


@contextlib.contextmanager
def cache_aside(repo: Path, aside: bool) -> Iterator[None]:
    """With `aside`, the runtime's cache moved away for the run (as a fresh clone has none) and
    put back after it, untimed: the rows after it meet the cache as it was. A vault without a
    cache (a runtime that keeps none) has nothing to move."""
    cache = repo / CACHE
    if not aside or not os.path.lexists(cache):
        yield
        return
    moved = cache.with_name(cache.name + ".bench-aside")
    os.replace(cache, moved)
    try:
        yield
    finally:
        os.replace(moved, cache)


def payloads(scratch: Path, run_number: int) -> None:
    name = f"bench-new-{run_number:04d}.md"
    content = page(900_000 + run_number)
    (scratch / "upsert.json").write_text(json.dumps({"filename": name, "content": content}))
    (scratch / "append.json").write_text(json.dumps({"entry": f"Fact {run_number}."}))
    (scratch / "end.json").write_text(json.dumps({
        "dailySummary": f"Session {run_number}.",
        "pages": [{"filename": f"bench-end-{run_number:04d}.md", "content": content}]}))


def measure(repo: Path, repeat: int, env: Dict[str, str],
            python: str) -> Dict[str, Tuple[float, int]]:
    """Median seconds and peak KiB of every command, interleaved over `repeat` rounds after one
    warm-up round; then of the two writes after an outside edit (`CLIFF`)."""
    samples: Dict[str, List[Tuple[float, int]]] = {}
    cold_samples: Dict[str, List[Tuple[float, int]]] = {}  # printed after the writers
    with tempfile.TemporaryDirectory(prefix="echoes-bench-payload-") as temporary:
        scratch = Path(temporary)
        read_only, writers, cold = commands(scratch, python)
        run([python, "-I", RUNTIME, "--workspace", ".", "rebuild-index"], repo, env)
        for round_number in range(repeat + 1):
            for name, command in read_only.items():
                seconds, peak, _status = run(command, repo, env)
                if round_number:
                    samples.setdefault(name, []).append((seconds, peak))
            for name, command in cold.items():
                with cache_aside(repo, name == "status (no cache)"):
                    seconds, peak, _status = run(command, repo, env)
                if round_number:
                    cold_samples.setdefault(name, []).append((seconds, peak))
        for round_number in range(repeat + 1):
            payloads(scratch, round_number)
            for name, command in writers.items():
                seconds, peak, _status = run(command, repo, env)
                if round_number:
                    samples.setdefault(name, []).append((seconds, peak))
        for round_number in range(repeat + 1):
            with open(repo / EDITED, "a", encoding="utf-8") as handle:  # as an editor saves it
                handle.write(f"\nEdited outside the engine ({round_number}).\n")
            for number, name in enumerate(CLIFF):
                payload = scratch / f"cliff-{number}.json"
                payload.write_text(json.dumps({
                    "filename": f"bench-cliff-{round_number:04d}-{number}.md",
                    "content": page(800_000 + 2 * round_number + number)}))
                seconds, peak, _status = run([*writers["upsert"][:-1], str(payload)], repo, env)
                if round_number:
                    samples.setdefault(name, []).append((seconds, peak))
    samples.update(cold_samples)
    return {name: (statistics.median(s for s, _p in values), max(p for _s, p in values))
            for name, values in samples.items()}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,5000", help="comma-separated page counts")
    parser.add_argument("--large", action="store_true", help="add 100,000 pages")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds per size")
    parser.add_argument("--no-install", action="store_true",
                        help="time this Python's echoes_lint (an editable install pays its "
                             "import finder at every start) instead of installing the checkout")
    args = parser.parse_args(argv)
    sizes = sorted({int(size) for size in args.sizes.split(",")} | ({100_000} if args.large
                                                                     else set()))
    cache = Path(os.environ.get("ECHOES_BENCH_CACHE", "/tmp/echoes-bench-scale"))
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONDONTWRITEBYTECODE", "NO_COLOR", "FORCE_COLOR", "GITHUB_ACTIONS",
                          "GITHUB_STEP_SUMMARY")}
    env["PYTHONPYCACHEPREFIX"] = str(cache / "pycache")  # the package as installed: byte code
    python = sys.executable if args.no_install else install(cache, env)
    results: Dict[int, Dict[str, Tuple[float, int]]] = {}
    for size in sizes:
        repo = prepare(cache, size, env)
        print(f"Measuring {size:,} pages ...", flush=True)
        results[size] = measure(repo, args.repeat, env, python)
        prepare(cache, size, env)  # leave the cached repository at its commit
    report(results, args.repeat)
    return 0


def report(results: Dict[int, Dict[str, Tuple[float, int]]], repeat: int) -> None:
    sizes = sorted(results)
    names = [name for name in results[sizes[0]] if name not in CLIFF]
    print(f"\nPython {sys.version.split()[0]}, {os.cpu_count()} CPUs, median of {repeat} runs; "
          "ms / peak MB\n")
    print(f"{'command':<18}" + "".join(f"{f'{size:,} pages':>22}" for size in sizes))
    for name in names:
        cells = "".join(f"{results[size][name][0] * 1000:>12.0f} ms {results[size][name][1] / 1024:>4.0f} MB"
                        for size in sizes)
        print(f"{name:<18}{cells}")
    print("\nRatios (issue 13 targets in brackets)")
    for size in sizes:
        floor = results[size]["floor"][0]
        parts = [f"{name}/floor {results[size][name][0] / floor:.2f}x"
                 for name in ("status", "inspect", "start", "check", "ci")]
        print(f"  {size:>7,} pages: " + ", ".join(parts)
              + "  [status/inspect/start <= 1x at 100k, <= 2x at 5k; check/ci <= 2x]")
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]
        for name, target in (("upsert", "3x"), ("append", "3x"), ("end", "3x"),
                             ("hook (1 file)", "1.5x")):
            ratio = results[large][name][0] / results[small][name][0]
            print(f"  {name} at {large:,} / at {small:,}: {ratio:.2f}x  [<= {target}]")
    for size in sizes:
        floor = results[size]["floor"][0]
        print(f"  {size:>7,} pages, cold paths: " + ", ".join(
            f"{name}/floor {results[size][name][0] / floor:.2f}x"
            for name in ("rebuild-index", "status (no cache)")))
    print("\nOne page edited outside the engine, then `upsert` twice (ms / peak MB; the next "
          "write over the steady-state `upsert` in brackets, target about 1x)")
    for size in sizes:
        (first, first_peak), (second, second_peak) = (results[size][name] for name in CLIFF)
        print(f"  {size:>7,} pages: the write meeting the change {first * 1000:.0f} ms "
              f"{first_peak / 1024:.0f} MB, the next {second * 1000:.0f} ms "
              f"{second_peak / 1024:.0f} MB  [{second / results[size]['upsert'][0]:.2f}x]")
    peak = max(peak for size in sizes for _s, peak in results[size].values())
    print(f"  peak memory of any command (cold paths included): {peak / 1024:.0f} MB  "
          "[< 300 MB at 100k]")


if __name__ == "__main__":
    sys.exit(main())
