"""The SHA-256 digests of the status report and of `ci`'s log fence come from the interpreter's
own module below `engine.BUILTIN_SHA256_BYTES`, so that `ci` at 5,000 pages never loads
`hashlib` (OpenSSL: 5-15 ms of a start); above it, from `hashlib`. Behaviour only: which modules
are imported and which digests are made, never how long anything takes."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_check import vault_repo, write
from helpers_gates import run_guarded
from test_fixed2_imports import imported

from echoes_lint import engine

LIMIT = engine.BUILTIN_SHA256_BYTES
HEAD = "---\ntype: note\nstack: [python]\nstatus: active\nsummary: A plain page.\n---\n"


def test_ci_under_actions_imports_no_hashlib(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    write(repo, "EchoesVault/pages/plain.md", HEAD)  # untracked: the gate fails, the index builds
    write(repo, "EchoesVault/index.md", "# Index\n\n- [[gone]]: stale\n")  # ignored, out of date
    output = tmp_path / "output"
    done = run_guarded("ci", "--sarif", "out\nlog.sarif", cwd=repo, env={
        "PYTHONPROFILEIMPORTTIME": "1", "GITHUB_ACTIONS": "true",
        "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary")})
    assert done.returncode == 1, done.stderr
    modules = imported(done.stderr)
    assert "echoes_lint.checker" in modules  # the listing is real
    assert not modules & {"hashlib", "_hashlib"}
    # Every digest was made all the same, and is SHA-256: the rendered index's (to which the
    # local index is compared), the log's fence and the multi-line output's delimiter.
    assert "EchoesVault/index.md is out of date" in done.stdout
    first, log = done.stdout.split("\n", 1)
    log = log[:log.index("::echoes-lint-")]
    assert first == "::stop-commands::echoes-lint-" + hashlib.sha256(log.encode()).hexdigest()
    value = str(repo / "out\nlog.sarif")
    delimiter = "ECHOES_LINT_" + hashlib.sha256(value.encode()).hexdigest()
    assert f"sarif-file<<{delimiter}\n{value}\n{delimiter}\n" in output.read_text(encoding="utf-8")


@pytest.mark.parametrize("size", [0, 1, 63, 64, 65, 1000, LIMIT - 1, LIMIT, LIMIT + 1, 3 * LIMIT])
def test_every_digest_is_sha256_below_and_above_the_limit(size: int,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Each branch of `_sha256` as a fresh process takes it: OpenSSL not loaded yet (this test
    module's `hashlib` has loaded it), the interpreter's own module up to the limit."""
    monkeypatch.delitem(sys.modules, "_hashlib", raising=False)
    data = bytes(range(256)) * (size // 256) + b"\xe9" * (size % 256)
    wanted = hashlib.sha256(data).hexdigest()
    builtin = "_sha2" if sys.version_info >= (3, 12) else "_sha256"
    assert (type(engine._sha256(data)).__module__ == builtin) is (size <= LIMIT)
    monkeypatch.delitem(sys.modules, "_hashlib", raising=False)
    assert engine._sha256(data).hexdigest() == wanted == engine.digest(data)
    monkeypatch.delitem(sys.modules, "_hashlib", raising=False)
    streamed = engine._sha256(more=size)
    for start in range(0, size, 1 << 16):
        streamed.update(data[start:start + (1 << 16)])
    assert streamed.hexdigest() == wanted
    text = data.decode("latin-1")
    assert engine.text_digest(text) == engine.sha256_text(text) == hashlib.sha256(
        text.encode("utf-8")).hexdigest()


_LOADS = """
import sys
from echoes_lint import engine
engine.text_digest("x" * int(sys.argv[1]))
print("_hashlib" in sys.modules)
"""


@pytest.mark.parametrize(("size", "openssl"), [(1000, False), (LIMIT, False), (LIMIT + 1, True)])
def test_openssl_is_loaded_for_large_digests_only(size: int, openssl: bool) -> None:
    done = subprocess.run([sys.executable, "-c", _LOADS, str(size)], capture_output=True,
                          text=True, check=True)
    assert done.stdout == f"{openssl}\n"
