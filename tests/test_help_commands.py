"""Issue 11: every protocol command explains itself under the name it was run by. The payload
schema that `append|upsert|end --help` prints is the one the engine enforces, its example is
accepted, and the status card names commands as the caller runs them."""

from __future__ import annotations

import copy
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import jsonschema
import pytest
from conftest import GIT_ENV
from helpers_writer import init_vault, ok, runtime

from echoes_lint import engine

# The console script of this environment: the command a person types.
ECHOES_LINT = str(Path(sys.executable).parent / "echoes-lint")
PAYLOAD_COMMANDS = ("append", "upsert", "end")
FLAGS = {"end": ("--confirm-explicit-user-end",)}


def echoes_lint(repo: Path, *args: str, payload: Any = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ECHOES_LINT, *args], cwd=repo, capture_output=True, text=True,
                          encoding="utf-8", check=False, timeout=120,
                          input=None if payload is None else json.dumps(payload))


def help_parts(text: str) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(schema, example payload) as `COMMAND --help` prints them."""
    schema_text = text.split("Payload schema (JSON Schema):\n", 1)[1].split("\n\n", 1)[0]
    example_text = text.split("Example payload:\n", 1)[1].split("\n\n", 1)[0]
    return json.loads(schema_text), json.loads(example_text)


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One initialised vault (no Git: nothing here needs it), copied afresh for each write."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in GIT_ENV.items():
            patch.setenv(key, value)
        repo = tmp_path_factory.mktemp("template") / "repo"
        repo.mkdir()
        init_vault(repo)
        yield repo


def fresh(vault: Path, tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(vault, tmp_path / name, symlinks=True))


@pytest.mark.parametrize("command", PAYLOAD_COMMANDS)
def test_payload_help_prints_the_schema_and_an_example_the_command_accepts(
        vault: Path, tmp_path: Path, command: str) -> None:
    repo = fresh(vault, tmp_path, "cli")
    shown = echoes_lint(repo, command, "--help")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"usage: echoes-lint {command} ")
    assert "echoes_vault.py" not in shown.stdout
    assert f"\n{engine.COMMAND_SUMMARIES[command]}\n" in shown.stdout
    schema, example = help_parts(shown.stdout)
    assert (schema, example) == (engine.PAYLOAD_SCHEMAS[command], engine.PAYLOAD_EXAMPLES[command])
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.validate(example, schema)
    assert f"Example: echoes-lint {command}" in shown.stdout
    ok(echoes_lint(repo, command, *FLAGS.get(command, ()), "--payload", "-", payload=example))
    # The installed runtime prints the same help under its own name, and accepts the example.
    repo = fresh(vault, tmp_path, "runtime")
    shown = runtime(repo, command, "--help")
    assert shown.returncode == 0 and shown.stdout.startswith(f"usage: echoes_vault.py {command} ")
    assert help_parts(shown.stdout) == (schema, example)
    assert f"Example: echoes_vault.py {command}" in shown.stdout
    ok(runtime(repo, command, *FLAGS.get(command, ()), "--payload", "-", payload=example))


@pytest.mark.parametrize("command", engine.COMMANDS)
def test_every_command_has_a_one_line_description_under_the_invoked_name(
        vault: Path, command: str) -> None:
    shown = echoes_lint(vault, command, "--help")
    assert shown.returncode == 0 and shown.stderr == ""
    assert shown.stdout.startswith(f"usage: echoes-lint {command} ")
    summary = engine.COMMAND_SUMMARIES[command]
    assert "\n" not in summary and f"\n\n{summary}\n" in shown.stdout
    assert runtime(vault, command, "--help").stdout.startswith(f"usage: echoes_vault.py {command}")


def test_start_explains_recent(vault: Path) -> None:
    text = " ".join(echoes_lint(vault, "start", "--help").stdout.split())
    assert "--recent N print the N most recent daily entries" in text
    assert f"default {engine.RECENT_DEFAULT}, clamped to 0..{engine.RECENT_MAX}" in text


def test_usage_errors_name_the_invoked_command(vault: Path) -> None:
    refused = echoes_lint(vault, "upsert")
    assert refused.returncode == 2
    assert json.loads(refused.stderr)["error"].startswith("echoes-lint upsert: ")
    assert json.loads(runtime(vault, "upsert").stderr)["error"].startswith("echoes_vault.py upsert")


# --- the schema is what the engine enforces ----------------------------------------------------

# Values that probe each key's type and emptiness.
PROBES: List[Any] = [None, "", "  ", 1, [], {}]
# Where the engine is more lenient than the schema: a hash is only read for a page that exists.
LENIENT = {"expectedSha256"}


def mutations(command: str) -> Iterator[Tuple[str, Dict[str, Any]]]:
    """(label, payload): the example without each key, with an unknown key, and with each
    property (of the payload and of an `end` page) set to each probe."""
    example = engine.PAYLOAD_EXAMPLES[command]
    schema = engine.PAYLOAD_SCHEMAS[command]
    targets: List[Tuple[str, Dict[str, Any], Dict[str, Any]]] = [("", example, schema)]
    if command == "end":
        targets.append(("pages[0].", example["pages"][0], schema["properties"]["pages"]["items"]))
    for prefix, _part, part_schema in targets:
        def edited(change: Any, prefix: str = prefix) -> Dict[str, Any]:
            payload = copy.deepcopy(example)
            change(payload["pages"][0] if prefix else payload)
            return payload

        for key in part_schema["properties"]:
            yield f"{prefix}{key} dropped", edited(lambda part, key=key: part.pop(key, None))
            for probe in PROBES:
                yield (f"{prefix}{key}={probe!r}",
                       edited(lambda part, key=key, probe=probe: part.__setitem__(key, probe)))
        yield f"{prefix}unknown key", edited(lambda part: part.__setitem__("extra", 1))


def accepted(vault: Path, tmp_path: Path, number: int, command: str,
             payload: Dict[str, Any]) -> bool:
    """Whether the engine accepts the payload, in a fresh copy of the vault (in-process: a
    hundred subprocesses would prove nothing more than the CLI test above)."""
    repo = fresh(vault, tmp_path, f"probe-{number}")
    stdout, stderr = io.BytesIO(), io.BytesIO()
    code = engine.run(["--workspace", str(repo), command, *FLAGS.get(command, ()),
                       "--payload", "-"], io.BytesIO(json.dumps(payload).encode()), stdout, stderr)
    assert code in (0, 2), stderr.getvalue()
    return code == 0


@pytest.mark.parametrize("command", PAYLOAD_COMMANDS)
def test_the_schema_accepts_exactly_what_the_engine_accepts(vault: Path, tmp_path: Path,
                                                            command: str) -> None:
    validator = jsonschema.Draft7Validator(engine.PAYLOAD_SCHEMAS[command])
    disagreements = []
    for number, (label, payload) in enumerate(mutations(command)):
        by_schema = validator.is_valid(payload)
        by_engine = accepted(vault, tmp_path, number, command, payload)
        lenient = label.split("=")[0].rsplit(".", 1)[-1] in LENIENT and by_engine
        if by_schema != by_engine and not lenient:
            disagreements.append((label, by_schema, by_engine))
    assert disagreements == []


@pytest.mark.parametrize("command", PAYLOAD_COMMANDS)
def test_required_and_allowed_keys_are_the_engines(command: str) -> None:
    schema = engine.PAYLOAD_SCHEMAS[command]
    keys = {"append": engine.APPEND_KEYS, "upsert": engine.UPSERT_KEYS,
            "end": engine.END_KEYS}[command]
    assert tuple(schema["properties"]) == keys and schema["additionalProperties"] is False
    if command == "end":
        page = schema["properties"]["pages"]["items"]
        assert tuple(page["properties"]) == engine.END_PAGE_KEYS
        assert page["required"] == ["filename", "content"]


# --- the card names commands as the caller runs them -------------------------------------------


def test_the_card_names_commands_as_they_were_run(vault: Path, tmp_path: Path) -> None:
    repo = fresh(vault, tmp_path, "card")
    (repo / "EchoesVault" / ".echoes-vault.json").unlink()  # the vault now needs `init`
    through_cli = echoes_lint(repo, "status", "--format", "card").stdout
    through_runtime = runtime(repo, "status", "--format", "card").stdout
    assert "Run `echoes-lint init` or `echoes-lint migrate`" in through_cli
    assert "echoes_vault.py" not in through_cli
    call = "python3 .echoes-vault/echoes_vault.py --workspace ."
    assert f"Run `{call} init` or `{call} migrate`" in through_runtime
    assert through_cli.replace("echoes-lint", call) == through_runtime
    # The JSON report is the same whoever runs it.
    assert json.loads(echoes_lint(repo, "status").stdout) == \
        json.loads(runtime(repo, "status").stdout)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "No vault here. Run `echoes-lint init`" in \
        echoes_lint(empty, "status", "--format", "card").stdout
