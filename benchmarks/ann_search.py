"""Warm dense retrieval at 10k / 100k / 1M nodes: the ANN tier against exact search, one run.

For each size in ``--sizes`` a ``SQLiteVectorStore`` file is filled with synthetic nodes (short
texts, metadata ``{"g": i % 100, "h": i % 1000}``, 384-d vectors; reused from ``--work-dir`` when
present, ``h`` added to a file written before it existed), its ANN generation and metadata index are
built (``optimize(force=True)``, timed), and in one process:

* ``exact``: sqlite-vec's brute force (``ann=False``), p50/p99 over ``--exact-queries`` queries;
* ``ann``: the ANN tier (candidates, changed-row check, exact rerank), p50/p99 over ``--queries``;
* recall@10 of the ANN against exact search, unfiltered and with filters matching 0.1% (``h == 7``),
  1% (``g == 7``) and 50% (``g < 50``) of the rows, and the ANN reader's p50 for each (the two
  selective ones are answered exactly: the metadata index finds the matching rows, which are scored
  with the generation's float vectors);
* the resident memory (VmRSS) of a fresh process that opens the store and runs 50 ANN queries.

Vectors (``--vectors``):

* ``mixture`` (default): each vector is a random convex mix of two real chunk embeddings plus
  noise, normalised, so the data has the clustered geometry of real embeddings; queries are real
  query embeddings.  Real vectors come from ``--real`` (``.npy`` files of chunk and query vectors,
  e.g. the cache ``benchmarks/retrieval_quality.py`` writes) — the bundled model on SciFact and
  CMRC2018 here;
* ``random``: independent uniform unit vectors, the worst case for any ANN (no structure).

Prints a table and one JSON line; ``--results-dir`` also gets ``ann_search.txt`` / ``.json``.

    python benchmarks/ann_search.py [--sizes 10000,100000,1000000] [--vectors mixture|random]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np

HERE = Path(__file__).resolve().parent
DIM = 384


def real_vectors(pattern: str) -> Tuple[np.ndarray, np.ndarray]:
    """(chunk vectors, query vectors) from ``.npy`` files matching ``pattern`` (``-queries-`` in the
    name marks query vectors)."""
    chunks, queries = [], []
    for path in sorted(glob.glob(pattern)):
        arr = np.load(path)
        if arr.ndim == 2 and arr.shape[1] == DIM:
            (queries if "-queries-" in os.path.basename(path) else chunks).append(arr.astype(np.float32))
    if not chunks or not queries:
        raise SystemExit(f"no chunk and query vectors match {pattern!r}: run benchmarks/retrieval_quality.py first")
    return np.concatenate(chunks), np.concatenate(queries)


def normalise(m: np.ndarray) -> np.ndarray:
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


def synth(n: int, kind: str, real: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "random":
        return normalise(rng.standard_normal((n, DIM)).astype(np.float32))
    a = real[rng.integers(0, len(real), n)]
    b = real[rng.integers(0, len(real), n)]
    w = rng.uniform(0.0, 1.0, (n, 1)).astype(np.float32)
    noise = rng.standard_normal((n, DIM)).astype(np.float32) * 0.02
    return normalise(w * a + (1 - w) * b + noise)


def fill(path: Path, n: int, kind: str, real: np.ndarray) -> float:
    from ragloom.schema import TextNode
    from ragloom.storage.sqlite import SQLiteDatabase
    from ragloom.vector_stores.sqlite import SQLiteVectorStore

    t0 = time.perf_counter()
    db = SQLiteDatabase(path)
    store = SQLiteVectorStore(db, ann=False)
    step = 20_000
    for start in range(0, n, step):
        vecs = synth(min(step, n - start), kind, real, seed=start)
        store.add([TextNode(id_=f"n{start + i}", text=f"node {start + i}",
                            metadata={"g": (start + i) % 100, "h": (start + i) % 1000},
                            embedding=vecs[i].tolist()) for i in range(len(vecs))])
    db.close()
    return time.perf_counter() - t0


def add_h(path: Path) -> bool:
    """Give a file filled before ``h`` existed its ``h = i % 1000`` (i from the node id ``n<i>``), in
    the metadata column and the node JSON; whether it had to."""
    from ragloom.storage.sqlite import SQLiteDatabase

    db = SQLiteDatabase(path)
    try:
        if db.execute("SELECT json_extract(metadata, '$.h') FROM vs_default_nodes LIMIT 1")[0][0] is not None:
            return False
        with db.transaction():
            db.execute("UPDATE vs_default_nodes SET "
                       "metadata = jsonb_set(metadata, '$.h', CAST(substr(node_id, 2) AS INTEGER) % 1000), "
                       "node = json_set(node, '$.metadata.h', CAST(substr(node_id, 2) AS INTEGER) % 1000)")
        return True
    finally:
        db.close()


def pct(values: List[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def measure(path: Path, queries: np.ndarray, n_ann: int, n_exact: int) -> Dict[str, Any]:
    from ragloom.storage.sqlite import SQLiteDatabase
    from ragloom.vector_stores import MetadataFilter, MetadataFilters, VectorStoreQuery
    from ragloom.vector_stores.sqlite import SQLiteVectorStore

    db = SQLiteDatabase(path)
    ann = SQLiteVectorStore(db, memory_search=True)  # a resident reader, as ragloom serve
    exact = SQLiteVectorStore(db, ann=False)
    filters = {"none": None,
               "0.1%": MetadataFilters(filters=[MetadataFilter(key="h", value=7)]),
               "1%": MetadataFilters(filters=[MetadataFilter(key="g", value=7)]),
               "50%": MetadataFilters(filters=[MetadataFilter(key="g", value=50, operator="<")])}

    def run(store: Any, q: np.ndarray, flt: Any = None) -> Tuple[List[str], float]:
        t0 = time.perf_counter()
        res = store.query(VectorStoreQuery(query_embedding=q.tolist(), similarity_top_k=10, filters=flt))
        return list(res.ids or []), (time.perf_counter() - t0) * 1000

    for q in queries[:5]:
        run(ann, q)
    out: Dict[str, Any] = {}
    ms = [run(ann, q)[1] for q in queries[:n_ann]]
    out["ann_p50_ms"], out["ann_p99_ms"] = round(pct(ms, 50), 3), round(pct(ms, 99), 3)
    assert ann._ann._gen is not None, "the ANN generation was not used"
    ex = [run(exact, q)[1] for q in queries[:n_exact]]
    out["exact_p50_ms"], out["exact_p99_ms"] = round(pct(ex, 50), 3), round(pct(ex, 99), 3)
    for name, flt in filters.items():
        rec, fms = [], []
        for q in queries[:n_exact]:
            a, t = run(ann, q, flt)
            e, _ = run(exact, q, flt)
            fms.append(t)
            rec.append(len(set(a) & set(e)) / max(1, len(e)))
        out[f"recall@10_{name}"] = round(statistics.fmean(rec), 4)
        out[f"ann_p50_ms_{name}"] = round(pct(fms, 50), 3)
    db.close()
    return out


def rss_mb(path: Path, queries: np.ndarray) -> float:
    """VmRSS of a fresh process after opening the store and 50 ANN queries."""
    np.save(path.with_suffix(".q.npy"), queries[:50])
    code = textwrap.dedent(f"""
        import numpy as np
        from ragloom.storage.sqlite import SQLiteDatabase
        from ragloom.vector_stores import VectorStoreQuery
        from ragloom.vector_stores.sqlite import SQLiteVectorStore
        store = SQLiteVectorStore(SQLiteDatabase({str(path)!r}), memory_search=True)
        for q in np.load({str(path.with_suffix('.q.npy'))!r}):
            store.query(VectorStoreQuery(query_embedding=q.tolist(), similarity_top_k=10))
        assert store._ann._gen is not None
        print([l for l in open("/proc/self/status") if l.startswith("VmRSS")][0].split()[1])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return round(int(out.stdout.strip()) / 1024, 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--vectors", choices=["mixture", "random"], default="mixture")
    ap.add_argument("--real", default="/tmp/ragloom_retrieval_bench/*.npy",
                    help="glob of .npy chunk and query vectors (mixture)")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/ragloom_ann_bench"))
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--exact-queries", type=int, default=50)
    ap.add_argument("--results-dir", default=str(HERE / "results"), help="'-': write nothing")
    args = ap.parse_args()

    real, real_q = real_vectors(args.real) if args.vectors == "mixture" else (np.zeros((0, DIM)), None)
    rng = np.random.default_rng(123)
    queries = normalise(real_q[rng.permutation(len(real_q))]) if real_q is not None else \
        normalise(rng.standard_normal((max(args.queries, args.exact_queries), DIM)).astype(np.float32))
    args.work_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in [int(s) for s in args.sizes.split(",") if s.strip()]:
        path = args.work_dir / f"{args.vectors}-{n}.sqlite"
        fill_s = None
        if not path.exists():
            fill_s = round(fill(path, n, args.vectors, real), 1)
        elif add_h(path):
            print(f"{path}: added the metadata key h", file=sys.stderr)
        from ragloom.storage.sqlite import SQLiteDatabase
        from ragloom.vector_stores.sqlite import SQLiteVectorStore

        db = SQLiteDatabase(path)
        built = SQLiteVectorStore(db).optimize(force=True)
        db.close()
        row = {"nodes": n, "fill_s": fill_s, "build_s": built["seconds"], "nlist": built["nlist"],
               "metadata_index_s": (built.get("metadata_index") or {}).get("seconds"),
               **measure(path, queries, args.queries, args.exact_queries), "rss_mb": rss_mb(path, queries)}
        gen = Path(built["path"])
        row["ann_mb"] = round(sum(f.stat().st_size for f in gen.iterdir()) / 2**20, 1)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    lines = [f"$ python benchmarks/ann_search.py --sizes {args.sizes} --vectors {args.vectors}", "",
             f"dense top-10, {args.vectors} vectors ({DIM}-d), one client thread, 2 CPUs; "
             f"ANN p50/p99 over {args.queries} queries, exact and recall over {args.exact_queries}",
             "| nodes | exact p50 ms | ANN p50 ms | ANN p99 ms | recall@10 | 0.1% / 1% / 50% filter recall | "
             "ANN p50 ms 0.1% / 1% / 50% | build s | ANN files MB | RSS MB |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['nodes']:,} | {r['exact_p50_ms']:.1f} | {r['ann_p50_ms']:.2f} | {r['ann_p99_ms']:.2f} | "
                     f"{r['recall@10_none']:.3f} | {r['recall@10_0.1%']:.3f} / {r['recall@10_1%']:.3f} / "
                     f"{r['recall@10_50%']:.3f} | {r['ann_p50_ms_0.1%']:.1f} / {r['ann_p50_ms_1%']:.1f} / "
                     f"{r['ann_p50_ms_50%']:.1f} | {r['build_s']:.1f} | {r['ann_mb']:.0f} | {r['rss_mb']:.0f} |")
    result = {"benchmark": "ann_search", "vectors": args.vectors, "dim": DIM, "rows": rows}
    text = "\n".join(lines)
    print(text)
    print(json.dumps(result))
    if args.results_dir != "-":
        out = Path(args.results_dir)
        (out / f"ann_search_{args.vectors}.txt").write_text(text + "\n")
        (out / f"ann_search_{args.vectors}.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
