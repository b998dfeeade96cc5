"""The portable runtime runs without `typing` (issue 13, the fixed cost of every command at
5,000 pages: ~2 ms of imports): its annotations are never evaluated, and what it needed of
`typing` at run time (NamedTuple, TypeVar, cast, type aliases) has plain equivalents that act
the same. Behaviour only: which modules are imported, never how long anything takes."""

from __future__ import annotations

import pickle
import sys
import typing
from pathlib import Path

import pytest
from conftest import page_text
from helpers_writer import ENGINE_FILE, init_vault, runtime
from test_fixed2_imports import IMPORTTIME, imported
from test_parity_module import load_unregistered

from echoes_lint import engine

PAYLOAD = {"filename": "a-page", "content": page_text("A page.")}


@pytest.mark.parametrize("command", [("status",), ("inspect",), ("inspect", "--format", "card"),
                                     ("start",), ("upsert", "--payload", "-"),
                                     ("rebuild-index",), ("search", "page")])
def test_a_runtime_command_imports_no_typing(git_repo: Path, command: tuple[str, ...]) -> None:
    init_vault(git_repo)
    runtime(git_repo, "rebuild-index")  # a cache, so that status and inspect read it
    done = runtime(git_repo, *command, python=IMPORTTIME,
                   payload=PAYLOAD if "upsert" in command else None)
    assert done.returncode == 0, done.stderr
    modules = imported(done.stderr)
    assert "json" in modules  # the listing is real
    assert "typing" not in modules


class _Declared(typing.NamedTuple):
    key: str
    line: int
    value_col: int
    raw: str


def test_field_acts_as_the_named_tuple_it_was() -> None:
    field = engine._new_field(("status", 3, 9, "active"))
    declared = _Declared("status", 3, 9, "active")
    assert field == declared == ("status", 3, 9, "active") and isinstance(field, tuple)
    assert hash(field) == hash(declared)
    assert repr(field) == repr(declared).replace("_Declared", "Field")
    assert engine.Field._fields == _Declared._fields
    assert (field.key, field.line, field.value_col, field.raw) == ("status", 3, 9, "active")
    assert field._replace(raw="done") == engine.Field("status", 3, 9, "done")
    assert field._asdict() == declared._asdict()
    assert pickle.loads(pickle.dumps(field)) == field
    marker = object()
    assert engine.cast(int, marker) is marker


def test_the_runtime_loads_without_typing_in_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loaded as the reference suite loads it, with `import typing` failing: it still works."""
    def refuse(name: str, *args: object, **kwargs: object) -> object:
        if name == "typing":
            raise ImportError("typing is not for the runtime")
        return real(name, *args, **kwargs)

    real = __import__
    monkeypatch.setattr("builtins.__import__", refuse)
    name = "echoes_vault_rt7_without_typing"
    try:
        module = load_unregistered(ENGINE_FILE, name)
        assert module.parse_frontmatter(page_text("A page.")).problems == ()
        assert module.parse_version("1.2.3") == (1, 2, 3)
    finally:
        sys.modules.pop(name, None)
