"""The README's "Use it in your repository" steps, run as a newcomer would, in a scratch repository."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, git, init_repo, load_json
from helpers_check import write
from test_precommit_hooks import hook_source, pre_commit_env, pre_commit_home  # noqa: F401  (fixtures)

from echoes_lint import __version__

README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTALL = re.compile(r"^python3 -m pip install .*$", re.MULTILINE)


def section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", README, re.DOTALL | re.MULTILINE)
    assert match is not None, title
    return match.group(1)


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, re.DOTALL | re.MULTILINE)


def test_the_adoption_steps_run_in_order_and_leave_a_healthy_gated_repository(
        tmp_path: Path, hook_source: tuple[Path, str], pre_commit_home: Path,  # noqa: F811
) -> None:
    steps = blocks(section("Use it in your repository"), "sh")
    assert len(steps) >= 5
    assert INSTALL.search(steps[0]), "the first step installs the package"
    repo = init_repo(tmp_path / "app")
    write(repo, "README.md", "# app\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "app")
    # pre-commit configuration as the README shows it, pointed at a copy of this checkout that
    # carries the release tag the README names.
    source, sha = hook_source
    git(source, "tag", "-f", f"v{__version__}", sha)
    config = blocks(section("pre-commit"), "yaml")[0]
    write(repo, ".pre-commit-config.yaml",
          config.replace("https://github.com/echoes-lint/echoes-lint", str(source)))
    # The package under test stands in for the install line; `python3` and the tools it installs
    # (echoes-lint, pre-commit) come first on PATH, as after a real install.
    bin_dir = str(Path(sys.executable).parent)
    env = {**pre_commit_env(pre_commit_home), "PATH": bin_dir + os.pathsep + os.environ["PATH"]}
    for number, step in enumerate(steps, 1):
        script = INSTALL.sub("", step)
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=repo, env=env,
                                capture_output=True, text=True, check=False)
        assert result.returncode == 0, f"step {number}:\n{step}\n{result.stdout}{result.stderr}"
    # What the steps promise: init's files committed (only what the script wrote afterwards is
    # left to add), the hooks installed for three stages, the driver, the page and the entry.
    status = load_json(subprocess.run([sys.executable, "-m", "echoes_lint", "status"], cwd=repo,
                                      capture_output=True, text=True, check=True).stdout)
    daily = sorted((repo / "EchoesVault/daily").rglob("*.md"))
    assert len(daily) == 1
    assert status["health"]["git"]["untrackedDurableFiles"] == sorted(
        ["EchoesVault/pages/build.md", daily[0].relative_to(repo).as_posix()])
    assert status["health"]["invalidFrontmatter"] == []
    for stage in ("pre-commit", "pre-merge-commit", "pre-push"):
        assert "pre-commit" in (repo / ".git/hooks" / stage).read_text(encoding="utf-8")
    assert git(repo, "config", "merge.echoes-vault.driver").strip()
    assert ".gitattributes" in git(repo, "ls-files").split()
