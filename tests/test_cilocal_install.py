"""No message suggests `pip install echoes-lint`, which is not published yet: the hooks name
the release tag of this version on Git (or a local clone), and the published name only for
when it is."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import ROOT, git
from helpers_check import PAGES, page, write
from test_hooks_scripts import (  # noqa: F401  (fixtures)
    STDLIB_ONLY,
    commit,
    context_of,
    hooked,
    project,
    session_start,
)

from echoes_lint import __version__

GIT_INSTALL = (f'pip install "echoes-lint @ git+https://github.com/echoes-lint/echoes-lint'
               f'@v{__version__}"')
# `pip install echoes-lint` of the bare name, with or without extras or a version pin.
BARE_INSTALL = re.compile(r"pip install ['\"]?echoes-lint(?:\[[^\]]*\])?(?:[=<>~!]=?[\w.]*)?"
                          r"['\"]?(?!\s*@|[\w/-])")


def bare_installs(text: str) -> list[str]:
    """Lines that offer the unpublished bare install without saying it is for later."""
    return [line for line in text.splitlines()
            if BARE_INSTALL.search(line) and "published" not in line]


def shipped_texts() -> dict[str, str]:
    """Every tracked text file a user reads or runs: code, hooks, documentation."""
    listed = git(ROOT, "ls-files", "-z", "--", "echoes_lint", "hooks", "*.md", "action.yml",
                 ".pre-commit-hooks.yaml")
    texts = {}
    for name in filter(None, listed.split("\0")):
        data = (ROOT / name).read_bytes()
        if b"\0" not in data:
            texts[name] = data.decode("utf-8")
    return texts


def test_no_shipped_text_offers_the_unpublished_install() -> None:
    texts = shipped_texts()
    assert "hooks/pre-commit" in texts and "README.md" in texts
    assert {name: bare_installs(text) for name, text in texts.items()
            if bare_installs(text)} == {}
    assert bare_installs("run `python3 -m pip install echoes-lint` first")  # the check can fail


def test_the_plain_hook_names_the_tag_of_this_version(hooked: Path) -> None:  # noqa: F811
    git(hooked, "commit", "-q", "--allow-empty", "--no-verify", "-m", "base")
    write(hooked, f"{PAGES}/next.md", page())
    git(hooked, "add", "-A")
    result = commit(hooked, ECHOES_LINT_PYTHON="no-such-python", PATH="/usr/bin:/bin")
    assert result.returncode == 1
    assert f"no-such-python -m {GIT_INSTALL}" in result.stderr
    assert "no-such-python -m pip install /path/to/echoes-lint" in result.stderr
    assert bare_installs(result.stderr) == []


def test_the_session_hook_names_the_tag_of_this_version(project: Path) -> None:  # noqa: F811
    context = context_of(session_start({"cwd": str(project)}, python=STDLIB_ONLY))
    assert "### EchoesVault · status unavailable" in context
    assert f"python3 -m {GIT_INSTALL}" in context
    assert bare_installs(context) == []
