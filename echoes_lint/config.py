"""Configuration of `echoes-lint check`: `[tool.echoes-lint]` in pyproject.toml or `.echoes-lint.toml`.

```toml
[tool.echoes-lint]            # in .echoes-lint.toml the keys sit at the top level
select = ["EV"]               # codes or code prefixes; default: every rule
extend-select = ["EV07"]      # added to `select` (a command-line --select drops both)
ignore = ["EV050"]
extend-ignore = ["EV022"]     # added to `ignore`
exclude = ["EchoesVault/raw"] # globs of files or folders to skip (--exclude replaces them)
extend-exclude = ["*.draft.md"] # added to `exclude`
vault-dir = "docs/EchoesVault" # relative to the repository root
fail-on = "error"             # "error" (default), "warning" or "never"
fail-on-untracked-at-push = true  # the pre-push hooks fail on EV022 (default true)

[tool.echoes-lint.per-file-ignores]
"EchoesVault/pages/legacy-*.md" = ["EV050"]
```

`.echoes-lint.toml` wins over pyproject.toml, as a dedicated file should. Unknown keys, unknown
codes and wrong types are errors: a typo must not silently switch a check off.
"""

from __future__ import annotations

import fnmatch
import os
import stat
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from echoes_lint import engine
from echoes_lint.findings import RULES, Record

TYPE_CHECKING = False  # not `typing`'s: the gates load no `typing` for annotations
if TYPE_CHECKING:
    from typing import Any, Optional

DEDICATED_FILE = ".echoes-lint.toml"
PYPROJECT_FILE = "pyproject.toml"
FAIL_ON = ("error", "warning", "never")
_KEYS = ("select", "extend-select", "ignore", "extend-ignore", "exclude", "extend-exclude",
         "per-file-ignores", "vault-dir", "fail-on", "fail-on-untracked-at-push")


class ConfigError(Exception):
    """A usage or configuration problem: `echoes-lint: error: ...` on stderr, exit 2."""


class Config(Record):
    """`select`: codes or code prefixes to check, empty for every rule; `per_file_ignores`:
    (glob relative to the repository root, codes or prefixes) pairs; `vault_dir`: the
    EchoesVault folder relative to the repository root, None for `EchoesVault`; `source`: the
    file the configuration came from, for messages; `exclude`: globs of repository-relative
    files or folders whose findings are not reported; `fail_on_untracked_at_push`: whether the
    pre-push hooks fail on EV022 (a push without those files loses them)."""

    __slots__ = _FIELDS = ("select", "ignore", "per_file_ignores", "vault_dir", "fail_on",
                           "source", "extend_select", "extend_ignore", "exclude",
                           "extend_exclude", "fail_on_untracked_at_push")

    def __init__(self, select: tuple[str, ...] = (), ignore: tuple[str, ...] = (),
                 per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = (),
                 vault_dir: Optional[str] = None, fail_on: str = "error",
                 source: Optional[Path] = None, extend_select: tuple[str, ...] = (),
                 extend_ignore: tuple[str, ...] = (), exclude: tuple[str, ...] = (),
                 extend_exclude: tuple[str, ...] = (),
                 fail_on_untracked_at_push: bool = True) -> None:
        self.select, self.ignore, self.per_file_ignores, self.vault_dir = (
            select, ignore, per_file_ignores, vault_dir)
        self.fail_on, self.source, self.extend_select, self.extend_ignore = (
            fail_on, source, extend_select, extend_ignore)
        self.exclude, self.extend_exclude, self.fail_on_untracked_at_push = (
            exclude, extend_exclude, fail_on_untracked_at_push)


def validate_codes(codes: Iterable[str], origin: str) -> tuple[str, ...]:
    """Upper-case codes or prefixes, each matching at least one rule (`EV` matches all)."""
    result = []
    for raw in codes:
        code = raw.strip().upper()
        if not code:
            continue
        if not any(rule.startswith(code) for rule in RULES):
            raise ConfigError(f"unknown rule code {raw.strip()!r} in {origin} "
                              f"(run `echoes-lint rule --all` for the list)")
        result.append(code)
    return tuple(result)


def split_codes(values: Sequence[str]) -> list[str]:
    """`--select EV001,EV002 --select EV010` -> ["EV001", "EV002", "EV010"]."""
    return [part for value in values for part in value.replace(",", " ").split()]


def enabled_codes(select: Sequence[str], ignore: Sequence[str]) -> frozenset[str]:
    """The rule codes left after selecting (prefixes; empty = all) and then ignoring."""
    chosen = [code for code in RULES if not select or code.startswith(tuple(select))]
    return frozenset(code for code in chosen if not code.startswith(tuple(ignore)))


def split_patterns(values: Sequence[str]) -> list[str]:
    """`--exclude a,b --exclude c` -> ["a", "b", "c"], cleaned as configured globs are."""
    return [_clean_pattern(part) for value in values for part in value.split(",")
            if _clean_pattern(part)]


def _clean_pattern(pattern: str) -> str:
    pattern = pattern.strip().replace("\\", "/")
    return (pattern[2:] if pattern.startswith("./") else pattern).rstrip("/")


