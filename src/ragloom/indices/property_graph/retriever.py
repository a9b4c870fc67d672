"""``PGRetriever``: the union of several property-graph sub-retrievers (LlamaIndex's)."""

from __future__ import annotations

from typing import Any, List, Sequence

from ragloom.retrievers.base import BaseRetriever
from ragloom.schema import NodeWithScore, QueryBundle

__all__ = ["PGRetriever"]


class PGRetriever(BaseRetriever):
    """Runs each sub-retriever in turn and returns their nodes, a node whose text an earlier one
    already returned left out (LlamaIndex's de-duplication).

    Args:
        sub_retrievers: :class:`~ragloom.indices.property_graph.sub_retrievers.base.BasePGRetriever` s
            (any :class:`~ragloom.retrievers.BaseRetriever` works).
        num_workers, use_async, show_progress, callback_manager: accepted for LlamaIndex
            compatibility (the sub-retrievers run one after the other).

    Raises:
        ValueError: no sub-retriever.
    """

    def __init__(self, sub_retrievers: Sequence[BaseRetriever], num_workers: int = 4, use_async: bool = True,
                 show_progress: bool = False, callback_manager: Any = None) -> None:
        if not sub_retrievers:
            raise ValueError("sub_retrievers must name at least one retriever")
        self.sub_retrievers = list(sub_retrievers)
        self.callback_manager = callback_manager

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        seen = set()
        out: List[NodeWithScore] = []
        for retriever in self.sub_retrievers:
            for n in retriever.retrieve(query_bundle):
                text = n.node.get_content()
                if text not in seen:
                    seen.add(text)
                    out.append(n)
        return out
