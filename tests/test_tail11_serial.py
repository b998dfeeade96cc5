"""`ci`'s serial tail after the scan (issue 13): the page names of the status report taken from
the paths at once, and the common ASCII text and names checked in C, without compiling a pattern.
Each shortcut gives exactly what the one-by-one way gives."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from echoes_lint import engine
from echoes_lint.rules import edits

_PREFIX = f"{engine.VAULT_DIR}/pages/"
_PATHS = st.sampled_from([
    f"{_PREFIX}a.md", f"{_PREFIX}b c.md", f"{_PREFIX}é.md", f"{_PREFIX}\udcff.md", f"{_PREFIX}",
    f"{_PREFIX}sub/a.md", f"{engine.VAULT_DIR}/daily/2024-01-01.md", "a.md",
    f"X{_PREFIX}a.md", f"{engine.VAULT_DIR}/pages", f"{_PREFIX}{_PREFIX}a.md", "/", ""])


@settings(max_examples=600, deadline=None, derandomize=True)
@given(st.lists(_PATHS, max_size=5))
def test_the_names_taken_at_once_are_each_documents_name(paths: list[str]) -> None:
    documents = [engine.Document(path, "", None, []) for path in paths]
    assert engine.document_names(documents) == [document.name for document in documents]
    scan = engine.Scan(Path("/nowhere"))
    scan.pages, scan.summarized = documents, ["z.md"]
    assert engine.scan_page_names(scan) == [*(document.name for document in documents), "z.md"]


# Every character below U+3000 and the surrogates, alone and within text.
_CHARS = [chr(code) for code in [*range(0x3000), *range(0xD800, 0xE000, 7)]]
_OTHER_BREAKS = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def test_ascii_text_is_judged_as_the_patterns_judge_it() -> None:
    for char in _CHARS:
        for text in (char, f"ab\n{char}c", f"é{char}"):
            assert (edits.lines_of(text) is None) == bool(_OTHER_BREAKS.search(text)), repr(text)
            printed = engine.printable(text)
            assert (printed == text) == (not _UNPRINTABLE.search(text)), repr(text)
            kept = _UNPRINTABLE.sub("", text.replace("\t", "").replace("\n", ""))
            assert (engine.printable(text, keep="\t\n") == text) == (kept == text.replace(
                "\t", "").replace("\n", "")), repr(text)
    assert engine.printable("") == "" and edits.lines_of("") == [""]


def _compiled_after(code: str) -> str:
    """The patterns the engine and the edits compiled after `code` ran in a fresh interpreter."""
    script = ("from echoes_lint import engine\nfrom echoes_lint.rules import edits\n" + code +
              "\nprint(sorted(name for name, value in [*vars(engine).items(), *vars(edits).items()]"
              " if isinstance(value, engine._Regex) and 'search' in vars(value)))")
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_ascii_pages_text_and_names_compile_no_pattern() -> None:
    code = ("assert edits.lines_of('---\\ntype: x\\n---\\nBody.\\n') is not None\n"
            "assert engine.printable('EchoesVault/pages/a.md: a message') == "
            "'EchoesVault/pages/a.md: a message'\n"
            "assert engine.printable('Status ·\\n\\tok\\n', keep='\\t\\n') == 'Status ·\\n\\tok\\n'\n"
            "assert engine.Document('EchoesVault/pages/a.md', 'x', None, []).page_problems == []")
    assert _compiled_after(code) == "[]"
    # Where a pattern can find what C does not look for, it is still asked.
    code = ("assert edits.lines_of('é\\u2028') is None\n"
            "assert engine.printable('é\\x85') == 'é\\\\x85'\n"
            "assert engine.Document('EchoesVault/pages/\\udcff.md', 'x', None, []).page_problems")
    assert _compiled_after(code) == "['_OTHER_BREAKS', '_SURROGATE', '_UNPRINTABLE']"


_LINE = st.sampled_from(['ENGINE_VERSION = "1.2.3"', 'PROTOCOL_VERSION = "1.0.0"', "x = 1",
                         'ENGINE_VERSION = "1.2"', 'ENGINE_VERSION = "1.2.3" ', ' ENGINE_VERSION = "1.2.3"',
                         'ENGINE_VERSION = "١.٢.٣"', 'ENGINE_VERSION = "1.2.3"\r', 'ENGINE_VERSION = "1..3"',
                         'ENGINE_VERSION = "1.2.3.4"', 'ENGINE_VERSION = "a.2.3"', 'ENGINE_VERSION = "',
                         'PLUGIN_VERSION = "0.9.10"', 'ENGINE_VERSION = "1.2.3""', "ENGINE_VERSION"])


@settings(max_examples=800, deadline=None, derandomize=True)
@given(st.lists(_LINE, max_size=5), st.sampled_from(["\n", "\r\n", ""]))
def test_versions_are_read_as_the_patterns_read_them(lines: list[str], end: str) -> None:
    source = "\n".join(lines) + end
    for constant in ("ENGINE_VERSION", "PROTOCOL_VERSION", "PLUGIN_VERSION"):
        match = re.search(rf'^{constant} = "(\d+)\.(\d+)\.(\d+)"$', source, re.MULTILINE)
        assert engine.declared_version(source, constant) == (
            tuple(map(int, match.groups())) if match else None)
    for line in lines:
        value = line.partition('"')[2]
        match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", value)
        assert engine.parse_version(value) == (tuple(map(int, match.groups())) if match else None)


def test_the_runtime_health_compiles_no_pattern() -> None:
    script = ("import re\nfrom echoes_lint import engine\ncompiled = []\nplain = re._compile\n"
              "re._compile = lambda *args: compiled.append(args) or plain(*args)\n"
              "source = engine.Path(engine.__file__).read_text()\n"
              "assert engine.runtime_health(source, None)['current']\nprint(compiled)")
    assert subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True).stdout.strip() == "[]"
