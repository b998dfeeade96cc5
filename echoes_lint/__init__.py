"""echoes-lint: a Protocol 1.0.0 EchoesVault engine, linter, hooks and merge tools."""

from echoes_lint.engine import ENGINE_VERSION, PROTOCOL_VERSION

__version__ = "0.2.0"
__all__ = ["ENGINE_VERSION", "PROTOCOL_VERSION", "__version__"]
