"""``TreeAllLeafRetriever``: every leaf of a :class:`~ragloom.indices.tree.TreeIndex`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List

from ragloom.retrievers.base import BaseRetriever
from ragloom.schema import NodeWithScore, QueryBundle

if TYPE_CHECKING:
    from ragloom.indices.tree.base import TreeIndex

__all__ = ["TreeAllLeafRetriever"]


class TreeAllLeafRetriever(BaseRetriever):
    """Every leaf (chunk) of the tree, in tree order, unscored; no model is called.  Meant for
    ``response_mode="tree_summarize"`` over a whole corpus.

    LlamaIndex returns every node of the tree, summaries included; ragloom returns the leaves only.
    ``callback_manager``, ``object_map`` and ``verbose`` are accepted for LlamaIndex compatibility.
    """

    def __init__(self, index: "TreeIndex", callback_manager: Any = None, object_map: Any = None,
                 verbose: bool = False) -> None:
        self._index = index
        self.callback_manager = callback_manager
        self._verbose = verbose

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        return [NodeWithScore(node=n) for n in self._index._leaf_list()]
