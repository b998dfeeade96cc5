"""The JSON contract (issue 9, item 4): every key the reference engine 1.1.1 prints, at every
depth, for every command, is printed by our installed runtime with the same JSON type, and the
values that name pages, paths and fixes have the reference's form.

Each protocol command runs in real Git repositories (fresh, initialised, with problems, with
ignored tracked files, legacy). The same SCENARIOS, run once with the reference engine, gave the
key paths and types recorded in REFERENCE_KEY_PATHS and the values asserted below."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

import pytest
from conftest import GIT_ENV, git, init_repo, make_vault, write_page

from echoes_lint import engine

RUNTIME = ".echoes-vault/echoes_vault.py"
CONFLICT = "<<<<<<< HEAD\na\n=======\nb\n>>>>>>> topic\n"

# (step label, command, stdout, stderr, exit code)
Step = Tuple[str, str, str, str, int]
Runner = Callable[..., subprocess.CompletedProcess]  # type: ignore[type-arg]


def page(summary: str, status: str = "active", body: str = "Body text.") -> str:
    return (f"---\ntype: note\nstack: [python]\nstatus: {status}\nsummary: {summary}\n---\n\n"
            f"# {summary}\n\n{body}\n")


def engine_runner(engine: Path) -> Runner:
    """Run `engine` from outside the workspace until `init` installs a runtime, then the
    installed runtime, each with `python -I`."""

    def run(repo: Path, *args: str, payload: Optional[Any] = None,
            ) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
        script = repo / RUNTIME if (repo / RUNTIME).is_file() else engine
        return subprocess.run(
            [sys.executable, "-I", str(script), "--workspace", str(repo), *args], cwd=repo,
            input=None if payload is None else json.dumps(payload), capture_output=True,
            text=True, encoding="utf-8", check=False, timeout=120)

    return run


def write(repo: Path, relative: str, text: str) -> None:
    path = repo / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def commit_all(repo: Path) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "snapshot")


def _fresh(run: Runner, repo: Path) -> List[Tuple[str, str, Any]]:
    write(repo, ".opencode/commands/echoes-status.md", "# My own status command\n")
    return [("protocol", "protocol", run(repo, "protocol")),
            ("status", "status", run(repo, "status")),
            ("inspect", "inspect", run(repo, "inspect")),
            ("card", "status --format card", run(repo, "status", "--format", "card"))]


def _lifecycle(run: Runner, repo: Path) -> List[Tuple[str, str, Any]]:
    steps = [("init", "init", run(repo, "init")), ("protocol", "protocol", run(repo, "protocol")),
             ("status", "status", run(repo, "status"))]
    commit_all(repo)
    steps.append(("status-committed", "status", run(repo, "status")))
    steps.append(("upsert", "upsert", run(repo, "upsert", "--payload", "-", payload={
        "filename": "alpha", "content": page("Alpha page.", body="Alpha body.")})))
    hashed = run(repo, "hash", "alpha")
    steps.append(("hash", "hash", hashed))
    sha = json.loads(hashed.stdout)["sha256"] if hashed.returncode == 0 else ""
    steps.append(("upsert-update", "upsert", run(repo, "upsert", "--payload", "-", payload={
        "filename": "alpha.md", "expectedSha256": sha,
        "content": page("Alpha page.", "deprecated", "Alpha body, retired.")})))
    steps.append(("append", "append", run(repo, "append", "--payload", "-",
                                          payload={"entry": "A note.", "agent": "codex"})))
    steps.append(("search", "search", run(repo, "search", "alpha body")))
    steps.append(("search-none", "search", run(repo, "search", "no such words")))
    steps.append(("start", "start", run(repo, "start")))
    steps.append(("hydrate", "hydrate", run(repo, "hydrate")))
    steps.append(("rebuild-index", "rebuild-index", run(repo, "rebuild-index")))
    steps.append(("configure-agents", "configure-agents", run(repo, "configure-agents")))
    steps.append(("end", "end", run(repo, "end", "--confirm-explicit-user-end", "--payload", "-",
                                    payload={"dailySummary": "Did things.", "agent": "claude",
                                             "pages": [{"filename": "beta",
                                                        "content": page("Beta page.")}]})))
    steps.append(("migrate", "migrate", run(repo, "migrate")))
    steps.append(("upgrade", "upgrade", run(repo, "upgrade")))
    steps.append(("status-end", "status", run(repo, "status")))
    return steps


def _problems(run: Runner, repo: Path) -> List[Tuple[str, str, Any]]:
    steps = [("init", "init", run(repo, "init"))]
    commit_all(repo)
    write(repo, "EchoesVault/pages/broken.md", "no frontmatter\n")
    write(repo, "EchoesVault/pages/old.md", page("Old.", "deprecated"))
    write(repo, "EchoesVault/pages/ok.md", page("Fine."))
    write(repo, "EchoesVault/daily/2026-01-01/entry.md", CONFLICT)
    write(repo, "EchoesVault/raw/notes.md", CONFLICT)
    write(repo, "EchoesVault/pages/folder/nested.md", CONFLICT)
    os.symlink("ok.md", repo / "EchoesVault/pages/link.md")
    os.symlink("../pages", repo / "EchoesVault/raw/folder-link")
    write(repo, "EchoesVault/index.md",
          "# EchoesVault Index\n\n- [[ghost]]: gone\n- [[ghost]]: twice\n- [[ok]]:\n")
    git(repo, "add", "-f", "EchoesVault/index.md")
    write(repo, ".gitignore", ".opencode/\n")
    git(repo, "rm", "-r", "-q", "--cached", ".opencode")
    steps.append(("status", "status", run(repo, "status")))
    steps.append(("card", "status --format card", run(repo, "status", "--format", "card")))
    return steps


def _ignored(run: Runner, repo: Path) -> List[Tuple[str, str, Any]]:
    """Tracked files under ignore rules, a user-owned command, 205 quoted paths, a stale index."""
    steps = [("init", "init", run(repo, "init"))]
    commit_all(repo)
    write(repo, ".gitignore", ".opencode/\n.echoes-vault/echoes_vault.py\n")
    write(repo, ".opencode/commands/echoes-status.md", "# My own status command\n")
    for number in range(205):
        write(repo, f"EchoesVault/raw/my notes {number:03d}.txt", "x\n")
    index = repo / "EchoesVault/index.md"
    index.write_text(index.read_text(encoding="utf-8") + "\nUser text\n", encoding="utf-8")
    steps.append(("status", "status", run(repo, "status")))
    return steps


def _legacy(run: Runner, repo: Path) -> List[Tuple[str, str, Any]]:
    write(repo, "EchoesVault/index.md", "# EchoesVault Index\n\n- [[old]]: Old description\n")
    write(repo, "EchoesVault/pages/old.md",
          "---\ntype: note\nstack: [x]\nstatus: active\n---\n\n# Old\n")
    write(repo, "EchoesVault/daily/2025-01-01.md", "### Session — then\n")
    return [("status", "status", run(repo, "status")),
            ("card", "status --format card", run(repo, "status", "--format", "card")),
            ("init", "init", run(repo, "init"))]


SCENARIOS: Dict[str, Callable[[Runner, Path], List[Tuple[str, str, Any]]]] = {
    "fresh": _fresh, "lifecycle": _lifecycle, "problems": _problems, "ignored": _ignored,
    "legacy": _legacy,
}


def run_scenarios(run: Runner, root: Path) -> Dict[str, List[Step]]:
    results: Dict[str, List[Step]] = {}
    for name, scenario in SCENARIOS.items():
        repo = init_repo(root / name)
        results[name] = [(label, command, done.stdout, done.stderr, done.returncode)
                         for label, command, done in scenario(run, repo)]
    return results


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(value)]


def key_paths(value: Any, prefix: str = "") -> Dict[str, Set[str]]:
    """Every key path (`a.b`, `a[].c` for list items) with the JSON types found there."""
    found: Dict[str, Set[str]] = {}

    def walk(item: Any, path: str) -> None:
        found.setdefault(path, set()).add(json_type(item))
        if isinstance(item, dict):
            for key, child in item.items():
                walk(child, f"{path}.{key}" if path else key)
        elif isinstance(item, list):
            for child in item:
                walk(child, f"{path}[]")

    walk(value, prefix)
    return found


def command_paths(results: Dict[str, List[Step]]) -> Dict[str, Dict[str, Sequence[str]]]:
    """Per command, every key path any step printed, with its sorted JSON types."""
    merged: Dict[str, Dict[str, Set[str]]] = {}
    for steps in results.values():
        for _label, command, stdout, _stderr, code in steps:
            if code != 0 or command in ("start", "status --format card"):
                continue
            command = "status" if command == "inspect" else command  # one handler, one shape
            for path, types in key_paths(json.loads(stdout)).items():
                merged.setdefault(command, {}).setdefault(path, set()).update(types)
    return {command: {path: sorted(types) for path, types in sorted(paths.items())}
            for command, paths in sorted(merged.items())}


# Recorded from the reference engine 1.1.1 over SCENARIOS: per command, every key path
# (`a.b`, `a[]` for list items; "" is the whole document) with its JSON types.
REFERENCE_KEY_PATHS: Dict[str, Dict[str, str]] = {
    'append': {
        '': 'object',
        'agent': 'string',
        'dailyLog': 'string',
        'kind': 'string',
        'ok': 'boolean',
    },
    'configure-agents': {
        '': 'object',
        'adapterConflicts': 'array',
        'codexAdapterVersion': 'string',
        'commandsUpdated': 'array',
        'engineVersion': 'string',
        'guidesUpdated': 'array',
        'legacySkillsRedirected': 'array',
        'managedAdapterVersion': 'string',
        'ok': 'boolean',
        'protocolUpdated': 'boolean',
        'protocolVersion': 'string',
        'runtimeUpdated': 'boolean',
        'skillsUpdated': 'array',
    },
    'end': {
        '': 'object',
        'agent': 'string',
        'dailyLog': 'string',
        'index': 'string',
        'memorySaved': 'boolean',
        'ok': 'boolean',
        'pagesWritten': 'number',
    },
    'hash': {
        '': 'object',
        'ok': 'boolean',
        'page': 'string',
        'sha256': 'string',
    },
    'hydrate': {
        '': 'object',
        'index': 'string',
        'indexRefresh': 'object',
        'indexRefresh.migratedSummaries': 'array',
        'indexRefresh.pageCount': 'number',
        'indexRefresh.rebuilt': 'boolean',
        'indexRefresh.sha256': 'string',
        'ok': 'boolean',
        'state': 'object',
        'state.engineVersion': 'string',
        'state.initialized': 'boolean',
        'state.lastWriter': 'object',
        'state.lastWriter.adapterVersion': 'null',
        'state.lastWriter.agent': 'string',
        'state.protocolVersion': 'string',
        'state.session': 'object',
        'state.session.lastSave': 'null',
        'state.session.lastStart': 'string',
        'state.session.saved': 'boolean',
        'state.session.started': 'boolean',
        'state.stats': 'object',
        'state.stats.deprecatedPages': 'number',
        'state.stats.totalDailyLogs': 'number',
        'state.stats.totalPages': 'number',
        'state.version': 'number',
    },
    'init': {
        '': 'object',
        'agentAdapters': 'object',
        'agentAdapters.adapterConflicts': 'array',
        'agentAdapters.codexAdapterVersion': 'string',
        'agentAdapters.commandsUpdated': 'array',
        'agentAdapters.commandsUpdated[]': 'string',
        'agentAdapters.engineVersion': 'string',
        'agentAdapters.guidesUpdated': 'array',
        'agentAdapters.guidesUpdated[]': 'string',
        'agentAdapters.legacySkillsRedirected': 'array',
        'agentAdapters.managedAdapterVersion': 'string',
        'agentAdapters.protocolUpdated': 'boolean',
        'agentAdapters.protocolVersion': 'string',
        'agentAdapters.runtimeUpdated': 'boolean',
        'agentAdapters.skillsUpdated': 'array',
        'agentAdapters.skillsUpdated[]': 'string',
        'created': 'boolean',
        'index': 'string',
        'indexRefresh': 'object',
        'indexRefresh.migratedSummaries': 'array',
        'indexRefresh.migratedSummaries[]': 'string',
        'indexRefresh.pageCount': 'number',
        'indexRefresh.rebuilt': 'boolean',
        'indexRefresh.sha256': 'string',
        'ok': 'boolean',
        'operation': 'string',
        'state': 'object',
        'state.engineVersion': 'string',
        'state.initialized': 'boolean',
        'state.lastWriter': 'object',
        'state.lastWriter.adapterVersion': 'null',
        'state.lastWriter.agent': 'null',
        'state.protocolVersion': 'string',
        'state.session': 'object',
        'state.session.lastSave': 'null',
        'state.session.lastStart': 'null',
        'state.session.saved': 'boolean',
        'state.session.started': 'boolean',
        'state.stats': 'object',
        'state.stats.deprecatedPages': 'number',
        'state.stats.totalDailyLogs': 'number',
        'state.stats.totalPages': 'number',
        'state.version': 'number',
        'vault': 'string',
    },
    'migrate': {
        '': 'object',
        'agentAdapters': 'object',
        'agentAdapters.adapterConflicts': 'array',
        'agentAdapters.codexAdapterVersion': 'string',
        'agentAdapters.commandsUpdated': 'array',
        'agentAdapters.engineVersion': 'string',
        'agentAdapters.guidesUpdated': 'array',
        'agentAdapters.legacySkillsRedirected': 'array',
        'agentAdapters.managedAdapterVersion': 'string',
        'agentAdapters.protocolUpdated': 'boolean',
        'agentAdapters.protocolVersion': 'string',
        'agentAdapters.runtimeUpdated': 'boolean',
        'agentAdapters.skillsUpdated': 'array',
        'created': 'boolean',
        'index': 'string',
        'indexRefresh': 'object',
        'indexRefresh.migratedSummaries': 'array',
        'indexRefresh.pageCount': 'number',
        'indexRefresh.rebuilt': 'boolean',
        'indexRefresh.sha256': 'string',
        'ok': 'boolean',
        'operation': 'string',
        'state': 'object',
        'state.engineVersion': 'string',
        'state.initialized': 'boolean',
        'state.lastWriter': 'object',
        'state.lastWriter.adapterVersion': 'null',
        'state.lastWriter.agent': 'string',
        'state.protocolVersion': 'string',
        'state.session': 'object',
        'state.session.lastSave': 'string',
        'state.session.lastStart': 'string',
        'state.session.saved': 'boolean',
        'state.session.started': 'boolean',
        'state.stats': 'object',
        'state.stats.deprecatedPages': 'number',
        'state.stats.totalDailyLogs': 'number',
        'state.stats.totalPages': 'number',
        'state.version': 'number',
        'vault': 'string',
    },
    'protocol': {
        '': 'object',
        'codexAdapterVersion': 'string',
        'commands': 'array',
        'commands[]': 'string',
        'engineVersion': 'string',
        'managedAdapterVersion': 'string',
        'marker': 'object',
        'marker.error': 'null|string',
        'marker.exists': 'boolean',
        'marker.valid': 'boolean',
        'marker.value': 'null|object',
        'marker.value.dailyLayout': 'string',
        'marker.value.generatedIndex': 'boolean',
        'marker.value.protocolVersion': 'string',
        'marker.value.requiredFrontmatter': 'array',
        'marker.value.requiredFrontmatter[]': 'string',
        'marker.value.runtime': 'string',
        'marker.value.schemaVersion': 'number',
        'ok': 'boolean',
        'projectRuntime': 'object',
        'projectRuntime.compatible': 'boolean',
        'projectRuntime.current': 'boolean',
        'projectRuntime.engineVersion': 'null|string',
        'projectRuntime.error': 'null|string',
        'projectRuntime.exists': 'boolean',
        'projectRuntime.protocolVersion': 'null|string',
        'projectRuntime.recognized': 'boolean',
        'protocol': 'string',
        'runtime': 'string',
        'supportedProtocolVersion': 'string',
        'vaultProtocolVersion': 'null|string',
    },
    'rebuild-index': {
        '': 'object',
        'index': 'string',
        'migratedSummaries': 'array',
        'ok': 'boolean',
        'pageCount': 'number',
        'rebuilt': 'boolean',
        'sha256': 'string',
    },
    'search': {
        '': 'object',
        'ok': 'boolean',
        'query': 'string',
        'results': 'array',
        'results[]': 'object',
        'results[].file': 'string',
        'results[].line': 'number',
        'results[].text': 'string',
        'truncated': 'boolean',
    },
    'status': {
        '': 'object',
        'health': 'object',
        'health.adapterConfiguration': 'array',
        'health.adapterConfiguration[]': 'string',
        'health.codexAdapterVersion': 'string',
        'health.conflictMarkers': 'array',
        'health.conflictMarkers[]': 'string',
        'health.deprecatedPages': 'number',
        'health.deprecatedSlugs': 'array',
        'health.deprecatedSlugs[]': 'string',
        'health.duplicateIndexEntries': 'array',
        'health.duplicateIndexEntries[]': 'string',
        'health.emptyDescriptions': 'array',
        'health.emptyDescriptions[]': 'string',
        'health.engineVersion': 'string',
        'health.generatedIndex': 'boolean',
        'health.git': 'object',
        'health.git.available': 'boolean',
        'health.git.ignoredDurableFiles': 'array',
        'health.git.ignoredDurableFiles[]': 'string',
        'health.git.openCodeCommandsIgnored': 'array',
        'health.git.openCodeCommandsIgnored[]': 'string',
        'health.git.openCodeSkillsIgnored': 'array',
        'health.git.openCodeSkillsIgnored[]': 'string',
        'health.git.ready': 'boolean',
        'health.git.runtimeIgnored': 'boolean',
        'health.git.suggestedCommands': 'array',
        'health.git.suggestedCommands[]': 'string',
        'health.git.trackedLocalFiles': 'array',
        'health.git.trackedLocalFiles[]': 'string',
        'health.git.untrackedDurableFiles': 'array',
        'health.git.untrackedDurableFiles[]': 'string',
        'health.gitReadiness': 'array',
        'health.gitReadiness[]': 'string',
        'health.indexBuildErrors': 'array',
        'health.indexBuildErrors[]': 'string',
        'health.indexOutOfDate': 'array',
        'health.indexOutOfDate[]': 'string',
        'health.indexTopics': 'number',
        'health.initialized': 'boolean',
        'health.integrity': 'string',
        'health.invalidFrontmatter': 'array',
        'health.invalidFrontmatter[]': 'string',
        'health.issueCount': 'number',
        'health.legacyVaultDetected': 'boolean',
        'health.managedAdapterVersion': 'string',
        'health.marker': 'object',
        'health.marker.error': 'null|string',
        'health.marker.exists': 'boolean',
        'health.marker.valid': 'boolean',
        'health.marker.value': 'null|object',
        'health.marker.value.dailyLayout': 'string',
        'health.marker.value.generatedIndex': 'boolean',
        'health.marker.value.protocolVersion': 'string',
        'health.marker.value.requiredFrontmatter': 'array',
        'health.marker.value.requiredFrontmatter[]': 'string',
        'health.marker.value.runtime': 'string',
        'health.marker.value.schemaVersion': 'number',
        'health.missingPages': 'array',
        'health.missingPages[]': 'string',
        'health.missingStructure': 'array',
        'health.missingStructure[]': 'string',
        'health.orphanPages': 'array',
        'health.orphanPages[]': 'string',
        'health.outdatedRuntime': 'array',
        'health.projectRuntime': 'object',
        'health.projectRuntime.compatible': 'boolean',
        'health.projectRuntime.current': 'boolean',
        'health.projectRuntime.engineVersion': 'null|string',
        'health.projectRuntime.error': 'null|string',
        'health.projectRuntime.exists': 'boolean',
        'health.projectRuntime.protocolVersion': 'null|string',
        'health.projectRuntime.recognized': 'boolean',
        'health.protocolVersion': 'string',
        'health.scaleAlert': 'boolean',
        'health.stateFile': 'object',
        'health.stateFile.error': 'null|string',
        'health.stateFile.exists': 'boolean',
        'health.stateFile.valid': 'boolean',
        'health.storage': 'object',
        'health.storage.lastModified': 'null|string',
        'health.storage.markdownFiles': 'number',
        'health.storage.symlinks': 'array',
        'health.storage.symlinks[]': 'string',
        'health.storage.totalBytes': 'number',
        'health.storage.totalFiles': 'number',
        'health.storage.unreadableFiles': 'array',
        'health.symbolicLinks': 'array',
        'health.symbolicLinks[]': 'string',
        'health.todayEntries': 'number',
        'health.totalDailyLogs': 'number',
        'health.totalPages': 'number',
        'health.unreadableFiles': 'array',
        'indexRefresh': 'object',
        'indexRefresh.migratedSummaries': 'array',
        'indexRefresh.needsRefresh': 'boolean',
        'indexRefresh.pageCount': 'number',
        'indexRefresh.rebuilt': 'boolean',
        'indexRefresh.sha256': 'null|string',
        'ok': 'boolean',
        'state': 'object',
        'state.engineVersion': 'string',
        'state.initialized': 'boolean',
        'state.lastWriter': 'object',
        'state.lastWriter.adapterVersion': 'null',
        'state.lastWriter.agent': 'null|string',
        'state.protocolVersion': 'string',
        'state.session': 'object',
        'state.session.lastSave': 'null|string',
        'state.session.lastStart': 'null|string',
        'state.session.saved': 'boolean',
        'state.session.started': 'boolean',
        'state.stats': 'object',
        'state.stats.deprecatedPages': 'number',
        'state.stats.totalDailyLogs': 'number',
        'state.stats.totalPages': 'number',
        'state.version': 'number',
        'vault': 'string',
        'workspace': 'string',
    },
    'upsert': {
        '': 'object',
        'action': 'string',
        'indexChanged': 'boolean',
        'ok': 'boolean',
        'page': 'string',
        'sha256': 'string',
    },
}
# The reference runs `init`, `migrate` and `upgrade` through one function; after a first
# `init` (the scenario's order), `migrate` and `upgrade` print the same key paths.
REFERENCE_KEY_PATHS["upgrade"] = REFERENCE_KEY_PATHS["migrate"]


Results = Dict[str, List[Step]]


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Results]:
    """Every scenario once, through our engine file and then the runtime `init` installed."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        for key, value in {**GIT_ENV, "HOME": str(home),
                           "XDG_CONFIG_HOME": str(home / ".config")}.items():
            patch.setenv(key, value)
        root = tmp_path_factory.mktemp("parity")
        yield run_scenarios(engine_runner(Path(engine.__file__)), root)


