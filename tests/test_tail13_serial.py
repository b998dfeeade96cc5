"""The serial tail of `ci` and `check` after the scan (issue 13): what no output needs is not
computed, and what is computed decides as before.

- The local index is compared with the rendered one as text, while the rendered text is at
  hand: neither `ci` (its note on a stale local index) nor `status` hashes the local index,
  and both judge a current, stale or missing one as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest
from conftest import write_page
from helpers_check import vault_repo

from echoes_lint import ci, engine

INDEX = f"{engine.VAULT_DIR}/{engine.INDEX_FILE}"
STALE_NOTE = "note: EchoesVault/index.md is out of date"


def _hashed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the engine's two text digests are asked for from now on."""
    texts: list[str] = []

    def recorded(real: Callable[[str], str]) -> Callable[[str], str]:
        def digest(text: str) -> str:
            texts.append(text)
            return real(text)
        return digest

    monkeypatch.setattr(engine, "text_digest", recorded(engine.text_digest))
    monkeypatch.setattr(engine, "sha256_text", recorded(engine.sha256_text))
    return texts


def _rendered(repo: Path) -> str:
    return engine.build_index(engine.scan_index_pages(engine.scan_workspace(repo)))


def _ci_log(repo: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert ci.main(["--workspace", str(repo), "--summary", "false", "--fail-on", "never"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("local", ["current", "stale", "missing"])
def test_neither_ci_nor_status_hashes_the_local_index(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        local: str) -> None:
    repo = vault_repo(tmp_path / "repo")
    write_page(repo, "other.md", summary="Another page.")
    rendered = _rendered(repo)
    text = {"current": rendered, "stale": rendered + "- [[gone]]: Gone.\n", "missing": None}[local]
    if text is not None:
        (repo / INDEX).write_text(text, encoding="utf-8", newline="\n")
    hashed = _hashed(monkeypatch)
    log = _ci_log(repo, capsys)
    assert (STALE_NOTE in log) is (local == "stale")
    report = engine.inspect_report(engine.scan_workspace(repo))
    refresh, health = report["indexRefresh"], report["health"]
    assert refresh["sha256"] == engine.sha256_text(rendered)
    assert refresh["needsRefresh"] is (local != "current")
    assert health["indexOutOfDate"] == ([engine.INDEX_FILE] if local == "stale" else [])
    # The rendered index only, once by `ci`'s report, once by `status`'s, once above.
    assert [digested for digested in hashed if digested in (text, rendered)] == [rendered] * 3
