"""Module compatibility (issue 9, item 5): the runtime loads the way the reference suite loads
its engine (`spec_from_file_location` + `exec_module`, never registered in sys.modules), and
`main(argv)` works on text streams without `.buffer` (`contextlib.redirect_stdout`)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator, Optional, Tuple

import pytest
from conftest import page_text
from helpers_writer import ENGINE_FILE, RUNTIME


def load_unregistered(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    assert name not in sys.modules
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def loaded(request: pytest.FixtureRequest) -> Iterator[ModuleType]:
    name = f"echoes_vault_unregistered_{request.node.name}"
    try:
        yield load_unregistered(ENGINE_FILE, name)
    finally:
        sys.modules.pop(name, None)


def call_main(module: Any, *argv: str, stdin: Optional[str] = None) -> Tuple[int, str, str]:
    """`main` exactly as the reference suite calls it: StringIO streams, no `.buffer`."""
    stdout, stderr = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin or "")
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code: int = module.main(list(argv))
    finally:
        sys.stdin = old_stdin
    return code, stdout.getvalue(), stderr.getvalue()


def test_the_runtime_loads_without_registration_and_its_dataclasses_work(
        loaded: ModuleType) -> None:
    problem = loaded.Problem("kind", "message")
    assert (problem.line, problem.col) == (1, 1)
    assert loaded.Scan(Path(".")).pages == []
    assert loaded.ENGINE_VERSION == loaded.MANAGED_ADAPTER_VERSION


def test_main_runs_every_kind_of_command_on_redirected_text_streams(
        loaded: ModuleType, git_repo: Path) -> None:
    workspace = ["--workspace", str(git_repo)]
    code, output, error = call_main(loaded, *workspace, "init")
    assert (code, error) == (0, "")
    assert json.loads(output)["created"] is True
    page = {"filename": "straße", "content": page_text("Ünïcode summary.")}
    code, output, error = call_main(loaded, *workspace, "upsert", "--payload", "-",
                                    stdin=json.dumps(page, ensure_ascii=False))
    assert (code, error) == (0, "")
    assert json.loads(output)["action"] == "created"
    code, output, error = call_main(loaded, *workspace, "start")
    assert code == 0 and "- [[straße]]: Ünïcode summary." in output
    code, output, _error = call_main(loaded, *workspace, "status", "--format", "card")
    assert code == 0 and output.startswith("### EchoesVault · ")
    # Errors reach the redirected stderr as one JSON line.
    code, output, error = call_main(loaded, *workspace, "append", "--payload", "-", stdin="{")
    assert code == 2 and output == ""
    assert json.loads(error)["ok"] is False


def test_the_installed_runtime_loads_the_same_way(loaded: ModuleType, git_repo: Path) -> None:
    assert call_main(loaded, "--workspace", str(git_repo), "init")[0] == 0
    installed = load_unregistered(git_repo / RUNTIME, "echoes_vault_installed_copy")
    try:
        code, output, error = call_main(installed, "--workspace", str(git_repo), "hydrate")
    finally:
        sys.modules.pop("echoes_vault_installed_copy", None)
    assert (code, error) == (0, "")
    assert json.loads(output)["ok"] is True
