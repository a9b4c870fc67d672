"""Read all of ../shared/data/mixed_docs/example-docs (recursive) and print the report and timings.

Usage: python tests/readers/bench_readers_mixed_docs.py [NUM_WORKERS]
Prints a table of skipped files, the slowest formats, and one JSON line.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path

from ragloom.readers import SimpleDirectoryReader


def main() -> None:
    logging.basicConfig(level=logging.ERROR)  # pypdf warns a lot about fonts
    root = Path(__file__).resolve().parents[3] / "shared" / "data" / "mixed_docs" / "example-docs"
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else None
    r = SimpleDirectoryReader(root, recursive=True)
    t0 = time.perf_counter()
    docs = r.load_data(num_workers=workers)
    elapsed = time.perf_counter() - t0
    for s in r.report.skipped:
        print(f"skipped  {os.path.relpath(s.path, root):55s} {s.reason}")
    print(r.report.summary())
    print(
        json.dumps(
            {
                "folder": "mixed_docs/example-docs",
                "num_workers": workers or 1,
                "files_read": len(r.report.read),
                "files_skipped": len(r.report.skipped),
                "documents": len(docs),
                "characters": r.report.num_chars,
                "seconds": round(elapsed, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
