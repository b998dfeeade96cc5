"""`init`/`migrate`/`upgrade`, `configure-agents`, `hydrate` and `rebuild-index`: the files they
write, what they preserve, and what they refuse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import MARKER, make_vault, write_page
from helpers_writer import (
    ENGINE_FILE,
    INDEX,
    LOCK,
    PAGES,
    RUNTIME,
    STATE,
    cli,
    init_vault,
    ok,
    page,
    refused,
    snapshot,
)

from echoes_lint import engine

GENERATED = [".claude/skills/echoes-vault/SKILL.md", ".opencode/skills/echoes-vault/SKILL.md",
             *(f".opencode/commands/{name}" for name in engine.OPENCODE_COMMAND_NAMES)]


def test_init_installs_the_whole_layout(git_repo: Path) -> None:
    result = init_vault(git_repo, "--agent", "Codex", "--adapter-version", "2.0.1")
    assert set(result) == {"ok", "operation", "created", "vault", "index", "indexRefresh",
                           "agentAdapters", "state"}
    assert result["operation"] == "init" and result["created"] is True
    vault = git_repo / "EchoesVault"
    for name in ("pages", "daily", "assets", "raw"):
        assert (vault / name).is_dir()
    assert (vault / ".echoes-vault.json").read_text() == json.dumps(MARKER, indent=2) + "\n"
    assert (git_repo / RUNTIME).read_bytes() == ENGINE_FILE.read_bytes()
    assert (vault / ".gitignore").read_text() == "# Generated locally by EchoesVault\n/index.md\n"
    assert (git_repo / ".echoes-vault/.gitignore").read_text() == (
        "# EchoesVault runtime files\n/state.json\n/lock\n/intent.json\n/lock.takeover\n"
        "/cache.json\n")
    assert (vault / "index.md").read_text() == engine.INDEX_HEADER
    assert engine.GENERATED_SIGNATURE in (vault / "AGENT_PROTOCOL.md").read_text()
    for guide in ("AGENTS.md", "CLAUDE.md"):
        assert (git_repo / guide).read_text() == engine.NEW_GUIDE_TITLE + engine.GUIDE_BLOCK + "\n"
    for relative in GENERATED:
        text = (git_repo / relative).read_text()
        assert engine.GENERATED_SIGNATURE in text
        assert "python3 .echoes-vault/echoes_vault.py --workspace ." in text
    assert "--confirm-explicit-user-end" in (git_repo / GENERATED[-1]).read_text()
    state = json.loads((git_repo / STATE).read_text())
    assert state == result["state"]
    assert state["version"] == 4 and state["initialized"] is True
    assert state["lastWriter"] == {"agent": "codex", "adapterVersion": "2.0.1"}
    adapters = result["agentAdapters"]
    assert adapters["runtimeUpdated"] and adapters["protocolUpdated"]
    assert adapters["skillsUpdated"] + adapters["commandsUpdated"] == GENERATED
    assert adapters["adapterConflicts"] == []
    assert not (git_repo / LOCK).exists()
    health = ok(cli(git_repo, "status"))["health"]
    assert health["missingStructure"] == [] and health["adapterConfiguration"] == []
    assert health["indexBuildErrors"] == [] and health["stateFile"]["valid"]


def test_init_is_idempotent_and_so_are_migrate_and_upgrade(git_repo: Path) -> None:
    write_page(git_repo, "auth.md", summary="Auth boundaries.")
    init_vault(git_repo)
    before = snapshot(git_repo)
    for command in ("init", "migrate", "upgrade"):
        again = ok(cli(git_repo, command))
        assert again["operation"] == command and again["created"] is False
        assert again["indexRefresh"]["rebuilt"] is False
        adapters = again["agentAdapters"]
        assert not adapters["runtimeUpdated"] and not adapters["protocolUpdated"]
        assert [adapters[key] for key in ("ignoreFilesUpdated", "guidesUpdated", "skillsUpdated",
                                          "commandsUpdated", "legacySkillsRedirected")] == [[]] * 5
        assert snapshot(git_repo) == before


def test_text_outside_the_managed_block_and_existing_ignore_rules_survive(git_repo: Path) -> None:
    agents = "# Team rules\n\nUse tabs.\n\n<!-- echoes-vault:start -->\nold text\n" \
             "<!-- echoes-vault:end -->\n\n## After\n\nKeep this.\n"
    (git_repo / "AGENTS.md").write_text(agents)
    (git_repo / "CLAUDE.md").write_text("Claude notes without a final newline")
    vault = make_vault(git_repo)
    (vault / ".gitignore").write_text("*.tmp\n/index.md")  # no final newline, one rule missing
    (git_repo / ".echoes-vault").mkdir()
    (git_repo / ".echoes-vault/.gitignore").write_bytes(b"/lock\r\nlocal/\r\n")
    init_vault(git_repo)
    assert (git_repo / "AGENTS.md").read_text() == (
        "# Team rules\n\nUse tabs.\n\n" + engine.GUIDE_BLOCK + "\n\n## After\n\nKeep this.\n")
    assert (git_repo / "CLAUDE.md").read_text() == (
        "Claude notes without a final newline\n\n" + engine.GUIDE_BLOCK + "\n")
    assert (vault / ".gitignore").read_text() == (
        "*.tmp\n/index.md\n# Generated locally by EchoesVault\n")
    assert (git_repo / ".echoes-vault/.gitignore").read_bytes() == (
        b"/lock\r\nlocal/\r\n# EchoesVault runtime files\r\n/state.json\r\n/intent.json\r\n"
        b"/lock.takeover\r\n/cache.json\r\n")
    before = snapshot(git_repo)
    init_vault(git_repo)
    assert snapshot(git_repo) == before


@pytest.mark.parametrize("guide", [
    "<!-- echoes-vault:start -->\na\n<!-- echoes-vault:end -->\n<!-- echoes-vault:start -->\n",
    "<!-- echoes-vault:end -->\nb\n<!-- echoes-vault:start -->\n",
])
def test_a_malformed_managed_block_is_refused_without_writing(git_repo: Path, guide: str) -> None:
    (git_repo / "CLAUDE.md").write_text(guide)
    before = snapshot(git_repo)
    assert "malformed EchoesVault block" in refused(cli(git_repo, "init"))
    assert snapshot(git_repo) == before


@pytest.mark.parametrize("command", [
    ("init",), ("migrate",), ("upgrade",), ("configure-agents",), ("hydrate",),
    ("rebuild-index",), ("start",), ("append", "--payload", "-"), ("upsert", "--payload", "-"),
    ("end", "--confirm-explicit-user-end", "--payload", "-"),
])
def test_an_unsupported_protocol_leaves_the_vault_untouched(git_repo: Path,
                                                            command: tuple) -> None:  # type: ignore[type-arg]
    init_vault(git_repo)
    marker = git_repo / "EchoesVault/.echoes-vault.json"
    marker.write_text(json.dumps({**MARKER, "protocolVersion": "2.0.0"}))
    (git_repo / LOCK.parent / "state.json").unlink()
    before = snapshot(git_repo)
    # Each command's own keys: the engine refuses a key it does not accept.
    payload = {"append": {"entry": "x"}, "upsert": {"filename": "a.md", "content": page()},
               "end": {"dailySummary": "x"}}.get(command[0], {})
    message = refused(cli(git_repo, *command, payload=payload))
    assert "2.0.0" in message and "Refusing to write" in message
    assert snapshot(git_repo) == before


@pytest.mark.parametrize("command", ["init", "migrate", "upgrade"])
def test_init_refuses_to_downgrade_a_newer_marker_schema(git_repo: Path, command: str) -> None:
    init_vault(git_repo)
    marker = git_repo / "EchoesVault/.echoes-vault.json"
    marker.write_text(json.dumps({**MARKER, "schemaVersion": 4}))
    before = snapshot(git_repo)
    message = refused(cli(git_repo, command))
    assert "marker schema 4" in message and "Nothing was changed" in message
    assert snapshot(git_repo) == before


def test_a_marker_that_is_not_json_stops_every_writer(git_repo: Path) -> None:
    make_vault(git_repo)
    (git_repo / "EchoesVault/.echoes-vault.json").write_text("{not json")
    before = snapshot(git_repo)
    assert "not valid JSON" in refused(cli(git_repo, "init"))
    assert "not valid JSON" in refused(cli(git_repo, "rebuild-index"))
    assert snapshot(git_repo) == before


def test_writers_need_an_initialised_vault(git_repo: Path) -> None:
    assert "run `init` first" in refused(cli(git_repo, "append", "--payload", "-",
                                            payload={"entry": "x"}))
    write_page(git_repo, "old.md")
    assert "Legacy EchoesVault detected" in refused(cli(git_repo, "rebuild-index"))
    assert not (git_repo / ".echoes-vault").exists()


def legacy_page(body: str = "# Old\n") -> str:
    return f"---\ntype: note\nstack: [go]\nstatus: active\n---\n\n{body}"


def test_init_migrates_legacy_summaries_from_an_unambiguous_index(git_repo: Path) -> None:
    pages = git_repo / PAGES
    pages.mkdir(parents=True)
    (pages / "auth.md").write_text(legacy_page())
    (pages / "api.md").write_text(page("Already has one."))
    (git_repo / INDEX).write_text("# Old index\n\n- [[auth]]: Token \"flow\"   and boundaries\n"
                                  "- [[api]]: ignored, the page has a summary\n")
    result = ok(cli(git_repo, "migrate"))
    assert result["operation"] == "migrate"
    assert result["indexRefresh"]["migratedSummaries"] == ["auth.md"]
    assert (pages / "auth.md").read_text() == (
        "---\ntype: note\nstack: [go]\nstatus: active\n"
        'summary: "Token \\"flow\\" and boundaries"\n---\n\n# Old\n')
    assert (git_repo / INDEX).read_text() == engine.INDEX_HEADER + (
        "\n- [[api]]: Already has one.\n- [[auth]]: Token \"flow\" and boundaries\n")


def test_migration_reports_every_problem_before_writing_anything(git_repo: Path) -> None:
    pages = git_repo / PAGES
    pages.mkdir(parents=True)
    for name in ("missing.md", "twice.md", "long.md", "fine.md"):
        (pages / name).write_text(legacy_page())
    (pages / "broken.md").write_text("no frontmatter at all\n")
    (git_repo / INDEX).write_text("- [[twice]]: one\n- [[twice]]: two\n"
                                  f"- [[long]]: {'x' * 161}\n- [[fine]]: Fine.\n")
    before = snapshot(git_repo)
    message = refused(cli(git_repo, "init"))
    assert "missing.md: no summary, and the legacy index has no row for [[missing]]" in message
    assert "twice.md: no summary, and the legacy index has 2 rows for [[twice]]" in message
    assert "long.md: The legacy index row for long.md cannot be a summary" in message
    assert "broken.md" in message
    assert "fine.md" not in message
    assert snapshot(git_repo) == before


def test_legacy_state_is_imported_in_priority_order(git_repo: Path) -> None:
    session = {"started": True, "saved": True, "lastStart": "2026-01-01T10:00:00+01:00",
               "lastSave": "2026-01-01T11:00:00+01:00"}
    (git_repo / ".opencode").mkdir()
    (git_repo / ".opencode/echoes-state.json").write_text(json.dumps(
        {"initialized": True, "session": session, "pluginVersion": "0.9.0"}))
    (git_repo / ".codex").mkdir()
    (git_repo / ".codex/echoes-vault-state.json").write_text(json.dumps(
        {"initialized": True, "session": {**session, "lastSave": "codex"}}))
    state = init_vault(git_repo)["state"]
    assert state["session"] == session
    assert state["lastWriter"] == {"agent": "opencode", "adapterVersion": "0.9.0"}
    (git_repo / ".opencode/echoes-state.json").write_text("{broken")
    (git_repo / STATE).unlink()
    assert init_vault(git_repo)["state"]["session"]["lastSave"] == "codex"
    # Once written, the runtime's own state wins over every legacy file.
    (git_repo / ".codex/echoes-vault-state.json").write_text(json.dumps(
        {"session": {"lastSave": "ignored"}}))
    assert init_vault(git_repo)["state"]["session"]["lastSave"] == "codex"


def test_legacy_adapters_are_redirected_and_user_files_preserved(git_repo: Path) -> None:
    commands = git_repo / ".opencode/commands"
    commands.mkdir(parents=True)
    (commands / "echoes-end.md").write_text("Call commit_memory_to_echoes_vault now.\n")
    (commands / "echoes-status.md").write_text("My own status command.\n")
    skills = git_repo / ".opencode/skills"
    for name, text in (("echoes-append-to-daily-log", "Use echoes_append_to_daily_log.\n"),
                       ("echoes-search-vault-pages", "A skill the user wrote.\n")):
        (skills / name).mkdir(parents=True)
        (skills / name / "SKILL.md").write_text(text)
    claude = git_repo / ".claude/skills/echoes-vault"
    claude.mkdir(parents=True)
    (claude / "SKILL.md").write_text("Hand-written Claude skill.\n")
    adapters = init_vault(git_repo)["agentAdapters"]
    user_files = [".claude/skills/echoes-vault/SKILL.md", ".opencode/commands/echoes-status.md",
                  ".opencode/skills/echoes-search-vault-pages/SKILL.md"]
    assert adapters["adapterConflicts"] == user_files
    assert (commands / "echoes-status.md").read_text() == "My own status command.\n"
    assert (claude / "SKILL.md").read_text() == "Hand-written Claude skill.\n"
    assert (skills / "echoes-search-vault-pages/SKILL.md").read_text() == \
        "A skill the user wrote.\n"
    assert ".opencode/commands/echoes-end.md" in adapters["commandsUpdated"]
    assert engine.GENERATED_SIGNATURE in (commands / "echoes-end.md").read_text()
    redirect = (skills / "echoes-append-to-daily-log/SKILL.md").read_text()
    assert adapters["legacySkillsRedirected"] == [
        ".opencode/skills/echoes-append-to-daily-log/SKILL.md"]
    assert engine.GENERATED_SIGNATURE in redirect and "Legacy redirect" in redirect
    assert "append --payload -" in redirect
    health = ok(cli(git_repo, "status"))["health"]
    assert health["adapterConfiguration"] == user_files
    again = init_vault(git_repo)["agentAdapters"]
    assert again["adapterConflicts"] == user_files and again["legacySkillsRedirected"] == []


def test_a_symlinked_root_guide_is_left_alone_and_reported(git_repo: Path) -> None:
    (git_repo / "AGENTS.md").write_text("Shared rules.\n")
    (git_repo / "CLAUDE.md").symlink_to("AGENTS.md")
    adapters = init_vault(git_repo)["agentAdapters"]
    assert adapters["guidesUpdated"] == ["AGENTS.md"]
    assert adapters["adapterConflicts"] == ["CLAUDE.md"]
    assert (git_repo / "CLAUDE.md").is_symlink()
    assert (git_repo / "AGENTS.md").read_text() == "Shared rules.\n\n" + engine.GUIDE_BLOCK + "\n"


def test_a_foreign_agent_protocol_file_is_refused(git_repo: Path) -> None:
    make_vault(git_repo)
    (git_repo / "EchoesVault/AGENT_PROTOCOL.md").write_text("# Our own protocol\n")
    before = snapshot(git_repo)
    assert "Refusing to overwrite EchoesVault/AGENT_PROTOCOL.md" in refused(cli(git_repo, "init"))
    assert snapshot(git_repo) == before


def test_configure_agents_repairs_adapters_and_restores_a_missing_runtime(git_repo: Path) -> None:
    init_vault(git_repo)
    (git_repo / GENERATED[0]).unlink()
    (git_repo / RUNTIME).unlink()
    (git_repo / "AGENTS.md").write_text("Mine.\n")
    result = ok(cli(git_repo, "configure-agents"))
    assert result["skillsUpdated"] == [GENERATED[0]] and result["runtimeUpdated"] is True
    assert result["guidesUpdated"] == ["AGENTS.md"]
    assert (git_repo / "AGENTS.md").read_text() == "Mine.\n\n" + engine.GUIDE_BLOCK + "\n"
    assert (git_repo / RUNTIME).read_bytes() == ENGINE_FILE.read_bytes()
    assert result["indexRefresh"]["rebuilt"] is False


def test_hydrate_changes_only_the_index_and_state(git_repo: Path) -> None:
    init_vault(git_repo)
    write_page(git_repo, "b.md", summary="Second.")
    write_page(git_repo, "a.md", summary="First.", status="deprecated")
    (git_repo / INDEX).unlink()
    before = snapshot(git_repo)
    result = ok(cli(git_repo, "hydrate"))
    after = snapshot(git_repo)
    changed = sorted(key for key in set(before) | set(after) if before.get(key) != after.get(key))
    assert changed == [".echoes-vault/state.json", "EchoesVault/index.md"]
    assert result["indexRefresh"]["rebuilt"] is True and result["indexRefresh"]["pageCount"] == 2
    assert (git_repo / INDEX).read_text() == engine.INDEX_HEADER + (
        "\n- [[a]]: DEPRECATED — First.\n- [[b]]: Second.\n")
    assert result["state"]["stats"] == {"totalPages": 2, "totalDailyLogs": 0,
                                        "deprecatedPages": 1}


def test_an_invalid_page_keeps_the_previous_index(git_repo: Path) -> None:
    init_vault(git_repo)
    write_page(git_repo, "a.md", summary="x" * 161)
    before = snapshot(git_repo)
    for command in ("hydrate", "rebuild-index", "start"):
        assert "a.md" in refused(cli(git_repo, command))
    assert snapshot(git_repo) == before


def test_rebuild_index_reports_the_rebuilt_index(git_repo: Path) -> None:
    init_vault(git_repo)
    write_page(git_repo, "a.md")
    result = ok(cli(git_repo, "rebuild-index"))
    assert set(result) == {"ok", "index", "rebuilt", "migratedSummaries", "pageCount", "sha256"}
    assert result["rebuilt"] is True and result["pageCount"] == 1
    assert result["sha256"] == engine.sha256_text((git_repo / INDEX).read_text())
    assert ok(cli(git_repo, "rebuild-index"))["rebuilt"] is False


def test_rebuild_index_does_not_migrate_legacy_summaries(git_repo: Path) -> None:
    init_vault(git_repo)
    (git_repo / PAGES / "old.md").write_text(legacy_page())
    (git_repo / INDEX).write_text("- [[old]]: Old.\n")
    before = snapshot(git_repo)
    assert "old.md" in refused(cli(git_repo, "rebuild-index"))
    assert snapshot(git_repo) == before
