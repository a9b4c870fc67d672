"""Retrieval quality of ragloom's dense, BM25 and hybrid search, and candidate fusions.

Datasets (read in place from ``shared/data``; BEIR layout, see its README):

* ``scifact``   — ``ir/scifact``, title + text indexed, the 300 test queries;
* ``cmrc2018``  — ``ir/cmrc2018``, ``text`` only (titles repeat the passage start), 3,219 Chinese questions;
* ``cranfield`` — ``ir/cranfield``, title + text, 225 queries, graded judgements (gain = grade, linear as in
  BEIR/pytrec_eval);
* ``fastapi``   — 10 hand-written questions over the 40 ``docs/en/docs/tutorial/*.md`` pages of
  ``markdown_fastapi`` (``--fastapi-scope tutorial``, the default) or over all 155 pages of its English docs,
  ``docs/en/docs/**/*.md`` (``--fastapi-scope all``: the same questions among many more near-miss pages), each
  with one unambiguous answer page; top-1 page accuracy and MRR of the node ranking, and nDCG@10 of the page
  ranking (one relevant page, a page scored by its best node).  A node's page is its path below
  ``docs/en/docs`` (``tutorial/path-params.md``).

Pipeline, the way a ragloom user builds an index: ``Document`` → the node parser of
``ragloom.settings.default_node_parser(embed, chunk_size, chunk_overlap, parser=--parser)`` (chunk_size =
the model's text-token limit, 254 for the bundled all-MiniLM-L6-v2, overlap 32; many SciFact and CMRC docs are
longer than 254 tokens) → embedded with the bundled ``HuggingFaceEmbedding()`` → ``VectorStoreIndex`` over an
in-memory ``SQLiteVectorStore``.  The FastAPI pages go through ``SimpleDirectoryReader`` and
``default_node_parser(embed, parser=--parser)`` (the model's defaults: 254 tokens, overlap 31 — what
``ragloom index`` uses).  Retrieval is node-level; a corpus document's score is that of its best node (first
occurrence in the node ranking).

``--parser sentence`` (default) splits every document with the ``SentenceSplitter``; ``--parser auto`` routes
by file type (``SimpleFileNodeParser``: Markdown, HTML, JSON, code parsers; sentence splitting for the rest),
as ``ragloom index --parser auto`` does.  The BEIR corpora carry no file name, so ``auto`` gives them the very
same sentence-split nodes (the run checks it: the node texts are compared with ``sentence``'s); only the
FastAPI Markdown pages are parsed differently.

Methods (all from ``SQLiteVectorStore.query``; the candidates fuse the store's own dense and BM25 node
rankings, taken with the same pools as ``hybrid`` uses for ``similarity_top_k=100``, i.e. 400 nodes each):

* ``dense``  — ``mode="default"`` (cosine via sqlite-vec);
* ``bm25``   — ``mode="text_search"`` (FTS5 bm25 over ``ragloom.analysis`` tokens);
* ``hybrid`` — hybrid search as ``as_retriever()`` ships it: ``mode="hybrid"`` (distribution-based
  score fusion, dense weight alpha 0.5) with alpha 0 for mostly-CJK queries, since the bundled
  model is English-only (``VectorIndexRetriever`` picks alpha per query the same way);
* ``rrf_ws=W`` — weighted RRF, ``1/(60+r_dense) + W/(60+r_bm25)``;
* ``rsf_a=A`` — relative-score fusion (LlamaIndex's ``relative_score``): each list min-max normalised over its
  candidates, ``A * dense + (1-A) * bm25`` (``A`` is LlamaIndex's ``alpha``: 1 = dense only), absent = 0;
* ``dbsf_a=A`` — distribution-based score fusion (``dist_based_score``: each list normalised with
  mean ± 3·std instead of min/max);
* ``la_*`` — language-aware: a query that is mostly CJK (CJK characters are more than half of its letters and
  digits) gets the BM25-heavy setting, other queries the other one, because the bundled model is English-only.

Metrics (BEIR's, as computed by pytrec_eval / trec_eval ``ndcg_cut.10`` and ``recall.100``), per query, then
averaged over the judged queries that have at least one relevant document:

* ``ndcg@10``    — DCG of the top 10 documents (gain = judgement grade, discount ``log2(rank + 1)``) divided by
  the DCG of the ideal ordering of the judged documents;
* ``recall@100`` — relevant (grade > 0) documents among the top 100 *documents* (not nodes), divided by all
  relevant documents of the query.

Embeddings are cached as ``.npy`` under ``--cache-dir`` (default ``/tmp/ragloom_retrieval_bench``), keyed by
dataset, model identity and a hash of the texts (not the device), so a rerun embeds nothing; ``--embed-cache
FILE`` also keeps every chunk vector in a ragloom ``EmbeddingCache`` (keyed by text, so the other parser, the
other FastAPI scope or a ``ragloom index`` run seeded with that file embeds only new chunks); ``--device cuda``
embeds through ragloom on a GPU (fp16, cosine >= 0.9998 to the CPU vectors).  OPENBLAS_CORETYPE is set on these
machines; it does not matter here (sqlite-vec computes the cosine distances, numpy only does bookkeeping).

    python benchmarks/retrieval_quality.py [--datasets scifact,cmrc2018,cranfield,fastapi]
        [--parser sentence|auto] [--fastapi-scope tutorial|all] [--max-queries N]
        [--backend auto|onnx|torch] [--quantize none|int8]
        [--json-out benchmarks/results/retrieval_quality.json]

Prints one table per dataset beside the published reference figures, a summary against the targets of
issue 6, then one JSON line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("RAGLOOM_SHARED", HERE.parent.parent / "shared")) / "data"
if not DATA.exists():
    DATA = Path("/work/shared/data")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

RRF_K = 60
TOP_K = 100  # documents ranked per query (recall@100); the hybrid pools are max(4*k, 50) = 400 nodes
POOL = max(4 * TOP_K, 50)

#: published / previously measured figures, per method and metric (sources: shared/data/README.md;
#: SciFact BM25 recall@100 from Anserini's BEIR v1.0.0 regression pages, ``scifact.flat`` / ``scifact.multifield``).
#: They are printed beside ours and copied into the JSON line.
REFERENCES: dict[str, dict[str, dict[str, str]]] = {
    "scifact": {
        "bm25": {
            "ndcg@10": "0.6789 Anserini flat / 0.6647 multifield; bm25s 0.676",
            "recall@100": "0.9253 Anserini flat / 0.9076 multifield",
        },
        "dense": {"ndcg@10": "0.6451 (all-MiniLM-L6-v2, MTEB paper)"},
    },
    "cmrc2018": {
        "bm25": {
            "ndcg@10": "0.974 (bm25s, CJK unigram+bigram); 0.159 with a \\w\\w+ tokenizer"
        }
    },
    "cranfield": {},
    "fastapi": {},
}

#: (question, answer page) — each page is the one tutorial page that answers the question (path below
#: ``docs/en/docs``).
FASTAPI_QUESTIONS = [
    ("How do I declare a path parameter?", "tutorial/path-params.md"),
    (
        "How do I add CORS middleware so a frontend on another origin can call my API?",
        "tutorial/cors.md",
    ),
    ("How do I run a task after returning a response?", "tutorial/background-tasks.md"),
    ("How do I upload a file?", "tutorial/request-files.md"),
    (
        "How do I return a 404 error to the client with HTTPException?",
        "tutorial/handling-errors.md",
    ),
    ("How do I write tests for my app with TestClient?", "tutorial/testing.md"),
    (
        "How do I split a big application into several files with APIRouter?",
        "tutorial/bigger-applications.md",
    ),
    ("How do I convert a Pydantic model into a JSON-compatible dict?", "tutorial/encoder.md"),
    ("How do I connect to a SQL database with SQLModel?", "tutorial/sql-databases.md"),
    ("How do I partially update an item with PATCH?", "tutorial/body-updates.md"),
]
FASTAPI_DOCS = ("markdown_fastapi", "docs", "en", "docs")

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002ffff"
_CJK_CHAR_RE = re.compile(f"[{_CJK}]")
_WORD_RE = re.compile(f"[^\\W_{_CJK}]+")


def is_mostly_cjk(text: str) -> bool:
    """True when ``text`` has more CJK characters than other words (runs of letters/digits).

    Counting a Latin word as one unit, like one CJK character, keeps mixed questions such as
    ``Adobe OnLocation的适用范围是什么？`` (2 words, 7 CJK characters) on the CJK side: an
    English-only embedding model cannot read them either.
    """
    return len(_CJK_CHAR_RE.findall(text)) > len(_WORD_RE.findall(text))


# -- data -----------------------------------------------------------------------------------
def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as f:
        next(f)
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                continue
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return qrels


def beir_documents(name: str, use_title: bool):
    from ragloom.schema import Document

    docs = []
    for row in read_jsonl(DATA / "ir" / name / "corpus.jsonl"):
        title = (row.get("title") or "").strip()
        text = row.get("text") or ""
        body = f"{title}\n{text}" if use_title and title else text
        docs.append(Document(text=body, id_=str(row["_id"]), metadata={}))
    return docs


def split_nodes(docs, embed, parser: str = "sentence") -> list:
    """Nodes of ``default_node_parser(embed, 254, 32, parser)`` (deterministic ids ``<doc id>::<n>``;
    ``ref_doc_id`` = the corpus id)."""
    from ragloom.settings import default_node_parser

    splitter = default_node_parser(
        embed, int(embed.max_text_tokens), 32, parser=parser
    )
    nodes = splitter(docs)
    seen: dict[str, int] = {}
    for node in nodes:
        doc_id = node.ref_doc_id
        n = seen.get(doc_id, 0)
        seen[doc_id] = n + 1
        node.id_ = f"{doc_id}::{n}"
    return nodes


def cache_path(
    kind: str, dataset: str, texts: Sequence[str], embed, cache_dir: Path, query: bool
) -> Path:
    """Where the embeddings of ``texts`` are cached: keyed by dataset, model identity and the texts."""
    h = hashlib.sha1()
    h.update(json.dumps(embed.cache_identity(), sort_keys=True, default=str).encode())
    h.update(b"query" if query else b"text")
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\x00")
    return cache_dir / f"{dataset}-{kind}-{h.hexdigest()[:16]}.npy"


def cached_embeddings(
    kind: str, dataset: str, texts: Sequence[str], embed, cache_dir: Path, query: bool
):
    import numpy as np

    path = cache_path(kind, dataset, texts, embed, cache_dir, query)
    if path.exists():
        arr = np.load(path)
        if arr.shape[0] == len(texts):
            return arr, 0.0
    t0 = time.perf_counter()
    if query:
        arr = np.asarray(embed._get_query_embeddings(list(texts)), dtype=np.float32)
    else:
        arr = embed.get_text_embedding_batch_array(list(texts))
    secs = time.perf_counter() - t0
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, arr)
    os.replace(tmp, path)
    return arr, secs


def build_index(nodes, embed, dataset: str, cache_dir: Path):
    from ragloom.indices import VectorStoreIndex
    from ragloom.schema import MetadataMode

    texts = [n.get_content(MetadataMode.EMBED) for n in nodes]
    vecs, secs = cached_embeddings(
        "nodes", dataset, texts, embed, cache_dir, query=False
    )
    for node, v in zip(nodes, vecs, strict=True):
        node.embedding = v.tolist()
    t0 = time.perf_counter()
    index = VectorStoreIndex(nodes=nodes, embed_model=embed)
    return index, secs, time.perf_counter() - t0


# -- fusion ---------------------------------------------------------------------------------
Ranking = list[tuple[str, float]]  # (node id, score), best first


def fuse_rrf(
    dense: Ranking, sparse: Ranking, w_dense: float = 1.0, w_sparse: float = 1.0
) -> Ranking:
    scores: dict[str, float] = {}
    for w, ranking in ((w_dense, dense), (w_sparse, sparse)):
        if w == 0:
            continue
        for rank, (nid, _) in enumerate(ranking, 1):
            scores[nid] = scores.get(nid, 0.0) + w / (RRF_K + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def _minmax(ranking: Ranking) -> dict[str, float]:
    if not ranking:
        return {}
    vals = [s for _, s in ranking]
    lo, hi = min(vals), max(vals)
    if hi == lo:
        return {nid: 1.0 for nid, _ in ranking}
    return {nid: (s - lo) / (hi - lo) for nid, s in ranking}


def _dist(ranking: Ranking) -> dict[str, float]:
    if not ranking:
        return {}
    vals = [s for _, s in ranking]
    mean = sum(vals) / len(vals)
    std = math.sqrt(sum((v - mean) ** 2 for v in vals) / len(vals))
    if std == 0:
        return {nid: 1.0 for nid, _ in ranking}
    lo, hi = mean - 3 * std, mean + 3 * std
    return {nid: (s - lo) / (hi - lo) for nid, s in ranking}


def fuse_scores(
    dense: Ranking,
    sparse: Ranking,
    alpha: float,
    norm: Callable[[Ranking], dict[str, float]],
) -> Ranking:
    scores: dict[str, float] = {}
    for w, ranking in ((alpha, dense), (1.0 - alpha, sparse)):
        for nid, s in norm(ranking).items():
            scores[nid] = scores.get(nid, 0.0) + w * s
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def candidate_methods() -> dict[str, Callable[[Ranking, Ranking, bool], Ranking]]:
    m: dict[str, Callable[[Ranking, Ranking, bool], Ranking]] = {}
    m["rrf_eq (check)"] = lambda d, s, cjk: fuse_rrf(d, s)
    for w in (0.3, 0.5, 2.0, 3.0):
        m[f"rrf_ws={w:g}"] = lambda d, s, cjk, w=w: fuse_rrf(d, s, 1.0, w)
    for a in (0.3, 0.5, 0.7):
        m[f"rsf_a={a:g}"] = lambda d, s, cjk, a=a: fuse_scores(d, s, a, _minmax)
    for a in (0.3, 0.5, 0.6, 0.7):
        m[f"dbsf_a={a:g}"] = lambda d, s, cjk, a=a: fuse_scores(d, s, a, _dist)
    # language-aware: mostly-CJK queries lean on BM25 (the bundled model is English-only)
    m["la_rrf cjk:ws=3 else:1"] = lambda d, s, cjk: fuse_rrf(
        d, s, 1.0, 3.0 if cjk else 1.0
    )
    m["la_rrf cjk:ws=10 else:1"] = lambda d, s, cjk: fuse_rrf(
        d, s, 1.0, 10.0 if cjk else 1.0
    )
    m["la_rrf cjk:bm25 else:1"] = lambda d, s, cjk: s if cjk else fuse_rrf(d, s)
    m["la_rsf cjk:a=0.2 else:0.5"] = lambda d, s, cjk: fuse_scores(
        d, s, 0.2 if cjk else 0.5, _minmax
    )
    m["la_rsf cjk:a=0.05 else:0.5"] = lambda d, s, cjk: fuse_scores(
        d, s, 0.05 if cjk else 0.5, _minmax
    )
    m["la_rsf cjk:bm25 else:0.5"] = lambda d, s, cjk: (
        s if cjk else fuse_scores(d, s, 0.5, _minmax)
    )
    m["la_dbsf cjk:bm25 else:0.5"] = lambda d, s, cjk: (
        s if cjk else fuse_scores(d, s, 0.5, _dist)
    )
    # the same fusions over the pools a small similarity_top_k gets (max(4k, 50) = 50 nodes per side)
    p = 50
    m["rrf_eq pool50"] = lambda d, s, cjk: fuse_rrf(d[:p], s[:p])
    m["la_rsf cjk:bm25 else:0.5 pool50"] = lambda d, s, cjk: (
        s[:p] if cjk else fuse_scores(d[:p], s[:p], 0.5, _minmax)
    )
    m["la_dbsf cjk:bm25 else:0.5 pool50"] = lambda d, s, cjk: (
        s[:p] if cjk else fuse_scores(d[:p], s[:p], 0.5, _dist)
    )
    return m


# -- metrics ----------------------------------------------------------------------------------
def ndcg_at(ranked: Sequence[str], rels: dict[str, int], k: int = 10) -> float:
    dcg = sum(
        rels.get(d, 0) / math.log2(i + 2)
        for i, d in enumerate(ranked[:k])
        if rels.get(d, 0) > 0
    )
    ideal = sorted((g for g in rels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked: Sequence[str], rels: dict[str, int], k: int = 100) -> float:
    relevant = {d for d, g in rels.items() if g > 0}
    return len(relevant.intersection(ranked[:k])) / len(relevant) if relevant else 0.0


def docs_of(ranking: Ranking, node_doc: dict[str, str], k: int = TOP_K) -> list[str]:
    """Document ranking from a node ranking: a document scores as its best node."""
    out: list[str] = []
    seen = set()
    for nid, _ in ranking:
        d = node_doc[nid]
        if d not in seen:
            seen.add(d)
            out.append(d)
            if len(out) >= k:
                break
    return out


# -- running ----------------------------------------------------------------------------------
def store_rankings(store, query_str: str, qvec, pool: int, top_k: int):
    """(dense pool, BM25 pool, shipped hybrid for ``top_k``) node rankings from the store itself."""
    from ragloom.analysis import is_mostly_cjk
    from ragloom.vector_stores.types import VectorStoreQuery

    out = []
    # as VectorIndexRetriever does for an English-only model
    alpha = 0.0 if is_mostly_cjk(query_str) else None
    # hybrid is asked for the whole fused pool (both sides fixed at ``pool``, what it uses for
    # similarity_top_k=TOP_K), so that recall@100 counts 100 *documents* for it as for the candidates
    for mode in ("default", "text_search", "hybrid"):
        res = store.query(
            VectorStoreQuery(
                query_embedding=qvec,
                query_str=query_str,
                similarity_top_k=pool,
                mode=mode,
                hybrid_top_k=pool,
                sparse_top_k=pool,
                alpha=alpha if mode == "hybrid" else None,
            )
        )
        out.append(list(zip(res.ids, res.similarities, strict=True)))
    return out


def evaluate_ir(
    name: str, embed, cache_dir: Path, max_queries: int | None, parser: str = "sentence"
) -> dict:
    use_title = name != "cmrc2018"
    t0 = time.perf_counter()
    docs = beir_documents(name, use_title)
    nodes = split_nodes(docs, embed, parser)
    if parser != "sentence":
        # no file names here: routing must fall through to the same sentence-split nodes
        plain = split_nodes(docs, embed, "sentence")
        same = [(n.text, n.start_char_idx, n.end_char_idx) for n in nodes] == [
            (n.text, n.start_char_idx, n.end_char_idx) for n in plain
        ]
        if not same:
            raise SystemExit(f"{name}: --parser {parser} changed the nodes of a corpus without file names")
    node_doc = {n.node_id: n.ref_doc_id for n in nodes}
    qrels = read_qrels(DATA / "ir" / name / "qrels" / "test.tsv")
    queries = [
        q
        for q in read_jsonl(DATA / "ir" / name / "queries.jsonl")
        if str(q["_id"]) in qrels
    ]
    queries = [q for q in queries if any(g > 0 for g in qrels[str(q["_id"])].values())]
    if max_queries:
        queries = queries[:max_queries]
    index, embed_s, add_s = build_index(nodes, embed, name, cache_dir)
    qvecs, qembed_s = cached_embeddings(
        "queries", name, [q["text"] for q in queries], embed, cache_dir, query=True
    )
    store = index.vector_store
    methods = candidate_methods()
    names = ["dense", "bm25", "hybrid"] + list(methods)
    per: dict[str, dict[str, list[float]]] = {
        m: {"ndcg@10": [], "recall@100": []} for m in names
    }
    n_cjk = 0
    tq = time.perf_counter()
    for q, v in zip(queries, qvecs, strict=True):
        rels = qrels[str(q["_id"])]
        cjk = is_mostly_cjk(q["text"])
        n_cjk += cjk
        dense, sparse, hybrid = store_rankings(
            store, q["text"], v.tolist(), POOL, TOP_K
        )
        rankings = {"dense": dense, "bm25": sparse, "hybrid": hybrid}
        for m, fn in methods.items():
            rankings[m] = fn(dense, sparse, cjk)
        for m in names:
            ranked = docs_of(rankings[m], node_doc)
            per[m]["ndcg@10"].append(ndcg_at(ranked, rels))
            per[m]["recall@100"].append(recall_at(ranked, rels))
    query_s = time.perf_counter() - tq
    return {
        "dataset": name,
        "parser": parser,
        "docs": len(docs),
        "nodes": len(nodes),
        "docs_split": sum(1 for nid in node_doc if nid.endswith("::1")),
        "queries": len(queries),
        "cjk_queries": n_cjk,
        "embed_s": round(embed_s, 1),
        "query_embed_s": round(qembed_s, 1),
        "index_s": round(add_s, 1),
        "query_s": round(query_s, 1),
        "total_s": round(time.perf_counter() - t0, 1),
        "metrics": {
            m: {k: round(sum(v) / len(v), 4) if v else 0.0 for k, v in per[m].items()}
            for m in names
        },
    }


def evaluate_fastapi(
    embed, cache_dir: Path, parser: str = "sentence", scope: str = "tutorial"
) -> dict:
    from ragloom.readers import SimpleDirectoryReader
    from ragloom.settings import default_node_parser

    t0 = time.perf_counter()
    root = DATA.joinpath(*FASTAPI_DOCS)
    if scope == "tutorial":
        docs = SimpleDirectoryReader(
            str(root / "tutorial"), required_exts=[".md"]
        ).load_data()
    else:
        docs = SimpleDirectoryReader(
            str(root), required_exts=[".md"], recursive=True
        ).load_data()
    # the node parser ``ragloom index --parser`` uses (the model's default chunk size and overlap)
    splitter = default_node_parser(embed, parser=parser)
    nodes = splitter(docs)

    def page_of(n) -> str:
        return Path(os.path.relpath(str(n.metadata["file_path"]), root)).as_posix()

    for i, n in enumerate(nodes):
        n.id_ = f"{page_of(n)}::{i}"
    node_page = {n.node_id: page_of(n) for n in nodes}
    pages = sorted(set(node_page.values()))
    missing = [p for _, p in FASTAPI_QUESTIONS if p not in pages]
    if missing:
        raise SystemExit(f"fastapi answer pages not found: {missing}")
    index, embed_s, _ = build_index(nodes, embed, f"fastapi-{scope}", cache_dir)
    qvecs, _ = cached_embeddings(
        "queries",
        "fastapi",
        [q for q, _ in FASTAPI_QUESTIONS],
        embed,
        cache_dir,
        query=True,
    )
    store = index.vector_store
    # the retriever a user gets by default must be the shipped hybrid
    default_retriever = index.as_retriever(similarity_top_k=TOP_K)
    methods = candidate_methods()
    names = ["dense", "bm25", "hybrid"] + list(methods)
    per: dict[str, dict[str, list[float]]] = {
        m: {"top1": [], "mrr": [], "ndcg@10": []} for m in names
    }
    top1_pages: dict[str, list[str]] = {m: [] for m in names}
    answer_ranks: dict[str, list[int | None]] = {m: [] for m in names}
    for (question, page), v in zip(FASTAPI_QUESTIONS, qvecs, strict=True):
        cjk = is_mostly_cjk(question)
        dense, sparse, hybrid = store_rankings(store, question, v.tolist(), POOL, TOP_K)
        got = [n.node.node_id for n in default_retriever.retrieve(question)]
        assert got == [nid for nid, _ in hybrid][: len(got)], (
            "as_retriever() default differs from mode='hybrid'"
        )
        rankings = {"dense": dense, "bm25": sparse, "hybrid": hybrid}
        for m, fn in methods.items():
            rankings[m] = fn(dense, sparse, cjk)
        for m in names:
            ranked_pages = [node_page[nid] for nid, _ in rankings[m]]
            top1_pages[m].append(ranked_pages[0] if ranked_pages else "")
            per[m]["top1"].append(1.0 if ranked_pages[:1] == [page] else 0.0)
            rr = 0.0
            for i, p in enumerate(ranked_pages):
                if p == page:
                    rr = 1.0 / (i + 1)
                    break
            per[m]["mrr"].append(rr)
            ranked_docs = docs_of(rankings[m], node_page)  # pages, each at its best node
            per[m]["ndcg@10"].append(ndcg_at(ranked_docs, {page: 1}))
            answer_ranks[m].append(
                ranked_docs.index(page) + 1 if page in ranked_docs else None
            )
    return {
        "dataset": "fastapi",
        "parser": parser,
        "scope": scope,
        "splitter": type(splitter).__name__,
        "chunk_size": splitter.chunk_size,
        "chunk_overlap": splitter.chunk_overlap,
        "docs": len(docs),
        "nodes": len(nodes),
        "queries": len(FASTAPI_QUESTIONS),
        "embed_s": round(embed_s, 1),
        "total_s": round(time.perf_counter() - t0, 1),
        "metrics": {
            m: {k: round(sum(v) / len(v), 4) for k, v in per[m].items()} for m in names
        },
        "top1_pages": {m: top1_pages[m] for m in ("dense", "bm25", "hybrid")},
        # rank of the answer page in the page ranking (None: not among the first 100 pages)
        "answer_page_ranks": {m: answer_ranks[m] for m in ("dense", "bm25", "hybrid")},
    }


# -- report -------------------------------------------------------------------------------------
def print_table(res: dict) -> None:
    name = res["dataset"]
    metrics = res["metrics"]
    if name == "fastapi":
        cols = ("top1", "mrr", "ndcg@10")
        print(
            f"\n## fastapi {res['scope']}: {res['docs']} pages, {res['nodes']} nodes "
            f"({res['splitter']} {res['chunk_size']}/{res['chunk_overlap']}, --parser {res['parser']}), "
            f"{res['queries']} questions (top1/mrr: node ranking; ndcg@10: page ranking); "
            f"embed {res['embed_s']}s (0 = cached)"
        )
        print(f"answer page ranks (hybrid): {res['answer_page_ranks']['hybrid']}")
    else:
        cols = ("ndcg@10", "recall@100")
        print(
            f"\n## {name}: {res['docs']} docs -> {res['nodes']} nodes ({res['docs_split']} docs split), "
            f"{res['queries']} queries ({res['cjk_queries']} mostly CJK); embed {res['embed_s']}s (0 = cached), "
            f"queries {res['query_s']}s"
        )
    refs = REFERENCES.get(name, {})
    print(
        f"{'method':28s} "
        + " ".join(f"{c:>10s}" for c in cols)
        + "  published reference"
    )
    for m, vals in metrics.items():
        ref = "; ".join(f"{metric} {text}" for metric, text in refs.get(m, {}).items())
        print(
            f"{m:28s} "
            + " ".join(f"{vals[c]:10.4f}" for c in cols)
            + (f"  {ref}" if ref else "")
        )


def summary(results: list[dict]) -> dict:
    ir = [r for r in results if r["dataset"] != "fastapi"]
    if not ir:
        return {}
    names = list(ir[0]["metrics"])
    out = {}
    print(
        "\n## targets of issue 6 (nDCG@10): hybrid > max(dense, bm25) on each dataset; "
        "SciFact >= 0.70; CMRC2018 >= 0.98"
    )
    header = (
        f"{'method':28s} "
        + " ".join(f"{r['dataset']:>10s}" for r in ir)
        + "   mean  beats-both  scifact>=.70  cmrc>=.98"
    )
    print(header)
    for m in names:
        vals = {r["dataset"]: r["metrics"][m]["ndcg@10"] for r in ir}
        beats = all(
            r["metrics"][m]["ndcg@10"]
            > max(r["metrics"]["dense"]["ndcg@10"], r["metrics"]["bm25"]["ndcg@10"])
            for r in ir
        )
        sf = vals.get("scifact")
        cm = vals.get("cmrc2018")
        row = {
            "ndcg@10": vals,
            "mean": round(sum(vals.values()) / len(vals), 4),
            "beats_both": beats,
            "scifact_ge_070": None if sf is None else sf >= 0.70,
            "cmrc_ge_098": None if cm is None else cm >= 0.98,
        }
        out[m] = row
        print(
            f"{m:28s} "
            + " ".join(f"{vals[r['dataset']]:10.4f}" for r in ir)
            + f" {row['mean']:6.4f}  {beats!s:>10s}  {row['scifact_ge_070']!s:>11s}  {row['cmrc_ge_098']!s:>9s}"
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="scifact,cmrc2018,cranfield,fastapi")
    ap.add_argument(
        "--max-queries",
        type=int,
        default=None,
        help="first N judged queries per IR dataset (smoke runs)",
    )
    ap.add_argument("--cache-dir", default="/tmp/ragloom_retrieval_bench")
    ap.add_argument("--json-out", default=None, help="also write the JSON result here")
    ap.add_argument("--device", default="cpu")
    ap.add_argument(
        "--parser",
        choices=["sentence", "auto"],
        default="sentence",
        help="node parser (ragloom.settings.default_node_parser): sentence splitting, or routing by "
        "file type as `ragloom index --parser auto` does",
    )
    ap.add_argument(
        "--fastapi-scope",
        choices=["tutorial", "all"],
        default="tutorial",
        help="fastapi corpus: the 40 tutorial/*.md pages, or all 155 pages of docs/en/docs",
    )
    ap.add_argument(
        "--embed-cache",
        default=None,
        help="also keep chunk vectors in this ragloom EmbeddingCache file (shared by runs)",
    )
    ap.add_argument(
        "--backend",
        choices=["auto", "onnx", "torch"],
        default="auto",
        help="HuggingFaceEmbedding(backend=...): auto = ONNX Runtime on the CPU, torch on a GPU",
    )
    ap.add_argument(
        "--quantize",
        choices=["none", "int8"],
        default="none",
        help="HuggingFaceEmbedding(quantize=...): none = fp32, int8 = dynamic int8 ONNX graph",
    )
    args = ap.parse_args()

    import logging

    logging.basicConfig(level=logging.ERROR)
    from ragloom.embeddings import HuggingFaceEmbedding

    quantize = None if args.quantize == "none" else args.quantize
    embed = HuggingFaceEmbedding(
        device=args.device, embed_cache=args.embed_cache, backend=args.backend, quantize=quantize
    )
    cache_dir = Path(args.cache_dir)
    print(
        f"ragloom retrieval quality — model {embed.model_name} "
        f"(bundled, English-only, {embed.max_length}-token window), "
        f"--backend {args.backend} ({embed.backend}), --quantize {args.quantize}; "
        f"--parser {args.parser}: default_node_parser chunk_size={embed.max_text_tokens} overlap=32 "
        "(fastapi: the model's defaults), doc score = best node; "
        f"pools {POOL} nodes per side, top {TOP_K} docs; RRF k={RRF_K}. "
        f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')} (irrelevant: sqlite-vec does the math)."
    )
    results = []
    for name in [d.strip() for d in args.datasets.split(",") if d.strip()]:
        res = (
            evaluate_fastapi(embed, cache_dir, args.parser, args.fastapi_scope)
            if name == "fastapi"
            else evaluate_ir(name, embed, cache_dir, args.max_queries, args.parser)
        )
        results.append(res)
        print_table(res)
        sys.stdout.flush()
    targets = summary(results)
    line = {
        "benchmark": "retrieval_quality",
        "model": embed.model_name,
        "backend": args.backend,
        "quantize": args.quantize,
        "parser": args.parser,
        "fastapi_scope": args.fastapi_scope,
        "results": results,
        "targets": targets,
        "references": REFERENCES,
    }
    if args.json_out:
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(
            json.dumps(line, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    print(json.dumps(line, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
