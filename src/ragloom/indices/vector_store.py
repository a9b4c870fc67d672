"""``VectorStoreIndex``: nodes embedded into a vector store, with a docstore and an index store beside it."""

from __future__ import annotations

import logging
from typing import Any, Dict, Iterator, List, Optional, Sequence

from ragloom.data_structs import IndexDict
from ragloom.embeddings import BaseEmbedding, resolve_embed_model
from ragloom.schema import BaseNode, Document, NodeWithScore, TransformComponent
from ragloom.settings import Settings

logger = logging.getLogger(__name__)

DEFAULT_INSERT_BATCH_SIZE = 2048
#: documents planned, transformed and committed per transaction by :meth:`VectorStoreIndex.from_documents`
DOCUMENTS_PER_BATCH = 256


def default_transformations(embed_model: Optional[BaseEmbedding] = None) -> List[TransformComponent]:
    """The transformations used when none are given.

    ``Settings.transformations`` / ``Settings.node_parser`` if the user set them; otherwise a
    :class:`~ragloom.node_parser.SentenceSplitter` whose budget is measured in
    ``embed_model``'s own tokenizer and capped at its text-token limit, so no chunk is
    truncated by the model that embeds it.
    """
    if Settings._transformations is not None:
        return list(Settings._transformations)
    if Settings._node_parser is not None and not Settings._node_parser_is_default:
        return [Settings._node_parser]
    if embed_model is None or embed_model is Settings._embed_model:
        return [Settings.node_parser]
    from ragloom.settings import default_node_parser

    return [default_node_parser(embed_model, Settings._chunk_size, Settings._chunk_overlap)]


