"""Differential parity with the reference engine (spec section 21), when one is at hand.

Set ECHOES_REFERENCE_ENGINE to a copy of the reference `scripts/echoes_vault.py` (1.1.1) to run
it; otherwise these tests are skipped. Random vaults (seeded, so a failure names its seed) go
through both engines as installed project runtimes, and everything `helpers_parity.observe`
records must be equal: the accept/reject decision of `rebuild-index`, the index bytes, the
invalid pages of `status`, the `hash` of every page, and whether `upsert` of a random page
is accepted, with the index it leaves. ECHOES_PARITY_SEEDS sets how many
vaults (default 40), ECHOES_PARITY_FIRST_SEED the first seed (default 0).

`hash` is compared for every page but the two documented leniencies (README, "Reference
parity"): a page that is not UTF-8, which the reference cannot read, and a page stored under a
name that is not NFC, which the reference does not find.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from helpers_parity import ENGINE_FILE, make_workspace, observe, random_page, random_pages

from echoes_lint import engine

REFERENCE = os.environ.get("ECHOES_REFERENCE_ENGINE", "")
SEEDS = int(os.environ.get("ECHOES_PARITY_SEEDS", "40"))
FIRST_SEED = int(os.environ.get("ECHOES_PARITY_FIRST_SEED", "0"))

pytestmark = pytest.mark.skipif(not REFERENCE or not Path(REFERENCE).is_file(),
                                reason="ECHOES_REFERENCE_ENGINE names no reference engine")


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _lenient_hash(name: str, pages: dict[str, bytes]) -> bool:
    """Whether `hash name` reaches a page the reference cannot hash (the documented
    leniencies): one that is not UTF-8, or one stored under a non-NFC name."""
    wanted = engine.nfc(name) if name.endswith(".md") else engine.nfc(name) + ".md"
    if wanted in pages:
        return not _utf8(pages[wanted])
    return any(engine.nfc(other) == wanted for other in pages)


@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + SEEDS))
def test_random_vault_agrees_with_the_reference(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    pages = random_pages(rng)
    names = [name for name in pages if not _lenient_hash(name, pages)]
    written = random_page(rng)  # as a JSON payload sends it: carriage returns included
    content = written.decode("utf-8") if _utf8(written) else None
    if content is not None and _marker_from_carriage_returns(content):
        content = None
    reference = observe(make_workspace(tmp_path / "reference", Path(REFERENCE), pages), names,
                        content)
    ours = observe(make_workspace(tmp_path / "ours", ENGINE_FILE, pages), names, content)
    assert ours == reference, (seed, pages, content)


def _marker_from_carriage_returns(content: str) -> bool:
    """Documented: writers store Unix newlines, so they refuse content whose carriage returns
    hide a conflict-marker line from the reference."""
    return (engine.protocol_marker_offset(content) < 0
            and engine.protocol_marker_offset(content.replace("\r\n", "\n").replace("\r", "\n")) >= 0)
