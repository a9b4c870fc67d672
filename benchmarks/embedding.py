"""Ingest-time embedding speed and fidelity: raw sentence-transformers, ragloom's torch and ONNX backends
(fp32 and int8), and LlamaIndex.

Chunks: ``SentenceSplitter`` nodes (chunk_size 254 tokens of the model's own tokenizer,
overlap 32 — what ``ragloom index`` uses for the default model) of the Markdown files of
``shared/data/markdown_fastapi`` (sorted paths, English and Chinese trees) and of the
first UTF-8 novel in ``shared/data/zh_classics``, until ``--chunks`` chunks (default 2000); each is
embedded as ``node.get_content(MetadataMode.EMBED)``.

Same model folder (the bundled all-MiniLM-L6-v2), CPU, same texts, batch ``--batch`` (32):

* ``raw``: ``SentenceTransformer.encode(texts, batch_size=B, normalize_embeddings=True)``
  on ragloom's own loaded model object (torch fp32; same weights, same threads) — the reference;
* ``torch``: ``HuggingFaceEmbedding(backend="torch").get_text_embedding_batch_array(texts)``
  (length sorting, truncation counting on a second thread, float32 array out) — the call
  ingestion makes, on the sentence-transformers path;
* ``onnx``: the same call with ``HuggingFaceEmbedding(backend="onnx")`` (ONNX Runtime, fp32 graph,
  what ``backend="auto"`` picks on the CPU);
* ``onnx-int8``: ``HuggingFaceEmbedding(backend="onnx", quantize="int8")`` (dynamic int8 graph);
* ``llamaindex``: ``llama_index.embeddings.huggingface.HuggingFaceEmbedding(model_name=<folder>)``
  with its default ``embed_batch_size`` (10), ``get_text_embedding_batch(texts)``, one run
  (needs the benchmark-only peer ``pip install llama-index-embeddings-huggingface``; skipped if
  absent or with ``--no-llamaindex``).

Every model embeds 64 chunks once before timing (this also exports the ONNX graphs into the user
cache, ``$RAGLOOM_CACHE_DIR`` or ``~/.cache/ragloom``, if they are not there yet: that one-off cost
is reported apart and never counted).  raw, torch, onnx and onnx-int8 then alternate for ``--runs``
rounds, the order rotated each round; the median of each is reported.  Other jobs share this
2-core box, so wall time is noisy: ``time.process_time`` (CPU-seconds of the whole process, every
thread included) is the figure compared — texts per CPU-second, and CPU-seconds relative to raw.

Fidelity, against raw's vectors: for onnx and onnx-int8 the minimum and mean cosine per chunk
and the maximum absolute element difference; and top-10 overlap: 200 chunks (evenly spaced) are
used as queries against all the chunks (the query chunk itself left out), and the mean share of
the 10 nearest neighbours by raw's vectors that a method's own vectors also put in its top 10.

Prints a table, then one JSON line (``onnx_vs_raw_cpu``, ``int8_vs_raw_cpu``, ``int8_min_cos``,
``int8_mean_cos``, ``int8_top10_overlap``, ``onnx_max_abs_diff`` …).

    python benchmarks/embedding.py [--chunks 2000] [--runs 3] [--batch 32] [--queries 200] [--no-llamaindex]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("RAGLOOM_SHARED", HERE.parent.parent / "shared")) / "data"
if not DATA.exists():
    DATA = Path("/work/shared/data")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TOP_K = 10


def load_chunks(n: int, tokenizer) -> list[str]:
    from ragloom.node_parser import SentenceSplitter
    from ragloom.schema import Document, MetadataMode

    splitter = SentenceSplitter(chunk_size=254, chunk_overlap=32, tokenizer=tokenizer)
    texts: list[str] = []
    md = sorted(glob.glob(str(DATA / "markdown_fastapi" / "**" / "*.md"), recursive=True))
    zh = sorted(glob.glob(str(DATA / "zh_classics" / "*.utf8.txt")))[:1]
    for p in md + zh:
        text = Path(p).read_text(encoding="utf-8")
        for node in splitter([Document(text=text, metadata={"file_path": p})]):
            texts.append(node.get_content(MetadataMode.EMBED))
            if len(texts) >= n:
                return texts
    return texts


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def cosines(a, b):
    """Row-wise cosine similarity of two ``(n, d)`` arrays."""
    import numpy as np

    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    return (a * b).sum(axis=1) / np.maximum(na * nb, 1e-12)


def top_k_sets(vecs, queries, k: int) -> list[set[int]]:
    """For each row index in ``queries``: the ``k`` nearest other rows of ``vecs`` by dot product
    (the vectors are unit length, so this is cosine)."""
    import numpy as np

    v = np.asarray(vecs, dtype=np.float32)
    sims = v[queries] @ v.T
    sims[np.arange(len(queries)), queries] = -np.inf  # not the query chunk itself
    k = min(k, v.shape[0] - 1)
    out = []
    for row in sims:
        idx = np.argpartition(-row, k - 1)[:k] if k < row.shape[0] else np.arange(row.shape[0])
        out.append({int(i) for i in idx})
    return out


def top_k_overlap(ref_sets: list[set[int]], vecs, queries, k: int) -> float:
    """Mean share of each reference top-``k`` set that ``vecs``' own top-``k`` set also holds."""
    got = top_k_sets(vecs, queries, k)
    return statistics.fmean(len(a & b) / max(1, len(a)) for a, b in zip(ref_sets, got, strict=True))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--queries", type=int, default=200, help="chunks used as queries for the top-10 overlap")
    ap.add_argument("--no-llamaindex", action="store_true")
    ap.add_argument("--device", default="cpu", help="torch device of raw/torch (the ONNX rows need 'cpu')")
    args = ap.parse_args()
    if args.chunks < 2 or args.runs < 1 or args.batch < 1 or args.queries < 1:
        ap.error("--chunks >= 2, --runs >= 1, --batch >= 1, --queries >= 1")

    import numpy as np

    from ragloom.embeddings import HuggingFaceEmbedding
    from ragloom.embeddings.huggingface import bundled_model_path
    from ragloom.embeddings.onnx import cache_root

    emb_torch = HuggingFaceEmbedding(embed_batch_size=args.batch, device=args.device, backend="torch")
    texts = load_chunks(args.chunks, emb_torch.get_tokenizer())
    st = emb_torch.model
    chars = sum(len(t) for t in texts)
    torch_threads = __import__("torch").get_num_threads()

    methods = {
        "raw": lambda: np.asarray(st.encode(texts, batch_size=args.batch, normalize_embeddings=True,
                                            convert_to_numpy=True, show_progress_bar=False), dtype=np.float32),
        "torch": lambda: emb_torch.get_text_embedding_batch_array(texts),
    }
    onnx_note = ""
    embs = {"torch": emb_torch}
    if args.device == "cpu":
        embs["onnx"] = HuggingFaceEmbedding(embed_batch_size=args.batch, backend="onnx")
        embs["onnx-int8"] = HuggingFaceEmbedding(embed_batch_size=args.batch, backend="onnx", quantize="int8")
        methods["onnx"] = lambda: embs["onnx"].get_text_embedding_batch_array(texts)
        methods["onnx-int8"] = lambda: embs["onnx-int8"].get_text_embedding_batch_array(texts)
    else:
        onnx_note = f"onnx rows skipped: ONNX Runtime runs on the CPU, --device {args.device}"
    print(f"{len(texts)} chunks, {chars / len(texts):.0f} chars each on average; batch {args.batch}; "
          f"torch threads {torch_threads}; ONNX Runtime: one text per run, a single-threaded run per core at once; "
          f"{os.cpu_count()} CPUs; ONNX cache {cache_root()}", file=sys.stderr)

    # warm-up (first-call costs: allocator, tokenizer caches, ONNX export/session creation) — never timed
    first_use: dict[str, float] = {}
    st.encode(texts[:64], batch_size=args.batch, normalize_embeddings=True, show_progress_bar=False)
    for name, emb in embs.items():
        _, w, _ = timed(lambda emb=emb: emb.get_text_embedding_batch_array(texts[:64]))
        first_use[name] = round(w, 2)
    print(f"first use, 64 chunks (ONNX: export if not cached + session), wall s: {first_use}", file=sys.stderr)

    rows: dict[str, list[tuple[float, float]]] = {k: [] for k in methods}
    vecs: dict[str, np.ndarray] = {}
    names = list(methods)
    for r in range(args.runs):
        order = names[r % len(names):] + names[:r % len(names)]  # rotate: no method always goes first
        for name in order:
            vecs[name], w, c = timed(methods[name])
            rows[name].append((w, c))
        print(f"round {r + 1}: " + "  ".join(f"{k} {rows[k][-1][0]:.1f}s/{rows[k][-1][1]:.1f}cpu" for k in names),
              file=sys.stderr)

    li_note = ""
    if not args.no_llamaindex:
        try:
            from llama_index.embeddings.huggingface import HuggingFaceEmbedding as LIHF

            li = LIHF(model_name=str(bundled_model_path()), device=args.device)
            li.get_text_embedding_batch(texts[:64])
            _, w, c = timed(lambda: li.get_text_embedding_batch(texts))
            rows["llamaindex"] = [(w, c)]
            li_note = f"default embed_batch_size={li.embed_batch_size}, one run"
        except Exception as exc:  # pragma: no cover - optional peer
            li_note = f"skipped: {type(exc).__name__}: {exc}"
    else:
        li_note = "skipped: --no-llamaindex"

    # fidelity against raw
    ref = vecs["raw"]
    n_q = min(args.queries, len(texts))
    queries = np.unique(np.linspace(0, len(texts) - 1, n_q).round().astype(int))
    ref_sets = top_k_sets(ref, queries, TOP_K)
    fid: dict[str, dict[str, float]] = {}
    for name in names[1:]:
        cos = cosines(vecs[name], ref)
        fid[name] = {
            "min_cos": float(cos.min()),
            "mean_cos": float(cos.mean()),
            "max_abs_diff": float(np.abs(vecs[name] - ref).max()),
            "top10_overlap": top_k_overlap(ref_sets, vecs[name], queries, TOP_K),
        }

    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in rows.items() if v}
    raw_w, raw_c = med["raw"]
    n = len(texts)
    print(f"\n{len(texts)} chunks, median of {args.runs} alternating rounds (llamaindex: one run); "
          f"cpu = process CPU-seconds, all threads")
    print(f"{'method':<12}{'wall s':>9}{'cpu s':>9}{'texts/cpu-s':>13}{'cpu/raw':>9}{'wall/raw':>10}"
          f"{'min cos':>11}{'mean cos':>11}{'max|d|':>10}{'top10':>8}")
    for k, (w, c) in med.items():
        f = fid.get(k)
        tail = (f"{f['min_cos']:>11.6f}{f['mean_cos']:>11.6f}{f['max_abs_diff']:>10.2e}{f['top10_overlap']:>8.3f}"
                if f else f"{'(ref)' if k == 'raw' else '':>11}")
        print(f"{k:<12}{w:>9.2f}{c:>9.2f}{n / max(c, 1e-9):>13.1f}{c / raw_c:>9.3f}{w / raw_w:>10.3f}{tail}")
    print(f"vs raw: cosine per chunk, max |element difference|, top-{TOP_K} overlap over {len(queries)} chunk "
          f"queries against all {n} chunks; llamaindex: {li_note}" + (f"; {onnx_note}" if onnx_note else ""))

    def ratio(k: str, col: int):
        return round(med[k][col] / med["raw"][col], 3) if k in med else None

    def fget(k: str, key: str, nd: int = 6):
        return round(fid[k][key], nd) if k in fid else None

    result = {
        "benchmark": "embedding", "chunks": n, "avg_chars": round(chars / n), "batch": args.batch,
        "runs": args.runs, "device": args.device, "torch_threads": torch_threads, "cpus": os.cpu_count(),
        "queries_top10": int(len(queries)),
        **{f"{k.replace('-', '_')}_s": round(w, 3) for k, (w, _) in med.items()},
        **{f"{k.replace('-', '_')}_cpu_s": round(c, 3) for k, (_, c) in med.items()},
        **{f"{k.replace('-', '_')}_texts_per_cpu_s": round(n / max(c, 1e-9), 1) for k, (_, c) in med.items()},
        "torch_vs_raw_cpu": ratio("torch", 1), "onnx_vs_raw_cpu": ratio("onnx", 1),
        "int8_vs_raw_cpu": ratio("onnx-int8", 1),
        "torch_vs_raw_wall": ratio("torch", 0), "onnx_vs_raw_wall": ratio("onnx", 0),
        "int8_vs_raw_wall": ratio("onnx-int8", 0),
        "int8_vs_onnx_cpu": (round(med["onnx-int8"][1] / med["onnx"][1], 3)
                             if "onnx" in med and "onnx-int8" in med else None),
        "torch_max_abs_diff": fget("torch", "max_abs_diff", 9),
        "onnx_min_cos": fget("onnx", "min_cos"), "onnx_mean_cos": fget("onnx", "mean_cos"),
        "onnx_max_abs_diff": fget("onnx", "max_abs_diff", 9), "onnx_top10_overlap": fget("onnx", "top10_overlap", 4),
        "int8_min_cos": fget("onnx-int8", "min_cos"), "int8_mean_cos": fget("onnx-int8", "mean_cos"),
        "int8_max_abs_diff": fget("onnx-int8", "max_abs_diff", 9),
        "int8_top10_overlap": fget("onnx-int8", "top10_overlap", 4),
        "llamaindex_vs_raw_cpu": ratio("llamaindex", 1),
        "first_use_wall_s": first_use, "llamaindex": li_note, "onnx_note": onnx_note or None,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