def excluded(patterns: Sequence[str], path: str) -> bool:
    """Whether `exclude` globs cover a repository-relative path: a pattern matches the path or
    one of its folders; a pattern without `/` also matches any single name in the path."""
    if not patterns:
        return False
    parts = path.split("/")
    prefixes = ["/".join(parts[:depth]) for depth in range(1, len(parts) + 1)]
    for pattern in patterns:
        candidates = prefixes if "/" in pattern else [*prefixes, *parts]
        if any(fnmatch.fnmatchcase(candidate, pattern) for candidate in candidates):
            return True
    return False


def ignored_by_path(config: Config, path: str) -> tuple[str, ...]:
    """Codes or prefixes that per-file-ignores switch off for a repository-relative path.

    A pattern with a `/` matches the whole path; a bare pattern also matches the file name."""
    name = path.rsplit("/", 1)[-1]
    codes: list[str] = []
    for pattern, pattern_codes in config.per_file_ignores:
        if fnmatch.fnmatchcase(path, pattern) or ("/" not in pattern
                                                  and fnmatch.fnmatchcase(name, pattern)):
            codes.extend(pattern_codes)
    return tuple(codes)


def _load_toml(path: Path, text: Optional[str] = None) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        try:
            import tomli as tomllib
        except ImportError as exc:
            raise ConfigError(f"reading {path} needs the `tomli` package on Python < 3.11; "
                              "run `pip install tomli`") from exc
    try:
        data: dict[str, Any] = tomllib.loads(_read_text(path) if text is None else text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    return data


def _read_text(path: Path) -> str:
    """A configuration file's text. A FIFO, socket or device is refused before it is opened
    (a FIFO would block the check forever); a symbolic link to a regular file is followed."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise ConfigError(f"cannot read {path}: not a regular file")
        return engine.read_bytes(path, follow=True).decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc


def _string_list(value: object, key: str, origin: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"`{key}` in {origin} must be a list of strings")
    return list(value)


def _parse(table: object, origin: str, source: Path) -> Config:
    if not isinstance(table, dict):
        raise ConfigError(f"{origin} must be a table")
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise ConfigError(f"unknown key `{unknown[0]}` in {origin}; "
                          f"expected one of: {', '.join(_KEYS)}")
    select = validate_codes(_string_list(table.get("select", []), "select", origin),
                            f"`select` of {origin}")
    ignore = validate_codes(_string_list(table.get("ignore", []), "ignore", origin),
                            f"`ignore` of {origin}")
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"`per-file-ignores` in {origin} must be a table of glob = [codes]")
    per_file_ignores = tuple(
        (pattern[2:] if pattern.startswith("./") else pattern,
         validate_codes(_string_list(codes, f"per-file-ignores.{pattern}", origin),
                        f"`per-file-ignores` of {origin}"))
        for pattern, codes in sorted(per_file.items())
    )
    vault_dir = table.get("vault-dir")
    if vault_dir is not None and (not isinstance(vault_dir, str) or not vault_dir.strip()):
        raise ConfigError(f"`vault-dir` in {origin} must be a non-empty string")
    fail_on = table.get("fail-on", "error")
    if fail_on not in FAIL_ON:
        raise ConfigError(f"`fail-on` in {origin} must be one of: {', '.join(FAIL_ON)}")
    at_push = table.get("fail-on-untracked-at-push", True)
    if not isinstance(at_push, bool):
        raise ConfigError(f"`fail-on-untracked-at-push` in {origin} must be true or false")
    extend_select, extend_ignore = (
        validate_codes(_string_list(table.get(key, []), key, origin), f"`{key}` of {origin}")
        for key in ("extend-select", "extend-ignore"))
    exclude, extend_exclude = (
        tuple(_clean_pattern(pattern) for pattern in _string_list(table.get(key, []), key, origin)
              if _clean_pattern(pattern))
        for key in ("exclude", "extend-exclude"))
    return Config(select, ignore, per_file_ignores, vault_dir, fail_on, source,
                  extend_select=extend_select, extend_ignore=extend_ignore, exclude=exclude,
                  extend_exclude=extend_exclude,
                  fail_on_untracked_at_push=at_push)


def load_config(workspace: Path, explicit: Optional[Path] = None) -> Config:
    """The configuration for a repository root: `explicit`, else `.echoes-lint.toml`, else the
    `[tool.echoes-lint]` table of pyproject.toml, else defaults."""
    if explicit is not None:
        if not explicit.is_file():  # stat only: a FIFO is never opened
            raise ConfigError(f"configuration file not found: {explicit}")
        candidates = [explicit]
    else:
        candidates = [workspace / DEDICATED_FILE, workspace / PYPROJECT_FILE]
    for path in candidates:
        if not os.path.lexists(path):
            continue
        if path.name == PYPROJECT_FILE:
            text = _read_text(path)
            # Most pyproject files never mention us: skip the TOML parse (and its import).
            if "echoes-lint" not in text:
                if explicit is not None:
                    return Config(source=path)
                continue
            tool = _load_toml(path, text).get("tool")
            if not isinstance(tool, dict) or "echoes-lint" not in tool:
                if explicit is not None:
                    return Config(source=path)
                continue
            return _parse(tool["echoes-lint"], f"[tool.echoes-lint] of {path}", path)
        return _parse(_load_toml(path), str(path), path)
    return Config()