class VectorStoreIndex:
    """An index over a vector store (LlamaIndex's ``VectorStoreIndex``).

    Args:
        nodes: nodes to add (embedded now if they have no embedding).
        storage_context: where vectors, nodes and the index struct live; default: a new
            in-memory :class:`~ragloom.storage.StorageContext` (``persist()`` it to keep it).
        embed_model: a :class:`~ragloom.embeddings.BaseEmbedding`, ``"default"`` or
            ``"local:NAME"``; default ``Settings.embed_model``.
        transformations: node parsers etc. used by :meth:`insert` and :meth:`from_documents`.
        show_progress: progress bars for embedding.
        store_nodes_override: also keep nodes in the docstore when the vector store stores text.
        insert_batch_size: nodes embedded and written per batch (bounds memory); >= 1.
        callback_manager: where events go (default: inherited, see :mod:`ragloom.callbacks.base`):
            ingestion (``from_documents``, ``insert`` …) runs in an ``"index_construction"``
            trace whose node parsers and embed model report to it, and the retrievers and query
            engines this index makes get it.

    Raises:
        ValueError: bad ``insert_batch_size``; ``callback_manager`` not a ``CallbackManager``.
    """

    def __init__(
        self,
        nodes: Optional[Sequence[BaseNode]] = None,
        storage_context: Any = None,
        embed_model: Any = None,
        transformations: Optional[List[TransformComponent]] = None,
        show_progress: bool = False,
        index_struct: Optional[IndexDict] = None,
        store_nodes_override: bool = False,
        insert_batch_size: int = DEFAULT_INSERT_BATCH_SIZE,
        callback_manager: Any = None,
        **kwargs: Any,
    ) -> None:
        from ragloom.callbacks.base import check_callback_manager
        from ragloom.storage import StorageContext

        if not isinstance(insert_batch_size, int) or insert_batch_size < 1:
            raise ValueError(f"insert_batch_size must be an int >= 1, got {insert_batch_size!r}")
        self._callback_manager = check_callback_manager(callback_manager)
        self._storage_context = storage_context or StorageContext.from_defaults()
        self._embed_model = _choose_embed_model(embed_model, index_struct)
        self._transformations = list(transformations) if transformations is not None else None
        self._show_progress = show_progress
        self._store_nodes_override = store_nodes_override
        self._insert_batch_size = insert_batch_size
        if index_struct is None:
            index_struct = IndexDict(embed_model=self._embed_model.identity())
            self._index_struct = index_struct
            self._storage_context.index_store.add_index_struct(index_struct)
            if nodes:
                self.insert_nodes(nodes, show_progress=show_progress)
        else:
            self._index_struct = index_struct
            if nodes:
                self.insert_nodes(nodes, show_progress=show_progress)

    # -- construction ------------------------------------------------------------
    @classmethod
    def from_documents(
        cls,
        documents: Sequence[Document],
        storage_context: Any = None,
        show_progress: bool = False,
        embed_model: Any = None,
        transformations: Optional[List[TransformComponent]] = None,
        raise_on_error: bool = False,
        **kwargs: Any,
    ) -> "VectorStoreIndex":
        """Split ``documents`` with ``transformations``, embed the nodes and store them.

        Runs the ingestion engine (:mod:`ragloom.ingestion.engine`) in batches of
        :data:`DOCUMENTS_PER_BATCH` documents, one transaction each.  Each document's fingerprint is
        recorded in the docstore, so :meth:`refresh_ref_docs` can later tell unchanged documents
        from changed ones.  A document that cannot be ingested (metadata longer than the chunk
        budget, values that are not JSON) is logged and skipped, and the others are stored;
        ``raise_on_error=True`` raises :class:`~ragloom.errors.IngestionError` after storing them.
        """
        index = cls(
            nodes=None,
            storage_context=storage_context,
            embed_model=embed_model,
            transformations=transformations,
            show_progress=show_progress,
            **kwargs,
        )
        index._ingest(documents, show_progress=show_progress, raise_on_error=raise_on_error)
        return index

    @classmethod
    def from_vector_store(cls, vector_store: Any, embed_model: Any = None, **kwargs: Any) -> "VectorStoreIndex":
        """An index over an existing vector store that stores node text (``stores_text``).

        Raises:
            ValueError: the vector store does not store text.
        """
        from ragloom.storage import StorageContext

        if not getattr(vector_store, "stores_text", False):
            raise ValueError("from_vector_store needs a vector store that stores node text (stores_text=True)")
        storage_context = StorageContext.from_defaults(vector_store=vector_store)
        return cls(nodes=None, storage_context=storage_context, embed_model=embed_model, **kwargs)

    # -- properties ------------------------------------------------------------------
    @property
    def storage_context(self) -> Any:
        return self._storage_context

    @property
    def vector_store(self) -> Any:
        return self._storage_context.vector_store

    @property
    def docstore(self) -> Any:
        return self._storage_context.docstore

    @property
    def index_struct(self) -> IndexDict:
        return self._index_struct

    @property
    def index_id(self) -> str:
        return self._index_struct.index_id

    def set_index_id(self, index_id: str) -> None:
        self._storage_context.index_store.delete_index_struct(self._index_struct.index_id)
        self._index_struct.index_id = index_id
        self._storage_context.index_store.add_index_struct(self._index_struct)

    @property
    def callback_manager(self) -> Any:
        """The :class:`~ragloom.callbacks.CallbackManager` this index reports to: its own, else the
        inherited one (``Settings.callback_manager`` outside any event)."""
        from ragloom.callbacks.base import resolve_callback_manager

        return resolve_callback_manager(self._callback_manager)

    @property
    def embed_model(self) -> BaseEmbedding:
        return self._embed_model

    @property
    def transformations(self) -> List[TransformComponent]:
        """The node parsers (and other steps) documents go through before the embed model.

        ``transformations=`` when given; for a reopened index, the ones it recorded when they can
        be rebuilt (so a :meth:`refresh_ref_docs` after ``load_index_from_storage`` re-chunks
        nothing); else :func:`default_transformations`.
        """
        if self._transformations is None:
            self._transformations = self._recorded_transformations() or default_transformations(self._embed_model)
        return self._transformations

    def _recorded_transformations(self) -> Optional[List[TransformComponent]]:
        from ragloom.node_parser.loading import transformations_from_config

        recorded = dict(self._index_struct.node_parser or {})
        if not recorded:
            return None
        rebuilt = transformations_from_config(recorded, self._embed_model)
        if rebuilt is None:
            logger.warning(
                "index %s was built with transformations that cannot be rebuilt from the index alone (%s); "
                "pass the same transformations= when loading it, or the next refresh re-chunks every document",
                self.index_id, ", ".join(str(c.get("class_name")) for c in recorded.get("transformations", [recorded])),
            )
        return rebuilt

    def _record_transformations(self, steps: Sequence[TransformComponent]) -> None:
        """Keep the parsers' configuration in the index struct (see :attr:`transformations`)."""
        configs = [t.to_config() for t in steps if not isinstance(t, BaseEmbedding)]
        if not configs:
            return
        record: Dict[str, Any] = dict(configs[0]) if len(configs) == 1 else {"transformations": configs}
        record["fingerprinted"] = True
        if self._index_struct.node_parser != record:
            self._index_struct.node_parser = record
            self._storage_context.index_store.add_index_struct(self._index_struct)

    @property
    def ref_doc_info(self) -> Dict[str, Any]:
        """``{ref_doc_id: RefDocInfo(node_ids, metadata)}`` of every source document in the index.

        From the docstore when it holds the nodes; when the vector store keeps the text (the
        default SQLite store) and the docstore does not, from the vector store itself (LlamaIndex
        raises ``NotImplementedError`` there).

        Raises:
            NotImplementedError: the nodes live only in a vector store that cannot list them by
                document (pass ``store_nodes_override=True`` when building the index).
        """
        from ragloom.storage.docstore.types import RefDocInfo

        info = self.docstore.get_all_ref_doc_info() or {}
        if info or not getattr(self.vector_store, "stores_text", False):
            return info
        lister = getattr(self.vector_store, "ref_doc_nodes", None)
        if not callable(lister):
            raise NotImplementedError(
                f"{type(self.vector_store).__name__} keeps the nodes and cannot list them by document; "
                "build the index with store_nodes_override=True to keep them in the docstore too"
            )
        return {ref: RefDocInfo(node_ids=ids, metadata=meta) for ref, (ids, meta) in lister().items()}

    # -- writing (thin callers of the ingestion engine) -----------------------------------------
    def _engine(self, transformations: Optional[Sequence[TransformComponent]] = None, plan_sources: bool = True) -> Any:
        """The :class:`~ragloom.ingestion.engine.IngestionEngine` over this index's stores:
        ``transformations`` (default: the index's) followed by the embed model, ``UPSERTS``."""
        from ragloom.ingestion.engine import IngestionEngine

        steps = list(self.transformations if transformations is None else transformations)
        if not any(isinstance(t, BaseEmbedding) for t in steps):
            steps.append(self._embed_model)
        keep_text = not self.vector_store.stores_text or self._store_nodes_override
        return IngestionEngine(
            steps,
            docstore=self.docstore,
            vector_store=self.vector_store,
            store_doc_text=keep_text,
            on_nodes_written=self._record_nodes if keep_text else None,
            plan_sources=plan_sources,
        )

    def _record_nodes(self, nodes: List[BaseNode], ids: List[str]) -> None:
        for node, vid in zip(nodes, ids, strict=True):
            self._index_struct.add_node(node.node_id, vid)
        self._storage_context.index_store.add_index_struct(self._index_struct)

    def insert_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> None:
        """Embed (where needed) and store ``nodes`` as given, in batches of ``insert_batch_size``.

        No document fingerprints are compared or recorded (use :meth:`refresh_ref_docs` or an
        :class:`~ragloom.ingestion.IngestionPipeline` with pre-split nodes for that).

        Raises:
            ValueError: the vector store cannot hold one of the nodes (its ``validate_nodes``);
                raised before any node is embedded.
        """
        from ragloom.callbacks.base import callback_scope

        nodes = list(nodes)
        self.vector_store.validate_nodes(nodes)
        with callback_scope(self._callback_manager, "index_construction"):
            self._engine([], plan_sources=False).run(
                _batches(nodes, self._insert_batch_size), raise_on_error=True, show_progress=show_progress
            )

    def _ingest(self, documents: Sequence[Document], force: bool = False, show_progress: bool = False,
                raise_on_error: bool = False) -> Any:
        """Run the engine over ``documents`` in batches; returns ``(IngestionStats, list[Plan])``."""
        from ragloom.callbacks.base import callback_scope

        plans: List[Any] = []
        self._record_transformations(self.transformations)
        with callback_scope(self._callback_manager, "index_construction"):
            stats = self._engine().run(
                _batches(list(documents), DOCUMENTS_PER_BATCH),
                force=force,
                raise_on_error=raise_on_error,
                plans=plans,
                show_progress=show_progress,
            )
        return stats, plans

    def insert(self, document: Document, raise_on_error: bool = True, **kwargs: Any) -> None:
        """Split, embed and store one document (replacing its nodes if it was stored before).

        Raises:
            IngestionError: (a ``ValueError``) the document cannot be ingested (``raise_on_error``).
        """
        self._ingest([document], show_progress=self._show_progress, raise_on_error=raise_on_error)

    def delete_ref_doc(self, ref_doc_id: str, delete_from_docstore: bool = False, **kwargs: Any) -> None:
        """Remove every node of document ``ref_doc_id`` from the vector store, and its record from the
        docstore (with ``delete_from_docstore``; always when the docstore holds only its fingerprint
        and links, so a later :meth:`refresh_ref_docs` re-inserts it)."""
        with self._transaction():
            self.vector_store.delete(ref_doc_id)
            self.docstore.delete_ref_doc(ref_doc_id, raise_error=False)
            self.docstore.delete_document(ref_doc_id, raise_error=False)

    def delete_nodes(self, node_ids: List[str], delete_from_docstore: bool = False, **delete_kwargs: Any) -> None:
        """Remove the nodes ``node_ids`` from the vector store (LlamaIndex's ``delete_nodes``), and
        their records from the docstore too with ``delete_from_docstore``.  Ids not stored are ignored;
        ``delete_kwargs`` go to the vector store's ``delete_nodes``.

        A document some of whose nodes are removed keeps its fingerprint: :meth:`refresh_ref_docs`
        still finds it unchanged (rebuild it with :meth:`update_ref_doc`, or remove it whole with
        :meth:`delete_ref_doc`).

        Raises:
            NotImplementedError: the vector store cannot delete nodes by id.
        """
        ids = list(dict.fromkeys(node_ids))
        if not ids:
            return
        wanted = set(ids)
        mapped = {vid: nid for vid, nid in self._index_struct.nodes_dict.items() if nid in wanted}
        targets = list(mapped) + [i for i in ids if i not in set(mapped.values())]
        with self._transaction():
            self.vector_store.delete_nodes(targets, **delete_kwargs)
            if mapped:
                for vid in mapped:
                    self._index_struct.delete(vid)
                self._storage_context.index_store.add_index_struct(self._index_struct)
            if delete_from_docstore:
                for node_id in ids:
                    self.docstore.delete_document(node_id, raise_error=False)

    def update_ref_doc(self, document: Document, **kwargs: Any) -> None:
        """Replace the nodes of ``document`` (same ``id_``) with freshly split and embedded ones.

        Raises:
            IngestionError: (a ``ValueError``) the document cannot be ingested.
        """
        self._ingest([document], force=True, show_progress=self._show_progress, raise_on_error=True)

    def refresh_ref_docs(self, documents: Sequence[Document], show_progress: bool = False,
                         raise_on_error: bool = False, **kwargs: Any) -> List[bool]:
        """Insert new documents, replace changed ones, skip unchanged ones.

        "Changed" means a different :attr:`Document.hash` *or* different transformations (a new
        splitter configuration re-chunks every document).  Returns ``list[bool]``, one per document:
        ``True`` if it was inserted or updated.  A document that cannot be ingested is logged and
        gets ``False`` (``raise_on_error=True`` raises :class:`~ragloom.errors.IngestionError`
        after the others are written).  Of documents sharing an id, the last is the one ingested (a
        warning names the id): only it can get ``True``.
        """
        from ragloom.indices.base import refreshed

        stats, plans = self._ingest(documents, show_progress=show_progress, raise_on_error=raise_on_error)
        return refreshed(documents, stats, plans)

    def _transaction(self) -> Any:
        return self._storage_context.transaction()

    # -- reading -------------------------------------------------------------------------
    def _build_node_list_from_query_result(self, result: Any) -> List[NodeWithScore]:
        sims = list(result.similarities or [])
        if result.nodes is not None:
            nodes = list(result.nodes)
        else:
            ids = list(result.ids or [])
            node_ids = [self._index_struct.nodes_dict.get(i, i) for i in ids]
            nodes = self.docstore.get_nodes(node_ids)
        out = []
        for i, node in enumerate(nodes):
            out.append(NodeWithScore(node=node, score=sims[i] if i < len(sims) else None))
        return out

    def as_retriever(self, **kwargs: Any) -> Any:
        """A :class:`~ragloom.retrievers.VectorIndexRetriever` (``similarity_top_k``, ``filters`` …).

        Raises:
            TypeError: a keyword argument the retriever does not take (LlamaIndex ignores it).
            ValueError: a bad retriever argument (see the retriever).
        """
        from ragloom.retrievers import VectorIndexRetriever

        kwargs.setdefault("callback_manager", self._callback_manager)
        return VectorIndexRetriever(self, **kwargs)

    def as_query_engine(
        self,
        llm: Any = None,
        response_mode: Any = "compact",
        streaming: bool = False,
        node_postprocessors: Optional[List[Any]] = None,
        **kwargs: Any,
    ) -> Any:
        """A :class:`~ragloom.query_engine.RetrieverQueryEngine`: retrieve, postprocess, answer with ``llm``.

        Args:
            llm: the model, or a :func:`ragloom.llms.resolve_llm` specification string
                (``"openai_like:<model>@<api_base>"``, ``"ollama:<model>"``, ``"local"``);
                default ``Settings.llm``.
            response_mode: a :class:`~ragloom.response_synthesizers.ResponseMode` value
                (``"compact"``, ``"refine"``, ``"tree_summarize"``, ``"simple_summarize"``,
                ``"accumulate"``, ``"no_text"`` …).
            streaming: answers as ``StreamingResponse``.
            node_postprocessors: applied to retrieved nodes before synthesis.
            **kwargs: synthesizer arguments (``text_qa_template``, ``refine_template``,
                ``summary_template``, ``simple_template``, ``use_async``, ``prompt_helper``,
                ``response_synthesizer``, ``verbose``, ``callback_manager``); everything else goes
                to :meth:`as_retriever` (``similarity_top_k``, ``filters``, ``vector_store_query_mode`` …).

        Raises:
            ValueError: no ``llm`` and no ``Settings.llm`` for a mode that needs one (the message
                lists how to configure one); bad retriever or synthesizer arguments.
            TypeError: an argument that is neither a synthesizer nor a retriever argument (LlamaIndex
                ignores it).
        """
        from ragloom.query_engine import RetrieverQueryEngine

        engine_keys = {
            "text_qa_template", "refine_template", "summary_template", "simple_template", "use_async",
            "prompt_helper", "response_synthesizer", "verbose", "callback_manager",
        }
        engine_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in engine_keys}
        engine_kwargs.setdefault("callback_manager", self._callback_manager)
        retriever = self.as_retriever(callback_manager=engine_kwargs["callback_manager"], **kwargs)
        return RetrieverQueryEngine.from_args(
            retriever,
            llm=llm,
            response_mode=response_mode,
            streaming=streaming,
            node_postprocessors=node_postprocessors,
            **engine_kwargs,
        )

    def as_chat_engine(self, chat_mode: Any = "best", llm: Any = None, **kwargs: Any) -> Any:
        """A chat engine over this index: :func:`ragloom.chat_engine.factory.chat_engine_for` (``chat_mode``
        ``best`` = ``condense_plus_context``, ``context``, ``condense_question``, ``simple``; ``llm``
        default ``Settings.llm``; retriever, query engine and engine arguments in ``kwargs``).

        Raises:
            ValueError: as :func:`~ragloom.chat_engine.factory.chat_engine_for`.
            TypeError: an argument no part of the engine takes (LlamaIndex ignores it).
        """
        from ragloom.chat_engine.factory import chat_engine_for

        return chat_engine_for(self, chat_mode=chat_mode, llm=llm, **kwargs)


def _choose_embed_model(embed_model: Any, index_struct: Optional[IndexDict]) -> BaseEmbedding:
    """The embed model of an index: for a stored index (``index_struct``), the recorded one — or
    ``embed_model`` / a matching ``Settings.embed_model`` after checking it is the same model."""
    from ragloom.embeddings import check_embed_model, embed_model_from_identity

    recorded = (index_struct.embed_model or {}) if index_struct is not None else {}
    if embed_model is not None:
        model = resolve_embed_model(embed_model)
        check_embed_model(recorded, model)
        return model
    if not recorded:
        return Settings.embed_model
    current = Settings._embed_model
    if current is not None and current.model_name == recorded.get("model_name") \
            and current.class_name() == recorded.get("class_name") \
            and current.to_config().get("quantize") == recorded.get("quantize"):
        return current
    return embed_model_from_identity(recorded)


def _batches(items: List[Any], size: int) -> Iterator[List[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
