"""Writers facing a hostile repository or a moving vault: a committed or foreign intent file is
never applied, `hydrate` never completes a change, payloads are strict, locks never wedge, and
errors stay short."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from conftest import ROOT, git, init_repo, run_cli, write_page
from helpers_writer import (
    INTENT,
    LOCK,
    PAGES,
    cli,
    daily_entries,
    init_vault,
    ok,
    page,
    page_hash,
    refused,
    resumed,
    runtime,
    snapshot,
    stopped_runtime,
)
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from echoes_lint import engine

HOSTILE_CONFIG = "[core]\n\tfsmonitor = touch pwned-by-fsmonitor\n"
HOSTILE_HOOK = "#!/bin/sh\ntouch pwned-by-hook\n"
# Every writer, with a payload it accepts.
WRITERS: List[Tuple[Tuple[str, ...], Any]] = [
    (("hydrate",), None),
    (("upsert", "--payload", "-"), {"filename": "new.md", "content": page()}),
    (("append", "--payload", "-"), {"entry": "- a note"}),
    (("end", "--confirm-explicit-user-end", "--payload", "-"), {"dailySummary": "- done"}),
    (("start",), None),
    (("init",), None),
    (("rebuild-index",), None),
    (("configure-agents",), None),
]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hostile_intent(version: int, head: str, config: bytes) -> str:
    """An intent as the engine would write it, but whose writes rewrite Git's own files."""
    return json.dumps({
        "version": version, "engineVersion": engine.ENGINE_VERSION, "operation": "end",
        "head": head, "request": None, "directories": [],
        "writes": [{"path": ".git/config", "content": HOSTILE_CONFIG, "before": sha256(config)},
                   {"path": ".git/hooks/post-commit", "content": HOSTILE_HOOK, "before": None},
                   {"path": "EchoesVault/pages/ok.md", "content": page(), "before": None}]})


def hostile_clone(tmp_path: Path, version: int) -> Path:
    """A fresh `git clone` of a repository that commits a hostile `.echoes-vault/intent.json`.
    The intent names the pre-image hash of the clone's `.git/config` (predictable: a probe clone
    of the same URL has the same file) and the commit the intent was added on top of."""
    source = init_repo(tmp_path / "source")
    init_vault(source)
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "vault")
    git(source, "clone", "-q", str(source), str(tmp_path / "probe"))
    config = (tmp_path / "probe" / ".git" / "config").read_bytes()
    head = git(source, "rev-parse", "HEAD").strip()
    (source / INTENT).write_text(hostile_intent(version, head, config))
    git(source, "add", "-f", str(INTENT))
    git(source, "commit", "-q", "-m", "an innocent-looking change")
    victim = tmp_path / "victim"
    git(tmp_path, "clone", "-q", str(source), str(victim))
    assert (victim / ".git" / "config").read_bytes() == config
    return victim


def assert_unharmed(repo: Path, config: bytes) -> None:
    assert (repo / ".git" / "config").read_bytes() == config
    assert not (repo / ".git" / "hooks" / "post-commit").exists()
    assert not (repo / PAGES / "ok.md").exists()
    assert not list(repo.glob("pwned*"))


@pytest.mark.parametrize("version", [1, engine.INTENT_VERSION])
def test_a_committed_intent_is_never_applied_by_any_writer(tmp_path: Path, version: int) -> None:
    victim = hostile_clone(tmp_path, version)
    config = (victim / ".git" / "config").read_bytes()
    for command, payload in WRITERS:
        result = cli(victim, *command, payload=payload)
        assert_unharmed(victim, config)
        if command == ("hydrate",):
            pending = ok(result)["interruptedWrite"]
            assert pending["operation"] is None and "tracked by Git" in pending["problem"]
            continue
        message = refused(result)
        assert "tracked by Git" in message or f"intent version {version}" in message, message
        assert "was not applied" in message and message.endswith(engine.DISCARD_COMMAND)
    # The Git hook that runs after a checkout reaches the same code: it must not apply it either.
    hook = subprocess.run(["sh", str(ROOT / "hooks" / "post-checkout"), "0", "0", "1"],
                          cwd=victim, capture_output=True, text=True, check=False)
    assert hook.returncode == 0, hook.stderr
    assert_unharmed(victim, config)
    # The linter flags the committed intent as local state that must never be committed.
    lint = run_cli("check", cwd=victim)
    assert f"{INTENT}:1:1: EV021" in lint.stdout, lint.stdout


