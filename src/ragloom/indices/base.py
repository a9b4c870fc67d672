"""``BaseIndex``: the base of the docstore-backed index kinds (LlamaIndex's ``BaseIndex`` API).

``SummaryIndex``, the keyword table indexes, ``TreeIndex`` and the graph indexes keep their nodes in
the storage context's **docstore** and their own structure beside it.  This module gives them one
write path, one persistence scheme and one query/chat surface.

**Writes go through the one ingestion engine.**  ``from_documents``, ``insert``, ``insert_nodes``,
``update_ref_doc`` and ``refresh_ref_docs`` are thin callers of
:class:`~ragloom.ingestion.engine.IngestionEngine` (plan → transform → write, one transaction per
batch of :data:`DOCUMENTS_PER_BATCH` documents), as :class:`~ragloom.indices.VectorStoreIndex`.
The engine's transformations are the index's node parsers followed by one *index step*
(:class:`_IndexStep`) that runs :meth:`BaseIndex._prepare_nodes` — a subclass's per-node work that may
call an LLM (keyword extraction, summaries) — **outside** the write transaction, so no SQLite write
lock is held while a model thinks.  Inside the transaction the engine writes the nodes to the docstore
and calls :meth:`BaseIndex._add_nodes_to_index` with what was prepared.

**Incremental.**  Each source document gets a fingerprint (transformations' configuration, the
index step's :meth:`BaseIndex._index_config` and the document's content); an unchanged document costs
nothing on the next ``from_documents`` / ``refresh_ref_docs`` (no transformation, no LLM call, no
write), a changed one has all its old nodes replaced, and changing the index's configuration (a
keyword prompt, ``max_keywords_per_chunk``) rebuilds every document on the next refresh.

**Several indexes in one storage context** (a ``SummaryIndex``, a ``VectorStoreIndex`` and a
``SimpleKeywordTableIndex`` over the same nodes, as in LlamaIndex's router examples).  The docstore is
a shared pool of content-addressed nodes, and each docstore-backed index keeps *its own records* in
tables owned by the index store (see :class:`~ragloom.storage.index_store.types.BaseIndexStore`):

* source fingerprints **per index id** (``index_sources``).  Were they recorded per source id in the
  docstore, as the engine does for a ``VectorStoreIndex``, two index kinds ingesting the same
  documents with different transformation digests would each see the other's fingerprint as a
  change, and every refresh of either would rebuild everything (and re-pay every LLM call);
* the nodes it holds, per source, in insertion order (``index_nodes``);
* key → node postings (``index_postings``, the keyword tables).

The engine reaches the docstore through :class:`IndexDocstore`, the docstore *as one index sees
it*: fingerprints are this index's, and "delete source ``d``" (a changed or absent source) releases
this index's nodes of ``d`` — the subclass hook :meth:`BaseIndex._delete_nodes_from_index` runs and
the records go, in the same transaction — and deletes from the docstore only the nodes no other
docstore-backed index holds.  So an index never keeps dangling node ids because of its own writes,
and never deletes another index's nodes.

A ``VectorStoreIndex`` in the same context records its fingerprints in the docstore (its engine's
default) and, when *it* re-ingests a source, deletes that source's docstore rows; the storage context
gives the docstore a *node guard* (:meth:`~ragloom.storage.docstore.types.BaseDocumentStore.set_node_guard`)
that keeps the rows a docstore-backed index holds.  Should nodes vanish anyway (a custom docstore, a
direct ``docstore.delete_document``), readers skip them with a warning and the next refresh rebuilds
their document: a source whose recorded nodes are not all in the docstore counts as changed.
Sharing *nodes* (``docstore.add_documents(nodes)`` then ``SummaryIndex(nodes)`` /
``VectorStoreIndex(nodes)``, the LlamaIndex pattern) never deletes anything.

**Persistence.**  The index struct (a :class:`~ragloom.data_structs.DocstoreIndexStruct` subclass,
tagged, registered in :mod:`ragloom.data_structs`) is stored as JSON in the index store; the records
above live in the same SQLite database, so ``storage_context.persist()`` keeps all of it and
:func:`~ragloom.indices.loading.load_index_from_storage` reopens the right class (registry in
:mod:`ragloom.indices.loading`).

Writing a new index kind (the contract subclasses rely on; see ``SummaryIndex`` for the smallest one):

* ``index_struct_cls``: the struct class (tagged and in ``ragloom.data_structs``' registry);
* :meth:`as_retriever` (abstract);
* optional hooks: :meth:`_index_config`, :meth:`_after_write`, :meth:`_check_build_ready` (e.g. ``self.llm``: no LLM
  configured stops the run instead of failing every document), :meth:`_prepare_nodes` (outside the transaction, may call
  the LLM; returns ``{node_id: data}``), :meth:`_add_nodes_to_index` (inside it),
  :meth:`_delete_nodes_from_index` (inside it), :meth:`_materialize_struct` (what ``index_struct``
  shows), ``default_response_mode``, ``retriever_accepts_llm``;
* helpers: :meth:`_node_ids`, :meth:`_get_nodes`, :meth:`_save_index_struct`, :attr:`llm`,
  :attr:`embed_model`.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Dict, Generic, Iterator, List, Optional, Sequence, Type, TypeVar

from ragloom.data_structs import DocstoreIndexStruct
from ragloom.errors import IngestionError, RagloomError
from ragloom.schema import BaseNode, Document, TransformComponent

logger = logging.getLogger(__name__)

__all__ = ["BaseIndex", "IndexDocstore", "IndexNotReadyError", "DOCUMENTS_PER_BATCH", "DEFAULT_INSERT_BATCH_SIZE"]

#: documents planned, transformed and committed per transaction by ``from_documents`` / ``refresh_ref_docs``
DOCUMENTS_PER_BATCH = 256
#: nodes written per transaction by ``insert_nodes``
DEFAULT_INSERT_BATCH_SIZE = 2048

IS = TypeVar("IS", bound=DocstoreIndexStruct)


def refreshed(documents: Sequence[Document], stats: Any, plans: Sequence[Any]) -> List[bool]:
    """``refresh_ref_docs``'s answer for ``documents`` from its run's ``IngestionStats`` and plans:
    ``True`` for a document added or rebuilt.  Of documents sharing an id only the last was ingested
    (the engine keeps the last), so only it can get ``True``."""
    failed = {f.doc_id for f in stats.failed}
    done = {s.doc_id for plan in plans for s in plan.sources} - failed
    last = {doc.id_: k for k, doc in enumerate(documents)}
    return [doc.id_ in done and last[doc.id_] == k for k, doc in enumerate(documents)]


class IndexNotReadyError(RagloomError, RuntimeError):
    """An index cannot build any node (e.g. it needs an LLM and none is configured).  Raised by the
    writing methods (``from_documents``, ``insert``, ``refresh_ref_docs`` …) when there is something
    to build, before anything is written; not a ``ValueError``, so the ingestion engine does not take it
    for a fault of one document (which would log it, skip every document and leave an empty index)."""

#: arguments of ``as_query_engine`` that go to the response synthesizer; the rest go to ``as_retriever``
_SYNTHESIZER_KEYS = frozenset({
    "text_qa_template", "refine_template", "summary_template", "simple_template", "use_async",
    "prompt_helper", "response_synthesizer", "verbose", "callback_manager",
})


class _IndexStep(TransformComponent):
    """The last transformation of a docstore-backed index's engine: runs the index's
    :meth:`BaseIndex._prepare_nodes` (outside the write transaction) and keeps the result for
    :meth:`BaseIndex._add_nodes_to_index`.  Its :meth:`to_config` is the index's
    :meth:`BaseIndex._index_config`, so that configuration is part of every source fingerprint."""

    def __init__(self, index: "BaseIndex[Any]") -> None:
        super().__init__()
        self._index = index

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> List[BaseNode]:
        out = list(nodes)
        if out:
            try:
                self._index._check_build_ready()
            except ValueError as exc:  # not a fault of these documents: stop the run, fail none of them
                raise IndexNotReadyError(f"{type(self._index).__name__} cannot build its nodes: {exc}") from exc
            self._index._prepared.update(self._index._prepare_nodes(out))
        return out

    def to_config(self) -> Dict[str, Any]:
        return {"class_name": f"{type(self._index).__name__}.index_step", **self._index._index_config()}


class IndexDocstore:
    """The shared docstore as one docstore-backed index sees it: what
    :class:`~ragloom.ingestion.engine.IngestionEngine` is given as its ``docstore``.

    Implements the part of the docstore protocol the engine uses:

    * ``add_documents``: into the shared docstore (with text: these indexes read nodes from it);
    * ``get_document_hash`` / ``set_document_hash(es)`` / ``get_source_document_hashes``: *this
      index's* source fingerprints (index store records).  A recorded source whose nodes are no longer
      all in the docstore (another index deleted them) reads as unrecorded, so it is rebuilt;
    * ``delete_ref_doc(d)``: release this index's nodes of source ``d`` (see
      :meth:`BaseIndex._release_source`; a pre-split node without a document is its own source);
      ``delete_document(d)``: forget the fingerprint of ``d``;
    * ``database``: the shared database (so the engine's writes are one transaction).
    """

    def __init__(self, index: "BaseIndex[Any]") -> None:
        self._index = index
        self._shared = index.docstore
        self._records = index.storage_context.index_store

    @property
    def database(self) -> Any:
        return self._shared.database

    # -- nodes ----------------------------------------------------------------------------------
    def add_documents(self, nodes: Sequence[BaseNode], allow_update: bool = True,
                      batch_size: Optional[int] = None, store_text: bool = True) -> None:
        self._shared.add_documents(nodes, allow_update=True, batch_size=batch_size, store_text=True)

    def delete_ref_doc(self, ref_doc_id: str, raise_error: bool = True) -> None:
        self._index._release_source(ref_doc_id, delete_from_docstore=True)

    def delete_document(self, doc_id: str, raise_error: bool = True) -> None:
        self._records.delete_source_hash(self._index.index_id, doc_id)

    # -- fingerprints ---------------------------------------------------------------------------
    def get_document_hash(self, doc_id: str) -> Optional[str]:
        fingerprint = self._records.get_source_hash(self._index.index_id, doc_id)
        if fingerprint is None or not self._nodes_present(doc_id):
            return None
        return fingerprint

    def _nodes_present(self, ref_doc_id: str) -> bool:
        """Whether the docstore still has every node this index holds of ``ref_doc_id``."""
        mine = self._records.get_index_node_ids(self._index.index_id, ref_doc_id=ref_doc_id)
        if not mine:
            return True
        if mine == [ref_doc_id]:  # a pre-split node that is its own source
            return bool(self._shared.get_nodes(mine, raise_error=False))
        info = self._shared.get_ref_doc_info(ref_doc_id)
        present = set(info.node_ids) if info is not None else set()
        missing = [n for n in mine if n not in present]
        if missing:
            logger.warning("index %s: %d nodes of document %s were deleted from the docstore by another index; "
                           "the document will be rebuilt", self._index.index_id, len(missing), ref_doc_id)
        return not missing

    def set_document_hash(self, doc_id: str, doc_hash: str) -> None:
        self.set_document_hashes({doc_id: doc_hash})

    def set_document_hashes(self, doc_hashes: Dict[str, str]) -> None:
        if doc_hashes:
            self._records.set_source_hashes(self._index.index_id, dict(doc_hashes))

    def get_source_document_hashes(self) -> Dict[str, str]:
        return self._records.get_source_hashes(self._index.index_id)


class BaseIndex(ABC, Generic[IS]):
    """Base of the docstore-backed indexes (LlamaIndex's ``BaseIndex``): see the module docstring.

    Args:
        nodes: nodes to add now (written to the docstore as given; no fingerprints are recorded).
        objects: more nodes (LlamaIndex passes ``IndexNode`` s here); added after ``nodes``.
        index_struct: the struct of an existing index (reopening it: ``load_index_from_storage``).
        storage_context: where nodes, struct and records live; default: a new in-memory
            :class:`~ragloom.storage.StorageContext` (``persist()`` it to keep it).
        callback_manager: where events go (default: inherited, see :mod:`ragloom.callbacks.base`):
            ingestion runs in an ``"index_construction"`` trace whose node parsers and embed model
            report to it, and the query engines this index makes get it.
        transformations: node parsers used by ``from_documents`` / ``insert`` / ``refresh_ref_docs``;
            default: the ones a reopened index recorded, else ``Settings.transformations`` /
            ``Settings.node_parser``.
        show_progress: progress bars.
        llm: the LLM this index uses when it needs one (building or querying), an
            :class:`~ragloom.llms.LLM` or a :func:`~ragloom.llms.resolve_llm` string; default
            ``Settings.llm``, resolved only when needed.
        embed_model: the embedding model, when the index needs one (``"default"``, an instance …);
            default ``Settings.embed_model``, resolved only when needed.
        insert_batch_size: nodes per transaction for ``insert_nodes`` (>= 1).

    Raises:
        ValueError: an argument this index kind does not know (named), a bad ``insert_batch_size``,
            ``objects`` / ``nodes`` that are not nodes, or an ``index_struct`` of another kind.
    """

    #: the struct class of this index kind (tagged, registered in :mod:`ragloom.data_structs`)
    index_struct_cls: ClassVar[Type[DocstoreIndexStruct]] = DocstoreIndexStruct
    #: ``response_mode`` of :meth:`as_query_engine` when none is given
    default_response_mode: ClassVar[str] = "compact"
    #: whether :meth:`as_retriever` takes ``llm=`` (then ``as_query_engine(llm=...)`` passes it on, so
    #: an LLM-driven retriever uses the same model as the answer)
    retriever_accepts_llm: ClassVar[bool] = False

    def __init__(
        self,
        nodes: Optional[Sequence[BaseNode]] = None,
        objects: Optional[Sequence[Any]] = None,
        index_struct: Optional[IS] = None,
        storage_context: Any = None,
        callback_manager: Any = None,
        transformations: Optional[List[TransformComponent]] = None,
        show_progress: bool = False,
        llm: Any = None,
        embed_model: Any = None,
        insert_batch_size: int = DEFAULT_INSERT_BATCH_SIZE,
        **kwargs: Any,
    ) -> None:
        from ragloom.storage import StorageContext

        if kwargs:
            raise ValueError(f"{type(self).__name__} got unexpected argument(s): {', '.join(sorted(kwargs))}")
        if not isinstance(insert_batch_size, int) or insert_batch_size < 1:
            raise ValueError(f"insert_batch_size must be an int >= 1, got {insert_batch_size!r}")
        if index_struct is not None and not isinstance(index_struct, self.index_struct_cls):
            raise ValueError(f"index_struct must be a {self.index_struct_cls.__name__} for {type(self).__name__}, "
                             f"got {type(index_struct).__name__}")
        all_nodes = _check_nodes(nodes, "nodes") + _check_nodes(objects, "objects")
        self._storage_context = storage_context if storage_context is not None else StorageContext.from_defaults()
        self._callback_manager = callback_manager
        self._transformations = list(transformations) if transformations is not None else None
        self._show_progress = show_progress
        self._llm_arg = llm
        self._embed_arg = embed_model
        self._embed_model: Any = None
        self._insert_batch_size = insert_batch_size
        #: what :meth:`_prepare_nodes` computed for nodes not yet written, by node id
        self._prepared: Dict[str, Any] = {}
        if index_struct is None:
            self._index_struct: IS = self._build_index_struct()
            self._save_index_struct()
        else:
            self._index_struct = index_struct
        if all_nodes:
            self.insert_nodes(all_nodes, show_progress=show_progress)

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def from_documents(
        cls,
        documents: Sequence[Document],
        storage_context: Any = None,
        show_progress: bool = False,
        callback_manager: Any = None,
        transformations: Optional[List[TransformComponent]] = None,
        raise_on_error: bool = False,
        **kwargs: Any,
    ) -> "BaseIndex[IS]":
        """Split ``documents`` with ``transformations`` and build the index over their nodes.

        Runs the ingestion engine in batches of :data:`DOCUMENTS_PER_BATCH` documents, one
        transaction each.  A document that cannot be ingested is logged and skipped
        (``raise_on_error=True`` raises :class:`~ragloom.errors.IngestionError` after the others are
        stored).  ``kwargs`` go to the constructor (``llm``, ``max_keywords_per_chunk`` …).
        """
        index = cls(storage_context=storage_context, callback_manager=callback_manager,
                    transformations=transformations, show_progress=show_progress, **kwargs)
        index._ingest(documents, show_progress=show_progress, raise_on_error=raise_on_error)
        return index

    def _build_index_struct(self) -> IS:
        """A new, empty struct (override to fill in configuration)."""
        return self.index_struct_cls()  # type: ignore[return-value]

    # -- properties -----------------------------------------------------------------------------
    @property
    def storage_context(self) -> Any:
        return self._storage_context

    @property
    def docstore(self) -> Any:
        """The storage context's (shared) docstore."""
        return self._storage_context.docstore

    @property
    def index_struct(self) -> IS:
        """The index struct; for kinds whose contents live in the index store's records (node lists,
        keyword tables) a copy with those contents filled in (see :meth:`_materialize_struct`)."""
        return self._materialize_struct()

    def _materialize_struct(self) -> IS:
        return self._index_struct

    @property
    def index_id(self) -> str:
        return self._index_struct.index_id

    def set_index_id(self, index_id: str) -> None:
        """Rename the index (its struct and its records) inside its storage context.

        Raises:
            ValueError: ``index_id`` is empty or already used in this storage context.
        """
        if not isinstance(index_id, str) or not index_id:
            raise ValueError(f"index_id must be a non-empty str, got {index_id!r}")
        if index_id == self.index_id:
            return
        store = self._storage_context.index_store
        if store.get_index_struct(index_id) is not None:
            raise ValueError(f"index_id {index_id!r} is already used in this storage context")
        with self._storage_context.transaction():
            store.rename_index(self.index_id, index_id)
            store.delete_index_struct(self.index_id)
            self._index_struct.index_id = index_id
            self._save_index_struct()

    @property
    def callback_manager(self) -> Any:
        """The :class:`~ragloom.callbacks.CallbackManager` this index reports to: its own, else the
        inherited one (``Settings.callback_manager`` outside any event)."""
        from ragloom.callbacks.base import resolve_callback_manager

        return resolve_callback_manager(self._callback_manager)

    @property
    def llm(self) -> Any:
        """The LLM given to the constructor, else ``Settings.llm``.

        Raises:
            ValueError: neither is set (the message lists how to configure one).
        """
        from ragloom.response_synthesizers.base import llm_or_default

        return llm_or_default(self._llm_arg)

    @property
    def embed_model(self) -> Any:
        """The embed model given to the constructor (resolved once), else ``Settings.embed_model``."""
        if self._embed_model is None:
            from ragloom.embeddings import resolve_embed_model
            from ragloom.settings import Settings

            self._embed_model = (resolve_embed_model(self._embed_arg) if self._embed_arg is not None
                                 else Settings.embed_model)
        return self._embed_model

    @property
    def transformations(self) -> List[TransformComponent]:
        """The node parsers documents go through: ``transformations=`` when given; for a reopened index
        the ones it recorded (so its next refresh re-chunks nothing); else
        :func:`~ragloom.indices.vector_store.default_transformations`."""
        if self._transformations is None:
            from ragloom.indices.vector_store import default_transformations

            self._transformations = rebuild_transformations(self._index_struct.node_parser, self.index_id) \
                or default_transformations(None)
        return self._transformations

    @property
    def ref_doc_info(self) -> Dict[str, Any]:
        """``{ref_doc_id: RefDocInfo(node_ids, metadata)}`` of the source documents *this index* holds
        (node ids in insertion order; metadata from the docstore)."""
        from ragloom.storage.docstore.types import RefDocInfo

        out = {}
        for ref, node_ids in self._storage_context.index_store.get_index_node_refs(self.index_id).items():
            info = self.docstore.get_ref_doc_info(ref)
            out[ref] = RefDocInfo(node_ids=list(node_ids), metadata=dict(info.metadata) if info is not None else {})
        return out

    # -- hooks for subclasses -------------------------------------------------------------------
    def _index_config(self) -> Dict[str, Any]:
        """JSON-able configuration that, besides the transformations, decides what this index stores
        for a node (a prompt, ``max_keywords_per_chunk``, the LLM's name).  Part of every source
        fingerprint: when it changes, the next refresh rebuilds every document."""
        return {}

    def _check_build_ready(self) -> None:
        """Raise ``ValueError`` when this index cannot build nodes at all (its LLM is not configured);
        called once per batch with nodes to build, before :meth:`_prepare_nodes`.  The writing method
        then raises :class:`IndexNotReadyError` instead of failing each document."""

    def _after_write(self) -> None:
        """Derived work once a write has committed, outside its transaction (embedding new triplets,
        re-summarising a tree): called after :meth:`from_documents` / :meth:`insert` /
        :meth:`refresh_ref_docs` (also when they raise :class:`~ragloom.errors.IngestionError`: the
        other documents were written) and after a successful :meth:`insert_nodes`."""

    def _prepare_nodes(self, nodes: List[BaseNode]) -> Dict[str, Any]:
        """Per-node work done **outside** the write transaction, before the nodes are written (LLM
        calls go here); returns ``{node_id: data}`` handed to :meth:`_add_nodes_to_index`.  A
        ``ValueError`` fails the batch's documents one by one (the engine isolates the culprit)."""
        return {}

    def _add_nodes_to_index(self, nodes: Sequence[BaseNode], prepared: Dict[str, Any]) -> None:
        """Add ``nodes`` (already in the docstore and in this index's node records) to the index's own
        structure, **inside** the write transaction; ``prepared`` is what :meth:`_prepare_nodes`
        returned for them.  The struct is saved afterwards."""

    def _delete_nodes_from_index(self, node_ids: Sequence[str]) -> None:
        """Remove ``node_ids`` from the index's own structure, **inside** the transaction that releases
        them (their node records and postings are removed by the base afterwards).  The struct is
        saved afterwards."""

    # -- records --------------------------------------------------------------------------------
    def _node_ids(self, ref_doc_id: Optional[str] = None) -> List[str]:
        """Ids of the nodes this index holds (of source ``ref_doc_id`` only, when given), in insertion order."""
        return self._storage_context.index_store.get_index_node_ids(self.index_id, ref_doc_id=ref_doc_id)

    def _get_nodes(self, node_ids: Sequence[str]) -> List[BaseNode]:
        """The nodes of ``node_ids`` from the docstore, in order; ids no longer there (deleted by another
        index sharing the docstore) are skipped with a warning."""
        nodes = self.docstore.get_nodes(list(node_ids), raise_error=False)
        if len(nodes) != len(node_ids):
            logger.warning("index %s: %d of its nodes are no longer in the docstore (another index replaced "
                           "their document); refresh this index to rebuild them", self.index_id,
                           len(node_ids) - len(nodes))
        return list(nodes)

    def _save_index_struct(self) -> None:
        """Store the struct (its JSON) in the index store."""
        self._storage_context.index_store.add_index_struct(self._index_struct)

    def _release_source(self, ref_doc_id: str, delete_from_docstore: bool) -> None:
        """Remove this index's nodes of source ``ref_doc_id`` and its fingerprint, in one transaction:
        :meth:`_delete_nodes_from_index`, then the node records (and postings); with
        ``delete_from_docstore``, the released nodes that no other docstore-backed index holds are
        deleted from the docstore too."""
        store = self._storage_context.index_store
        with self._storage_context.transaction():
            node_ids = store.get_index_node_ids(self.index_id, ref_doc_id=ref_doc_id)
            if node_ids:
                self._delete_nodes_from_index(node_ids)
                store.delete_index_nodes(self.index_id, node_ids)
                self._save_index_struct()
            store.delete_source_hash(self.index_id, ref_doc_id)
            if delete_from_docstore and node_ids:
                held = store.nodes_held_elsewhere(self.index_id, node_ids)
                for node_id in node_ids:
                    if node_id not in held:
                        self.docstore.delete_document(node_id, raise_error=False)

    def _on_nodes_written(self, nodes: List[BaseNode], ids: List[str]) -> None:
        """The engine's ``on_nodes_written`` (inside the write transaction)."""
        from ragloom.ingestion.engine import source_id

        self._storage_context.index_store.add_index_nodes(self.index_id, [(n.node_id, source_id(n)) for n in nodes])
        prepared = {n.node_id: self._prepared.pop(n.node_id) for n in nodes if n.node_id in self._prepared}
        self._add_nodes_to_index(nodes, prepared)
        self._save_index_struct()

    # -- writing (thin callers of the ingestion engine) ------------------------------------------
    def _engine(self, transformations: Optional[Sequence[TransformComponent]] = None,
                plan_sources: bool = True) -> Any:
        """The :class:`~ragloom.ingestion.engine.IngestionEngine` of this index: ``transformations``
        (default: the index's) then the index step, over :class:`IndexDocstore` and no vector store."""
        from ragloom.ingestion.engine import IngestionEngine

        steps = list(self.transformations if transformations is None else transformations)
        return IngestionEngine(
            [*steps, _IndexStep(self)],
            docstore=IndexDocstore(self),
            vector_store=None,
            on_nodes_written=self._on_nodes_written,
            plan_sources=plan_sources,
        )

    def _ingest(self, documents: Sequence[Document], force: bool = False, show_progress: bool = False,
                raise_on_error: bool = False) -> Any:
        """Run the engine over ``documents`` in batches; returns ``(IngestionStats, list[Plan])``."""
        from ragloom.callbacks.base import callback_scope

        plans: List[Any] = []
        self._record_transformations(self.transformations)
        try:
            with callback_scope(self._callback_manager, "index_construction"):  # parsers report to the index's
                stats = self._engine().run(
                    _batches(list(documents), DOCUMENTS_PER_BATCH), force=force, raise_on_error=raise_on_error,
                    plans=plans, show_progress=show_progress,
                )
        except IngestionError:
            self._after_write()  # the documents that were written still get it
            raise
        finally:
            self._prepared.clear()  # prepared for documents that failed
        self._after_write()
        return stats, plans

    def _record_transformations(self, steps: Sequence[TransformComponent]) -> None:
        record = transformations_record(steps)
        if record and self._index_struct.node_parser != record:
            self._index_struct.node_parser = record
            self._save_index_struct()

    def insert_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **insert_kwargs: Any) -> None:
        """Add ``nodes`` as given (no splitting), in batches of ``insert_batch_size``, one transaction
        each.  No document fingerprints are compared or recorded; a node the index already holds is
        rewritten in place."""
        nodes = _check_nodes(nodes, "nodes")
        try:
            self._engine([], plan_sources=False).run(
                _batches(nodes, self._insert_batch_size), raise_on_error=True, show_progress=show_progress
            )
        finally:
            self._prepared.clear()
        self._after_write()

    def insert(self, document: Document, **insert_kwargs: Any) -> None:
        """Split and add one document (replacing its nodes if it was added before and changed).

        Raises:
            IngestionError: (a ``ValueError``) the document cannot be ingested.
        """
        self._ingest([document], show_progress=self._show_progress, raise_on_error=True)

    def delete_ref_doc(self, ref_doc_id: str, delete_from_docstore: bool = False, **delete_kwargs: Any) -> None:
        """Remove every node of document ``ref_doc_id`` from this index (and its fingerprint, so a later
        refresh adds it again).  ``delete_from_docstore``: also delete those nodes from the docstore,
        except the ones another docstore-backed index still holds (LlamaIndex deletes them whoever
        uses them).  An unknown id does nothing."""
        self._release_source(ref_doc_id, delete_from_docstore=delete_from_docstore)

    def delete_nodes(self, node_ids: List[str], delete_from_docstore: bool = False, **delete_kwargs: Any) -> None:
        """Remove ``node_ids`` from this index (from the docstore too with ``delete_from_docstore``,
        unless another docstore-backed index holds them)."""
        store = self._storage_context.index_store
        ids = list(node_ids)
        with self._storage_context.transaction():
            self._delete_nodes_from_index(ids)
            store.delete_index_nodes(self.index_id, ids)
            self._save_index_struct()
            if delete_from_docstore:
                held = store.nodes_held_elsewhere(self.index_id, ids)
                for node_id in ids:
                    if node_id not in held:
                        self.docstore.delete_document(node_id, raise_error=False)

    def update_ref_doc(self, document: Document, **update_kwargs: Any) -> None:
        """Rebuild the nodes of ``document`` (same ``id_``), changed or not.

        Raises:
            IngestionError: (a ``ValueError``) the document cannot be ingested.
        """
        self._ingest([document], force=True, show_progress=self._show_progress, raise_on_error=True)

    def refresh_ref_docs(self, documents: Sequence[Document], show_progress: bool = False,
                         raise_on_error: bool = False, **update_kwargs: Any) -> List[bool]:
        """Add new documents, rebuild changed ones, skip unchanged ones (no work at all: no splitting,
        no LLM call, no write).  "Changed": another :attr:`Document.hash`, other transformations or
        another :meth:`_index_config`.  Returns one ``bool`` per document: ``True`` if it was added or
        rebuilt.  A document that cannot be ingested is logged and gets ``False``
        (``raise_on_error=True`` raises :class:`~ragloom.errors.IngestionError` after the others).
        Of documents sharing an id, the last is the one ingested (a warning names the id): only it
        can get ``True``."""
        stats, plans = self._ingest(documents, show_progress=show_progress, raise_on_error=raise_on_error)
        return refreshed(documents, stats, plans)

    # -- reading --------------------------------------------------------------------------------
    @abstractmethod
    def as_retriever(self, **kwargs: Any) -> Any:
        """A retriever over this index (a :class:`~ragloom.retrievers.BaseRetriever`)."""

    def as_query_engine(self, llm: Any = None, **kwargs: Any) -> Any:
        """A :class:`~ragloom.query_engine.RetrieverQueryEngine` over :meth:`as_retriever`.

        Args:
            llm: the model, or a :func:`ragloom.llms.resolve_llm` string; default: the index's ``llm``
                argument, else ``Settings.llm``.
            **kwargs: ``response_mode`` (default :attr:`default_response_mode`), ``streaming``,
                ``node_postprocessors`` and the synthesizer arguments (``text_qa_template``,
                ``summary_template`` …) go to the engine; everything else to :meth:`as_retriever`.

        Raises:
            ValueError: no LLM for a mode that needs one; bad retriever or synthesizer arguments.
        """
        from ragloom.query_engine import RetrieverQueryEngine

        llm = llm if llm is not None else self._llm_arg
        response_mode = kwargs.pop("response_mode", self.default_response_mode)
        streaming = kwargs.pop("streaming", False)
        postprocessors = kwargs.pop("node_postprocessors", None)
        engine_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in _SYNTHESIZER_KEYS}
        engine_kwargs.setdefault("callback_manager", self._callback_manager)
        if llm is not None and "llm" not in kwargs and self.retriever_accepts_llm:
            kwargs["llm"] = llm
        retriever = self.as_retriever(**kwargs)
        return RetrieverQueryEngine.from_args(retriever, llm=llm, response_mode=response_mode, streaming=streaming,
                                              node_postprocessors=postprocessors, **engine_kwargs)

    def as_chat_engine(self, chat_mode: Any = "best", llm: Any = None, **kwargs: Any) -> Any:
        """A chat engine over this index (see :mod:`ragloom.chat_engine`); ``llm`` defaults to the
        index's ``llm`` argument, else ``Settings.llm``."""
        from ragloom.chat_engine.factory import chat_engine_for

        return chat_engine_for(self, chat_mode=chat_mode, llm=llm if llm is not None else self._llm_arg, **kwargs)


