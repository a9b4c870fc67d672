"""Run the ragloom CLI with a crash-test kill point injected (the engine's commit hook).

Usage: ``python tests/cli/kill_points.py '{"in_commit": N}' index ...`` — SIGKILLs this process inside
the N-th write transaction (after every write, before COMMIT); ``{"after_commit": N}`` right after
the N-th commit.  Production code has no kill points: this script installs one with
:func:`ragloom.ingestion.engine.set_commit_hook`.
"""

from __future__ import annotations

import json
import os
import signal
import sys


def main() -> None:
    spec = json.loads(sys.argv[1])
    counts = {"before_commit": 0, "after_commit": 0}
    limits = {"before_commit": int(spec.get("in_commit", 0)), "after_commit": int(spec.get("after_commit", 0))}

    def hook(event: str) -> None:
        counts[event] += 1
        if limits[event] and counts[event] == limits[event]:
            os.kill(os.getpid(), signal.SIGKILL)

    from ragloom.cli import main as cli_main
    from ragloom.ingestion.engine import set_commit_hook

    set_commit_hook(hook)
    cli_main(sys.argv[2:])


if __name__ == "__main__":
    main()