def output(results: Results, scenario: str, label: str) -> Any:
    for step_label, command, stdout, stderr, code in results[scenario]:
        if step_label == label:
            assert code == 0, f"{scenario}/{label}: {stderr}"
            return stdout if command in ("start", "status --format card") else json.loads(stdout)
    raise AssertionError(f"no step {scenario}/{label}")


def test_every_command_succeeds_in_every_scenario(ours: Results) -> None:
    failed = [(name, label, stderr) for name, steps in ours.items()
              for label, _command, _stdout, stderr, code in steps if code != 0]
    assert failed == []


def test_every_reference_key_path_is_printed_with_the_reference_json_type(ours: Results) -> None:
    printed = command_paths(ours)
    assert sorted(printed) == sorted(REFERENCE_KEY_PATHS)
    for command, expected in REFERENCE_KEY_PATHS.items():
        missing = sorted(set(expected) - set(printed[command]))
        assert missing == [], f"{command}: keys the reference prints and we do not"
        mistyped = {path: (types, "|".join(printed[command][path]))
                    for path, types in expected.items()
                    if "|".join(printed[command][path]) != types}
        assert mistyped == {}, f"{command}: (reference type, ours)"


def test_health_names_pages_and_files_as_the_reference_does(ours: Results) -> None:
    health = output(ours, "problems", "status")["health"]
    assert health["invalidFrontmatter"] == ["broken"]  # the stem, not pages/broken.md
    assert health["orphanPages"] == ["broken", "old"]
    assert health["missingPages"] == health["duplicateIndexEntries"] == ["ghost"]
    assert health["emptyDescriptions"] == ["ok"]
    assert health["deprecatedSlugs"] == ["old"]
    # Vault-relative POSIX paths of every Markdown file with markers, wherever it lives.
    assert health["conflictMarkers"] == ["daily/2026-01-01/entry.md", "pages/folder/nested.md",
                                         "raw/notes.md"]
    assert health["symbolicLinks"] == health["storage"]["symlinks"] == [
        "pages/link.md", "raw/folder-link"]
    assert health["missingStructure"] == []


