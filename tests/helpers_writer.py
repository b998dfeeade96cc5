"""Helpers for the writer tests: run the CLI or the installed runtime, compare whole trees."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from conftest import run_cli

from echoes_lint import engine

ENGINE_FILE = Path(engine.__file__)
RUNTIME = ".echoes-vault/echoes_vault.py"
PAGES = Path("EchoesVault/pages")
INDEX = Path("EchoesVault/index.md")
STATE = Path(".echoes-vault/state.json")
LOCK = Path(".echoes-vault/lock")
INTENT = Path(".echoes-vault/intent.json")


def page(summary: str = "A page.", status: str = "active", body: str = "# Title\n") -> str:
    return (f"---\ntype: note\nstack: [python]\nstatus: {status}\nsummary: {summary}\n---\n\n"
            + body)


def cli(repo: Path, *args: str, payload: Optional[Any] = None,
        env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess[str]:
    """`python -m echoes_lint --workspace repo ARGS` with an optional JSON payload on stdin."""
    stdin = None if payload is None else (payload if isinstance(payload, str)
                                          else json.dumps(payload))
    return run_cli("--workspace", str(repo), *args, cwd=repo, input=stdin, env=env)


def runtime(repo: Path, *args: str, payload: Optional[Any] = None,
            env: Optional[Dict[str, str]] = None,
            python: Sequence[str] = (sys.executable, "-I", "-S"),
            file_size_limit: Optional[int] = None,
            ) -> subprocess.CompletedProcess[str]:
    """The installed portable runtime, run from the repository. `-I -S` keeps every installed
    package (echoes_lint included) out of reach: the runtime must need nothing but itself.
    `file_size_limit` makes every write past that many bytes of a file fail (RLIMIT_FSIZE, with
    SIGXFSZ ignored) as a full disk or a quota would."""
    stdin = None if payload is None else (payload if isinstance(payload, str)
                                          else json.dumps(payload))

    def limit_file_size() -> None:
        import resource
        import signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))

    return subprocess.run([*python, RUNTIME, "--workspace", ".", *args], cwd=repo, input=stdin,
                          capture_output=True, text=True, encoding="utf-8", check=False,
                          env={**os.environ, **(env or {})},
                          preexec_fn=None if file_size_limit is None else limit_file_size)


def ok(completed: subprocess.CompletedProcess[str]) -> Dict[str, Any]:
    assert completed.returncode == 0, completed.stderr
    result: Dict[str, Any] = json.loads(completed.stdout)
    assert result["ok"] is True
    return result


def refused(completed: subprocess.CompletedProcess[str]) -> str:
    """The error of a refused protocol command: exit 2, one JSON line on stderr, no stdout."""
    assert completed.returncode == 2, (completed.stdout, completed.stderr)
    assert completed.stdout == ""
    lines = completed.stderr.splitlines()
    assert len(lines) == 1, completed.stderr
    error = json.loads(lines[0])
    assert error["ok"] is False
    message: str = error["error"]
    return message


def snapshot(root: Path, temporaries: bool = True) -> Dict[str, Optional[bytes]]:
    """Every file (bytes) and folder (None) below root, .git excluded; symlinks by target.
    `temporaries=False` leaves out the temporary files a killed writer left (any writer sweeps
    them)."""
    found: Dict[str, Optional[bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if ".git" in dirnames:
            dirnames.remove(".git")
        if not temporaries:
            filenames = [name for name in filenames if not name.endswith(".echoes-tmp")]
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            relative = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[relative] = b"-> " + os.fsencode(os.readlink(path))
            else:
                found[relative] = None if path.is_dir() else path.read_bytes()
    return found


def init_vault(repo: Path, *extra: str) -> Dict[str, Any]:
    return ok(cli(repo, *extra, "init"))


def page_hash(repo: Path, name: str) -> str:
    sha: str = ok(cli(repo, "hash", name))["sha256"]
    return sha


def daily_entries(repo: Path) -> Dict[str, str]:
    """Daily files below EchoesVault/daily by path relative to it."""
    root = repo / "EchoesVault" / "daily"
    return {path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(root.rglob("*.md"))}


def engine_copy(version: str, banner: Optional[str] = None) -> str:
    """This engine's source declaring another ENGINE_VERSION and, optionally, writing `banner`
    to stderr when its command line starts: a stand-in for a newer or older release."""
    source = ENGINE_FILE.read_text(encoding="utf-8")
    declared = f'ENGINE_VERSION = "{engine.ENGINE_VERSION}"\n'
    assert source.count(declared) == 1
    source = source.replace(declared, f'ENGINE_VERSION = "{version}"\n')
    if banner is not None:
        entry = "def main(argv: Optional[Sequence[str]] = None) -> int:\n"
        assert source.count(entry) == 1
        source = source.replace(entry, entry + f"    sys.stderr.write({banner!r} + '\\n')\n")
    return source


def stopped_runtime(repo: Path, *args: str, payload: Any, step: str,
                    ) -> subprocess.Popen[bytes]:
    """The runtime started with `payload` on stdin, once it has stopped itself (SIGSTOP) at the
    crash point `step`: the caller changes the vault, then calls `resumed`."""
    process = subprocess.Popen([sys.executable, "-I", "-S", RUNTIME, "--workspace", ".", *args],
                               cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE,
                               env={**os.environ, engine.STOP_ENV: step})
    assert process.stdin is not None
    process.stdin.write(json.dumps(payload).encode("utf-8"))
    process.stdin.close()
    _pid, status = os.waitpid(process.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), f"the runtime finished without stopping at {step}"
    return process


def resumed(process: subprocess.Popen[bytes], reruns: int = 0) -> str:
    """Continue a stopped runtime that must then fail; returns its error message. `reruns`:
    how many times it may stop again at its crash point (a writer that took Git's word before
    Git answered runs once more when Git does not vouch for it); each stop is continued. A
    runtime left stopped or running by a failed assertion here is killed."""
    deadline, stops = time.monotonic() + 60, 0  # (a hang guard)
    process.send_signal(signal.SIGCONT)
    try:
        while True:
            pid, status = os.waitpid(process.pid, os.WNOHANG | os.WUNTRACED)
            if pid == 0:
                assert time.monotonic() < deadline, "the runtime neither stopped nor ended"
                time.sleep(0.01)
            elif os.WIFSTOPPED(status) and stops < reruns:
                stops += 1
                process.send_signal(signal.SIGCONT)
            else:
                break
    except BaseException:
        process.kill()
        process.send_signal(signal.SIGCONT)
        process.wait()
        raise
    if os.WIFSTOPPED(status):
        process.kill()
        process.send_signal(signal.SIGCONT)
        process.wait()
    assert not os.WIFSTOPPED(status)
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 2
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.read() == b""
    errors = process.stderr.read().decode("utf-8")
    process.stdout.close()
    process.stderr.close()
    message: str = json.loads(errors)["error"]
    return message
