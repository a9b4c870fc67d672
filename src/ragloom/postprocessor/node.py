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
    cutoff, 0.0, is LlamaIndex's.  The cutoff is
    in the unit of the retriever's scores: cosine similarity in [-1, 1] for dense retrieval,
    a fused score in about [0, 1] for hybrid retrieval, a raw BM25 score for ``BM25Retriever``.

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
