"""``AutoMergingRetriever``: retrieve small chunks, then replace groups of siblings by their
parent chunk when enough of them were retrieved (LlamaIndex's auto-merging retrieval).

Meant for :class:`~ragloom.node_parser.HierarchicalNodeParser` output: index the leaf nodes
in a vector index and put *all* nodes (every level) in the docstore of ``storage_context``,
which is where parents are fetched from.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Tuple

from ragloom.retrievers.base import BaseRetriever
from ragloom.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle

logger = logging.getLogger(__name__)

__all__ = ["AutoMergingRetriever"]


def _preview(node: BaseNode, n: int = 100) -> str:
    text = node.get_content(MetadataMode.NONE)
    return text if len(text) <= n else text[: n - 3] + "..."


class AutoMergingRetriever(BaseRetriever):
    """Retrieve with ``vector_retriever``, then merge, repeatedly, until nothing changes:

    1. *fill in*: when two nodes adjacent in the current list are one node apart in their
       document (the first's NEXT is the second's PREVIOUS), that middle node is fetched from the
       docstore and inserted after the first, scored with the mean of the two scores;
    2. *merge*: for each parent (the PARENT relationship) of the current nodes, if the share of
       its children present, ``present / len(parent CHILD list)``, is strictly greater than
       ``simple_ratio_thresh``, those children are removed and the parent (from the docstore) is
       appended, scored with the mean of their scores.

    Because merged parents take part in the next round, merging goes up level by level.  A
    parent that was itself retrieved is kept once, with the better of its two scores.  Finally,
    nodes whose ancestor is also in the result are dropped (their text is inside the
    ancestor's; LlamaIndex keeps both), and the result is sorted by score, highest first
    (stable).  Nodes without a PARENT are kept as they are.  Otherwise the behaviour (both
    steps, the strict ``>``, the mean score) follows LlamaIndex's ``AutoMergingRetriever``.

    Args:
        vector_retriever: any retriever (``retrieve(QueryBundle)``) of the leaf nodes.
        storage_context: its ``docstore`` must hold the parents (and the middle nodes filled in).
        simple_ratio_thresh: merge when strictly more than this share of a parent's children
            were retrieved; in [0, 1] (0: any one child merges; 1: never merges).
        verbose: log each merge at INFO (otherwise DEBUG).

    Raises:
        ValueError: ``simple_ratio_thresh`` outside [0, 1]; at retrieval, a parent or middle node
            missing from the docstore (the message names it).
    """

    def __init__(
        self,
        vector_retriever: Any,
        storage_context: Any,
        simple_ratio_thresh: float = 0.5,
        verbose: bool = False,
    ) -> None:
        if not callable(getattr(vector_retriever, "retrieve", None)):
            raise ValueError(f"vector_retriever must have a retrieve() method, got {type(vector_retriever).__name__}")
        if getattr(storage_context, "docstore", None) is None:
            raise ValueError("storage_context must have a docstore holding the parent nodes")
        thresh = float(simple_ratio_thresh)
        if not 0.0 <= thresh <= 1.0:
            raise ValueError(f"simple_ratio_thresh must be in [0, 1], got {simple_ratio_thresh!r}")
        self._vector_retriever = vector_retriever
        self._storage_context = storage_context
        self._simple_ratio_thresh = thresh
        self._verbose = bool(verbose)

    def _log(self, msg: str, *args: Any) -> None:
        logger.log(logging.INFO if self._verbose else logging.DEBUG, msg, *args)

    def _fetch(self, node_id: str, role: str) -> BaseNode:
        node = self._storage_context.docstore.get_document(node_id, raise_error=False)
        if node is None:
            raise ValueError(
                f"{role} node {node_id} is not in the docstore: put every node of the HierarchicalNodeParser "
                "(all levels) in storage_context.docstore"
            )
        return node

    def _fill_in_nodes(self, nodes: List[NodeWithScore]) -> Tuple[List[NodeWithScore], bool]:
        out: List[NodeWithScore] = []
        changed = False
        present = {n.node.node_id for n in nodes}
        for i, cur in enumerate(nodes):
            out.append(cur)
            if i + 1 >= len(nodes):
                continue
            nxt_info = cur.node.next_node
            prev_info = nodes[i + 1].node.prev_node
            if nxt_info is None or prev_info is None or nxt_info.node_id != prev_info.node_id:
                continue
            if nxt_info.node_id in present:
                continue
            middle = self._fetch(nxt_info.node_id, "middle")
            score = (cur.get_score() + nodes[i + 1].get_score()) / 2.0
            self._log("filling in node %s: %s", middle.node_id, _preview(middle))
            out.append(NodeWithScore(node=middle, score=score))
            present.add(middle.node_id)
            changed = True
        return out, changed

    def _get_parents_and_merge(self, nodes: List[NodeWithScore]) -> Tuple[List[NodeWithScore], bool]:
        parents: Dict[str, BaseNode] = {}
        children: Dict[str, List[NodeWithScore]] = {}
        for n in nodes:
            info = n.node.parent_node
            if info is None:
                continue
            if info.node_id not in parents:
                parents[info.node_id] = self._fetch(info.node_id, "parent")
            children.setdefault(info.node_id, []).append(n)
        present = {n.node.node_id: i for i, n in enumerate(nodes)}
        remove: set = set()
        raised: Dict[int, float] = {}
        added: List[NodeWithScore] = []
        for pid, parent in parents.items():
            kids = children[pid]
            total = len(parent.child_nodes or []) or 1
            if len(kids) / total <= self._simple_ratio_thresh:
                continue
            remove.update(k.node.node_id for k in kids)
            score = sum(k.get_score() for k in kids) / len(kids)
            self._log("merging %d of %d children into parent %s: %s", len(kids), total, pid, _preview(parent))
            if pid in present:  # the parent was retrieved itself: keep one copy, with the better score
                raised[present[pid]] = score
            else:
                added.append(NodeWithScore(node=parent, score=score))
        if not remove:
            return nodes, False
        out = []
        for i, n in enumerate(nodes):
            if n.node.node_id in remove:
                continue
            if i in raised and raised[i] > n.get_score():
                n = NodeWithScore(node=n.node, score=raised[i])
            out.append(n)
        return out + added, True

    def _try_merging(self, nodes: List[NodeWithScore]) -> Tuple[List[NodeWithScore], bool]:
        nodes, filled = self._fill_in_nodes(nodes)
        nodes, merged = self._get_parents_and_merge(nodes)
        return nodes, filled or merged

    def _drop_covered(self, nodes: List[NodeWithScore]) -> List[NodeWithScore]:
        """Remove nodes that have an ancestor in ``nodes`` (the ancestor's text contains theirs)."""
        present = {n.node.node_id for n in nodes}
        parent_of: Dict[str, Any] = {}
        out = []
        for n in nodes:
            info, covered, seen = n.node.parent_node, False, set()
            while info is not None and info.node_id not in seen:
                if info.node_id in present:
                    covered = True
                    break
                seen.add(info.node_id)
                if info.node_id not in parent_of:
                    up = self._storage_context.docstore.get_document(info.node_id, raise_error=False)
                    parent_of[info.node_id] = None if up is None else up.parent_node
                info = parent_of[info.node_id]
            if covered:
                self._log("dropping %s: an ancestor is already in the results", n.node.node_id)
            else:
                out.append(n)
        return out

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        nodes = list(self._vector_retriever.retrieve(query_bundle))
        changed = True
        while changed:
            nodes, changed = self._try_merging(nodes)
        nodes = self._drop_covered(nodes)
        nodes.sort(key=lambda n: n.get_score(), reverse=True)
        return nodes
