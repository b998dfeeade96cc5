"""What the portable runtime imports: a command pays for every module it loads at start, so the
runtime leaves out those it can do without (issue 13, the fixed cost of a command)."""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path

import pytest
from conftest import page_text
from helpers_writer import ENGINE_FILE, init_vault, runtime
from test_parity_module import load_unregistered

IMPORTTIME = (sys.executable, "-I", "-S", "-X", "importtime")
# dataclasses brings inspect; shutil (argparse's terminal width) brings zlib, bz2 and lzma.
NOT_NEEDED = {"dataclasses", "inspect", "shutil", "bz2", "lzma"}


def imported(stderr: str) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


@pytest.mark.parametrize("command", [("status",), ("inspect", "--format", "card"), ("start",)])
def test_reading_commands_import_neither_dataclasses_nor_shutil(git_repo: Path,
                                                                command: tuple[str, ...]) -> None:
    init_vault(git_repo)
    done = runtime(git_repo, *command, python=IMPORTTIME)
    assert done.returncode == 0, done.stderr
    modules = imported(done.stderr)
    assert "json" in modules  # the listing is real
    assert not modules & NOT_NEEDED


def test_a_writer_imports_neither(git_repo: Path) -> None:
    init_vault(git_repo)
    done = runtime(git_repo, "upsert", "--payload", "-", python=IMPORTTIME,
                   payload={"filename": "a-page", "content": page_text("A page.")})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["action"] == "created"
    assert not imported(done.stderr) & NOT_NEEDED


def test_help_still_fits_the_terminal(git_repo: Path) -> None:
    """Only the check of each argument goes without the terminal's width: help wraps to it."""
    init_vault(git_repo)
    narrow, wide = (runtime(git_repo, "search", "--help", env={"COLUMNS": str(width)})
                    for width in (40, 200))
    assert narrow.returncode == wide.returncode == 0
    assert narrow.stdout != wide.stdout  # wrapped to each width (the description is kept raw)
    assert narrow.stdout.split() == wide.stdout.split()


def test_regexes_compile_on_first_use_and_then_act_as_compiled() -> None:
    name = "echoes_vault_fixed2_regexes"
    try:
        module = load_unregistered(ENGINE_FILE, name)
        lazy = {key: value for key, value in vars(module).items()
                if isinstance(value, module._Regex)}
        assert len(lazy) > 20
        assert not any("search" in vars(value) for value in lazy.values())  # none compiled yet
        assert module.marker_lines("a\n=======\nb\n") == [(2, "=")]
        assert "finditer" in vars(module._MARKER_LINES)
        for value in lazy.values():
            compiled = re.compile(*value._source)
            empty = compiled.pattern[:0]
            assert (value.pattern, value.flags, value.groups) == (
                compiled.pattern, compiled.flags, compiled.groups)
            assert value.findall(empty) == compiled.findall(empty)
            assert value.split(empty) == compiled.split(empty)
            assert "search" in vars(value)  # kept: later calls go straight to the pattern
    finally:
        sys.modules.pop(name, None)


def test_a_lazy_regex_copies_as_a_compiled_one_does() -> None:
    """`copy` makes its new object without `__init__`, then asks it for `__reduce_ex__`,
    `__setstate__`...: those are never taken for a use of the pattern."""
    from echoes_lint import engine

    copied = copy.copy(engine._LOCK_TOKEN)
    assert copy.deepcopy(engine._LOCK_TOKEN).match("12-0123456789abcdef@host") is not None
    assert copied.match("12-0123456789abcdef@host").group(2) == "host"
