"""``TreeRootRetriever``: the roots of a :class:`~ragloom.indices.tree.TreeIndex`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List

from ragloom.retrievers.base import BaseRetriever
from ragloom.schema import NodeWithScore, QueryBundle

if TYPE_CHECKING:
    from ragloom.indices.tree.base import TreeIndex

__all__ = ["TreeRootRetriever"]


class TreeRootRetriever(BaseRetriever):
    """The root nodes of the tree, in order, unscored: the top-level summaries (``TextNode`` s whose
    CHILD relationships name their children), or the chunks themselves when the index has
    ``num_children`` nodes or fewer.  No model is called.

    ``callback_manager``, ``object_map`` and ``verbose`` are accepted for LlamaIndex compatibility.
    """

    def __init__(self, index: "TreeIndex", callback_manager: Any = None, object_map: Any = None,
                 verbose: bool = False) -> None:
        self._index = index
        self.callback_manager = callback_manager
        self._verbose = verbose

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        return [NodeWithScore(node=n) for n in self._index._tree_nodes(self._index._children_of(None))]