def test_an_untracked_intent_naming_other_files_is_refused(git_repo: Path) -> None:
    init_vault(git_repo)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "vault")
    config = (git_repo / ".git" / "config").read_bytes()
    head = git(git_repo, "rev-parse", "HEAD").strip()
    (git_repo / INTENT).write_text(hostile_intent(engine.INTENT_VERSION, head, config))
    message = refused(cli(git_repo, "append", "--payload", "-", payload={"entry": "x"}))
    assert "it writes .git/config, which `end` never writes" in message
    assert_unharmed(git_repo, config)
    # The command the error names discards the intent; then writers work again.
    ok(runtime(git_repo, *engine.DISCARD_COMMAND.split()[4:]))
    assert not (git_repo / INTENT).exists()
    ok(cli(git_repo, "append", "--payload", "-", payload={"entry": "x"}))
    assert_unharmed(git_repo, config)


def killed_end(repo: Path, step: str) -> None:
    """An `end` that creates `tokens.md` and replaces `auth.md`, SIGKILLed at `step`."""
    ok(cli(repo, "upsert", "--payload", "-",
           payload={"filename": "auth.md", "content": page("Auth, first edition.")}))
    payload = {"dailySummary": "- Saved.", "pages": [
        {"filename": "auth.md", "content": page("Auth, second edition."),
         "expectedSha256": page_hash(repo, "auth.md")},
        {"filename": "tokens.md", "content": page("Token rules.")}]}
    crashed = runtime(repo, "end", "--confirm-explicit-user-end", "--payload", "-",
                      payload=payload, env={engine.CRASH_ENV: step})
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr


def test_an_intent_recorded_on_one_branch_is_not_applied_on_another(git_repo: Path) -> None:
    init_vault(git_repo)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "vault")
    killed_end(git_repo, "end:intent")
    git(git_repo, "checkout", "-q", "-b", "other")
    (git_repo / "other.txt").write_text("other branch\n")
    git(git_repo, "add", "other.txt")
    git(git_repo, "commit", "-q", "-m", "other")
    message = refused(cli(git_repo, "append", "--payload", "-", payload={"entry": "x"}))
    assert "HEAD moved" in message and message.endswith(engine.DISCARD_COMMAND)
    assert not (git_repo / PAGES / "tokens.md").exists()
    assert daily_entries(git_repo) == {}
    # Back where it was recorded, the next writer completes it.
    git(git_repo, "checkout", "-q", "main")
    result = ok(cli(git_repo, "append", "--payload", "-", payload={"entry": "x"}))
    assert result["recovered"]["operation"] == "end"
    assert (git_repo / PAGES / "tokens.md").read_text() == page("Token rules.")


