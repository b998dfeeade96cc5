"""Refresh the local index and state with the packaged engine, never the repository's runtime.

`resolve --check` and the post-merge, post-checkout and post-rewrite hooks hydrate after Git
rewrote pages. Spec 12.1 makes the project runtime (`.echoes-vault/echoes_vault.py`) the
execution source for the protocol commands an agent runs; a gate or a Git hook runs on whatever
a clone, pull or checkout just brought, so it never executes that file, whatever version it
claims. Instead:

* a runtime of this engine's version: hydrate here, in process, with the packaged engine;
* a newer runtime: skipped, with the command that runs it (trusting it is the user's decision);
* an older, unknown or missing runtime: skipped, as the runtime's own hand-over would refuse.

    python -m echoes_lint.merge.hydrate --workspace DIR    # what the hook scripts run
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path
from typing import Optional, Sequence, Tuple

from echoes_lint import engine

RUN_IT_YOURSELF = f"python3 {engine.RUNTIME_PATH} --workspace . hydrate"


def hydrate(top: Path) -> Tuple[bool, Optional[str], Optional[str]]:
    """(ran, error, why it was skipped) of `hydrate` in the workspace `top`."""
    health = engine.project_runtime(top)
    if health["newer"]:
        return False, None, (
            f"hydrate skipped: the project runtime is engine {health['engineVersion']}, newer "
            f"than this echoes-lint's {engine.ENGINE_VERSION}, and echoes-lint never runs code "
            f"from the repository; if you trust it, run `{RUN_IT_YOURSELF}`")
    if not health["current"]:
        reason = health["error"] or f"it is engine {health['engineVersion']}"
        return False, None, (f"hydrate skipped: {reason}; run `echoes-lint upgrade` (or `init`), "
                             "then hydrate")
    ctx = engine.Context(top, None, None, io.BytesIO())
    try:
        engine.cmd_hydrate(ctx, argparse.Namespace())
    except (engine.VaultError, OSError) as exc:
        return False, f"hydrate failed: {exc}", None
    return True, None, None


def main(argv: Sequence[str]) -> int:
    """Exit 0 when hydrated, 1 when skipped, 2 on failure; the reason goes to stderr."""
    parser = argparse.ArgumentParser(prog="python -m echoes_lint.merge.hydrate")
    parser.add_argument("--workspace", required=True)
    args = parser.parse_args(list(argv))
    ran, error, skipped = hydrate(Path(args.workspace))
    if error or skipped:
        sys.stderr.write(f"echoes-lint: {error or skipped}\n")
    return 0 if ran else 2 if error else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
