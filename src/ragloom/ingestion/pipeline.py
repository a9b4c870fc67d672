"""``IngestionPipeline``: transformations through a per-node cache, then docstore/vector-store upkeep.

Each transformation is applied node by node through :class:`~ragloom.ingestion.IngestionCache`:
for every input node the pair (node, transformation) is looked up; only the misses
are computed, in one call of the transformation per step, and the outputs are mapped
back to their input (1:1 when the transformation returns the same nodes, as embed
models and extractors do; otherwise by the outputs' SOURCE relationship, as
splitters set it).  Editing one document recomputes only that document's nodes;
changing one transformation's ``to_config()`` invalidates exactly that step.

Docstore strategies (:class:`DocstoreStrategy`, with a docstore):

* ``UPSERTS``: a new document is inserted; a document whose hash changed has its old
  nodes deleted from the docstore **and** the vector store before the new ones are
  inserted; an unchanged document is skipped.
* ``DUPLICATES_ONLY``: inputs whose hash is already in the docstore, or earlier in the
  same batch, are skipped; nothing is deleted.
* ``UPSERTS_AND_DELETE``: ``UPSERTS``, plus every document recorded in the docstore
  that is absent from this run is deleted from the docstore and the vector store.
  Use it for *full syncs* only: each run must pass the complete corpus, or the
  documents left out are removed.

Without a docstore the pipeline de-duplicates by (deterministic) node id only.

A document's hash is recorded (``docstore.set_document_hash``) only after its nodes
were written to the vector store; when the docstore and the vector store share one
:class:`~ragloom.storage.sqlite.SQLiteDatabase` (both from one ``StorageContext``)
the deletes, the vectors, the nodes and the hashes commit in one transaction.

:meth:`IngestionPipeline.run_batches` is the streaming form used by ``ragloom index``:
documents arrive in batches (an iterable, so a folder is never held in memory), each
batch commits in its own transaction, documents a transformation rejects with
``ValueError`` are reported instead of aborting the run, absent documents are deleted
only inside a caller-given scope, and the result is an :class:`IngestionStats` (added /
updated / unchanged / deleted documents, nodes embedded by the model vs reused from a
cache).  A run killed at any point leaves every finished batch committed and nothing
of the others; the next run skips what was committed and redoes the rest.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import signal
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

from ragloom.ingestion.cache import (
    DEFAULT_INGESTION_CACHE_NAME,
    IngestionCache,
    node_transform_key,
    transformation_digest,
)
from ragloom.schema import BaseNode, Document, TransformComponent

logger = logging.getLogger(__name__)

__all__ = ["DocstoreStrategy", "IngestionPipeline", "IngestionStats", "ProgressCallback", "run_transformations"]


class DocstoreStrategy(str, Enum):
    """How :class:`IngestionPipeline` treats documents already in its docstore."""

    UPSERTS = "upserts"
    DUPLICATES_ONLY = "duplicates_only"
    UPSERTS_AND_DELETE = "upserts_and_delete"


#: ``callback(event, payload)`` of :meth:`IngestionPipeline.run_batches`.  Events, in order per batch:
#: ``"embedding"`` (payload: how many nodes are about to enter an embed-model step),
#: ``"embedded"`` (payload: how many more of them are done; sent per sub-batch of
#: ``4 × embed_batch_size`` nodes), ``"committed"`` (payload: the ``list[BaseNode]`` written by the
#: batch's transaction, just committed).
ProgressCallback = Callable[[str, Any], None]


@dataclass
class IngestionStats:
    """Counts of one :meth:`IngestionPipeline.run_batches` run (documents are the pipeline's inputs).

    * ``documents``: inputs received; each is then ``added`` (new id), ``updated`` (known id,
      changed hash, or ``force``), ``unchanged`` (skipped) or ``failed``.
    * ``failed``: ``(document id, message)`` of inputs a transformation rejected with
      ``ValueError`` (e.g. metadata longer than the chunk budget); their old nodes are removed
      and no hash is recorded, so the next run tries them again.
    * ``deleted``: documents absent from the run that were removed (``UPSERTS_AND_DELETE``).
    * ``nodes_written``: nodes written to the vector store / docstore.
    * ``nodes_embedded``: vectors the embed model computed in this run (for a model with an
      ``embed_cache``, that cache's misses).
    * ``nodes_reused``: vectors taken from a cache instead (the model's ``embed_cache`` or the
      :class:`IngestionCache`).
    * ``batches``: transactions committed; ``documents_in_docstore``: source documents
      recorded in the docstore after the run (``None`` without a docstore).
    """

    documents: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: List[Tuple[str, str]] = field(default_factory=list)
    nodes_written: int = 0
    nodes_embedded: int = 0
    nodes_reused: int = 0
    batches: int = 0
    documents_in_docstore: Optional[int] = None


@dataclass
class _EmbedCounts:
    embedded: int = 0
    reused: int = 0


def _is_embedding(transform: Any) -> bool:
    from ragloom.embeddings.base import BaseEmbedding

    return isinstance(transform, BaseEmbedding)


def run_transformations(
    nodes: Sequence[BaseNode],
    transformations: Sequence[TransformComponent],
    in_place: bool = True,
    cache: Optional[IngestionCache] = None,
    cache_collection: Optional[str] = None,
    show_progress: bool = False,
    num_workers: Optional[int] = None,
    progress_callback: Optional[ProgressCallback] = None,
    embed_counts: Optional[_EmbedCounts] = None,
    validate_nodes: Optional[Callable[[Sequence[BaseNode]], None]] = None,
    **kwargs: Any,
) -> List[BaseNode]:
    """Apply ``transformations`` in order, through ``cache`` when given; returns ``list[BaseNode]``.

    ``progress_callback`` receives the ``"embedding"`` / ``"embedded"`` events of
    :data:`ProgressCallback` for embed-model steps.  ``validate_nodes`` (a vector store's
    ``validate_nodes``) sees the nodes entering an embed-model step before any is embedded, so a
    node the store would reject raises ``ValueError`` before embeddings are paid for.
    """
    out: List[BaseNode] = list(nodes) if in_place else [n.copy() for n in nodes]
    executor: Optional[ProcessPoolExecutor] = None
    try:
        for transform in transformations:
            use_pool = (num_workers or 1) > 1 and _is_splitter(transform) and len(out) > 1
            if use_pool and executor is None:
                if _picklable(transform):
                    import multiprocessing

                    executor = ProcessPoolExecutor(
                        max_workers=num_workers, mp_context=multiprocessing.get_context("spawn")
                    )
                else:
                    num_workers = 1
                    use_pool = False
            out = _apply_cached(
                out,
                transform,
                cache,
                cache_collection,
                show_progress=show_progress,
                executor=executor if use_pool else None,
                num_workers=num_workers or 1,
                progress_callback=progress_callback,
                embed_counts=embed_counts,
                validate_nodes=validate_nodes,
                **kwargs,
            )
    finally:
        if executor is not None:
            executor.shutdown()
    return out


def _is_splitter(transform: Any) -> bool:
    from ragloom.node_parser.interface import NodeParser

    return isinstance(transform, NodeParser)


def _picklable(transform: Any) -> bool:
    try:
        pickle.dumps(transform)
    except Exception as exc:  # any pickling failure: run in this process
        logger.warning(
            "num_workers > 1 ignored: %s cannot be pickled for worker processes (%s: %s); using 1 worker",
            type(transform).__name__,
            type(exc).__name__,
            exc,
        )
        return False
    return True


def _call_transform(transform: Any, nodes: List[BaseNode], kwargs: Dict[str, Any]) -> List[BaseNode]:
    """Worker entry point (module level, so it pickles)."""
    return list(transform(nodes, **kwargs))


def _group(inputs: Sequence[BaseNode], outputs: Sequence[BaseNode]) -> Optional[List[List[BaseNode]]]:
    """Outputs per input: 1:1 when ids line up, else by SOURCE (``ref_doc_id``); ``None`` if unmappable."""
    if len(outputs) == len(inputs) and all(o.id_ == i.id_ for o, i in zip(outputs, inputs)):
        return [[o] for o in outputs]
    index = {n.id_: k for k, n in enumerate(inputs)}
    if len(index) != len(inputs):
        return None
    groups: List[List[BaseNode]] = [[] for _ in inputs]
    for o in outputs:
        k = index.get(o.ref_doc_id) if o.ref_doc_id is not None else None
        if k is None:
            k = index.get(o.id_)
        if k is None:
            return None
        groups[k].append(o)
    return groups


def _hidden_keys(node: BaseNode) -> List[str]:
    both = set(node.excluded_embed_metadata_keys) & set(node.excluded_llm_metadata_keys)
    return [k for k in node.metadata if k in both]


def _refresh_hidden(inp: BaseNode, outputs: List[BaseNode]) -> None:
    """Copy the input's bookkeeping metadata (hidden from both views, so not in the key) onto cached outputs."""
    keys = _hidden_keys(inp)
    if not keys:
        return
    for out in outputs:
        for k in keys:
            if k in out.metadata:
                out.metadata[k] = inp.metadata[k]


def _apply_cached(
    nodes: List[BaseNode],
    transform: Any,
    cache: Optional[IngestionCache],
    collection: Optional[str],
    show_progress: bool,
    executor: Optional[ProcessPoolExecutor],
    num_workers: int,
    progress_callback: Optional[ProgressCallback] = None,
    embed_counts: Optional[_EmbedCounts] = None,
    validate_nodes: Optional[Callable[[Sequence[BaseNode]], None]] = None,
    **kwargs: Any,
) -> List[BaseNode]:
    kw = dict(kwargs)
    kw["show_progress"] = show_progress
    hooks = (progress_callback, embed_counts, validate_nodes)
    if cache is None and executor is None:
        return _run_step(transform, nodes, kw, *hooks)
    digest = transformation_digest(transform)
    keys = [node_transform_key(n, transform, digest) for n in nodes]
    found = cache.get_many(keys, collection=collection) if cache is not None else {}
    miss_idx: Dict[str, int] = {}
    for i, key in enumerate(keys):
        if key not in found and key not in miss_idx:
            miss_idx[key] = i
    computed: Dict[str, List[BaseNode]] = {}
    if miss_idx:
        miss_keys = list(miss_idx)
        miss_nodes = [nodes[miss_idx[k]] for k in miss_keys]
        if executor is not None and len(miss_nodes) > 1:
            parts = _split(list(zip(miss_keys, miss_nodes)), num_workers)
            logger.debug("%s: %d nodes in %d worker processes", type(transform).__name__, len(miss_nodes), len(parts))
            futures = [
                executor.submit(_call_transform, transform, [n for _, n in part], {**kw, "show_progress": False})
                for part in parts
            ]
            for part, fut in zip(parts, futures):
                computed.update(_map_back([k for k, _ in part], [n for _, n in part], fut.result(), transform, kw))
        else:
            outputs = _run_step(transform, miss_nodes, kw, *hooks)
            computed.update(_map_back(miss_keys, miss_nodes, outputs, transform, kw))
        if cache is not None:
            cache.put_many(computed, collection=collection)
    result: List[BaseNode] = []
    emitted: set = set()
    for node, key in zip(nodes, keys):
        if key in computed:
            if key in emitted:  # the same input twice: its outputs once
                continue
            emitted.add(key)
            result.extend(computed[key])
        else:
            outs = found[key] if key not in emitted else [n.copy() for n in found[key]]
            emitted.add(key)
            _refresh_hidden(node, outs)
            result.extend(outs)
            if embed_counts is not None and node.embedding is None and _is_embedding(transform):
                embed_counts.reused += len(outs)  # vectors from the ingestion cache
    return result


def _run_step(
    transform: Any,
    nodes: List[BaseNode],
    kw: Dict[str, Any],
    progress_callback: Optional[ProgressCallback],
    embed_counts: Optional[_EmbedCounts],
    validate_nodes: Optional[Callable[[Sequence[BaseNode]], None]] = None,
) -> List[BaseNode]:
    """``transform(nodes)``; an embed model also validates first, counts (computed vs cached) and reports progress."""
    if (progress_callback is None and embed_counts is None and validate_nodes is None) or not _is_embedding(transform):
        return list(transform(nodes, **kw))
    if validate_nodes is not None:
        validate_nodes(nodes)
    todo = sum(1 for n in nodes if n.embedding is None)
    emb_cache = getattr(transform, "embed_cache", None)
    misses_before = int(getattr(emb_cache, "misses", 0))
    if progress_callback is None:
        out = list(transform(nodes, **kw))
    else:
        progress_callback("embedding", len(nodes))
        step = max(1, int(getattr(transform, "embed_batch_size", 32) or 32) * 4)
        out = []
        for i in range(0, len(nodes), step):
            part = nodes[i : i + step]
            out.extend(transform(part, **kw))
            progress_callback("embedded", len(part))
    if embed_counts is not None:
        computed = int(getattr(emb_cache, "misses", 0)) - misses_before if emb_cache is not None else todo
        embed_counts.embedded += computed
        embed_counts.reused += max(0, todo - computed)
    return out


def _split(items: List[Any], parts: int) -> List[List[Any]]:
    size = max(1, -(-len(items) // parts))
    return [items[i : i + size] for i in range(0, len(items), size)]


def _map_back(
    keys: List[str], inputs: List[BaseNode], outputs: List[BaseNode], transform: Any, kw: Dict[str, Any]
) -> Dict[str, List[BaseNode]]:
    groups = _group(inputs, outputs)
    if groups is None:
        logger.debug("%s: outputs not mappable to inputs; applying it node by node", type(transform).__name__)
        groups = [list(transform([n], **kw)) for n in inputs]
    return dict(zip(keys, groups))


def _database(component: Any) -> Any:
    from ragloom.storage.sqlite import SQLiteDatabase

    db = getattr(component, "database", None)
    return db if isinstance(db, SQLiteDatabase) else None


@dataclass
class _Plan:
    """What one batch does: inputs to run, stored documents to delete first, and counts."""

    todo: List[BaseNode] = field(default_factory=list)
    delete: List[str] = field(default_factory=list)
    updated_ids: Set[str] = field(default_factory=set)
    unchanged: int = 0


def _unique(nodes: List[BaseNode]) -> List[BaseNode]:
    """First node of each id (ids are deterministic: a repeated id is the same chunk)."""
    unique: Dict[str, BaseNode] = {}
    for node in nodes:
        unique.setdefault(node.id_, node)
    return list(unique.values())


class _TestHooks:
    """Crash-test hooks for the SIGKILL harness (``tests/cli/test_crash_safety.py``); inert unless set.

    * ``RAGLOOM_TEST_KILL_IN_COMMIT=N``: the process SIGKILLs itself inside the N-th write
      transaction of :meth:`IngestionPipeline.run_batches`, after every write, before COMMIT.
    * ``RAGLOOM_TEST_KILL_AFTER_BATCHES=N``: it SIGKILLs itself right after the N-th commit.
    """

    def __init__(self) -> None:
        self.in_commit = 0
        self.after = 0
        self.commits = 0
        self.writes = 0

    @contextlib.contextmanager
    def armed(self) -> Any:
        """Active for the duration of one ``run_batches`` call (read from the environment then)."""
        self.in_commit = int(os.environ.get("RAGLOOM_TEST_KILL_IN_COMMIT", "0") or 0)
        self.after = int(os.environ.get("RAGLOOM_TEST_KILL_AFTER_BATCHES", "0") or 0)
        self.commits = self.writes = 0
        try:
            yield
        finally:
            self.in_commit = self.after = 0

    def before_commit(self) -> None:
        if self.in_commit:
            self.writes += 1
            if self.writes == self.in_commit:
                os.kill(os.getpid(), signal.SIGKILL)

    def after_commit(self) -> None:
        if self.after:
            self.commits += 1
            if self.commits == self.after:
                os.kill(os.getpid(), signal.SIGKILL)


_TEST_HOOKS = _TestHooks()


class IngestionPipeline:
    """Documents → transformations (cached per node) → docstore and vector store (LlamaIndex's name).

    Args:
        transformations: applied in order; default ``[Settings.node_parser, Settings.embed_model]``.
        docstore: enables the :class:`DocstoreStrategy` handling of re-ingested documents.
        vector_store: where embedded nodes are written (nodes need embeddings).
        cache: an :class:`IngestionCache` (a new in-memory one by default).
        docstore_strategy: see :class:`DocstoreStrategy`.
        disable_cache: compute every transformation, use no cache.
    """

    def __init__(
        self,
        transformations: Optional[List[TransformComponent]] = None,
        docstore: Any = None,
        vector_store: Any = None,
        cache: Optional[IngestionCache] = None,
        docstore_strategy: Union[DocstoreStrategy, str] = DocstoreStrategy.UPSERTS,
        disable_cache: bool = False,
        name: str = "ragloom_pipeline",
        project_name: str = "default",
    ) -> None:
        if transformations is None:
            from ragloom.settings import Settings

            transformations = [Settings.node_parser, Settings.embed_model]
        self.transformations: List[TransformComponent] = list(transformations)
        self.docstore = docstore
        self.vector_store = vector_store
        self.cache = cache if cache is not None else IngestionCache()
        self.docstore_strategy = DocstoreStrategy(docstore_strategy)
        self.disable_cache = disable_cache
        self.name = name
        self.project_name = project_name

    # -- persistence -----------------------------------------------------------------------
    def persist(
        self,
        persist_dir: Union[str, "os.PathLike[str]"] = "./pipeline_storage",
        cache_name: str = DEFAULT_INGESTION_CACHE_NAME,
        docstore_name: Optional[str] = None,
        fs: Any = None,
    ) -> None:
        """Write the cache (``persist_dir/ingestion_cache.sqlite``) and the docstore
        (``persist_dir/ragloom.sqlite``, so ``StorageContext.from_defaults(persist_dir=...)`` opens it)."""
        if fs is not None:
            raise ValueError("ragloom works on the local file system only (fs must be None)")
        from ragloom.storage.sqlite import DEFAULT_DB_NAME

        directory = Path(persist_dir)
        directory.mkdir(parents=True, exist_ok=True)
        self.cache.persist(directory / cache_name)
        if self.docstore is not None:
            self.docstore.persist(str(directory / (docstore_name or DEFAULT_DB_NAME)))

    def load(
        self,
        persist_dir: Union[str, "os.PathLike[str]"] = "./pipeline_storage",
        cache_name: str = DEFAULT_INGESTION_CACHE_NAME,
        docstore_name: Optional[str] = None,
        fs: Any = None,
    ) -> None:
        """Replace the cache and docstore with those persisted in ``persist_dir`` (each if present)."""
        if fs is not None:
            raise ValueError("ragloom works on the local file system only (fs must be None)")
        from ragloom.storage.docstore import SQLiteDocumentStore
        from ragloom.storage.sqlite import DEFAULT_DB_NAME

        directory = Path(persist_dir)
        cache_path = directory / cache_name
        if cache_path.is_file():
            self.cache = IngestionCache.from_persist_path(cache_path, collection=self.cache.collection)
        doc_path = directory / (docstore_name or DEFAULT_DB_NAME)
        if doc_path.is_file():
            self.docstore = SQLiteDocumentStore.from_persist_path(doc_path)

    # -- running -----------------------------------------------------------------------------
    def _prepare_inputs(self, documents: Optional[Sequence[Document]], nodes: Optional[Sequence[BaseNode]]) -> List[BaseNode]:
        inputs: List[BaseNode] = []
        if documents is not None:
            inputs.extend(documents)
        if nodes is not None:
            inputs.extend(nodes)
        return inputs

    def _existing_documents(self) -> Set[str]:
        """Ids of the source documents the docstore knows (inputs of earlier runs)."""
        from ragloom.storage.docstore import SQLiteDocumentStore

        if isinstance(self.docstore, SQLiteDocumentStore):
            # ``get_all_document_hashes`` maps hash -> id and so loses ids whose hashes coincide
            # (a one-chunk document and its chunk); read the ids themselves.
            rows = self.docstore.database.execute(
                "SELECT doc_id FROM docstore_meta WHERE doc_hash IS NOT NULL AND ref_doc_id IS NULL "
                "UNION SELECT ref_doc_id FROM docstore_ref_docs"
            )
            return {r[0] for r in rows}
        infos = self.docstore.get_all_ref_doc_info() or {}
        chunk_ids = {nid for info in infos.values() for nid in (info.node_ids or [])}
        ids = set(infos)
        ids.update(d for d in self.docstore.get_all_document_hashes().values() if d not in chunk_ids)
        return ids

    def _plan(self, inputs: List[BaseNode], force: bool = False, absent: bool = True) -> "_Plan":
        """Which inputs to run and which stored documents to delete first.

        ``force``: every input runs (and replaces its stored version) whatever its hash.
        ``absent``: with ``UPSERTS_AND_DELETE``, also delete stored documents missing from ``inputs``.
        """
        plan = _Plan()
        if self.docstore is None:
            plan.todo = list(inputs)
            return plan
        if self.docstore_strategy == DocstoreStrategy.DUPLICATES_ONLY:
            existing = set(self.docstore.get_all_document_hashes())
            for node in inputs:
                h = node.hash
                if h in existing:
                    plan.unchanged += 1
                    continue
                existing.add(h)
                plan.todo.append(node)
            return plan
        latest: Dict[str, BaseNode] = {}
        for node in inputs:  # the last version of a repeated id wins
            latest.pop(node.id_, None)
            latest[node.id_] = node
        plan.unchanged = len(inputs) - len(latest)
        for doc_id, node in latest.items():
            stored = self.docstore.get_document_hash(doc_id)
            if stored == node.hash and not force:
                plan.unchanged += 1
                continue
            plan.todo.append(node)
            plan.delete.append(doc_id)  # also clears leftovers of an interrupted earlier run
            if stored is not None:
                plan.updated_ids.add(doc_id)
        if absent and self.docstore_strategy == DocstoreStrategy.UPSERTS_AND_DELETE:
            plan.delete.extend(sorted(self._existing_documents() - set(latest)))
        return plan

    def _transaction(self) -> Any:
        db = _database(self.docstore)
        if db is not None and (self.vector_store is None or _database(self.vector_store) is db):
            return db.transaction()
        if self.docstore is None and self.vector_store is not None and _database(self.vector_store) is not None:
            return _database(self.vector_store).transaction()
        return contextlib.nullcontext()

    def _validator(self) -> Optional[Callable[[Sequence[BaseNode]], None]]:
        """The vector store's ``validate_nodes`` (checked before embedding), if it has one."""
        fn = getattr(self.vector_store, "validate_nodes", None)
        return fn if callable(fn) else None

    def _delete(self, doc_ids: Sequence[str]) -> None:
        for doc_id in doc_ids:
            if self.vector_store is not None:
                self.vector_store.delete(doc_id)
            if self.docstore is not None:
                self.docstore.delete_ref_doc(doc_id, raise_error=False)
                self.docstore.delete_document(doc_id, raise_error=False)

    def _write(
        self, inputs: List[BaseNode], nodes: List[BaseNode], delete: List[str], store_doc_text: bool = True
    ) -> None:
        """Delete ``delete``, write ``nodes`` and record the hashes of ``inputs``: one transaction."""
        with self._transaction():
            self._delete(delete)
            if self.vector_store is not None and nodes:
                embedded = [n for n in nodes if n.embedding is not None]
                if len(embedded) < len(nodes):
                    raise ValueError(
                        f"{len(nodes) - len(embedded)} nodes have no embedding; add an embed model to the "
                        "transformations before writing to a vector store"
                    )
                self.vector_store.add(embedded)
            if self.docstore is not None:
                if nodes:
                    self.docstore.add_documents(nodes, allow_update=True, store_text=store_doc_text)
                hashes = {n.id_: n.hash for n in inputs}
                setter = getattr(self.docstore, "set_document_hashes", None)
                if callable(setter):
                    setter(hashes)
                else:
                    for doc_id, h in hashes.items():
                        self.docstore.set_document_hash(doc_id, h)
            _TEST_HOOKS.before_commit()

    def run(
        self,
        documents: Optional[Sequence[Document]] = None,
        nodes: Optional[Sequence[BaseNode]] = None,
        show_progress: bool = False,
        num_workers: Optional[int] = None,
        cache_collection: Optional[str] = None,
        in_place: bool = True,
        store_doc_text: bool = True,
        **kwargs: Any,
    ) -> List[BaseNode]:
        """Transform ``documents`` and ``nodes`` and write the results; returns the new nodes.

        Args:
            num_workers: > 1 splits across that many processes (``ProcessPoolExecutor``);
                falls back to 1 when a splitter cannot be pickled.
            store_doc_text: ``False`` keeps only the nodes' hashes and document links in the
                docstore (their text is in the vector store).

        Documents skipped by the docstore strategy produce no nodes.  Everything (deletes,
        nodes, hashes) is written in one transaction; for a large corpus use :meth:`run_batches`.

        Raises:
            ValueError: ``num_workers < 1``; a transformation rejected an input; nodes without
                embeddings for a vector store.
        """
        if num_workers is not None and num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {num_workers}")
        inputs = self._prepare_inputs(documents, nodes)
        plan = self._plan(inputs)
        out = run_transformations(
            plan.todo,
            self.transformations,
            in_place=in_place,
            cache=None if self.disable_cache else self.cache,
            cache_collection=cache_collection,
            show_progress=show_progress,
            num_workers=num_workers,
            validate_nodes=self._validator(),
            **kwargs,
        )
        out = _unique(out)
        if self.docstore is not None or self.vector_store is not None:
            self._write(plan.todo, out, plan.delete, store_doc_text=store_doc_text)
        return out

    def run_batches(
        self,
        batches: Iterable[Sequence[BaseNode]],
        *,
        force: bool = False,
        delete_scope: Optional[Callable[[str], bool]] = None,
        progress_callback: Optional[ProgressCallback] = None,
        store_doc_text: bool = True,
        show_progress: bool = False,
        num_workers: Optional[int] = None,
        cache_collection: Optional[str] = None,
        **kwargs: Any,
    ) -> IngestionStats:
        """Ingest a stream of document batches, one transaction per batch; returns :class:`IngestionStats`.

        For each batch: the docstore strategy picks the new and changed documents, the
        transformations run on them, and — in one transaction of the shared SQLite database —
        their old nodes are deleted, the new nodes written to the vector store and the docstore,
        and their hashes recorded.  A document is therefore ingested exactly when its hash is
        recorded; a run killed between (or inside) batches loses only the unfinished batch, and
        the next run redoes it.  Nodes are not kept after their batch commits (memory is bounded
        by the batch size the caller chooses).

        Args:
            batches: an iterable of document lists (a generator is consumed lazily).
            force: re-run every document even if its hash is unchanged (a full rebuild).
            delete_scope: with ``UPSERTS_AND_DELETE``, after the last batch the stored documents
                absent from every batch are deleted *only if* ``delete_scope(doc_id)`` is true
                (default: all of them).  It is called after the iterable is exhausted, so it may
                depend on what the batches' producer learnt (e.g. which files still exist).
            progress_callback: see :data:`ProgressCallback`.
            store_doc_text: ``False`` keeps only hashes and node → document links in the docstore.
            show_progress, num_workers, cache_collection, kwargs: as for :meth:`run`.

        A document that a transformation — or the vector store's ``validate_nodes``, called on the
        nodes entering the embed step, before any is embedded — rejects with ``ValueError`` is
        listed in ``IngestionStats.failed`` (its old nodes deleted, no hash recorded) and the batch
        goes on; other exceptions propagate after the batches already committed.

        Raises:
            ValueError: ``num_workers < 1``.
        """
        if num_workers is not None and num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {num_workers}")
        with _TEST_HOOKS.armed():
            return self._run_batches(batches, force, delete_scope, progress_callback, store_doc_text,
                                     show_progress, num_workers, cache_collection, kwargs)

    def _run_batches(
        self,
        batches: Iterable[Sequence[BaseNode]],
        force: bool,
        delete_scope: Optional[Callable[[str], bool]],
        progress_callback: Optional[ProgressCallback],
        store_doc_text: bool,
        show_progress: bool,
        num_workers: Optional[int],
        cache_collection: Optional[str],
        kwargs: Dict[str, Any],
    ) -> IngestionStats:
        stats = IngestionStats()
        seen: Set[str] = set()
        run_kw: Dict[str, Any] = dict(
            cache=None if self.disable_cache else self.cache,
            cache_collection=cache_collection,
            show_progress=show_progress,
            num_workers=num_workers,
            progress_callback=progress_callback,
            validate_nodes=self._validator(),
            **kwargs,
        )
        for batch in batches:
            inputs = self._prepare_inputs(list(batch), None)
            if not inputs:
                continue
            stats.documents += len(inputs)
            seen.update(n.id_ for n in inputs)
            plan = self._plan(inputs, force=force, absent=False)
            stats.unchanged += plan.unchanged
            if not plan.todo:
                continue
            nodes, failed, counts = self._transform_isolating_failures(plan.todo, run_kw)
            failed_ids = {doc_id for doc_id, _ in failed}
            stats.failed.extend(failed)
            ok = [n for n in plan.todo if n.id_ not in failed_ids]
            nodes = _unique(nodes)
            if self.docstore is not None or self.vector_store is not None:
                self._write(ok, nodes, plan.delete, store_doc_text=store_doc_text)
            updated = sum(1 for n in ok if n.id_ in plan.updated_ids)
            stats.batches += 1
            stats.added += len(ok) - updated
            stats.updated += updated
            stats.nodes_written += len(nodes)
            stats.nodes_embedded += counts.embedded
            stats.nodes_reused += counts.reused
            if progress_callback is not None:
                progress_callback("committed", nodes)
            _TEST_HOOKS.after_commit()
        if self.docstore is not None:
            existing = self._existing_documents()
            if self.docstore_strategy == DocstoreStrategy.UPSERTS_AND_DELETE:
                gone = sorted(d for d in existing - seen if delete_scope is None or delete_scope(d))
                if gone:
                    with self._transaction():
                        self._delete(gone)
                    stats.deleted = len(gone)
                    existing.difference_update(gone)
            stats.documents_in_docstore = len(existing)
        return stats

    def _transform_isolating_failures(
        self, todo: List[BaseNode], run_kw: Dict[str, Any]
    ) -> Tuple[List[BaseNode], List[Tuple[str, str]], _EmbedCounts]:
        """Run the transformations on ``todo``; on ``ValueError`` rerun document by document to find the culprits."""
        counts = _EmbedCounts()
        try:
            return run_transformations(todo, self.transformations, embed_counts=counts, **run_kw), [], counts
        except ValueError as exc:
            if len(todo) == 1:
                return [], [(todo[0].id_, str(exc))], _EmbedCounts()
        logger.info("a transformation rejected a document of this batch; retrying its %d documents one by one", len(todo))
        counts = _EmbedCounts()
        nodes: List[BaseNode] = []
        failed: List[Tuple[str, str]] = []
        for doc in todo:
            one = _EmbedCounts()
            try:
                out = run_transformations([doc], self.transformations, embed_counts=one, **run_kw)
            except ValueError as exc:
                failed.append((doc.id_, str(exc)))
                continue
            nodes.extend(out)
            counts.embedded += one.embedded
            counts.reused += one.reused
        return nodes, failed, counts

    async def arun(
        self,
        documents: Optional[Sequence[Document]] = None,
        nodes: Optional[Sequence[BaseNode]] = None,
        show_progress: bool = False,
        num_workers: Optional[int] = None,
        **kwargs: Any,
    ) -> List[BaseNode]:
        """Async entry point (runs :meth:`run`)."""
        return self.run(documents=documents, nodes=nodes, show_progress=show_progress, num_workers=num_workers, **kwargs)
