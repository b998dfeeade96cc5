"""One version, named the same everywhere a user copies it from, and installable at its tag."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from conftest import ROOT, git, init_repo, make_vault, write_page
from helpers_check import commit, write
from test_precommit_hooks import hook_source, pre_commit_env, pre_commit_home  # noqa: F401  (fixtures)

from echoes_lint import ENGINE_VERSION, PROTOCOL_VERSION, __version__

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_installed_distribution_reports_the_package_version() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
    assert metadata.version("echoes-lint") == __version__


def test_version_option_names_package_engine_and_protocol() -> None:
    result = subprocess.run([sys.executable, "-m", "echoes_lint", "--version"],
                            capture_output=True, text=True, check=True)
    assert result.stdout == (f"echoes-lint {__version__} (engine {ENGINE_VERSION}, "
                             f"protocol {PROTOCOL_VERSION})\n")


def test_readme_pins_name_this_release() -> None:
    revs = re.findall(r"^\s*rev: (\S+)$", README, flags=re.MULTILINE)
    uses = re.findall(r"uses: echoes-lint/echoes-lint@(\S+)", README)
    assert revs and set(revs) == {f"v{__version__}"}
    assert uses and set(uses) == {f"v{__version__.split('.')[0]}"}


def test_changelog_and_license_exist_for_this_release() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## \[{re.escape(__version__)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog,
                     flags=re.MULTILINE)
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")
    assert "vX.Y.Z" in (ROOT / "RELEASING.md").read_text(encoding="utf-8")


def test_pre_commit_installs_the_hooks_at_the_release_tag(
        tmp_path: Path, hook_source: tuple[Path, str], pre_commit_home: Path,  # noqa: F811
) -> None:
    source, sha = hook_source
    tag = f"v{__version__}"
    git(source, "tag", "-f", tag, sha)
    repo = init_repo(tmp_path / "repo")
    make_vault(repo)
    write_page(repo, "home.md", summary="Start here.")
    # The README's configuration, pointed at the local copy of this repository.
    block = re.search(r"```yaml\n# \.pre-commit-config\.yaml\n(.*?)```", README, re.DOTALL)
    assert block is not None
    config = block.group(1).replace("https://github.com/echoes-lint/echoes-lint", str(source))
    write(repo, ".pre-commit-config.yaml", config)
    commit(repo, "vault")
    result = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=repo,
                            env=pre_commit_env(pre_commit_home), capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "echoes-lint (EchoesVault)" in result.stdout and "Passed" in result.stdout