def test_git_readiness_of_a_vault_with_problems_is_the_reference_s(ours: Results) -> None:
    readiness = output(ours, "problems", "status")["health"]["git"]
    commands = [".opencode/commands/echoes-end.md", ".opencode/commands/echoes-init.md",
                ".opencode/commands/echoes-start.md", ".opencode/commands/echoes-status.md"]
    skills = [".opencode/skills/echoes-vault/SKILL.md"]
    # Symbolic links are never durable files to add.
    untracked = ["EchoesVault/daily/2026-01-01/entry.md", "EchoesVault/pages/broken.md",
                 "EchoesVault/pages/folder/nested.md", "EchoesVault/pages/ok.md",
                 "EchoesVault/pages/old.md", "EchoesVault/raw/notes.md"]
    assert readiness == {
        "available": True,
        "ready": False,
        "trackedLocalFiles": ["EchoesVault/index.md"],
        "untrackedDurableFiles": untracked,
        "ignoredDurableFiles": commands + skills,
        "runtimeIgnored": False,
        "openCodeCommandsIgnored": commands,
        "openCodeSkillsIgnored": skills,
        "suggestedCommands": ["git rm --cached -- EchoesVault/index.md",
                              "git add -f -- " + " ".join(commands + skills),
                              "git add -- " + " ".join(untracked)],
    }


