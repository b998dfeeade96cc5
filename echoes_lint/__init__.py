"""echoes-lint: a Protocol 1.0.0 EchoesVault engine, linter, hooks and merge tools."""

from __future__ import annotations

# Not `typing.TYPE_CHECKING`: loading `typing` would delay the hooks' git (mypy knows the name).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from echoes_lint.engine import ENGINE_VERSION, PROTOCOL_VERSION

__version__ = "0.2.0"
__all__ = ["ENGINE_VERSION", "PROTOCOL_VERSION", "__version__"]


def __getattr__(name: str) -> Any:
    # The engine loads when first used, not with the package: a pre-commit hook starts git
    # before it loads the engine.
    if name in ("ENGINE_VERSION", "PROTOCOL_VERSION"):
        from echoes_lint import engine

        return getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
