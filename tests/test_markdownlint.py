"""Files the engine generates pass markdownlint-cli2's default rules with the README's snippet.

The snippet ignores only what the protocol fixes (daily entries, the generated index) and the
OpenCode commands, whose runtime call is one shell line that cannot wrap.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from helpers_check import write

README = (ROOT / "README.md").read_text(encoding="utf-8")
LEGACY_SKILLS = {  # pre-1.0 OpenCode skills that init turns into redirects
    "echoes-append-to-daily-log": "echoes_append_to_daily_log",
    "echoes-search-vault-pages": "echoes_search_vault_pages",
    "echoes-create-or-update-page": "echoes_create_or_update_page",
}


def markdownlint() -> str:
    found = shutil.which("markdownlint-cli2")
    if found is None:
        reason = "markdownlint-cli2 is not installed: npm install -g markdownlint-cli2@0.22.1"
        if os.environ.get("CI") == "true":  # .ci/run installs it
            pytest.fail(reason)
        pytest.skip(reason)
    return found


def snippet() -> str:
    match = re.search(r"```jsonc\n// \.markdownlint-cli2\.jsonc\n(.*?)```", README, re.DOTALL)
    assert match is not None, "README has the .markdownlint-cli2.jsonc snippet"
    return match.group(1)


def runtime(repo: Path, *args: str, payload: str = "") -> None:
    subprocess.run([sys.executable, "-m", "echoes_lint", "--workspace", str(repo),
                    "--agent", "codex", *args], input=payload, text=True, check=True,
                   capture_output=True)


def lint(repo: Path, tool: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool, "**/*.md"], cwd=repo, capture_output=True, text=True,
                          check=False)


def test_generated_files_pass_markdownlint_with_the_readme_snippet(git_repo: Path) -> None:
    tool = markdownlint()
    for name, signature in LEGACY_SKILLS.items():
        write(git_repo, f".opencode/skills/{name}/SKILL.md", f"Uses {signature}.\n")
    runtime(git_repo, "init")
    runtime(git_repo, "append", "--payload", "-", payload='{"entry": "A scratchpad note."}')
    runtime(git_repo, "end", "--confirm-explicit-user-end", "--payload", "-",
            payload='{"dailySummary": "Saved.", "pages": [{"filename": "build.md", "content": '
                    '"---\\ntype: guide\\nstack: [make]\\nstatus: active\\nsummary: Build.\\n'
                    '---\\n\\n# Build\\n"}]}')
    generated = sorted(path.relative_to(git_repo).as_posix()
                       for path in git_repo.rglob("*.md") if ".git/" not in path.as_posix())
    assert ".opencode/skills/echoes-search-vault-pages/SKILL.md" in generated
    # Without the snippet the daily entries and OpenCode commands are reported ...
    bare = lint(git_repo, tool)
    assert bare.returncode == 1
    assert "EchoesVault/daily/" in bare.stdout + bare.stderr
    # ... and with it every generated file passes the default rules.
    write(git_repo, ".markdownlint-cli2.jsonc", snippet())
    result = lint(git_repo, tool)
    assert result.returncode == 0, result.stdout + result.stderr
    linted = [name for name in generated if not name.startswith(
        ("EchoesVault/daily/", "EchoesVault/index.md", ".opencode/commands/echoes-"))]
    assert f"Linting: {len(linted)} file(s)" in result.stdout + result.stderr