def test_ignored_tracked_files_and_grouped_quoted_split_commands(ours: Results) -> None:
    health = output(ours, "ignored", "status")["health"]
    readiness = health["git"]
    # Tracked, but an ignore rule matches them: the reference asks `check-ignore --no-index`.
    ignored = [RUNTIME, ".opencode/commands/echoes-end.md", ".opencode/commands/echoes-init.md",
               ".opencode/commands/echoes-start.md", ".opencode/commands/echoes-status.md",
               ".opencode/skills/echoes-vault/SKILL.md"]
    assert readiness["ignoredDurableFiles"] == ignored
    assert readiness["runtimeIgnored"] is True
    assert readiness["openCodeCommandsIgnored"] == ignored[1:5]
    assert readiness["openCodeSkillsIgnored"] == ignored[5:]
    raw = [f"EchoesVault/raw/my notes {number:03d}.txt" for number in range(205)]
    assert readiness["untrackedDurableFiles"] == raw
    # One command per kind, shell-quoted; ours splits every 100 paths (the reference never does).
    assert readiness["suggestedCommands"] == [
        "git add -f -- " + " ".join(ignored),
        *("git add -- " + " ".join(f"'{path}'" for path in raw[start:start + 100])
          for start in (0, 100, 200)),
    ]
    assert health["indexOutOfDate"] == ["index.md"]
    # A user-owned command file is both missing structure and an adapter conflict.
    assert health["missingStructure"] == [".opencode/commands/echoes-status.md"]
    assert health["adapterConfiguration"] == [".opencode/commands/echoes-status.md"]
    assert health["integrity"] == "attention"


