"""Run the ragloom CLI with a crash-test kill point injected (the engine's commit hook).

Usage: ``python tests/cli/kill_points.py '{"in_commit": N}' index ...`` — SIGKILLs this process inside
the N-th write transaction (after every write, before COMMIT); ``{"after_commit": N}`` right after
the N-th commit.  Production code has no kill points: this script installs one with
:func:`ragloom.ingestion.engine.set_commit_hook`.

``{"ann": STAGE}`` kills it inside the first ANN build (:func:`ragloom.vector_stores.ann.build`),
by wrapping what the build calls at that stage:

- ``"train"``: the vectors are read and the change log exists; nothing is on disk yet;
- ``"write"``: half of the generation's files are written in the build's temporary folder;
- ``"rename"``: the generation is in place, the change log it covers not yet pruned;
- ``"prune"``: the log is pruned, older generations are not yet removed.
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
    if spec.get("ann"):
        _kill_in_ann_build(spec["ann"])
    cli_main(sys.argv[2:])


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _kill_in_ann_build(stage: str) -> None:
    import numpy as np

    from ragloom.vector_stores import ann

    if stage == "train":
        real_normalise = ann.normalise_rows
        ann.normalise_rows = lambda m: (_die(), real_normalise(m))[1]
    elif stage == "write":
        real_save = np.save

        def save(path, arr, *a, **k):  # index.faiss is written; vectors.npy half way
            real_save(path, arr, *a, **k)
            with open(path, "r+b") as f:
                f.truncate(os.path.getsize(path) // 2)
            _die()

        ann.np.save = save
    elif stage in ("rename", "prune"):
        real_rename, real_remove_old = ann.os.rename, ann._remove_old

        class _Os:
            def __getattr__(self, name):
                return getattr(os, name)

            @staticmethod
            def rename(src, dst):
                real_rename(src, dst)
                if stage == "rename":
                    _die()

        ann.os = _Os()
        if stage == "prune":
            ann._remove_old = lambda *a: (_die(), real_remove_old(*a))
    else:
        raise SystemExit(f"unknown ANN kill stage {stage!r}")


if __name__ == "__main__":
    main()
