"""`append`, `upsert`, `end` and `start`: what they write, what they return, and that every
rejected write leaves every file byte-identical."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any, Dict

import pytest
from conftest import run_cli, write_page
from helpers_writer import (
    INDEX,
    INTENT,
    LOCK,
    PAGES,
    STATE,
    cli,
    init_vault,
    ok,
    page,
    page_hash,
    refused,
    snapshot,
)

from echoes_lint import engine

LOCAL_HEADING = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d"


@pytest.fixture
def vault(git_repo: Path) -> Path:
    init_vault(git_repo)
    return git_repo


def test_append_writes_one_unique_utc_named_file_with_a_local_heading(vault: Path) -> None:
    result = ok(cli(vault, "append", "--payload", "-", env={"TZ": "IST-5:30"},
                    payload={"entry": "  - Confirmed the API contract.\r\n", "agent": "Claude Code"}))
    assert set(result) == {"ok", "dailyLog", "kind", "agent"}
    assert result["kind"] == "scratchpad" and result["agent"] == "claude-code"
    path = Path(result["dailyLog"])
    match = engine.DAILY_FILE_RE.match(path.name)
    assert match and match.group(2) == "scratchpad" and match.group(3) == "claude-code"
    assert path.parent.name == f"{match.group(1)[:4]}-{match.group(1)[4:6]}-{match.group(1)[6:8]}"
    assert path.parent.parent == vault / "EchoesVault/daily"
    text = path.read_text()
    assert re.fullmatch(rf"### Scratchpad — {LOCAL_HEADING}\n\nAgent: `claude-code`\n\n"
                        r"- Confirmed the API contract\.\n", text)
    assert text.split("\n")[0].endswith("+05:30")
    state = json.loads((vault / STATE).read_text())
    assert state["stats"]["totalDailyLogs"] == 1 and state["session"]["saved"] is False
    assert state["lastWriter"]["agent"] == "claude-code"


def test_append_without_an_agent_and_with_the_agent_option(vault: Path) -> None:
    plain = Path(ok(cli(vault, "append", "--payload", "-", payload={"entry": "x"}))["dailyLog"])
    assert re.fullmatch(r"\d{8}T\d{12}Z-scratchpad-[0-9a-f]{8}\.md", plain.name)
    assert "Agent:" not in plain.read_text()
    named = ok(cli(vault, "--agent", "OpenCode", "append", "--payload", "-",
                   payload={"entry": "y"}))
    assert named["agent"] == "opencode" and "-scratchpad-opencode-" in named["dailyLog"]


def test_append_reads_a_payload_file(vault: Path, tmp_path: Path) -> None:
    payload = tmp_path / "payload.json"
    payload.write_text(json.dumps({"entry": "From a file."}), encoding="utf-8")
    result = ok(cli(vault, "append", "--payload", str(payload)))
    assert Path(result["dailyLog"]).read_text().endswith("\n\nFrom a file.\n")


def test_upsert_creates_then_updates_with_the_current_hash(vault: Path) -> None:
    created = ok(cli(vault, "upsert", "--payload", "-",
                     payload={"filename": "Auth", "content": page("Auth boundaries.")}))
    assert set(created) == {"ok", "action", "page", "sha256", "indexChanged"}
    assert created["action"] == "created" and created["indexChanged"] is True
    assert created["page"] == str(vault / PAGES / "Auth.md")
    assert created["sha256"] == page_hash(vault, "Auth.md")
    body_only = ok(cli(vault, "upsert", "--payload", "-", payload={
        "filename": "Auth.md", "content": page("Auth boundaries.", body="# New\r\nbody\r\n"),
        "expectedSha256": created["sha256"]}))
    assert body_only["action"] == "updated" and body_only["indexChanged"] is False
    assert (vault / PAGES / "Auth.md").read_bytes() == page(
        "Auth boundaries.", body="# New\nbody\n").encode()
    renamed = ok(cli(vault, "upsert", "--payload", "-", payload={
        "filename": "Auth.md", "content": page("Token flow."),
        "expectedSha256": body_only["sha256"]}))
    assert renamed["indexChanged"] is True
    assert "- [[Auth]]: Token flow." in (vault / INDEX).read_text()


def test_upsert_accepts_a_legacy_index_description(vault: Path) -> None:
    content = "---\ntype: note\nstack: []\nstatus: active\n---\n\n# Old\n"
    ok(cli(vault, "upsert", "--payload", "-", payload={
        "filename": "old.md", "content": content, "indexDescription": "- [[old]]: From the index."}))
    assert (vault / PAGES / "old.md").read_text() == (
        '---\ntype: note\nstack: []\nstatus: active\nsummary: "From the index."\n---\n\n# Old\n')
    same = ok(cli(vault, "upsert", "--payload", "-", payload={
        "filename": "new.md", "content": page("Same text."), "indexDescription": "Same   text."}))
    assert same["action"] == "created"


def test_a_page_stored_under_another_unicode_form_is_updated_in_place(vault: Path) -> None:
    decomposed = unicodedata.normalize("NFD", "café.md")
    (vault / PAGES / decomposed).write_text(page("Coffee."), encoding="utf-8")
    # The agent's path: `hash` the NFC name it knows, then upsert with that hash.
    result = ok(cli(vault, *UPSERT, payload={"filename": "café.md", "content": page("Café."),
                                             "expectedSha256": page_hash(vault, "café.md")}))
    assert result["action"] == "updated" and result["page"] == str(vault / PAGES / decomposed)
    assert [path.name for path in (vault / PAGES).iterdir()] == [decomposed]


def test_end_saves_pages_a_session_entry_and_saved_state(vault: Path) -> None:
    write_page(vault, "auth.md", summary="Old summary.")
    payload = {"dailySummary": "- Finished the middleware.\n- Next: tests.", "agent": "Codex",
               "pages": [{"filename": "auth.md", "content": page("New summary."),
                          "expectedSha256": page_hash(vault, "auth.md")},
                         {"filename": "tokens", "content": page("Token rules.")}],
               "indexUpdates": []}
    result = ok(cli(vault, "end", "--confirm-explicit-user-end", "--payload", "-",
                    payload=payload))
    assert set(result) == {"ok", "dailyLog", "pagesWritten", "pages", "index", "memorySaved",
                           "agent"}
    assert result["memorySaved"] is True and result["pagesWritten"] == 2
    assert result["agent"] == "codex" and result["index"] == str(vault / INDEX)
    session = Path(result["dailyLog"])
    assert "-session-codex-" in session.name
    assert re.fullmatch(rf"### Session — {LOCAL_HEADING}\n\nAgent: `codex`\n\n"
                        r"- Finished the middleware\.\n- Next: tests\.\n", session.read_text())
    assert (vault / PAGES / "tokens.md").read_text() == page("Token rules.")
    assert (vault / INDEX).read_text().endswith("- [[auth]]: New summary.\n"
                                                "- [[tokens]]: Token rules.\n")
    state = json.loads((vault / STATE).read_text())
    assert state["session"]["saved"] is True
    assert re.fullmatch(LOCAL_HEADING, state["session"]["lastSave"])
    assert state["stats"]["totalPages"] == 2 and state["stats"]["totalDailyLogs"] == 1


def test_start_returns_the_index_and_latest_entries_and_marks_the_session(vault: Path) -> None:
    write_page(vault, "auth.md", summary="Auth.", body="SECRET BODY\n")
    for number in range(4):
        ok(cli(vault, "append", "--payload", "-", payload={"entry": f"entry {number}"}))
    context = cli(vault, "start", "--recent", "2")
    assert context.returncode == 0, context.stderr
    text = context.stdout
    assert text.startswith("# EchoesVault session context\n\n## Index\n\n# EchoesVault Index\n")
    assert "- [[auth]]: Auth." in text and "SECRET BODY" not in text
    assert "## Recent session entries (2)\n\n### " in text and "_2 of 4 daily files shown._" in text
    assert text.index("entry 3") < text.index("entry 2") and "entry 1" not in text
    state = json.loads((vault / STATE).read_text())
    assert state["session"]["started"] is True and state["session"]["saved"] is False
    assert "entry 0" in cli(vault, "start", "--recent", "50").stdout
    assert "_0 of 4 daily files shown._" in cli(vault, "start", "--recent", "-3").stdout


def test_start_warns_above_two_hundred_pages(vault: Path) -> None:
    for number in range(201):
        write_page(vault, f"p{number:03}.md")
    assert "SCALE ALERT" in cli(vault, "start", "--recent", "0").stdout


def auth_page(vault: Path) -> str:
    write_page(vault, "auth.md", summary="Auth.")
    ok(cli(vault, "hydrate"))
    return page_hash(vault, "auth.md")


END = ("end", "--confirm-explicit-user-end", "--payload", "-")
UPSERT = ("upsert", "--payload", "-")
REJECTED: Dict[str, Any] = {
    "missing hash": (UPSERT, {"filename": "auth.md", "content": page("New.")}, "expectedSha256"),
    "stale hash": (UPSERT, {"filename": "auth.md", "content": page("New."),
                            "expectedSha256": "0" * 64}, "Concurrent change"),
    "bad frontmatter": (UPSERT, {"filename": "new.md",
                                 "content": "---\ntype: x\nstack: []\nsummary: S.\n---\n"},
                        "`status` is missing"),
    "conflict markers": (UPSERT, {"filename": "new.md",
                                  "content": page(body="<<<<<<< ours\na\n=======\nb\n>>>>>>> x\n")},
                         "conflict markers"),
    "long summary": (UPSERT, {"filename": "new.md", "content": page("y" * 161)}, "161"),
    "unsafe name": (UPSERT, {"filename": "../escape.md", "content": page()}, "'/'"),
    "case collision": (UPSERT, {"filename": "AUTH.md", "content": page()}, "collides"),
    "invalid agent": (UPSERT, {"filename": "new.md", "content": page(), "agent": "!!!"},
                      "no letters or digits"),
    "not json": (UPSERT, "{", "not valid JSON"),
    "not an object": (UPSERT, [], "JSON object"),
    "empty entry": (("append", "--payload", "-"), {"entry": "  "}, "non-empty"),
    "marker in entry": (("append", "--payload", "-"), {"entry": "a\n=======\nb"},
                        "conflict-marker"),
    "unconfirmed end": (("end", "--payload", "-"), {"dailySummary": "x"},
                        "--confirm-explicit-user-end"),
    "duplicate pages": (END, {"dailySummary": "x", "pages": [
        {"filename": "new.md", "content": page()}, {"filename": "new", "content": page()}]},
        "twice"),
    "duplicate by case": (END, {"dailySummary": "x", "pages": [
        {"filename": "Straße.md", "content": page()}, {"filename": "STRASSE.md", "content": page()}]},
        "twice"),
    "index updates": (END, {"dailySummary": "x", "indexUpdates": [{"x": 1}]}, "indexUpdates"),
    "one stale page in end": (END, {"dailySummary": "x", "pages": [
        {"filename": "first.md", "content": page()},
        {"filename": "auth.md", "content": page(), "expectedSha256": "f" * 64}]},
        "Concurrent change"),
    "invalid end agent": (END, {"dailySummary": "x", "agent": "---"}, "no letters or digits"),
    "missing summary": (END, {"pages": []}, "`dailySummary`"),
}


@pytest.mark.parametrize("case", sorted(REJECTED))
def test_a_rejected_write_leaves_every_file_byte_identical(vault: Path, case: str) -> None:
    auth_page(vault)
    command, payload, expected = REJECTED[case]
    before = snapshot(vault)
    assert expected in refused(cli(vault, *command, payload=payload))
    assert snapshot(vault) == before


def test_an_invalid_page_elsewhere_blocks_the_prospective_index(vault: Path) -> None:
    write_page(vault, "broken.md", summary="line one", status="")
    before = snapshot(vault)
    message = refused(cli(vault, *UPSERT, payload={"filename": "new.md", "content": page()}))
    assert "Cannot build the index" in message and "broken.md" in message
    assert snapshot(vault) == before


def test_end_checks_confirmation_before_anything_else(tmp_path: Path) -> None:
    missing = tmp_path / "does-not-exist"
    completed = run_cli("--workspace", str(missing), "end", "--payload", "-", cwd=tmp_path,
                        input="{")
    assert "--confirm-explicit-user-end" in refused(completed)


def test_symbolic_links_are_never_written_through(vault: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.md").write_text(page("Outside."))
    (vault / PAGES / "link.md").symlink_to(outside / "target.md")
    before, outside_before = snapshot(vault), snapshot(outside)
    assert "symbolic link" in refused(cli(vault, *UPSERT, payload={
        "filename": "link.md", "content": page(), "expectedSha256": "0" * 64}))
    assert snapshot(vault) == before
    daily = vault / "EchoesVault/daily"
    daily.rmdir()
    daily.symlink_to(outside, target_is_directory=True)
    before = snapshot(vault)
    assert "symbolic link" in refused(cli(vault, "append", "--payload", "-", payload={"entry": "x"}))
    assert snapshot(vault) == before and snapshot(outside) == outside_before


def test_no_lock_intent_or_temporary_file_outlives_a_command(vault: Path) -> None:
    runs = [
        (("append", "--payload", "-"), {"entry": "x"}, 0),
        (UPSERT, {"filename": "a.md", "content": page()}, 0),
        (UPSERT, {"filename": "a.md", "content": page()}, 2),
        (END, {"dailySummary": "x"}, 0),
        (END, {"dailySummary": "x", "pages": [{"filename": "a.md", "content": page()}]}, 2),
        (("start",), None, 0), (("hydrate",), None, 0), (("rebuild-index",), None, 0),
        (("configure-agents",), None, 0), (("migrate",), None, 0), (("upgrade",), None, 0),
        (("status",), None, 0), (("hash", "a.md"), None, 0), (("search", "Title"), None, 0),
    ]
    for command, payload, code in runs:
        assert cli(vault, *command, payload=payload).returncode == code, command
        assert not (vault / LOCK).exists() and not (vault / INTENT).exists(), command
        assert not [path for path in snapshot(vault) if path.endswith(".echoes-tmp")], command
