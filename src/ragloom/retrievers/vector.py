"""Dense retrieval over a :class:`~ragloom.indices.VectorStoreIndex`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional

from ragloom.retrievers.base import BaseRetriever
from ragloom.schema import NodeWithScore, QueryBundle

if TYPE_CHECKING:
    from ragloom.indices.vector_store import VectorStoreIndex


class VectorIndexRetriever(BaseRetriever):
    """Embed the query with the index's embed model and take the ``similarity_top_k`` nearest nodes.

    Args:
        index: the index to search.
        similarity_top_k: how many nodes to return; must be >= 1.
        filters: :class:`~ragloom.vector_stores.types.MetadataFilters` pushed down to the vector store.
        node_ids / doc_ids: restrict the search to these node ids / ``ref_doc_id`` values.

    Raises:
        ValueError: ``similarity_top_k`` < 1.
    """

    def __init__(
        self,
        index: "VectorStoreIndex",
        similarity_top_k: int = 2,
        filters: Any = None,
        node_ids: Optional[List[str]] = None,
        doc_ids: Optional[List[str]] = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(similarity_top_k, int) or similarity_top_k < 1:
            raise ValueError(f"similarity_top_k must be an int >= 1, got {similarity_top_k!r}")
        self._index = index
        self.similarity_top_k = similarity_top_k
        self.filters = filters
        self.node_ids = node_ids
        self.doc_ids = doc_ids

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        from ragloom.vector_stores.types import VectorStoreQuery

        index = self._index
        if query_bundle.embedding is None:
            strs = query_bundle.embedding_strs
            if len(strs) == 1:
                query_bundle.embedding = index.embed_model.get_query_embedding(strs[0])
            else:
                query_bundle.embedding = index.embed_model.get_agg_embedding_from_queries(strs)
        query = VectorStoreQuery(
            query_embedding=query_bundle.embedding,
            similarity_top_k=self.similarity_top_k,
            node_ids=self.node_ids,
            doc_ids=self.doc_ids,
            query_str=query_bundle.query_str,
            filters=self.filters,
        )
        result = index.vector_store.query(query)
        return index._build_node_list_from_query_result(result)
