"""Issue 10: random bytes as page names, page contents and command arguments, fed to every
read-only command (`status`, `inspect`, `search`, `hash`, `protocol`) and to `echoes-lint check`.

Whatever the input: no traceback and no internal error, every run ends (a subprocess timeout is
the hang guard), and nothing in the repository changes (a snapshot of every entry, `.git`
included, with its mtime in nanoseconds)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from conftest import git, init_repo, make_vault
from helpers_gates import HANG_GUARD, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FOLDERS = (b"EchoesVault/pages", b"EchoesVault/daily/2026-01-05", b"EchoesVault/raw",
           b"EchoesVault")
names = st.binary(min_size=1, max_size=24).filter(
    lambda name: b"/" not in name and b"\0" not in name and name not in (b".", b"..")
    and name != b".git")
contents = st.one_of(
    st.binary(max_size=400),
    # Near misses of a page: frontmatter-shaped text with random bytes inside.
    st.builds(lambda middle, tail: b"---\ntype: note\nstack: []\nstatus: active\nsummary: "
              + middle + b"\n---\n" + tail, st.binary(max_size=60), st.binary(max_size=120)),
)
files = st.lists(st.tuples(st.sampled_from(FOLDERS), names, contents), max_size=5,
                 unique_by=lambda item: (item[0], item[1]))
arguments = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"),
                    min_size=1, max_size=40)


def commands(query: str, filename: str) -> list[list[str]]:
    return [["status"], ["inspect", "--format", "card"], ["search", query], ["hash", filename],
            ["protocol"], ["check"]]


def build(root: Path, entries: list[tuple[bytes, bytes, bytes]]) -> Path:
    repo = init_repo(root / "repo")
    make_vault(repo)
    for folder, name, data in entries:
        directory = os.path.join(os.fsencode(repo), folder)
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, name)
        if not os.path.isdir(path):
            with open(path, "wb") as handle:
                handle.write(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", "fuzz")
    return repo


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(entries=files, query=arguments, filename=arguments)
def test_read_only_commands_survive_random_vaults(entries: list[tuple[bytes, bytes, bytes]],
                                                  query: str, filename: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        repo = build(Path(scratch), entries)
        before = snapshot(repo)
        env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
        runs = [(command, subprocess.Popen(
            [sys.executable, "-m", "echoes_lint", *command], cwd=repo, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)) for command in
            commands(query, filename)]
        for command, process in runs:
            try:
                _out, err = process.communicate(timeout=HANG_GUARD)
            except subprocess.TimeoutExpired:
                for _command, other in runs:
                    other.kill()
                raise AssertionError(f"{command} did not finish") from None
            errors = err.decode("utf-8", "backslashreplace")
            assert "Traceback" not in errors, (command, errors)
            assert "nternal error" not in errors, (command, errors)
            allowed = (0, 1, 2) if command[0] == "check" else (0, 2)
            assert process.returncode in allowed, (command, process.returncode, errors)
            if process.returncode == 2:
                assert errors.count("\n") == 1, (command, errors)
        assert snapshot(repo) == before
