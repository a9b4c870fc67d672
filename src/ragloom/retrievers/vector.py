"""Dense retrieval over a :class:`~ragloom.indices.VectorStoreIndex`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional

from ragloom.retrievers.base import BaseRetriever
from ragloom.schema import NodeWithScore, QueryBundle

if TYPE_CHECKING:
    from ragloom.indices.vector_store import VectorStoreIndex


class VectorIndexRetriever(BaseRetriever):
    """Retrieve the ``similarity_top_k`` best nodes of a :class:`~ragloom.indices.VectorStoreIndex`.

    By default the search is *hybrid* when the vector store supports it (the default
    SQLite store does): dense cosine similarity fused with BM25 keyword search over
    CJK-aware tokens (distribution-based score fusion, dense weight ``alpha``).  Dense-only
    models are weak on exact terms and on Chinese (all-MiniLM-L6-v2 is English-only); the
    keyword side covers both.  When ``alpha`` is not given it is chosen per query: 0.5, or 0
    (keyword only, no query embedding) for a mostly-CJK query when the embed model is not
    multilingual — measured on CMRC2018, any dense weight from an English-only model lowers
    nDCG@10 below BM25's 0.980 (``benchmarks/retrieval_quality.py``).  Pass
    ``vector_store_query_mode="default"`` for dense-only search, as in LlamaIndex, or
    ``"text_search"`` for BM25 only.

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
        vector_store_query_mode: Any = None,
        alpha: Optional[float] = None,
        sparse_top_k: Optional[int] = None,
        hybrid_top_k: Optional[int] = None,
        **kwargs: Any,
    ) -> None:
        from ragloom.vector_stores.types import VectorStoreQueryMode

        if not isinstance(similarity_top_k, int) or similarity_top_k < 1:
            raise ValueError(f"similarity_top_k must be an int >= 1, got {similarity_top_k!r}")
        self._index = index
        self.similarity_top_k = similarity_top_k
        self.filters = filters
        self.node_ids = node_ids
        self.doc_ids = doc_ids
        if vector_store_query_mode is None:
            hybrid = getattr(index.vector_store, "supports_hybrid", False)
            vector_store_query_mode = VectorStoreQueryMode.HYBRID if hybrid else VectorStoreQueryMode.DEFAULT
        try:
            self.vector_store_query_mode = VectorStoreQueryMode(vector_store_query_mode)
        except ValueError:
            allowed = ", ".join(m.value for m in VectorStoreQueryMode)
            raise ValueError(
                f"vector_store_query_mode must be one of {allowed}, got {vector_store_query_mode!r}"
            ) from None
        if alpha is not None and not 0.0 <= float(alpha) <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
        self.alpha = alpha
        self.sparse_top_k = sparse_top_k
        self.hybrid_top_k = hybrid_top_k

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        from ragloom.vector_stores.types import VectorStoreQuery

        index = self._index
        mode = self.vector_store_query_mode.value
        alpha = self.alpha
        if alpha is None and mode == "hybrid":
            from ragloom.analysis import is_mostly_cjk
            from ragloom.vector_stores.sqlite import DEFAULT_HYBRID_ALPHA

            multilingual = bool(getattr(index.embed_model, "multilingual", False))
            alpha = 0.0 if (not multilingual and is_mostly_cjk(query_bundle.query_str)) else DEFAULT_HYBRID_ALPHA
        needs_embedding = mode != "text_search" and not (mode == "hybrid" and alpha == 0.0)
        if needs_embedding and query_bundle.embedding is None:
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
            mode=self.vector_store_query_mode,
            alpha=alpha,
            sparse_top_k=self.sparse_top_k,
            hybrid_top_k=self.hybrid_top_k,
        )
        result = index.vector_store.query(query)
        return index._build_node_list_from_query_result(result)
