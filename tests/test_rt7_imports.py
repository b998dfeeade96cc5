"""The portable runtime runs without `typing` (issue 13, the fixed cost of every command at
5,000 pages: ~2 ms of imports): its annotations are never evaluated, and what it needed of
`typing` at run time (NamedTuple, TypeVar, cast, type aliases) has plain equivalents that act
the same. The read-only commands read the clock without `datetime` (~1 ms), to the same dates.
Behaviour only: which modules are imported, never how long anything takes."""

from __future__ import annotations

import contextlib
import datetime
import os
import pickle
import sys
import time
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import page_text
from helpers_writer import ENGINE_FILE, init_vault, runtime
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_fixed2_imports import IMPORTTIME, imported
from test_parity_module import load_unregistered

from echoes_lint import engine

PAYLOAD = {"filename": "a-page", "content": page_text("A page.")}


@pytest.mark.parametrize("command", [("status",), ("inspect",), ("inspect", "--format", "card"),
                                     ("start",), ("upsert", "--payload", "-"),
                                     ("rebuild-index",), ("search", "page")])
def test_a_runtime_command_imports_no_typing(git_repo: Path, command: tuple[str, ...]) -> None:
    init_vault(git_repo)
    runtime(git_repo, "rebuild-index")  # a cache, so that status and inspect read it
    done = runtime(git_repo, *command, python=IMPORTTIME,
                   payload=PAYLOAD if "upsert" in command else None)
    assert done.returncode == 0, done.stderr
    modules = imported(done.stderr)
    assert "json" in modules  # the listing is real
    assert "typing" not in modules
    if command[0] in ("status", "inspect", "search"):  # no clock read by a write
        assert "datetime" not in modules


class _Declared(typing.NamedTuple):
    key: str
    line: int
    value_col: int
    raw: str


def test_field_acts_as_the_named_tuple_it_was() -> None:
    field = engine._new_field(("status", 3, 9, "active"))
    declared = _Declared("status", 3, 9, "active")
    assert field == declared == ("status", 3, 9, "active") and isinstance(field, tuple)
    assert hash(field) == hash(declared)
    assert repr(field) == repr(declared).replace("_Declared", "Field")
    assert engine.Field._fields == _Declared._fields
    assert (field.key, field.line, field.value_col, field.raw) == ("status", 3, 9, "active")
    assert field._replace(raw="done") == engine.Field("status", 3, 9, "done")
    assert field._asdict() == declared._asdict()
    assert pickle.loads(pickle.dumps(field)) == field
    marker = object()
    assert engine.cast(int, marker) is marker


def test_the_runtime_loads_without_typing_in_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loaded as the reference suite loads it, with `import typing` failing: it still works."""
    def refuse(name: str, *args: object, **kwargs: object) -> object:
        if name == "typing":
            raise ImportError("typing is not for the runtime")
        return real(name, *args, **kwargs)

    real = __import__
    monkeypatch.setattr("builtins.__import__", refuse)
    name = "echoes_vault_rt7_without_typing"
    try:
        module = load_unregistered(ENGINE_FILE, name)
        assert module.parse_frontmatter(page_text("A page.")).problems == ()
        assert module.parse_version("1.2.3") == (1, 2, 3)
    finally:
        sys.modules.pop(name, None)


def _datetime_answer(timestamp: float) -> str:
    try:
        return datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc).isoformat(
            timespec="seconds")
    except (OverflowError, OSError, ValueError) as exc:
        return type(exc).__name__


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                 st.floats(min_value=-3e9, max_value=5e9),
                 st.builds(lambda second, fraction: second + fraction,
                           st.integers(-2**31, 2**33),
                           st.sampled_from([0.9999995, 0.4999995, 0.0000005, 0.9999994999,
                                            0.5, 0.0000015, 0.0000025]))))
@example(1700000000.9999998)
@example(-0.0000005)
@example(253402300800.0)
def test_last_modified_is_what_datetime_writes(timestamp: float) -> None:
    """Rounded to microseconds half to even before the seconds are cut, as datetime does; out
    of its range, datetime's own error."""
    try:
        ours = engine.utc_seconds(timestamp)
    except (OverflowError, OSError, ValueError) as exc:
        ours = type(exc).__name__
    assert ours == _datetime_answer(timestamp)


@contextlib.contextmanager
def _zone(name: str) -> Iterator[None]:
    """This process's local time zone set to `name` for the block."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = name
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()


@pytest.mark.skipif(not Path("/usr/share/zoneinfo/right/UTC").is_file(),
                    reason="no leap-second zone (right/UTC) on this system")
def test_a_leap_second_is_read_as_datetime_reads_it() -> None:
    """Under a `right/` zone `gmtime` says :60 for a leap second; datetime (and so the
    reference's `lastModified`) says :59."""
    with _zone("right/UTC"):
        leap = 1483228826.0  # 2016-12-31T23:59:60 in right/UTC
        assert time.gmtime(leap).tm_sec == 60  # what the engine reads
        assert engine.utc_seconds(leap) == _datetime_answer(leap) == "2016-12-31T23:59:59+00:00"


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.floats(min_value=0, max_value=4e9))
def test_today_is_the_day_datetime_says(now: float) -> None:
    """Today in UTC and in local time, as datetime says, in zones on either side of UTC."""
    for zone in ("UTC", "America/Los_Angeles", "Pacific/Kiritimati"):
        with _zone(zone):
            moment = datetime.datetime.fromtimestamp(now, datetime.timezone.utc)
            today = {moment.date().isoformat(), moment.astimezone().date().isoformat()}
            days = {day: 1 << number for number, day in enumerate(
                sorted({*today, "1969-12-31", "2100-01-01"}))}
            assert engine.today_entries(days, now) == sum(days[day] for day in today)
