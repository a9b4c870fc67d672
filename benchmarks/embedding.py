"""Ingest-time embedding speed: ragloom vs the raw ``SentenceTransformer.encode`` vs LlamaIndex.

Chunks: ``SentenceSplitter`` nodes (chunk_size 254 tokens of the model's own tokenizer,
overlap 32 — what ``ragloom index`` uses for the default model) of the Markdown files of
``shared/data/markdown_fastapi`` (sorted paths, English and Chinese trees) and of the
first UTF-8 novel in ``shared/data/zh_classics``, until ``--chunks`` chunks; each is
embedded as ``node.get_content(MetadataMode.EMBED)``.

Same model folder (the bundled all-MiniLM-L6-v2), CPU, same texts:

* ``raw``: ``SentenceTransformer.encode(texts, batch_size=B, normalize_embeddings=True)``
  on ragloom's own loaded model object (same weights, same threads);
* ``ragloom``: ``HuggingFaceEmbedding(embed_batch_size=B).get_text_embedding_batch_array(texts)``
  (length sorting, truncation counting, float32 array out) — the call ingestion makes;
* ``llamaindex``: ``llama_index.embeddings.huggingface.HuggingFaceEmbedding(model_name=<folder>)``
  with its default ``embed_batch_size`` (10), ``get_text_embedding_batch(texts)``
  (needs the benchmark-only peer ``pip install llama-index-embeddings-huggingface``; skipped if absent).

raw and ragloom alternate for ``--runs`` rounds (median reported; other jobs share this
2-core box, so wall time is noisy; ``time.process_time`` is reported too).  Prints a
table, then one JSON line.

    python benchmarks/embedding.py [--chunks 2000] [--runs 3] [--batch 32] [--no-llamaindex]
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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--no-llamaindex", action="store_true")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()

    import numpy as np

    from ragloom.embeddings import HuggingFaceEmbedding
    from ragloom.embeddings.huggingface import bundled_model_path

    emb = HuggingFaceEmbedding(embed_batch_size=args.batch, device=args.device)
    texts = load_chunks(args.chunks, emb.get_tokenizer())
    st = emb.model
    chars = sum(len(t) for t in texts)
    print(f"{len(texts)} chunks, {chars / len(texts):.0f} chars each on average; batch {args.batch}; "
          f"torch threads {__import__('torch').get_num_threads()}", file=sys.stderr)

    # warm-up (first-call costs: allocator, tokenizer caches)
    st.encode(texts[:64], batch_size=args.batch, normalize_embeddings=True, show_progress_bar=False)
    emb.get_text_embedding_batch_array(texts[:64])

    rows: dict[str, list[tuple[float, float]]] = {"raw": [], "ragloom": []}
    ref = mine = None
    for r in range(args.runs):
        ref, w, c = timed(lambda: st.encode(texts, batch_size=args.batch, normalize_embeddings=True,
                                            convert_to_numpy=True, show_progress_bar=False))
        rows["raw"].append((w, c))
        mine, w, c = timed(lambda: emb.get_text_embedding_batch_array(texts))
        rows["ragloom"].append((w, c))
        print(f"round {r + 1}: raw {rows['raw'][-1][0]:.1f}s  ragloom {rows['ragloom'][-1][0]:.1f}s", file=sys.stderr)
    max_diff = float(np.abs(np.asarray(ref) - mine).max())

    li_note = ""
    if not args.no_llamaindex:
        try:
            from llama_index.embeddings.huggingface import HuggingFaceEmbedding as LIHF

            li = LIHF(model_name=str(bundled_model_path()), device=args.device)
            li.get_text_embedding_batch(texts[:64])
            rows["llamaindex"] = []
            _, w, c = timed(lambda: li.get_text_embedding_batch(texts))
            rows["llamaindex"].append((w, c))
            li_note = f"default embed_batch_size={li.embed_batch_size}"
        except Exception as exc:  # pragma: no cover - optional peer
            li_note = f"skipped: {type(exc).__name__}: {exc}"

    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in rows.items() if v}
    raw_w = med["raw"][0]
    print(f"\n{'method':<12}{'wall s':>9}{'cpu s':>9}{'texts/s':>10}{'vs raw':>8}")
    for k, (w, c) in med.items():
        print(f"{k:<12}{w:>9.2f}{c:>9.2f}{len(texts) / w:>10.1f}{w / raw_w:>8.3f}")
    print(f"max |ragloom - raw| = {max_diff:.2e}; llamaindex: {li_note or 'n/a'}")
    result = {
        "benchmark": "embedding", "chunks": len(texts), "avg_chars": round(chars / len(texts)), "batch": args.batch,
        "runs": args.runs, "device": args.device,
        **{f"{k}_s": round(w, 3) for k, (w, _) in med.items()},
        **{f"{k}_cpu_s": round(c, 3) for k, (_, c) in med.items()},
        "ragloom_vs_raw": round(med["ragloom"][0] / raw_w, 3),
        "llamaindex_vs_ragloom": round(med["llamaindex"][0] / med["ragloom"][0], 3) if "llamaindex" in med else None,
        "max_abs_diff": max_diff, "llamaindex": li_note,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
