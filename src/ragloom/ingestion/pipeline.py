"""``IngestionPipeline`` (LlamaIndex's name): a thin caller of the ingestion engine.

Transformations run through a per-node, per-transformation :class:`~ragloom.ingestion.IngestionCache`
and the results are written by :class:`~ragloom.ingestion.engine.IngestionEngine`, the same plan →
transform → write path as ``VectorStoreIndex.from_documents`` and ``ragloom index``:

* inputs are grouped by source document (pre-split nodes by their ``ref_doc_id``), so every
  :class:`DocstoreStrategy` replaces all of a document's nodes together and touches no other;
* a changed transformation configuration changes every source's fingerprint, so the next run
  re-chunks (and re-embeds what the caches do not hold);
* a document a transformation rejects is reported in :attr:`IngestionStats.failed` (and logged) and
  the others are written; ``raise_on_error=True`` raises
  :class:`~ragloom.errors.IngestionError` after writing the good ones.

Without a docstore every input is written and nothing is skipped or deleted.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable, List, Optional, Sequence, Union

from ragloom.ingestion.cache import DEFAULT_INGESTION_CACHE_NAME, IngestionCache
from ragloom.ingestion.engine import (
    DocstoreStrategy,
    DocumentFailure,
    IngestionEngine,
    IngestionStats,
)
from ragloom.ingestion.transform import ProgressCallback, run_transformations
from ragloom.schema import BaseNode, Document, TransformComponent

__all__ = [
    "DocstoreStrategy",
    "DocumentFailure",
    "IngestionPipeline",
    "IngestionStats",
    "ProgressCallback",
    "run_transformations",
]


class IngestionPipeline:
    """Documents → transformations (cached per node) → docstore and vector store (LlamaIndex's name).

    Args:
        transformations: applied in order; default ``[Settings.node_parser, Settings.embed_model]``.
        docstore: enables the :class:`DocstoreStrategy` handling of re-ingested documents.
        vector_store: where embedded nodes are written (nodes need embeddings).
        cache: an :class:`IngestionCache` (a new in-memory one by default).
        docstore_strategy: see :class:`DocstoreStrategy`.
        disable_cache: compute every transformation, use no cache.
        engine: ``"local"`` (this process, and ``num_workers`` processes for splitting) or
            ``"ray"``: the same engine with its transformations (and, for a server vector store,
            its writes) on a Ray cluster (:mod:`ragloom.ingestion.ray_engine`, extra
            ``ragloom[ray]``); whole documents only, no per-node cache.
        ray_options: a :class:`~ragloom.ingestion.ray_engine.RayOptions` (cluster address, embed
            actors …) for ``engine="ray"``.

    Raises:
        ValueError: ``engine`` is not ``"local"`` or ``"ray"``; ``ray_options`` without ``engine="ray"``.
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
        engine: str = "local",
        ray_options: Any = None,
    ) -> None:
        if engine not in ("local", "ray"):
            raise ValueError(f"engine must be 'local' or 'ray', got {engine!r}")
        if ray_options is not None and engine != "ray":
            raise ValueError("ray_options needs engine='ray'")
        self.engine_kind = engine
        self.ray_options = ray_options
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
        #: :class:`IngestionStats` of the last :meth:`run` / :meth:`run_batches`
        self.last_stats: Optional[IngestionStats] = None

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
    def engine(self, store_doc_text: bool = True, cache_collection: Optional[str] = None) -> IngestionEngine:
        """The :class:`IngestionEngine` this pipeline runs (its transformations, stores, cache, strategy)."""
        return IngestionEngine(
            self.transformations,
            docstore=self.docstore,
            vector_store=self.vector_store,
            cache=None if self.disable_cache else self.cache,
            strategy=self.docstore_strategy,
            store_doc_text=store_doc_text,
            cache_collection=cache_collection,
        )

    def run(
        self,
        documents: Optional[Sequence[Document]] = None,
        nodes: Optional[Sequence[BaseNode]] = None,
        show_progress: bool = False,
        num_workers: Optional[int] = None,
        cache_collection: Optional[str] = None,
        in_place: bool = True,
        store_doc_text: bool = True,
        raise_on_error: bool = False,
        **kwargs: Any,
    ) -> List[BaseNode]:
        """Transform ``documents`` and ``nodes`` and write the results in one transaction; returns
        the nodes written (``list[BaseNode]``).

        Args:
            nodes: pre-split nodes; they are grouped by ``ref_doc_id`` (their source document).
            num_workers: > 1 splits across that many processes (``ProcessPoolExecutor``);
                falls back to 1 when a splitter cannot be pickled.
            store_doc_text: ``False`` keeps only the nodes' hashes and document links in the
                docstore (their text is in the vector store).
            raise_on_error: raise instead of reporting documents that cannot be ingested.

        Documents skipped by the docstore strategy produce no nodes.  For a large corpus use
        :meth:`run_batches`.

        Raises:
            ValueError: ``num_workers < 1``; nodes without embeddings for a vector store.
            IngestionError: with ``raise_on_error``, a document could not be ingested (the others
                were written); without it the failure is logged and the document skipped.
        """
        inputs: List[BaseNode] = list(documents or []) + list(nodes or [])
        if not in_place:
            inputs = [n.copy() for n in inputs]
        out: List[BaseNode] = []
        if self.engine_kind == "ray":
            self.last_stats = self._run_on_ray([inputs], store_doc_text, num_workers, raise_on_error=raise_on_error,
                                               collect=out)
            return out
        self.last_stats = self.engine(store_doc_text, cache_collection).run(
            [inputs],
            delete_absent=True,
            raise_on_error=raise_on_error,
            collect=out,
            show_progress=show_progress,
            num_workers=num_workers,
            **kwargs,
        )
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
        raise_on_error: bool = False,
        **kwargs: Any,
    ) -> IngestionStats:
        """Ingest a stream of batches (documents and/or pre-split nodes), one transaction per batch;
        returns :class:`IngestionStats`.

        A source document is ingested exactly when its fingerprint is recorded: a run killed between
        (or inside) batches loses only the unfinished batch, and the next run redoes it.  Nodes are
        not kept after their batch commits (memory is bounded by the batch size).

        Args:
            batches: an iterable of input lists (a generator is consumed lazily).
            force: re-run every document even if unchanged (a full rebuild).
            delete_scope: with ``UPSERTS_AND_DELETE``, after the last batch the recorded documents
                absent from every batch are deleted *only if* ``delete_scope(doc_id)`` is true
                (default: all).  Called after the iterable is exhausted.
            progress_callback: see :data:`ProgressCallback`.
            store_doc_text: ``False`` keeps only hashes and node → document links in the docstore.
            raise_on_error: raise :class:`~ragloom.errors.IngestionError` at the end when documents
                failed (the good ones are committed).
            show_progress, num_workers, cache_collection, kwargs: as for :meth:`run`.

        Raises:
            ValueError: ``num_workers < 1``.
            IngestionError: with ``raise_on_error``, some documents failed.
        """
        if self.engine_kind == "ray":
            self.last_stats = self._run_on_ray(batches, store_doc_text, num_workers, force=force,
                                               delete_scope=delete_scope, raise_on_error=raise_on_error,
                                               progress_callback=progress_callback)
            return self.last_stats
        self.last_stats = self.engine(store_doc_text, cache_collection).run(
            batches,
            force=force,
            delete_absent=True,
            delete_scope=delete_scope,
            raise_on_error=raise_on_error,
            progress_callback=progress_callback,
            show_progress=show_progress,
            num_workers=num_workers,
            **kwargs,
        )
        return self.last_stats

    def _run_on_ray(self, batches: Iterable[Sequence[BaseNode]], store_doc_text: bool, num_workers: Optional[int],
                    **kwargs: Any) -> IngestionStats:
        from ragloom.ingestion.ray_engine import RayOptions, run_documents_on_ray

        options = self.ray_options or RayOptions(num_workers=num_workers or 1)
        return run_documents_on_ray(self.engine(store_doc_text), batches, options, delete_absent=True, **kwargs)

    async def arun(
        self,
        documents: Optional[Sequence[Document]] = None,
        nodes: Optional[Sequence[BaseNode]] = None,
        show_progress: bool = False,
        num_workers: Optional[int] = None,
        **kwargs: Any,
    ) -> List[BaseNode]:
        """Async entry point: runs :meth:`run` in a worker thread (so the event loop keeps running)."""
        import asyncio

        return await asyncio.to_thread(
            self.run, documents=documents, nodes=nodes, show_progress=show_progress, num_workers=num_workers, **kwargs
        )
