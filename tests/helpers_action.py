"""Run the composite action's steps the way a GitHub runner does, on a local checkout.

Each `run:` step becomes a script file executed with the runner's `shell: bash` command line
(`bash --noprofile --norc -eo pipefail {0}`), in `$GITHUB_WORKSPACE`, with the runner's
variables, a fresh `$GITHUB_OUTPUT` and `$GITHUB_STEP_SUMMARY` file per step, and the step's
`env:`; `${{ }}` expressions are substituted into `env:` values and scripts as the runner does.
`uses:` steps are not run (they need the network); a test that needs one fails loudly instead
of passing by accident.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml
from conftest import ROOT, git, init_repo, run_cli, write_page

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
ANNOTATION = re.compile(r"^::(error|warning|notice)(?: ([^:]*))?::(.*)$", re.MULTILINE)
# What `shell: bash` means on a runner.
BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]


def load_action(action_path: Path = ROOT) -> dict[str, Any]:
    with open(action_path / "action.yml", encoding="utf-8") as handle:
        action: dict[str, Any] = yaml.safe_load(handle)
    return action


def copy_action_checkout(destination: Path) -> Path:
    """What a runner downloads for `uses: owner/echoes-lint@ref`: the repository's files
    (tracked and not ignored), without its .git. Building from a copy also keeps pip's
    in-tree build directories out of the working tree under test."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout
    for name in (os.fsdecode(item) for item in listed.split(b"\0") if item):
        source = ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return destination


def parse_output_file(text: str) -> dict[str, str]:
    """`$GITHUB_OUTPUT` as the runner reads it: `name=value` or `name<<DELIMITER` heredocs."""
    outputs: dict[str, str] = {}
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, index)
            outputs[name] = "\n".join(lines[index:end])
            index = end + 1
        else:
            name, value = line.split("=", 1)
            outputs[name] = value
    return outputs


@dataclass
class ActionRun:
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str
    steps_run: list[str] = field(default_factory=list)

    def annotations(self) -> list[tuple[str, dict[str, str], str]]:
        """(type, properties, message) of every workflow-command annotation in the log."""
        found = []
        for kind, properties, message in ANNOTATION.findall(self.stdout):
            props = dict(item.split("=", 1) for item in properties.split(",")) if properties else {}
            found.append((kind, props, message))
        return found


