"""``VectorContextRetriever``: graph paths from the entities nearest the query (LlamaIndex's)."""

from __future__ import annotations

from typing import Any, List, Optional

from ragloom.graph_stores.types import entity_key
from ragloom.indices.property_graph.sub_retrievers.base import BasePGRetriever
from ragloom.schema import NodeWithScore, QueryBundle

__all__ = ["VectorContextRetriever"]


class VectorContextRetriever(BasePGRetriever):
    """The ``similarity_top_k`` entities whose name vectors are closest to the query (the graph
    store's ``vector_query``), then the triplets within ``path_depth`` hops of them; each triplet
    scores the best similarity of its two ends (0 for an end not found by the query), and the
    ``similarity_top_k`` best triplets are returned.  No LLM is called.

    Args:
        graph_store: a property graph store with ``supports_vector_queries`` (ragloom's
            :class:`~ragloom.graph_stores.SimplePropertyGraphStore` is one).
        include_text: see :class:`~ragloom.indices.property_graph.sub_retrievers.base.BasePGRetriever`.
        embed_model: for the query; it must be the model the entities were embedded with (default
            ``Settings.embed_model``; ``PropertyGraphIndex.as_retriever`` passes the index's).
        vector_store: must be ``None`` (ragloom keeps entity vectors in the graph store; LlamaIndex
            can keep them in a separate vector store).
        similarity_top_k: >= 1 (default 4).
        path_depth: hops, >= 1 (default 1).

    Raises:
        ValueError: ``vector_store`` given, ``similarity_top_k`` / ``path_depth`` < 1, or a graph store
            without vector queries.
    """

    def __init__(self, graph_store: Any, include_text: bool = True, embed_model: Any = None,
                 vector_store: Any = None, similarity_top_k: int = 4, path_depth: int = 1,
                 include_text_preamble: Optional[str] = None, callback_manager: Any = None) -> None:
        if vector_store is not None:
            raise ValueError("vector_store must be None: ragloom keeps entity vectors in the property graph store")
        for name, value in (("similarity_top_k", similarity_top_k), ("path_depth", path_depth)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if not graph_store.supports_vector_queries:
            raise ValueError(f"{type(graph_store).__name__} does not support vector queries")
        self._embed_arg = embed_model
        self._similarity_top_k = similarity_top_k
        self._path_depth = path_depth
        super().__init__(graph_store=graph_store, include_text=include_text,
                         include_text_preamble=include_text_preamble, callback_manager=callback_manager)

    @property
    def embed_model(self) -> Any:
        from ragloom.embeddings import resolve_embed_model
        from ragloom.settings import Settings

        if self._embed_arg is None:
            return Settings.embed_model
        self._embed_arg = resolve_embed_model(self._embed_arg)
        return self._embed_arg

    def retrieve_from_graph(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        from ragloom.vector_stores.types import VectorStoreQuery

        query = query_bundle.embedding
        if query is None:
            query = self.embed_model.get_agg_embedding_from_queries(query_bundle.embedding_strs)
        entities, scores = self._graph_store.vector_query(
            VectorStoreQuery(query_embedding=list(query), similarity_top_k=self._similarity_top_k))
        if not entities:
            return []
        score_of = {entity_key(e.id): s for e, s in zip(entities, scores, strict=True)}
        triplets = self._graph_store.get_rel_map(entities, depth=self._path_depth)
        scored = [(t, max(score_of.get(entity_key(t[0].id), 0.0), score_of.get(entity_key(t[2].id), 0.0)))
                  for t in triplets]
        top = sorted(scored, key=lambda x: -x[1])[: self._similarity_top_k]
        return self._get_nodes_with_score([t for t, _ in top], [s for _, s in top])
