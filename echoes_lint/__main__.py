"""`python -m echoes_lint`: the same entry point as the `echoes-lint` console script."""

import sys

from echoes_lint.cli import main

sys.exit(main())
