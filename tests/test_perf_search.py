"""`search` gives the reference engine's exact output and reads no page once it has its results
(issue 13).

As the reference: every line of the whole page (frontmatter included), split by
`str.splitlines`, pages in index order, `truncated` true as soon as `limit` results are found,
and no `limit` key. The differential test runs when ECHOES_REFERENCE_ENGINE names the reference.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
from pathlib import Path

import pytest
from conftest import make_vault, page_text, write_page
from helpers_parity import ENGINE_FILE, make_workspace, random_pages, run_runtime

from echoes_lint import engine

REFERENCE = os.environ.get("ECHOES_REFERENCE_ENGINE", "")


def _search(workspace: Path, query: str, limit: int = 100) -> dict[str, object]:
    ctx = engine.Context(workspace, None, None, io.BytesIO())
    return engine.cmd_search(ctx, argparse.Namespace(query=query, limit=limit))


def test_lines_are_split_as_str_splitlines_and_frontmatter_is_searched(tmp_path: Path) -> None:
    make_vault(tmp_path)
    write_page(tmp_path, "a.md", summary="Needle in the summary.",
               body="one\x85needle two\u2028three needle\r\nfour\x0bNEEDLE\n")
    result = _search(tmp_path, "needle")
    assert [(hit["line"], hit["text"]) for hit in result["results"]] == [  # type: ignore[index]
        (5, "summary: Needle in the summary."), (9, "needle two"), (10, "three needle"),
        (12, "NEEDLE")]
    assert result["truncated"] is False and "limit" not in result


def test_truncated_as_soon_as_the_limit_is_reached(tmp_path: Path) -> None:
    make_vault(tmp_path)
    write_page(tmp_path, "a.md", body="needle\nneedle\n")
    assert _search(tmp_path, "needle", limit=2)["truncated"] is True
    assert _search(tmp_path, "needle", limit=3)["truncated"] is False


def test_no_page_is_read_after_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         ) -> None:
    make_vault(tmp_path)
    for number in range(20):
        write_page(tmp_path, f"p{number:02d}.md", body="needle\n")
    read: list[str] = []
    original = engine.read_bytes

    def counting(path: os.PathLike[str] | str, *args: object, **kwargs: object) -> bytes:
        read.append(os.fspath(path))
        return original(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "read_bytes", counting)
    result = _search(tmp_path, "needle", limit=3)
    assert [hit["file"] for hit in result["results"]] == [  # type: ignore[index]
        "EchoesVault/pages/p00.md", "EchoesVault/pages/p01.md", "EchoesVault/pages/p02.md"]
    assert [Path(path).name for path in read] == ["p00.md", "p01.md", "p02.md"]


def _queries(rng: random.Random, pages: dict[str, bytes]) -> list[str]:
    """Words of the pages in another case, a line fragment, and a word on no page."""
    words = [word for data in pages.values()
             for word in data.decode("utf-8").split() if not word.startswith("-")]
    chosen = rng.sample(words, min(2, len(words)))
    return [*(word.swapcase() for word in chosen), "summary", "e", "no such words"]


@pytest.mark.skipif(not REFERENCE or not Path(REFERENCE).is_file(),
                    reason="ECHOES_REFERENCE_ENGINE names no reference engine")
@pytest.mark.parametrize("seed", range(8))
def test_search_output_equals_the_reference(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    pages: dict[str, bytes] = {}
    keys: set[tuple[str, str]] = set()
    for _ in range(3):
        for name, data in random_pages(rng, most=6).items():
            try:
                data.decode("utf-8")  # the reference stops on a page that is not UTF-8
            except UnicodeDecodeError:
                continue
            key = engine.page_sort_key(name)
            if key not in keys:  # equal keys leave the order to the file system
                keys.add(key)
                pages[name] = data
    pages["many.md"] = page_text(body="e\n" * 30).encode("utf-8")
    reference = make_workspace(tmp_path / "reference", Path(REFERENCE), pages)
    ours = make_workspace(tmp_path / "ours", ENGINE_FILE, pages)
    for query in _queries(rng, pages):
        for limit in ("2", "100"):
            expected = run_runtime(reference, "search", query, "--limit", limit)
            actual = run_runtime(ours, "search", query, "--limit", limit)
            assert expected.returncode == 0, expected.stderr
            assert actual.stdout == expected.stdout, (seed, query, limit)
            json.loads(actual.stdout)
