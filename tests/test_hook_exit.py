"""The hook console scripts leave without the interpreter's teardown (`precommit.leave`): the
status and output stay what they were, even when standard output cannot take them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, git
from helpers_check import PAGES, parsed, vault_repo, write
from test_precommit_entry import SCRIPTS, run_hook

from echoes_lint import precommit


@pytest.fixture
def findings_repo(tmp_path: Path) -> Path:
    """A staged page with three findings (EV015)."""
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/bad.md", "---\ntype: note\n---\n")
    git(repo, "add", "-A")
    return repo


def test_every_console_script_runs_its_hook_then_leaves() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for script in SCRIPTS.values():
        found = re.search(rf'\n{script} = "echoes_lint\.precommit:(\w+)"\n', pyproject)
        assert found is not None and found[1].endswith("_entry")
        assert callable(getattr(precommit, found[1]))
    # The functions that return a status stay, for callers in the same process.
    assert precommit.lint_main(["--help-not-an-option"]) == 2


def test_findings_exit_1_with_the_report(findings_repo: Path) -> None:
    result = run_hook(findings_repo, "echoes-lint", f"{PAGES}/bad.md")
    assert result.returncode == 1
    assert parsed(result.stdout) == [(f"{PAGES}/bad.md", 1, 1, "EV015")] * 3
    assert result.stdout.endswith("Found 3 errors.\n")
    assert result.stderr == ""


def run_redirected(repo: Path, redirect: str) -> subprocess.CompletedProcess[str]:
    """The echoes-lint hook on the staged page, its standard output redirected by the shell."""
    script = Path(sys.executable).parent / SCRIPTS["echoes-lint"]
    return subprocess.run(["sh", "-c", f'"$0" "$1" {redirect}', str(script), f"{PAGES}/bad.md"],
                          cwd=repo, capture_output=True, text=True, check=False, timeout=120)


@pytest.mark.parametrize(("redirect", "message"), [
    (">&-", "echoes-lint: error: internal error (AttributeError): "
            "'NoneType' object has no attribute 'flush'\n"),
    (">/dev/full", "echoes-lint: error: [Errno 28] No space left on device\n"),
])
def test_output_that_cannot_be_written_fails_with_2(findings_repo: Path, redirect: str,
                                                    message: str) -> None:
    if redirect == ">/dev/full" and not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    result = run_redirected(findings_repo, redirect)
    assert (result.returncode, result.stderr) == (2, message)


def run_leave(code: str, stdout: object = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    # Buffered output, as a hook's is: what stays in the buffers is for `leave` to flush.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    return subprocess.run([sys.executable, "-c", f"from echoes_lint.precommit import leave\n{code}"],
                          stdout=stdout, stderr=subprocess.PIPE, check=False, timeout=60, env=env)


def test_leave_flushes_what_is_buffered_and_keeps_the_status() -> None:
    # Without the flush, os._exit drops what print() left in the buffers of a pipe.
    result = run_leave("import sys\nprint('out', end='')\nsys.stderr.write('err')\nleave(1)")
    assert (result.returncode, result.stdout, result.stderr) == (1, b"out", b"err")
    assert run_leave("leave(0)").returncode == 0


def test_leave_fails_when_the_output_cannot_be_flushed() -> None:
    reader, writer = os.pipe()
    os.close(reader)  # nobody reads: a flush into the pipe fails (EPIPE)
    try:
        result = run_leave("print('out', end='')\nleave(0)", stdout=writer)
        assert run_leave("leave(0)", stdout=writer).returncode == 0  # nothing to flush
    finally:
        os.close(writer)
    # The interpreter's own exit status for an output it could not flush.
    assert result.returncode == precommit.FLUSH_FAILED == 120


def test_leave_skips_a_closed_output() -> None:
    result = run_leave("import sys\nsys.stdout.close()\nleave(1)")
    assert (result.returncode, result.stderr) == (1, b"")