class ActionRunner:
    """Runs the action from one action checkout with one `$RUNNER_TEMP`, so that the install
    step's venv is built once and reused, as on a runner that uses the action twice in a job."""

    def __init__(self, action_path: Path, runner_temp: Path) -> None:
        self.action_path = action_path
        self.runner_temp = runner_temp
        self.action = load_action(action_path)

    def evaluate(self, value: str, context: dict[str, Any]) -> str:
        def substitute(match: re.Match[str]) -> str:
            expression = match.group(1)
            parts = expression.split(".")
            if parts[0] == "inputs" and len(parts) == 2:
                return str(context["inputs"][parts[1]])
            if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
                return str(context["steps"].get(parts[1], {}).get(parts[3], ""))
            if expression == "github.action_path":
                return str(self.action_path)
            raise AssertionError(f"the test runner cannot evaluate ${{{{ {expression} }}}}")

        return EXPRESSION.sub(substitute, value)

    def run(self, workspace: Path, inputs: Optional[dict[str, str]] = None,
            only: Optional[str] = None, path: Optional[str] = None) -> ActionRun:
        """Run every step (or only the one with id `only`) in `workspace`; `path` replaces the
        runner's PATH."""
        declared = self.action["inputs"]
        unknown = set(inputs or {}) - set(declared)
        assert not unknown, f"action.yml declares no input {sorted(unknown)}"
        values = {name: spec.get("default", "") for name, spec in declared.items()}
        values.update(inputs or {})
        context: dict[str, Any] = {"inputs": values, "steps": {}}
        step_dir = Path(tempfile.mkdtemp(prefix="steps-", dir=self.runner_temp))
        stdout, stderr, summary, steps_run = [], [], [], []
        returncode = 0
        for number, step in enumerate(self.action["runs"]["steps"]):
            if only is not None and step.get("id") != only:
                continue
            if "uses" in step:
                condition = step.get("if", "")
                assert condition == "inputs.python-version != ''", condition
                assert values["python-version"] == "", "this runner cannot run `uses:` steps"
                continue
            assert set(step) <= {"name", "id", "shell", "env", "run"}, sorted(step)
            assert step["shell"] == "bash"
            script = step_dir / f"step-{number}.sh"
            # The runner substitutes expressions into the script text, which is why none belong
            # there: this runner does the same, so a test can show what that would do.
            script.write_text(self.evaluate(step["run"], context), encoding="utf-8")
            output_file, summary_file = step_dir / f"output-{number}", step_dir / f"summary-{number}"
            output_file.write_text("", encoding="utf-8")
            summary_file.write_text("", encoding="utf-8")
            env = {
                **os.environ,
                "CI": "true",
                "GITHUB_ACTIONS": "true",
                "GITHUB_WORKSPACE": str(workspace),
                "GITHUB_ACTION_PATH": str(self.action_path),
                "GITHUB_OUTPUT": str(output_file),
                "GITHUB_STEP_SUMMARY": str(summary_file),
                "RUNNER_OS": "Linux",
                "RUNNER_TEMP": str(self.runner_temp),
                **({"PATH": path} if path is not None else {}),
                **{name: self.evaluate(str(value), context)
                   for name, value in (step.get("env") or {}).items()},
            }
            completed = subprocess.run(
                [*BASH, str(script)], cwd=workspace, env=env, capture_output=True,
                text=True, encoding="utf-8", check=False,
            )
            steps_run.append(step["name"])
            stdout.append(completed.stdout)
            stderr.append(completed.stderr)
            summary.append(summary_file.read_text(encoding="utf-8"))
            if "id" in step:
                context["steps"][step["id"]] = parse_output_file(
                    output_file.read_text(encoding="utf-8"))
            if completed.returncode != 0:
                returncode = completed.returncode
                break
        outputs = {name: self.evaluate(spec["value"], context)
                   for name, spec in self.action["outputs"].items()}
        return ActionRun(returncode, "".join(stdout), "".join(stderr), outputs,
                         "".join(summary), steps_run)


def fresh_clone(source: Path, destination: Path) -> Path:
    """What actions/checkout leaves: the committed files, nothing local."""
    subprocess.run(["git", "clone", "-q", str(source), str(destination)], check=True,
                   capture_output=True)
    return destination


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def healthy_vault(repo: Path, base: str = "") -> Path:
    """A committed, healthy vault made by `echoes-lint init` (below `base` in a monorepo), with
    linked pages and a daily entry; returns the folder that holds `EchoesVault/`.

    `init` works on a repository's top level, so it runs in a scratch repository whose files
    are then copied in (its ignored index and state are copied too, and stay uncommitted)."""
    scratch = init_repo(Path(tempfile.mkdtemp(prefix="init-", dir=repo.parent)))
    completed = run_cli("--workspace", str(scratch), "init", cwd=scratch)
    assert completed.returncode == 0, completed.stderr
    root = repo / base if base else repo
    shutil.copytree(scratch, root, ignore=shutil.ignore_patterns(".git"), dirs_exist_ok=True)
    write_page(root, "alpha.md", summary="Alpha service boundaries.",
               body="# Alpha\n\nOwner: alice\n\nSee [[beta]].\n")
    write_page(root, "beta.md", summary="Beta deployment facts.", body="# Beta\n")
    daily = root / "EchoesVault" / "daily" / "2026-01-05"
    daily.mkdir(parents=True)
    (daily / "20260105T093000123456Z-session-codex-1a2b3c4d.md").write_text(
        "### Session — 2026-01-05T10:30:00+01:00\n\n- Wrote the alpha page.\n", encoding="utf-8")
    commit_all(repo, "Add the vault")
    return root
