"""``SimilarityPostprocessor``: drop retrieved nodes whose score is below a cutoff."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

from ragloom.postprocessor.types import BaseNodePostprocessor
from ragloom.schema import NodeWithScore, QueryBundle

__all__ = ["SimilarityPostprocessor"]


class SimilarityPostprocessor(BaseNodePostprocessor):
    """Keep the nodes whose ``score`` is >= ``similarity_cutoff`` (LlamaIndex's class).

    Order and the ``NodeWithScore`` objects are kept.  Nodes with no score (``None``) are
    dropped whenever a cutoff is set; ``similarity_cutoff=None`` keeps everything.  The default
    cutoff, 0.0, is LlamaIndex's.

    The cutoff is in the unit of the retriever's scores, which differs by retrieval mode, so
    pick it for the mode (the figures are for the bundled all-MiniLM-L6-v2 and are checked by
    ``tests/test_ports.py``).  Note that ``index.as_retriever()`` (and ``as_query_engine()``,
    ``ragloom query``) searches in **hybrid** mode on the default SQLite store, where LlamaIndex
    searches dense: a cutoff written for LlamaIndex's cosine scores meets fused scores here.
    Keep it and pass ``vector_store_query_mode="default"`` to get cosine scores, or pick a
    hybrid cutoff as below.

    * **dense** (``vector_store_query_mode="default"``): cosine similarity in [-1, 1],
      comparable across queries.  With all-MiniLM-L6-v2 a passage that answers the
      query scores about 0.4-0.8 and unrelated text below about 0.2, so ``0.3`` drops the
      unrelated.  The range is the model's: E5 and BGE models score nearly everything 0.7-0.9,
      so look at the scores of a few queries of your own before choosing.
    * **keyword** (``BM25Retriever``, or query mode ``"text_search"``): a BM25 score (SQLite
      FTS5), 0 or more, unbounded, growing with the number and rarity of the query words a node
      holds and depending on the corpus.  A node without any query word is never returned, so a
      cutoff only drops weak matches (one common query word: about 1 in a small corpus, against
      about 3 for a node with several); calibrate it on your corpus.
    * **hybrid** (``"hybrid"``, the default where the store supports it): a fused score in [0, 1]
      (:mod:`ragloom.fusion`, distribution-based score fusion): each side's scores are scaled
      against the other candidates *of the same query*, then weighted by ``alpha`` (dense) and
      ``1 - alpha`` (keyword).  It ranks a query's candidates but does not measure relevance:
      the best candidate of an off-topic query still scores about 0.3-0.4.  With ``alpha=0.5``
      (the default) a node that holds no query word scores at most 0.5, so ``0.5`` keeps the
      nodes that rank well on both sides.  (A mostly-CJK query with an English-only embed
      model is searched by keywords alone, ``alpha=0``: only nodes holding a query word come
      back, the best at 1.0.)  To drop what is not relevant at all, filter with a dense cosine
      cutoff instead.

    LlamaIndex's scores differ the same way by mode (its hybrid scores are its vector store's
    fusion); its default cutoff is 0.0 as here.

    Args:
        similarity_cutoff: the minimum score, a finite number, or ``None``.

    Raises:
        ValueError: a non-numeric or non-finite ``similarity_cutoff``.
    """

    def __init__(self, similarity_cutoff: Optional[float] = 0.0) -> None:
        if similarity_cutoff is not None:
            if isinstance(similarity_cutoff, bool) or not isinstance(similarity_cutoff, (int, float)):
                raise ValueError(f"similarity_cutoff must be a number or None, got {similarity_cutoff!r}")
            if not math.isfinite(similarity_cutoff):
                raise ValueError(f"similarity_cutoff must be finite, got {similarity_cutoff!r}")
            similarity_cutoff = float(similarity_cutoff)
        self.similarity_cutoff = similarity_cutoff

    def to_config(self) -> Dict[str, Any]:
        return {"class_name": self.class_name(), "similarity_cutoff": self.similarity_cutoff}

    def _postprocess_nodes(
        self, nodes: List[NodeWithScore], query_bundle: Optional[QueryBundle] = None
    ) -> List[NodeWithScore]:
        cutoff = self.similarity_cutoff
        if cutoff is None:
            return list(nodes)
        return [n for n in nodes if n.score is not None and n.score >= cutoff]
