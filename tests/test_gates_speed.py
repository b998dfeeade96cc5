"""The faster paths of the whole-vault gates (issue 13) decide exactly as the general ones.

- A plain page is decided without the general frontmatter parser, with the same `PageMeta`
  (fields, lines, columns, decision) the general parser gives, over generated pages that mix
  plain blocks with every kind of damage.
- The whole-vault scan of a gate lets go of the text of pages no rule needs, and its findings
  and reports (source lines included) are byte for byte those of a scan that keeps every text,
  over vaults with every reason to keep one (and a pages folder that is a submodule's).
- A page's links settle early only when the link rule, which knows more files, would flag none.
- A report's source lines are escaped a file at a time, as they were a line at a time.
- The name rules search every path at once before they look at each: the search of the joined
  paths finds something whenever the search of some path does.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from conftest import git
from helpers_check import PAGES, commit, page, vault_repo, write
from helpers_parity import KEY_LINES, random_page
from hypothesis import given, settings
from hypothesis import strategies as st

from echoes_lint import checker, engine
from echoes_lint.check import render_result
from echoes_lint.checker import run_checks
from echoes_lint.rules import links, names

PLAIN = ("type: note", "stack: [python]", "status: active", "summary: A page.")


@settings(max_examples=600, deadline=None, derandomize=True)
@given(st.randoms(use_true_random=False))
def test_a_page_is_decided_as_the_general_parser_decides_it(rng: random.Random) -> None:
    data = random_page(rng)
    text = data.decode("utf-8", "replace")
    for candidate in (text, engine.decode_text(data)[0] or text):
        assert engine.parse_frontmatter(candidate) == engine._parse_frontmatter(candidate)


# Each line of the corpus that a required key starts: one of them replaces its plain line.
_VARIANTS = [(index, line) for index, plain in enumerate(PLAIN) for line in KEY_LINES
             if line.lstrip().startswith(plain.split(":")[0])]


@settings(max_examples=800, deadline=None, derandomize=True)
@given(st.sampled_from(_VARIANTS), st.booleans(),
       st.lists(st.sampled_from(KEY_LINES), max_size=2), st.randoms(use_true_random=False),
       st.sampled_from(("", "\n", "\n\n", "  \n", "\ttext\n", "=======\n", "x\x0cy\n",
                        "a\u2028b\n", "---\n", " =======")),
       st.sampled_from(("\n", "\n", "\n", "\r\n", "\x0b", "\x85")))
def test_plain_blocks_are_decided_as_the_general_parser_decides_them(
        variant: tuple[int, str], varied: bool, extra: list[str], rng: random.Random, body: str,
        separator: str) -> None:
    lines = list(PLAIN)
    if varied:
        lines[variant[0]] = variant[1]
    lines += extra
    rng.shuffle(lines)
    block = "---\n" + separator.join(lines) + "\n---\n"
    for text in (block + body, block.rstrip("\n") + body, block + "# T\n" + body):
        assert engine.parse_frontmatter(text) == engine._parse_frontmatter(text)


def test_the_common_page_takes_the_plain_path() -> None:
    """The fast path must not silently turn into the fallback for the pages it exists for."""
    text = "---\n" + "\n".join(PLAIN) + "\ntags: [a, b]\n---\n\n# Page\n"
    meta = engine._plain_page(text)
    assert meta is not None and meta == engine._parse_frontmatter(text)
    assert (meta.type, meta.status, meta.summary, meta.close_line) == (
        "note", "active", "A page.", 7)


# Page bodies, each with a reason for a rule to read the page's text, or none.
_BODIES = {
    "plain": "# Plain\n\nSee [[home]], [[home#top]], [[#self]], [[home|alias]], [[via-link]].\n",
    "broken": "# Broken\n\nSee [[nowhere]] and [[home]].\n",
    "code": "# Code\n\n```\n[[nowhere]]\n```\n\nand `[[gone]]`, but [[home]].\n",
    "daily-link": "# Daily\n\n[[2026-01-02]] and [[daily/2026-01-02/entry]].\n",
    "asset": "# Asset\n\n![[diagram.png]] and ![[missing.png]]\n",
    "suppressed": "<!-- echoes-lint-disable-next-line EV050 -->\n[[home]]\n",
    "nul": "# Nul\n\nbinary\0here\n",
    "bare": "# Bare\n=======\n\ntext\n",
    "folded": "# Folded\n\n[[Home]] and [[pages/home]].\n",
}


def _rich_vault(repo: Path, rng: random.Random) -> None:
    """Pages with every body above, some deprecated or with frontmatter notes, a name a rule
    flags, a link in pages/, a daily entry and an asset; part committed, part not."""
    kinds = [*_BODIES, *rng.choices(sorted(_BODIES), k=rng.randrange(6))]
    for number, kind in enumerate(kinds):
        extra = rng.choice(({}, {}, {"status": "deprecated"}, {"type": "'note"}))
        name = rng.choice((f"p{number}-{kind}.md", f"P{number} {kind}.md", f"con{number}.md"))
        write(repo, f"{PAGES}/{name}", page(_BODIES[kind], **extra))
    write(repo, "EchoesVault/daily/2026-01-02/entry.md", "### Session — x\n\n[[home]] [[lost]]\n")
    write(repo, "EchoesVault/daily/2026-01-02.md", "legacy\n")
    write(repo, "EchoesVault/assets/diagram.png", "png")
    os.symlink("home.md", repo / PAGES / "via-link.md")
    write(repo, f"{PAGES}/CON.md", page())
    write(repo, f"{PAGES}/old.md", page(status="deprecated"))
    write(repo, f"{PAGES}/twice.md", page().replace("status: active\n", "status: active\n" * 2))
    if rng.random() < 0.5:
        commit(repo, "pages")


def _reports(repo: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[str]]:
    """The full and JSON reports of a lean check, then of one that keeps every text (the scan
    without the gate's reader)."""
    lean = run_checks(repo)
    reports = [render_result(lean, form) for form in ("full", "json")]
    whole = checker._whole_context
    with monkeypatch.context() as patch:  # the engine's own scan, as the gates had it before
        patch.setattr(checker, "_whole_context",
                      lambda root, prefix, git, prefetch=None: whole(root, prefix, git,
                                                                     lean=False,
                                                                     prefetch=prefetch))
        kept = run_checks(repo)
    assert all(document.text is not None for document in kept.scan.pages
               if document.problem is None)
    return reports, [render_result(kept, form) for form in ("full", "json")]


@pytest.mark.parametrize("seed", range(4))
def test_a_lean_scan_reports_what_a_scan_keeping_every_text_reports(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    repo = vault_repo(tmp_path / "repo")
    _rich_vault(repo, random.Random(seed))
    lean, kept = _reports(repo, monkeypatch)
    assert lean == kept
    assert all(code in lean[0] for code in ("EV014", "EV050", "EV080"))
    assert checker._NO_MARKERS == [] and checker._NO_FIELDS == {}  # shared: never written


def test_a_lean_scan_keeps_only_the_texts_a_rule_needs(tmp_path: Path) -> None:
    repo = vault_repo(tmp_path / "repo")
    for kind, body in _BODIES.items():
        write(repo, f"{PAGES}/{kind}.md", page(body))
    write(repo, f"{PAGES}/old.md", page(status="deprecated"))
    write(repo, f"{PAGES}/quoted.md", page(type="'note"))
    write(repo, f"{PAGES}/CON.md", page("# A name Windows refuses\n"))
    os.symlink("home.md", repo / PAGES / "via-link.md")
    result = run_checks(repo)
    kept = {document.name for document in result.scan.pages if document.text is not None}
    assert kept == {"broken.md", "code.md", "daily-link.md", "asset.md", "suppressed.md",
                    "nul.md", "bare.md", "folded.md", "old.md", "quoted.md"}
    # A page whose text was let go still shows its source line under its finding.
    report = render_result(result, "full")
    assert "EchoesVault/pages/CON.md:1:1: EV031" in report
    con = report.split("EchoesVault/pages/CON.md:1:1: EV031", 1)[1]
    assert "1 | ---" in con.split("\n\n", 1)[0]


def test_pages_of_a_submodule_are_read_again_with_their_text(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Links into a submodule's pages are broken (its files are another repository's), which
    no walk of the disk can tell before Git answers."""
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/second.md", page("[[home]]\n"))
    commit(repo, "pages")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "rm", "-r", "-q", "--cached", PAGES)
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},{PAGES}")
    lean, kept = _reports(repo, monkeypatch)
    assert lean == kept
    assert "[[home]]` points to no page" in lean[0]


# Letters that fold or upper-case oddly (dotless i, long s, Kelvin, ligatures, sharp s), blanks
# that are not printable, control characters, and each device name in mixed case.
_PATH_PARTS = st.sampled_from([
    "CON", "con.md", "aux", "COM1", "a", "b.md", "x.", "y ", ".", " ", "LPT", "nul.txt", "a:b",
    "pages", "é.md", "\n", "\x01", "?", "EchoesVault", "page-1.md", "a.b.md", "-_.md", "MD", ".md",
    "con", "Con", "cOn.md", "pRn", "Nul", "com9", "LpT1", "lpt", "ı", "ſ", "K", "ﬁ", "ß", "ŉ",
    "é", "\xa0", "\u2028", "\x1f", "\x7f", "\udcff", "<", ">", ":", '"', "|", "*", "\\", "md",
    "x.y", "daily"])
_PATHS = st.lists(st.lists(_PATH_PARTS, min_size=1, max_size=4).map("/".join), max_size=6)


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(_PATHS)
def test_names_searched_at_once_are_searched_as_one_by_one(paths: list[str]) -> None:
    if any(names._SUSPECT.search(path) for path in paths):
        assert names._any_suspect(paths)
    if any(names.windows_problem(part) for path in paths for part in path.split("/")):
        assert names._any_suspect(paths)
    pages = [f"{names.PAGES_PREFIX}{path.rpartition('/')[2]}" for path in paths]
    assert (names._PLAIN_PAGES.fullmatch("".join(f"{page}\n" for page in pages)) is not None) \
        == all(names._PLAIN_PAGE.fullmatch(page.rpartition("/")[2]) for page in pages)


_INNER = st.lists(st.sampled_from(["a", "b", "a.md", " ", "#", "|", "\\", "/", "x", "\t", ".",
                                   "B", "pages"]), max_size=4).map("".join)


@settings(max_examples=800, deadline=None, derandomize=True)
@given(st.lists(_INNER, max_size=6), st.integers(0, 6),
       st.lists(_INNER.map(lambda name: name + ".md") | _INNER, max_size=3))
def test_a_page_whose_links_settle_early_has_no_broken_link(inners: list[str], named: int,
                                                            pages: list[str]) -> None:
    """What the lean scan lets go of, the link rule (which knows more files) would not flag.
    Files are often named after the links themselves: the case a shortcut could get wrong."""
    pages += [f"{inner}.md" for inner in inners[:named]]
    files = frozenset(name for name in pages if name and "/" not in name)
    text = "".join(f"see [[{inner}]]\n" for inner in inners)
    if links.PageLinks(files).settled(text):
        targets = links._Targets(frozenset(f"{links.PAGES_PREFIX}{name}" for name in files))
        for inner in inners:
            target = links._target(inner)
            assert not target or targets.resolves(target)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(alphabet=st.sampled_from(["a", "\n", "\t", "\x1b", "\r", "\u2028", "\x85", "\udcff",
                                         "é", " "]), max_size=30))
def test_a_source_escaped_whole_splits_into_lines_escaped_one_by_one(text: str) -> None:
    assert engine.printable(text, keep="\t\n").split("\n") == [
        engine.printable(line, keep="\t") for line in text.split("\n")]


@pytest.mark.parametrize("change", ["folder swapped for a link", "page rewritten"])
def test_a_page_read_again_for_its_source_must_be_the_one_scanned(tmp_path: Path,
                                                                  change: str) -> None:
    """The report reads a let-go page again only through real folders and only while it is
    the file the scan saw: a pages folder swapped for a link to a file outside the repository,
    or a page rewritten since the scan, gives no source line, never the other file's text."""
    repo = vault_repo(tmp_path / "repo")
    write(repo, f"{PAGES}/CON.md", page("# A name Windows refuses\n"))
    result = run_checks(repo)
    assert any(document.name == "CON.md" and document.text is None
               for document in result.scan.pages)
    if change == "page rewritten":
        write(repo, f"{PAGES}/CON.md", "SECRET LINE ONE, longer than the page was\n" * 9)
    else:
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "CON.md").write_bytes((repo / PAGES / "CON.md").read_bytes().replace(
            b"---", b"SEC", 1))  # same size
        os.utime(outside / "CON.md", ns=(os.stat(repo / PAGES / "CON.md").st_atime_ns,
                                          os.stat(repo / PAGES / "CON.md").st_mtime_ns))
        os.rename(repo / PAGES, tmp_path / "aside")
        os.symlink(outside, repo / PAGES)
    report = render_result(result, "full")
    assert "EchoesVault/pages/CON.md:1:1: EV031" in report
    assert "SEC" not in report
