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
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
from concurrent.futures import ProcessPoolExecutor
from enum import Enum
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ragloom.ingestion.cache import (
    DEFAULT_INGESTION_CACHE_NAME,
    IngestionCache,
    node_transform_key,
    transformation_digest,
)
from ragloom.schema import BaseNode, Document, TransformComponent

logger = logging.getLogger(__name__)

__all__ = ["DocstoreStrategy", "IngestionPipeline", "run_transformations"]


class DocstoreStrategy(str, Enum):
    """How :class:`IngestionPipeline` treats documents already in its docstore."""

    UPSERTS = "upserts"
    DUPLICATES_ONLY = "duplicates_only"
    UPSERTS_AND_DELETE = "upserts_and_delete"


def run_transformations(
    nodes: Sequence[BaseNode],
    transformations: Sequence[TransformComponent],
    in_place: bool = True,
    cache: Optional[IngestionCache] = None,
    cache_collection: Optional[str] = None,
    show_progress: bool = False,
    num_workers: Optional[int] = None,
    **kwargs: Any,
) -> List[BaseNode]:
    """Apply ``transformations`` in order, through ``cache`` when given; returns ``list[BaseNode]``."""
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
    **kwargs: Any,
) -> List[BaseNode]:
    kw = dict(kwargs)
    kw["show_progress"] = show_progress
    if cache is None and executor is None:
        return list(transform(nodes, **kw))
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
            outputs = list(transform(miss_nodes, **kw))
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
    return result


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

    def _existing_documents(self) -> set:
        """Ids of the source documents the docstore knows (for UPSERTS_AND_DELETE)."""
        infos = self.docstore.get_all_ref_doc_info() or {}
        chunk_ids = {nid for info in infos.values() for nid in (info.node_ids or [])}
        ids = set(infos)
        ids.update(d for d in self.docstore.get_all_document_hashes().values() if d not in chunk_ids)
        return ids

    def _plan(self, inputs: List[BaseNode]) -> Tuple[List[BaseNode], List[str]]:
        """``(inputs to run, document ids whose stored nodes are deleted first)``."""
        if self.docstore is None:
            return inputs, []
        if self.docstore_strategy == DocstoreStrategy.DUPLICATES_ONLY:
            existing = set(self.docstore.get_all_document_hashes())
            todo: List[BaseNode] = []
            for node in inputs:
                h = node.hash
                if h in existing:
                    continue
                existing.add(h)
                todo.append(node)
            return todo, []
        latest: Dict[str, BaseNode] = {}
        for node in inputs:  # the last version of a repeated id wins
            latest.pop(node.id_, None)
            latest[node.id_] = node
        todo, delete = [], []
        for doc_id, node in latest.items():
            stored = self.docstore.get_document_hash(doc_id)
            if stored == node.hash:
                continue
            todo.append(node)
            delete.append(doc_id)  # also clears leftovers of an interrupted earlier run
        if self.docstore_strategy == DocstoreStrategy.UPSERTS_AND_DELETE:
            delete.extend(sorted(self._existing_documents() - set(latest)))
        return todo, delete

    def _transaction(self) -> Any:
        db = _database(self.docstore)
        if db is not None and (self.vector_store is None or _database(self.vector_store) is db):
            return db.transaction()
        if self.docstore is None and self.vector_store is not None and _database(self.vector_store) is not None:
            return _database(self.vector_store).transaction()
        return contextlib.nullcontext()

    def _write(self, inputs: List[BaseNode], nodes: List[BaseNode], delete: List[str]) -> None:
        with self._transaction():
            for doc_id in delete:
                if self.vector_store is not None:
                    self.vector_store.delete(doc_id)
                if self.docstore is not None:
                    self.docstore.delete_ref_doc(doc_id, raise_error=False)
                    self.docstore.delete_document(doc_id, raise_error=False)
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
                    self.docstore.add_documents(nodes, allow_update=True)
                hashes = {n.id_: n.hash for n in inputs}
                setter = getattr(self.docstore, "set_document_hashes", None)
                if callable(setter):
                    setter(hashes)
                else:
                    for doc_id, h in hashes.items():
                        self.docstore.set_document_hash(doc_id, h)

    def run(
        self,
        documents: Optional[Sequence[Document]] = None,
        nodes: Optional[Sequence[BaseNode]] = None,
        show_progress: bool = False,
        num_workers: Optional[int] = None,
        cache_collection: Optional[str] = None,
        in_place: bool = True,
        **kwargs: Any,
    ) -> List[BaseNode]:
        """Transform ``documents`` and ``nodes`` and write the results; returns the new nodes.

        Args:
            num_workers: > 1 splits across that many processes (``ProcessPoolExecutor``);
                falls back to 1 when a splitter cannot be pickled.

        Documents skipped by the docstore strategy produce no nodes.
        """
        if num_workers is not None and num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {num_workers}")
        inputs = self._prepare_inputs(documents, nodes)
        todo, delete = self._plan(inputs)
        out = run_transformations(
            todo,
            self.transformations,
            in_place=in_place,
            cache=None if self.disable_cache else self.cache,
            cache_collection=cache_collection,
            show_progress=show_progress,
            num_workers=num_workers,
            **kwargs,
        )
        unique: Dict[str, BaseNode] = {}
        for node in out:  # deterministic ids: a repeated id is the same chunk
            unique.setdefault(node.id_, node)
        out = list(unique.values())
        if self.docstore is not None or self.vector_store is not None:
            self._write(todo, out, delete)
        return out

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
