"""Hostile input: one long line of words, split by ragloom index's default splitter.

A single-line file of N MB of random words (no newline, no punctuation: the case that made the
clause level quadratic and the whole-document token offsets take 7.85 GB for 50 MB).  Each size runs
in its own process, which reports the splitter's wall time, CPU time and the process's peak RSS
(``ru_maxrss``, the text itself included).  Prints a table, then one JSON line.

``--index SECONDS`` runs ``ragloom index`` end to end (read, split, embed with the default model,
commit) on a file holding the largest ``--mb`` line, in its own process, for at most SECONDS: it
reports when the first progress report came, when the first chunks were embedded and committed, the
embedding rate, the projected total time, and the process's peak RSS (``VmHWM``) over the run.

    python benchmarks/hostile.py [--mb 5 50] [--index 240]
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

INDEX_CHILD = r"""
import json, os, random, sys, tempfile, time
from pathlib import Path
from ragloom.ingestion.paths import index_paths
mb = float(sys.argv[1])
words = "harbour crane tide river bank stone quick brown fox lantern meadow".split()
rnd = random.Random(0)
tmp = Path(tempfile.mkdtemp())
with open(tmp / "line.txt", "w") as f:
    size = 0
    while size < mb * 1_000_000:
        w = " ".join(rnd.choice(words) for _ in range(1000)) + " "
        f.write(w)
        size += len(w)
t0 = time.perf_counter()
last = [0.0, -1]
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
def report(p):
    now = time.perf_counter() - t0
    if now - last[0] >= 1 or p.batches or p.files_done != last[1]:
        last[0], last[1] = now, p.files_done
        print(json.dumps({"t": round(now, 2), "files_done": p.files_done, "embedded": p.nodes_embedded,
                          "written": p.nodes_written, "batches": p.batches, "peak_rss_mb": hwm()}), flush=True)
print(json.dumps({"t": 0, "start": True, "peak_rss_mb": hwm()}), flush=True)
s = index_paths([tmp / "line.txt"], tmp / "idx", show_progress=False, on_progress=report)
print(json.dumps({"t": round(time.perf_counter() - t0, 2), "done": True, "nodes": s.nodes_total,
                  "peak_rss_mb": hwm()}), flush=True)
"""


def _index_run(mb: float, seconds: float) -> dict:
    """``ragloom index`` on an ``mb`` MB line for at most ``seconds``: the progress timeline's summary."""
    proc = subprocess.Popen([sys.executable, "-c", INDEX_CHILD, str(mb)], stdout=subprocess.PIPE, text=True)
    events = []
    try:
        out, _ = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    for line in out.splitlines():
        if line.startswith("{"):
            events.append(json.loads(line))
    first = next((e["t"] for e in events if e.get("files_done")), None)
    embedded = [e for e in events if e.get("embedded")]
    committed = next((e["t"] for e in events if e.get("written")), None)
    last = embedded[-1] if embedded else None
    rate = None
    if last and len(embedded) > 1:
        rate = (last["embedded"] - embedded[0]["embedded"]) / max(last["t"] - embedded[0]["t"], 1e-9)
    done = next((e for e in events if e.get("done")), None)
    return {"mb": mb, "budget_s": seconds, "first_progress_s": first,
            "first_embedded_s": embedded[0]["t"] if embedded else None, "first_commit_s": committed,
            "embedded_in_budget": last["embedded"] if last else 0, "nodes_per_s": round(rate, 1) if rate else None,
            "finished_s": done["t"] if done else None,
            "peak_rss_mb": max(e.get("peak_rss_mb") or 0 for e in events) if events else None}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, nargs="+", default=[5, 50])
    ap.add_argument("--index", type=float, default=None, metavar="SECONDS",
                    help="also run ragloom index end to end on the largest line, for at most SECONDS")
    args = ap.parse_args()
    rows = []
    for mb in args.mb:
        out = subprocess.run([sys.executable, "-c", CHILD, str(mb)], capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{'MB':>6s} {'chunks':>7s} {'wall s':>7s} {'CPU s':>7s} {'MB/s':>6s} {'peak RSS MB':>11s}")
    for r in rows:
        print(f"{r['mb']:6.0f} {r['chunks']:7d} {r['wall_s']:7.2f} {r['cpu_s']:7.2f} {r['mb'] / r['wall_s']:6.2f} "
              f"{r['peak_rss_mb']:11d}")
    index = None
    if args.index:
        index = _index_run(max(args.mb), args.index)
        print(f"\nragloom index on the {index['mb']:.0f} MB line (at most {args.index:.0f} s): first progress report "
              f"{index['first_progress_s']} s, first chunks embedded {index['first_embedded_s']} s, first commit "
              f"{index['first_commit_s']} s, {index['embedded_in_budget']} chunks embedded at "
              f"{index['nodes_per_s']} chunks/s, finished {index['finished_s']} s, peak RSS {index['peak_rss_mb']} MB")
    print(json.dumps({"benchmark": "hostile-long-line", "splitter": "SentenceSplitter(254, 31), bundled WordPiece",
                      "results": rows, "index": index}))


if __name__ == "__main__":
    random.seed(0)
    main()