# -- helpers ---------------------------------------------------------------------------------------
def transformations_record(steps: Sequence[TransformComponent]) -> Dict[str, Any]:
    """What an index struct's ``node_parser`` records of ``steps`` (embed models left out): one
    step's ``to_config()``, or ``{"transformations": [config, ...]}``; ``{}`` for no step."""
    from ragloom.embeddings import BaseEmbedding

    configs = [t.to_config() for t in steps if not isinstance(t, BaseEmbedding)]
    if not configs:
        return {}
    record: Dict[str, Any] = dict(configs[0]) if len(configs) == 1 else {"transformations": configs}
    record["fingerprinted"] = True
    return record


def rebuild_transformations(record: Dict[str, Any], index_id: str) -> Optional[List[TransformComponent]]:
    """The transformations ``record`` (see :func:`transformations_record`) describes, or ``None`` (with a
    warning when something was recorded that cannot be rebuilt)."""
    from ragloom.node_parser.loading import transformations_from_config
    from ragloom.settings import Settings

    if not record:
        return None
    rebuilt = transformations_from_config(dict(record), Settings._embed_model)
    if rebuilt is None:
        logger.warning("index %s was built with transformations that cannot be rebuilt from the index alone; pass "
                       "the same transformations= when loading it, or the next refresh rebuilds every document",
                       index_id)
    return rebuilt


def _check_nodes(nodes: Optional[Sequence[Any]], name: str) -> List[BaseNode]:
    if nodes is None:
        return []
    out = list(nodes)
    for i, node in enumerate(out):
        if not isinstance(node, BaseNode):
            raise ValueError(f"{name}[{i}] must be a node (BaseNode), got {type(node).__name__}")
    return out


def _batches(items: List[Any], size: int) -> Iterator[List[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
