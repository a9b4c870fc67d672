"""Dense retrieval over a :class:`~ragloom.indices.VectorStoreIndex`."""

from __future__ import annotations

import difflib
import inspect
import math
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ragloom.retrievers.base import BaseRetriever
from ragloom.schema import NodeWithScore, QueryBundle

if TYPE_CHECKING:
    from ragloom.indices.vector_store import VectorStoreIndex


def _reject_unknown(kwargs: Dict[str, Any]) -> None:
    """``TypeError`` for keyword arguments :class:`VectorIndexRetriever` does not take, naming them
    (and the closest accepted name, for a misspelling)."""
    if not kwargs:
        return
    params = inspect.signature(VectorIndexRetriever.__init__).parameters
    accepted = [p for p in params if p not in ("self", "index", "kwargs")]
    hints = []
    for name in sorted(kwargs):
        close = difflib.get_close_matches(name, accepted, n=1)
        hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise TypeError(
        f"VectorIndexRetriever got unexpected keyword argument(s) {', '.join(hints)}; "
        f"it takes {', '.join(accepted)}"
    )


def _same_embed_model(index: "VectorStoreIndex", embed_model: Any) -> Any:
    """``embed_model`` resolved, after checking it is the model ``index`` recorded (``ValueError`` if not)."""
    from ragloom.embeddings import check_embed_model, resolve_embed_model

    model = resolve_embed_model(embed_model)
    check_embed_model(index.index_struct.embed_model or {}, model)
    return model


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
        vector_store_query_mode: ``"hybrid"`` (default where supported), ``"default"`` (dense),
            ``"text_search"`` (BM25) or ``"mmr"`` (maximal marginal relevance, see
            :mod:`ragloom.retrievers.mmr`: dense candidates, then a diverse selection; works on
            every vector store whose ``get_nodes`` returns vectors, not only in-memory ones).
        mmr_threshold: MMR's λ in [0, 1] (1 = relevance only); also accepted as
            ``vector_store_kwargs={"mmr_threshold": ...}``, LlamaIndex's spelling.
        vector_store_kwargs: ``mmr_threshold``, ``mmr_prefetch_factor`` (candidates per result,
            >= 1, default 4) or ``mmr_prefetch_k`` (candidates, >= ``similarity_top_k``).
        callback_manager: where the ``RETRIEVE`` events go (:mod:`ragloom.callbacks`).
        embed_model: the model that embeds queries (default: the index's); an embed model or a
            :func:`~ragloom.embeddings.resolve_embed_model` spec.  Unlike LlamaIndex, it must be the
            model the index recorded: another model's query vectors are not comparable with the
            stored ones.
        object_map, objects, verbose: accepted for LlamaIndex compatibility; unused.

    Unlike LlamaIndex, which ignores keyword arguments it does not know (so a misspelled
    ``simlarity_top_k=7`` silently returns the default 2 nodes), an unknown keyword argument
    raises ``TypeError``.

    Raises:
        ValueError: ``similarity_top_k`` < 1, an unknown mode, ``alpha`` or ``mmr_threshold``
            outside [0, 1], an unknown ``vector_store_kwargs`` key, or an ``embed_model`` that is
            not the one the index was built with.
        TypeError: a keyword argument this retriever does not take (the message names it and the
            closest accepted name).
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
        vector_store_kwargs: Optional[Dict[str, Any]] = None,
        mmr_threshold: Optional[float] = None,
        callback_manager: Any = None,
        object_map: Optional[Dict[str, Any]] = None,
        objects: Any = None,
        embed_model: Any = None,
        verbose: bool = False,
        **kwargs: Any,
    ) -> None:
        from ragloom.retrievers.mmr import DEFAULT_MMR_PREFETCH_FACTOR, check_mmr_threshold
        from ragloom.vector_stores.types import VectorStoreQueryMode

        _reject_unknown(kwargs)
        if not isinstance(similarity_top_k, int) or similarity_top_k < 1:
            raise ValueError(f"similarity_top_k must be an int >= 1, got {similarity_top_k!r}")
        super().__init__(callback_manager=callback_manager, object_map=object_map, objects=objects, verbose=verbose)
        self._index = index
        self._embed_model = index.embed_model if embed_model is None else _same_embed_model(index, embed_model)
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
        extra = dict(vector_store_kwargs or {})
        unknown = sorted(set(extra) - {"mmr_threshold", "mmr_prefetch_factor", "mmr_prefetch_k"})
        if unknown:
            raise ValueError(
                f"vector_store_kwargs accepts mmr_threshold, mmr_prefetch_factor and mmr_prefetch_k, got {unknown}"
            )
        if mmr_threshold is None:
            mmr_threshold = extra.get("mmr_threshold")
        self.mmr_threshold = check_mmr_threshold(mmr_threshold)
        factor = extra.get("mmr_prefetch_factor", DEFAULT_MMR_PREFETCH_FACTOR)
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not factor >= 1.0:
            raise ValueError(f"mmr_prefetch_factor must be a number >= 1, got {factor!r}")
        prefetch_k = extra.get("mmr_prefetch_k")
        if prefetch_k is not None and (not isinstance(prefetch_k, int) or prefetch_k < similarity_top_k):
            raise ValueError(
                f"mmr_prefetch_k must be an int >= similarity_top_k ({similarity_top_k}), got {prefetch_k!r}"
            )
        self._mmr_prefetch_k = prefetch_k or max(similarity_top_k, math.ceil(similarity_top_k * float(factor)))

    def hybrid_alpha(self, query_str: str) -> float:
        """The dense weight hybrid search gives ``query_str``: ``alpha`` when set; else ``0.0``
        (keyword search alone) for a mostly-Chinese query when the embed model is not multilingual
        (its vectors of Chinese text carry no meaning), else the store's default."""
        if self.alpha is not None:
            return self.alpha
        from ragloom.analysis import is_mostly_cjk
        from ragloom.vector_stores.sqlite import DEFAULT_HYBRID_ALPHA

        multilingual = bool(getattr(self._embed_model, "multilingual", False))
        return 0.0 if (not multilingual and is_mostly_cjk(query_str)) else DEFAULT_HYBRID_ALPHA

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        from ragloom.vector_stores.types import VectorStoreQuery

        index = self._index
        mode = self.vector_store_query_mode.value
        alpha = self.hybrid_alpha(query_bundle.query_str) if mode == "hybrid" else self.alpha
        if mode == "mmr":
            return self._retrieve_mmr(query_bundle)
        needs_embedding = mode != "text_search" and not (mode == "hybrid" and alpha == 0.0)
        if needs_embedding:
            self._embed_query(query_bundle)
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

    def _embed_query(self, query_bundle: QueryBundle) -> None:
        if query_bundle.embedding is None:
            strs = query_bundle.embedding_strs
            embed_model = self._embed_model
            if len(strs) == 1:
                query_bundle.embedding = embed_model.get_query_embedding(strs[0])
            else:
                query_bundle.embedding = embed_model.get_agg_embedding_from_queries(strs)

    def _retrieve_mmr(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        """``vector_store_query_mode="mmr"``: the ``mmr_prefetch_k`` nearest nodes (dense search,
        with the filters), then :func:`~ragloom.retrievers.mmr.mmr_select` over their stored vectors.
        Scores are cosine similarities to the query."""
        from ragloom.retrievers.mmr import mmr_select
        from ragloom.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

        index = self._index
        self._embed_query(query_bundle)
        query = VectorStoreQuery(
            query_embedding=query_bundle.embedding,
            similarity_top_k=self._mmr_prefetch_k,
            node_ids=self.node_ids,
            doc_ids=self.doc_ids,
            query_str=query_bundle.query_str,
            filters=self.filters,
            mode=VectorStoreQueryMode.DEFAULT,
        )
        candidates = index._build_node_list_from_query_result(index.vector_store.query(query))
        if not candidates:
            return []
        stored = {n.node_id: n for n in index.vector_store.get_nodes(node_ids=[c.node.node_id for c in candidates])}
        usable = [c for c in candidates if stored.get(c.node.node_id) is not None
                  and stored[c.node.node_id].embedding is not None]
        if len(usable) < len(candidates):
            raise ValueError(
                f"{type(index.vector_store).__name__} returned nodes without their vectors; "
                "vector_store_query_mode='mmr' needs a vector store whose get_nodes returns embeddings"
            )
        vectors = [stored[c.node.node_id].embedding for c in usable]
        picked = mmr_select(query_bundle.embedding or [], vectors, self.similarity_top_k, self.mmr_threshold)
        return [NodeWithScore(node=usable[i].node, score=score) for i, score in picked]