def test_hydrate_reports_an_interrupted_change_and_never_completes_it(git_repo: Path) -> None:
    init_vault(git_repo)
    killed_end(git_repo, "end:intent")
    first_edition = (git_repo / PAGES / "auth.md").read_bytes()
    write_page(git_repo, "other.md", summary="Added by hand.")  # so the index `hydrate` writes
    result = ok(runtime(git_repo, "hydrate"))                    # is not the one recorded
    pending = result["interruptedWrite"]
    assert pending == {"intent": str(INTENT), "operation": "end", "problem": None,
                       "complete": engine.COMPLETE_COMMAND, "discard": engine.DISCARD_COMMAND}
    assert "recovered" not in result
    # Durable knowledge is untouched (spec 12.5.1); the intent stays for a writer to complete.
    assert (git_repo / PAGES / "auth.md").read_bytes() == first_edition
    assert not (git_repo / PAGES / "tokens.md").exists() and daily_entries(git_repo) == {}
    assert (git_repo / INTENT).exists() and not (git_repo / LOCK).exists()
    # The next writer completes it, and the index `hydrate` rebuilt meanwhile is rebuilt again.
    result = ok(runtime(git_repo, "append", "--payload", "-", payload={"entry": "x"}))
    assert result["recovered"]["operation"] == "end"
    assert (git_repo / PAGES / "tokens.md").exists() and len(daily_entries(git_repo)) == 2
    assert (git_repo / "EchoesVault" / "index.md").read_text().endswith(
        "- [[auth]]: Auth, second edition.\n- [[other]]: Added by hand.\n"
        "- [[tokens]]: Token rules.\n")


def test_an_intent_that_cannot_be_completed_names_the_discard_command(git_repo: Path) -> None:
    init_vault(git_repo)
    killed_end(git_repo, "end:intent")
    (git_repo / PAGES / "tokens.md").mkdir()  # the new page's path is now a folder
    for _attempt in range(2):  # it does not go away by itself, and says so each time
        message = refused(cli(git_repo, "append", "--payload", "-", payload={"entry": "x"}))
        assert str(INTENT) in message and message.endswith(engine.DISCARD_COMMAND)
    (git_repo / PAGES / "tokens.md").rmdir()
    # A discard that is followed by a failure says that it happened.
    (git_repo / PAGES / "broken.md").write_text("no frontmatter\n")
    message = refused(runtime(git_repo, *engine.DISCARD_COMMAND.split()[4:]))
    assert message.endswith(f"The interrupted write in {INTENT} was discarded first.")
    assert not (git_repo / INTENT).exists()
    (git_repo / PAGES / "broken.md").unlink()
    ok(cli(git_repo, "append", "--payload", "-", payload={"entry": "x"}))
    assert not (git_repo / PAGES / "tokens.md").exists()


def test_the_discard_command_reports_what_it_discarded(git_repo: Path) -> None:
    init_vault(git_repo)
    killed_end(git_repo, "end:intent")
    first_edition = (git_repo / PAGES / "auth.md").read_bytes()
    discarded = ok(runtime(git_repo, *engine.DISCARD_COMMAND.split()[4:]))
    report = discarded["discardedInterruptedWrite"]
    assert report["operation"] == "end" and report["intent"] == str(INTENT)
    assert report["files"][:2] == [f"{PAGES}/auth.md", f"{PAGES}/tokens.md"]
    # Nothing of the change is applied, and its staged temporary files are gone.
    assert (git_repo / PAGES / "auth.md").read_bytes() == first_edition
    assert not (git_repo / PAGES / "tokens.md").exists() and daily_entries(git_repo) == {}
    assert not [path for path in snapshot(git_repo) if path.endswith(".echoes-tmp")]
    assert not (git_repo / INTENT).exists()


# --- the vault moving under a writer ---------------------------------------------------------


@pytest.mark.parametrize("change", ["deleted", "replaced"])
def test_a_vault_removed_while_a_writer_runs_is_not_recreated(git_repo: Path,
                                                             change: str) -> None:
    init_vault(git_repo)
    vault = git_repo / "EchoesVault"
    # The writer stops itself after planning, just before it commits.
    process = stopped_runtime(git_repo, "upsert", "--payload", "-",
                              payload={"filename": "new.md", "content": page()},
                              step="upsert:commit")
    shutil.rmtree(vault)
    if change == "replaced":
        vault.mkdir()
    assert "was removed, replaced" in resumed(process)
    assert (not vault.exists()) if change == "deleted" else list(vault.iterdir()) == []
    assert not (git_repo / LOCK).exists() and not (git_repo / INTENT).exists()


