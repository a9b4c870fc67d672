"""``PropertyGraphIndex``: entities and relations extracted from every chunk (the offline-testable
subset of LlamaIndex's)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, List, Optional, Sequence

from ragloom.data_structs import IndexLPG
from ragloom.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, TRIPLET_SOURCE_KEY, EntityNode, Relation
from ragloom.indices.base import BaseIndex
from ragloom.indices.knowledge_graph.base import recorded_embed_model
from ragloom.schema import BaseNode, TransformComponent

logger = logging.getLogger(__name__)

__all__ = ["PropertyGraphIndex"]


@dataclass
class _Found:
    entities: List[EntityNode] = field(default_factory=list)
    relations: List[Relation] = field(default_factory=list)


class PropertyGraphIndex(BaseIndex[IndexLPG]):
    """A property graph of the entities and relations in the index's chunks (LlamaIndex's
    ``PropertyGraphIndex``, the part that runs offline and is tested).

    Each chunk goes through every ``kg_extractors`` transformation (on a copy: LlamaIndex's protocol,
    where an extractor leaves :class:`~ragloom.graph_stores.types.EntityNode` /
    :class:`~ragloom.graph_stores.types.Relation` lists under the ``"nodes"`` / ``"relations"``
    metadata keys); the entities and relations, tagged with the chunk's id (``triplet_source_id``), go
    to ``storage_context.property_graph_store`` — a
    :class:`~ragloom.graph_stores.SimplePropertyGraphStore` in the same SQLite database, committed with
    the chunks — and the chunks to the docstore, through the ingestion engine.  With
    ``embed_kg_nodes`` every entity name is embedded (after the write) for
    :class:`~ragloom.indices.property_graph.VectorContextRetriever`.

    Args:
        nodes, storage_context, transformations, callback_manager, show_progress: see
            :class:`~ragloom.indices.base.BaseIndex`.
        llm: for the default extractor and the default ``LLMSynonymRetriever`` (default ``Settings.llm``).
        kg_extractors: default ``[SimpleLLMPathExtractor(llm=llm)]``.  Their ``to_config()`` is part of
            each document's fingerprint: pass the same ones when reopening an index, or its next refresh
            re-extracts everything.
        property_graph_store: default the storage context's.
        vector_store: must be ``None`` (entity vectors are kept in the graph store).
        embed_model: embeds entity names and queries; default the model a reopened index recorded, else
            ``Settings.embed_model``.
        embed_kg_nodes: embed entities (default ``True``); recorded.
        use_async: accepted for LlamaIndex compatibility (chunks are extracted one at a time).

    **Incremental** as every ragloom index: unchanged documents cost nothing on refresh; a changed
    document's old relations are removed (entities nothing else uses go too) before its new chunks
    are extracted; ``delete_ref_doc`` removes them.

    **Left out compared with LlamaIndex** (not offline-testable here, or not needed by the above):
    ``ImplicitPathExtractor`` (so the default extractors are the LLM one only),
    ``SchemaLLMPathExtractor``, ``DynamicLLMPathExtractor``, text-to-Cypher and Cypher-template
    retrievers, ``CustomPGRetriever``, ``from_existing``, graph stores other than the SQLite one
    (Neo4j …), chunk nodes inside the graph (``upsert_llama_nodes``: chunks stay in the docstore),
    ``vector_store=``, async extraction.

    Raises:
        ValueError: ``vector_store`` given, an extractor that is not a ``TransformComponent``, or an
            unknown argument.
    """

    index_struct_cls: ClassVar[Any] = IndexLPG
    retriever_accepts_llm: ClassVar[bool] = True

    def __init__(
        self,
        nodes: Optional[Sequence[BaseNode]] = None,
        llm: Any = None,
        kg_extractors: Optional[List[TransformComponent]] = None,
        property_graph_store: Any = None,
        vector_store: Any = None,
        use_async: bool = True,
        embed_model: Any = None,
        embed_kg_nodes: Optional[bool] = None,
        callback_manager: Any = None,
        transformations: Optional[List[TransformComponent]] = None,
        storage_context: Any = None,
        show_progress: bool = False,
        index_struct: Optional[IndexLPG] = None,
        **kwargs: Any,
    ) -> None:
        from ragloom.indices.property_graph.transformations import SimpleLLMPathExtractor
        from ragloom.storage import StorageContext

        if vector_store is not None:
            raise ValueError("vector_store must be None: ragloom keeps entity vectors in the property graph store")
        if embed_kg_nodes is not None and not isinstance(embed_kg_nodes, bool):
            raise ValueError(f"embed_kg_nodes must be a bool, got {embed_kg_nodes!r}")
        extractors = list(kg_extractors) if kg_extractors is not None else [SimpleLLMPathExtractor(llm=llm)]
        for i, extractor in enumerate(extractors):
            if not isinstance(extractor, TransformComponent):
                raise ValueError(f"kg_extractors[{i}] must be a TransformComponent, got {type(extractor).__name__}")
        self._kg_extractors = extractors
        self._embed_kg_nodes_arg = embed_kg_nodes
        self._use_async = use_async
        storage_context = storage_context if storage_context is not None else StorageContext.from_defaults()
        if property_graph_store is not None:
            storage_context.property_graph_store = property_graph_store
        storage_context.property_graph_store.set_node_source(self._chunks)
        super().__init__(nodes=nodes, index_struct=index_struct, storage_context=storage_context, llm=llm,
                         embed_model=embed_model, callback_manager=callback_manager, transformations=transformations,
                         show_progress=show_progress, **kwargs)
        if embed_kg_nodes is not None and self._index_struct.embed_kg_nodes != embed_kg_nodes:
            self._index_struct.embed_kg_nodes = embed_kg_nodes
            self._save_index_struct()

    def _build_index_struct(self) -> IndexLPG:
        return IndexLPG(embed_kg_nodes=self._embed_kg_nodes_arg if self._embed_kg_nodes_arg is not None else True)

    def _chunks(self, node_ids: List[str]) -> List[BaseNode]:
        return list(self.docstore.get_nodes(node_ids, raise_error=False))

    # -- configuration ----------------------------------------------------------------------------
    @property
    def property_graph_store(self) -> Any:
        return self._storage_context.property_graph_store

    @property
    def embed_kg_nodes(self) -> bool:
        return self._index_struct.embed_kg_nodes

    @property
    def embed_model(self) -> Any:
        """See :func:`~ragloom.indices.knowledge_graph.base.recorded_embed_model`."""
        if self._embed_model is None:
            self._embed_model = recorded_embed_model(self._embed_arg, dict(self._index_struct.embed_model or {}))
        return self._embed_model

    def _index_config(self) -> Dict[str, Any]:
        return {"kg_extractors": [e.to_config() for e in self._kg_extractors]}

    # -- writing ----------------------------------------------------------------------------------------
    def _prepare_nodes(self, nodes: List[BaseNode]) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for node in nodes:
            work = node.copy()
            work.metadata = {k: v for k, v in node.metadata.items() if k not in (KG_NODES_KEY, KG_RELATIONS_KEY)}
            for extractor in self._kg_extractors:
                work = extractor([work])[0]
            found = _Found(entities=list(work.metadata.get(KG_NODES_KEY, [])),
                           relations=list(work.metadata.get(KG_RELATIONS_KEY, [])))
            for entity in found.entities:
                entity.properties = {**entity.properties, TRIPLET_SOURCE_KEY: node.node_id}
            for relation in found.relations:
                relation.properties = {**relation.properties, TRIPLET_SOURCE_KEY: node.node_id}
            out[node.node_id] = found
        return out

    def _add_nodes_to_index(self, nodes: Sequence[BaseNode], prepared: Dict[str, Any]) -> None:
        store = self.property_graph_store
        for node in nodes:
            found = prepared.get(node.node_id)
            if found is not None:
                store.upsert_nodes([e for e in found.entities if isinstance(e, EntityNode)])
                store.upsert_relations(found.relations)  # after the nodes, as LlamaIndex

    def _delete_nodes_from_index(self, node_ids: Sequence[str]) -> None:
        self.property_graph_store.delete_sources(list(node_ids))

    def _after_write(self) -> None:
        """Embed the entities without a vector (``embed_kg_nodes``); one transaction."""
        if not self.embed_kg_nodes:
            return
        store = self.property_graph_store
        model = self.embed_model
        identity = dict(model.identity())
        if self._index_struct.embed_model and self._index_struct.embed_model != identity:
            store.clear_embeddings()
        todo = store.entities_without_embedding()
        if not todo:
            return
        vectors = model.get_text_embedding_batch([str(e) for e in todo], show_progress=self._show_progress)
        for entity, vector in zip(todo, vectors, strict=True):
            entity.embedding = list(vector)
        with self._storage_context.transaction():
            store.upsert_nodes(todo)
            if self._index_struct.embed_model != identity:
                self._index_struct.embed_model = identity
                self._save_index_struct()


    # -- reading ------------------------------------------------------------------------------------------
    def as_retriever(self, sub_retrievers: Optional[List[Any]] = None, include_text: bool = True,
                     llm: Any = None, embed_model: Any = None, similarity_top_k: int = 4, path_depth: int = 1,
                     max_keywords: int = 10, synonym_prompt: Any = None,
                     include_text_preamble: Optional[str] = None, **kwargs: Any) -> Any:
        """A :class:`~ragloom.indices.property_graph.PGRetriever`.

        Args:
            sub_retrievers: default ``[LLMSynonymRetriever, VectorContextRetriever]`` (the second when
                the index embeds entities), built with the arguments below.
            include_text: return the source chunks with their facts (default), or the bare triplets.
            llm: for ``LLMSynonymRetriever`` (default: the index's ``llm``, else ``Settings.llm``).
            embed_model: for the query (default: the index's).
            similarity_top_k, path_depth: of ``VectorContextRetriever`` (``path_depth`` of both).
            max_keywords, synonym_prompt: of ``LLMSynonymRetriever``.
            include_text_preamble: what precedes a chunk's facts.

        Raises:
            ValueError: bad sub-retriever arguments, or an argument not listed here.
        """
        from ragloom.indices.property_graph.retriever import PGRetriever

        if kwargs:
            raise ValueError(f"as_retriever got unexpected argument(s): {', '.join(sorted(kwargs))}")
        from ragloom.indices.property_graph.sub_retrievers import LLMSynonymRetriever, VectorContextRetriever

        if sub_retrievers is None:
            store = self.property_graph_store
            sub_retrievers = [LLMSynonymRetriever(
                store, include_text=include_text, synonym_prompt=synonym_prompt, max_keywords=max_keywords,
                path_depth=path_depth, llm=llm if llm is not None else self._llm_arg,
                include_text_preamble=include_text_preamble)]
            if self.embed_kg_nodes:
                sub_retrievers.append(VectorContextRetriever(
                    store, include_text=include_text, similarity_top_k=similarity_top_k, path_depth=path_depth,
                    embed_model=embed_model if embed_model is not None else self.embed_model,
                    include_text_preamble=include_text_preamble))
        return PGRetriever(sub_retrievers, use_async=self._use_async, callback_manager=self._callback_manager)
