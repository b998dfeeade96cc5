"""EV030 on Git's listing decides the daily folder (`<date>/<stamp>-<slug>.md`, each stamp's `T`
and `Z` capitals) in a few passes in C when every entry keeps the first one's capitals and none
holds their lower-case twins (lowering is then one-to-one), and finds exactly what NFC and case
folding of every file and folder finds, with capitals, twins and names beyond ASCII anywhere."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_hook6_collisions import agree_in_chunks
from test_hook_collisions import VAULT, common

from echoes_lint import engine, gitindex
from echoes_lint.rules import collisions as rule
from echoes_lint.rules.context import GitIndex

_DATE = st.sampled_from(["2026-01-01", "2026-01-02", "2026-0I-01", "2026-0i-01"])
# Stamps and slugs that move the stamp's capitals, or their lower-case twins, to one another's
# places (`T1Z-tT` and `T1Z-Tt` fold alike), and what folds beyond ASCII.
_STAMP = st.sampled_from(["20260101T1Z", "20260101t1Z", "20260101T1z", "20260101T2Z"])
_SLUG = st.lists(st.sampled_from(["t", "T", "z", "Z", "x", "session", "\u00df", "ss", "\u212a",
                                  "k", "e\u0301", "\u00e9"]), min_size=1, max_size=3).map("".join)
_DAILY = st.builds("daily/{}/{}-{}.md".format, _DATE, _STAMP, _SLUG)
# One day's entries of one stamp, whose slugs hold a `T` or its twin: mostly kept alike, often
# folded alike.
_DAY = st.sampled_from(["tT", "Tt", "xT", "Tx", "tx"]).map(
    "daily/2026-01-01/20260101T1Z-{}.md".format)


@settings(max_examples=600, deadline=None, derandomize=True)
@given(st.one_of(st.lists(_DAILY, min_size=1, max_size=12),
                 st.lists(_DAY, min_size=1, max_size=6)),
       st.lists(st.builds("pages/page-{}.md".format, st.integers(0, 9)), max_size=5),
       st.integers(1, 200), st.booleans())
@example(["daily/2026-01-01/20260101T1Z-tT.md", "daily/2026-01-01/20260101T1Z-Tt.md"], [], 200,
         True)
def test_the_daily_folder_collides_as_by_folding_every_file_and_folder(
        daily: list[str], pages: list[str], chunk: int, ascii_only: bool) -> None:
    """For any chunk size; ASCII only: Git's common listing, searched as it is."""
    agree_in_chunks(daily, pages, chunk, ascii_only)


def _entries(paths: list[str]) -> str:
    return common(paths, [1] * len(paths))


def test_lowering_one_to_one_is_decided_on_the_first_entrys_capitals() -> None:
    folder = f"{VAULT}daily/"
    day = "2026-01-01/20260101T120000000000Z-session-codex-0000000{}.md"
    same = [folder + day.format(number) for number in range(3)]
    text = _entries(same)
    first = same[0][len(folder):]
    assert gitindex._listed_unchanged(text, 0, len(text), folder, first)
    for other in ("2026-01-01/20260101T120000000000Z-session-codet-00000009.md",  # a twin `t`
                  "2026-01-01/20260101T120000000000ZA-session-codex-00000009.md",  # one more
                  "2026-01-01/20260101t120000000000Z-session-codex-00000009.md"):  # one fewer
        text = _entries([*same, folder + other])
        assert not gitindex._listed_unchanged(text, 0, len(text), folder, first), other
    # A twin in the first entry is kept: the others must hold it at the same place.
    twin = [folder + "2026-01-01/20260101T1Z-at.md", folder + "2026-01-01/20260101T2Z-at.md"]
    text = _entries(twin)
    assert gitindex._listed_unchanged(text, 0, len(text), folder, twin[0][len(folder):])
    text = _entries([*twin, folder + "2026-01-01/20260101T3Z-aa.md"])
    assert not gitindex._listed_unchanged(text, 0, len(text), folder, twin[0][len(folder):])


def test_the_date_folders_of_a_common_daily_folder_are_not_walked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The daily folder of 2,000 entries in 20 date folders is decided as a whole: the rule
    folds the vault's top names alone (before: the daily folder was walked, its date folders'
    names folded, and each date folder split into its entries)."""
    daily = [f"{VAULT}daily/2026-01-{day:02d}/202601{day:02d}T12{number:012d}Z-session-codex-"
             f"{number:08x}.md" for day in range(1, 21) for number in range(100)]
    pages = [f"{VAULT}pages/page-{number:06d}.md" for number in range(100)]
    index = GitIndex(_entries([*daily, *pages, f"{VAULT}index.md"]))
    folded: list[set[str]] = []
    name_collisions = engine.name_collisions

    def recorded(names: set[str]) -> list[list[str]]:
        folded.append(set(names))
        return name_collisions(names)

    monkeypatch.setattr(rule.engine, "name_collisions", recorded)
    assert rule.listed_collisions(index) == []
    assert folded == [{"daily", "pages", "index.md"}]