def test_the_suggested_commands_run_as_printed(ours: Results, tmp_path: Path) -> None:
    """The quoting is real: a shell runs the lines and Git then tracks every listed file."""
    repo = init_repo(tmp_path / "repo")
    run = engine_runner(Path(engine.__file__))
    assert run(repo, "init").returncode == 0
    for number in range(150):
        write(repo, f"EchoesVault/raw/it's {number:03d} $HOME.txt", "x\n")
    readiness = json.loads(run(repo, "status").stdout)["health"]["git"]
    # 150 files and 13 protocol files, all untracked: one `git add` of 100 paths, one of 63.
    assert [len(shlex.split(command)) - 3 for command in readiness["suggestedCommands"]] == [100, 63]
    for command in readiness["suggestedCommands"]:
        subprocess.run(command, shell=True, cwd=repo, check=True, capture_output=True)
    assert json.loads(run(repo, "status").stdout)["health"]["git"]["ready"] is True


REFERENCE_MISSING_BEFORE_INIT = [
    ".claude/skills/echoes-vault/SKILL.md", ".echoes-vault.json", RUNTIME,
    ".opencode/commands/echoes-end.md", ".opencode/commands/echoes-init.md",
    ".opencode/commands/echoes-start.md", ".opencode/commands/echoes-status.md",
    ".opencode/skills/echoes-vault/SKILL.md", "AGENTS.md", "AGENT_PROTOCOL.md", "CLAUDE.md",
    "assets/", "daily/", "index.md", "pages/", "raw/",
]


