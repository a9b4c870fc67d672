"""Hostile input: one long line of words, split by ragloom index's default splitter.

A single-line file of N MB of random words (no newline, no punctuation: the case that made the
clause level quadratic and the whole-document token offsets take 7.85 GB for 50 MB).  Each size runs
in its own process, which reports the splitter's wall time, CPU time and the process's peak RSS
(``ru_maxrss``, the text itself included).  Prints a table, then one JSON line.

    python benchmarks/hostile.py [--mb 5 50]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys

CHILD = r"""
import json, random, resource, sys, time
from ragloom.node_parser import SentenceSplitter
from ragloom.schema import Document
mb = float(sys.argv[1])
words = "harbour crane tide river bank stone quick brown fox lantern meadow".split()
rnd = random.Random(0)
n = int(mb * 1_000_000)
parts, size = [], 0
while size < n:
    w = rnd.choice(words)
    parts.append(w)
    size += len(w) + 1
text = " ".join(parts)[:n]
del parts
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
splitter = SentenceSplitter(chunk_size=254, chunk_overlap=31)
t0, c0 = time.perf_counter(), time.process_time()
nodes = splitter.get_nodes_from_documents([Document(text=text, id_="line")])
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"mb": mb, "chunks": len(nodes), "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                  "rss_before_mb": before // 1024,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
                  "covered": nodes[-1].end_char_idx == len(text)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, nargs="+", default=[5, 50])
    args = ap.parse_args()
    rows = []
    for mb in args.mb:
        out = subprocess.run([sys.executable, "-c", CHILD, str(mb)], capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{'MB':>6s} {'chunks':>7s} {'wall s':>7s} {'CPU s':>7s} {'MB/s':>6s} {'peak RSS MB':>11s}")
    for r in rows:
        print(f"{r['mb']:6.0f} {r['chunks']:7d} {r['wall_s']:7.2f} {r['cpu_s']:7.2f} {r['mb'] / r['wall_s']:6.2f} "
              f"{r['peak_rss_mb']:11d}")
    print(json.dumps({"benchmark": "hostile-long-line", "splitter": "SentenceSplitter(254, 31), bundled WordPiece",
                      "results": rows}))


if __name__ == "__main__":
    random.seed(0)
    main()