def test_error_messages_stay_short_whatever_they_quote(git_repo: Path) -> None:
    init_vault(git_repo)
    ok(cli(git_repo, "upsert", "--payload", "-", payload={"filename": "a.md", "content": page()}))
    huge = "f" * 400_000
    for payload in ({"filename": "a.md", "content": page("Other."), "expectedSha256": huge},
                    {"filename": huge + "\n.md", "content": page()},
                    {"filename": "b.md", "content": page(), huge: 1}):
        message = refused(cli(git_repo, "upsert", "--payload", "-", payload=payload))
        assert len(message) <= engine.MAX_ERROR_CHARS + 100, len(message)


# --- payloads --------------------------------------------------------------------------------


@pytest.mark.parametrize(("command", "payload", "unknown", "accepted"), [
    (("end", "--confirm-explicit-user-end"),
     {"dailySummary": "- x", "page": [{"filename": "a.md", "content": page()}]}, "`page`",
     engine.END_KEYS),
    (("end", "--confirm-explicit-user-end"),
     {"dailySummary": "- x", "pages": [{"filename": "a.md", "content": page(), "hash": "0"}]},
     "`hash`", engine.END_PAGE_KEYS),
    (("upsert",), {"filename": "a.md", "content": page(), "expectedSha": "0"}, "`expectedSha`",
     engine.UPSERT_KEYS),
    (("append",), {"entry": "- x", "agnet": "codex"}, "`agnet`", engine.APPEND_KEYS),
])
def test_an_unknown_payload_key_is_refused_with_the_accepted_keys(
        git_repo: Path, command: Tuple[str, ...], payload: Dict[str, Any], unknown: str,
        accepted: Tuple[str, ...]) -> None:
    init_vault(git_repo)
    before = snapshot(git_repo)
    message = refused(cli(git_repo, *command, "--payload", "-", payload=payload))
    assert f"unknown key {unknown}" in message and "Nothing was written" in message
    assert ", ".join(f"`{key}`" for key in accepted) in message
    assert snapshot(git_repo) == before


@pytest.mark.parametrize(("raw", "expected"), [
    ('{"entry": "\\ud800 lone"}', "lone surrogate \\ud800"),
    ('{"agent": "\\udfff", "entry": "x"}', "lone surrogate \\udfff"),
    ('{"entry": ' + "[" * 200_000 + "]" * 200_000 + "}", "nested too deeply"),
], ids=["lone-surrogate", "lone-surrogate-in-agent", "deep-nesting"])  # short ids: pytest puts
# the test id in PYTEST_CURRENT_TEST, and an environment string over 128 KiB cannot be exec'd
def test_surrogates_and_deep_nesting_get_a_validation_message(git_repo: Path, raw: str,
                                                             expected: str) -> None:
    init_vault(git_repo)
    before = snapshot(git_repo)
    message = refused(cli(git_repo, "append", "--payload", "-", payload=raw))
    assert expected in message and "Internal error" not in message
    assert snapshot(git_repo) == before


def test_an_endless_payload_is_refused_without_being_read_whole(git_repo: Path) -> None:
    init_vault(git_repo)
    with open(os.devnull.replace("null", "zero"), "rb") as endless:
        completed = subprocess.run(
            [sys.executable, "-m", "echoes_lint", "--workspace", str(git_repo), "append",
             "--payload", "-"], stdin=endless, capture_output=True, check=False, timeout=120)
    assert completed.returncode == 2
    assert "larger than 32 MiB" in json.loads(completed.stderr)["error"]
    message = refused(cli(git_repo, "append", "--payload", "/dev/zero"))
    assert "larger than 32 MiB" in message
    assert daily_entries(git_repo) == {}


# --- locks that no live writer holds ----------------------------------------------------------


def test_a_lock_dated_in_the_future_is_taken_over_not_waited_on_forever(git_repo: Path) -> None:
    init_vault(git_repo)
    lock = git_repo / LOCK
    lock.write_text("another-engine-token\n")
    future = time.time() + 3600
    os.utime(lock, (future, future))
    ok(runtime(git_repo, "append", "--payload", "-", payload={"entry": "x"}))
    assert len(daily_entries(git_repo)) == 1 and not lock.exists()