def test_missing_structure_before_init_lists_every_required_path(ours: Results) -> None:
    # The reference's list, plus ours: the vault's .gitignore (which keeps the index local).
    health = output(ours, "fresh", "status")["health"]
    assert health["missingStructure"] == sorted([*REFERENCE_MISSING_BEFORE_INIT, ".gitignore"])
    legacy = output(ours, "legacy", "status")["health"]
    assert legacy["missingStructure"] == sorted(
        set([*REFERENCE_MISSING_BEFORE_INIT, ".gitignore"]) - {"daily/", "index.md", "pages/"})
    # After init and a commit nothing is missing.
    assert output(ours, "lifecycle", "status-committed")["health"]["missingStructure"] == []


def test_state_file_and_index_refresh_values(ours: Results) -> None:
    fresh = output(ours, "fresh", "status")
    assert fresh["health"]["stateFile"] == {"exists": False, "valid": False,
                                            "error": "state file is missing"}
    assert fresh["indexRefresh"]["migratedSummaries"] == []
    assert fresh["health"]["generatedIndex"] is True  # a protocol fact, index or not
    migrated = output(ours, "legacy", "init")["indexRefresh"]
    assert migrated["migratedSummaries"] == ["old.md"]
    assert migrated["sha256"] == (
        "df100dac1210260937292bff6bd1803b3530dd11351b0b3d64b8aebc5c691b52")
    # Ours, unlike the reference, does not count a missing local state file as an issue.
    committed = output(ours, "lifecycle", "status-committed")["health"]
    assert committed["stateFile"]["valid"] is True and committed["integrity"] == "healthy"


