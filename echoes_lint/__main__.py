"""`python -m echoes_lint`: the same entry point as the `echoes-lint` console script."""

from echoes_lint.cli import entry

entry()