def test_a_lock_that_is_a_folder_is_refused_at_once_with_the_fix(git_repo: Path) -> None:
    init_vault(git_repo)
    (git_repo / LOCK).mkdir()
    message = refused(runtime(git_repo, "append", "--payload", "-", payload={"entry": "x"}))
    assert "is a folder, not a lock file" in message
    assert f"rmdir -- {LOCK}" in message and "Nothing was changed" in message
    assert (git_repo / LOCK).is_dir() and daily_entries(git_repo) == {}


# --- fuzzed payloads -------------------------------------------------------------------------

# Text with lone surrogates, which JSON escapes (`\\ud800`) but UTF-8 cannot hold, and with
# the characters page and entry rules care about.
_TEXT = st.builds(lambda text, tail: text + tail,
                  st.text(st.characters() | st.sampled_from("\n\r\0-=:/."), max_size=12),
                  st.sampled_from(["", "", "\ud800", "\udfff"]))  # strategies drop Cs
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _TEXT,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(_TEXT, children, max_size=4),
    max_leaves=12)
_PAGE = st.fixed_dictionaries({}, optional={
    "filename": _TEXT.map(lambda text: text + ".md"), "content": _TEXT | st.just(page()),
    "expectedSha256": _TEXT, "indexDescription": _TEXT, "agent": _TEXT})
_SHAPED = st.fixed_dictionaries({}, optional={
    "entry": _TEXT, "agent": _TEXT, "dailySummary": _TEXT, "pages": st.lists(_PAGE, max_size=2)
    | _JSON, "indexUpdates": _JSON, "page": _JSON}).flatmap(
        lambda shaped: _PAGE.map(lambda item: {**item, **shaped}))
_PAYLOADS = st.binary(max_size=300) | (_JSON | _SHAPED).map(
    lambda value: json.dumps(value).encode("ascii"))


@pytest.fixture(scope="module")
def fuzzed_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = init_repo(tmp_path_factory.mktemp("fuzz") / "repo")
    init_vault(repo)
    return repo


@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(["append", "upsert", "end"]), payload=_PAYLOADS)
@example(command="append", payload=b'{"entry": "x\\ud800"}')
@example(command="end", payload=b'{"dailySummary": "\\udfff"}')
@example(command="upsert", payload=b'{"filename": "a.md", "content": ' + b"[" * 100_000 + b"}")
def test_any_payload_gets_a_result_or_one_protocol_error(fuzzed_vault: Path, command: str,
                                                         payload: bytes) -> None:
    """Random bytes and random JSON as the payload of every writer, run in process: success, or
    exit 2 with one JSON error line; never an internal error, never a lock left behind."""
    args = ["--workspace", str(fuzzed_vault), command, "--payload", "-"]
    if command == "end":
        args.append("--confirm-explicit-user-end")
    stdout, stderr = io.BytesIO(), io.BytesIO()
    code = engine.run(args, io.BytesIO(payload), stdout, stderr)
    assert not (fuzzed_vault / LOCK).exists() and not (fuzzed_vault / INTENT).exists()
    if code == 0:
        assert json.loads(stdout.getvalue())["ok"] is True
        return
    assert code == 2 and stdout.getvalue() == b""
    [line] = stderr.getvalue().decode("utf-8").splitlines()
    error = json.loads(line)["error"]
    assert not error.startswith("Internal error"), error
    assert len(error) <= engine.MAX_ERROR_CHARS + 100


_PATHS = st.sampled_from([
    ".git/config", ".git/hooks/post-commit", "../outside", "/etc/passwd", "EchoesVault/../x",
    "EchoesVault/pages/a.md", "EchoesVault/pages/sub/a.md", "EchoesVault/pages/.a.md",
    "EchoesVault/index.md", ".echoes-vault/state.json", ".echoes-vault/echoes_vault.py",
    "EchoesVault/daily/2026-01-01/20260101T000000000000Z-scratchpad-0123abcd.md",
    "EchoesVault/daily/x.md", "AGENTS.md", ".echoes-vault/intent.json"]) | _TEXT