def test_the_linter_reports_a_committed_file_under_an_ignore_rule(tmp_path: Path) -> None:
    """EV022 follows the engine's readiness: the ignored, committed runtime is named with the
    command that shows the rule, not a `git add -f` that would change nothing."""
    repo = init_repo(tmp_path / "repo")
    assert engine_runner(Path(engine.__file__))(repo, "init").returncode == 0
    commit_all(repo)
    write(repo, ".gitignore", ".echoes-vault/echoes_vault.py\n")
    commit_all(repo)
    checked = subprocess.run([sys.executable, "-m", "echoes_lint", "check"],
                             cwd=repo, capture_output=True, text=True, check=False, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr  # a warning
    lines = [line for line in checked.stdout.splitlines() if " EV022 " in line]
    assert lines == [f"{RUNTIME}:1:1: EV022 EchoesVault protocol file that every clone needs is tracked, but "
                     "an ignore rule matches it, so a new file there would not reach the team; "
                     "remove the rule that `git check-ignore -v --no-index -- "
                     f"{RUNTIME}` shows"]


def test_start_text_has_the_reference_sections(ours: Results) -> None:
    text = output(ours, "lifecycle", "start")
    assert text.startswith("# EchoesVault session context\n\n## Index\n\n# EchoesVault Index\n")
    # Entries are named relative to daily/, under the reference's heading.
    assert re.search(r"\n## Recent session entries \(1\)\n\n### \d{4}-\d\d-\d\d/"
                     r"\d{8}T\d{6}\d{6}Z-scratchpad-codex-[0-9a-f]{8}\.md\n\n### Scratchpad — ",
                     text), text


def test_invalid_and_deprecated_pages_are_listed_by_their_stored_stem(tmp_path: Path) -> None:
    """The reference lists these by the file's own stem, not NFC (its index rows use NFC)."""
    repo = init_repo(tmp_path / "repo")
    make_vault(repo)
    decomposed = unicodedata.normalize("NFD", "café")
    write_page(repo, f"{decomposed}.md", status="deprecated")
    write_page(repo, f"{decomposed}-bis.md", summary="")
    completed = subprocess.run([sys.executable, engine.__file__, "--workspace", str(repo),
                                "status"], capture_output=True, text=True, check=True)
    health = json.loads(completed.stdout)["health"]
    assert health["deprecatedSlugs"] == [decomposed]
    assert health["invalidFrontmatter"] == [f"{decomposed}-bis"]
    assert health["orphanPages"] == []  # no index yet: nothing is orphaned