_INTENTS = st.fixed_dictionaries({
    "version": st.sampled_from([engine.INTENT_VERSION, 1, "2", None]),
    "operation": st.sampled_from(sorted(engine.INTENT_TARGETS)) | _TEXT,
    "head": st.none() | _TEXT,
    "request": st.none() | _TEXT,
    "directories": st.lists(st.sampled_from(["EchoesVault/pages", ".git", "x"]), max_size=2),
    "writes": st.lists(st.fixed_dictionaries({
        "path": _PATHS, "content": _TEXT | st.just(page()),
        "before": st.none() | st.just("0" * 64) | _TEXT}), max_size=3)},
    optional={"derived": st.lists(_PATHS, max_size=2) | _TEXT})


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(intent=_INTENTS | _JSON)
def test_any_intent_file_is_completed_safely_or_refused(fuzzed_vault: Path, intent: Any) -> None:
    """Whatever `.echoes-vault/intent.json` holds, a writer completes it only inside the vault
    (pages, daily entries, index, state) or refuses it with the discard command."""
    git_dir = fuzzed_vault / ".git"
    config = (git_dir / "config").read_bytes()
    pages = set((fuzzed_vault / PAGES).iterdir())
    (fuzzed_vault / INTENT).write_bytes(json.dumps(intent).encode("ascii"))
    stdout, stderr = io.BytesIO(), io.BytesIO()
    code = engine.run(["--workspace", str(fuzzed_vault), "rebuild-index"], io.BytesIO(),
                      stdout, stderr)
    assert (git_dir / "config").read_bytes() == config
    assert not (git_dir / "hooks" / "post-commit").exists()
    assert not (fuzzed_vault.parent / "outside").exists() and not (fuzzed_vault / "x").exists()
    for created in set((fuzzed_vault / PAGES).iterdir()) - pages:  # keep the next example's
        created.unlink()                                              # vault valid
    if code == 0:
        assert not (fuzzed_vault / INTENT).exists()
        return
    error = json.loads(stderr.getvalue())["error"]
    assert code == 2 and error.endswith(engine.DISCARD_COMMAND), error
    ok_code = engine.run(["--workspace", str(fuzzed_vault), *engine.DISCARD_COMMAND.split()[4:]],
                         io.BytesIO(), io.BytesIO(), io.BytesIO())
    assert ok_code == 0 and not (fuzzed_vault / INTENT).exists()


def test_a_committed_intent_is_not_applied_when_git_cannot_run(tmp_path: Path) -> None:
    """Without Git the tracked and HEAD checks cannot answer: the intent is refused, not applied."""
    source = init_repo(tmp_path / "source")
    init_vault(source)
    (source / INTENT).write_text(json.dumps({
        "version": engine.INTENT_VERSION, "engineVersion": engine.ENGINE_VERSION,
        "operation": "upsert", "head": None, "request": None, "directories": [],
        "writes": [{"path": f"{PAGES}/evil.md", "content": page(), "before": None}]}))
    git(source, "add", "-A")
    git(source, "add", "-f", str(INTENT))
    git(source, "commit", "-q", "-m", "vault")
    victim = tmp_path / "victim"
    git(tmp_path, "clone", "-q", str(source), str(victim))
    result = subprocess.run([sys.executable, "-I", str(victim / engine.RUNTIME_PATH),
                             "--workspace", str(victim), "rebuild-index"],
                            env={**os.environ, "PATH": str(tmp_path / "no-git")},
                            capture_output=True, text=True, check=False)
    message = refused(result)
    assert "Git cannot say whether it is committed" in message and "was not applied" in message
    assert not (victim / PAGES / "evil.md").exists()
