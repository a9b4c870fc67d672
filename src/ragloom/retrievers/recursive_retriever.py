"""``RecursiveRetriever``: follow :class:`~ragloom.schema.IndexNode` references from one
retriever to other retrievers, query engines or nodes (LlamaIndex's class)."""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Tuple

from ragloom.retrievers.base import BaseRetriever
from ragloom.schema import BaseNode, IndexNode, NodeWithScore, QueryBundle, TextNode

logger = logging.getLogger(__name__)

__all__ = ["RecursiveRetriever", "DEFAULT_QUERY_RESPONSE_TMPL"]

#: Text of the node standing for a query engine's answer.
DEFAULT_QUERY_RESPONSE_TMPL = "Query: {query_str}\nResponse: {response}"


def _dedup(nodes: List[NodeWithScore]) -> List[NodeWithScore]:
    """First occurrence of each node id, in order."""
    seen: set = set()
    out = []
    for n in nodes:
        if n.node.node_id not in seen:
            seen.add(n.node.node_id)
            out.append(n)
    return out


class RecursiveRetriever(BaseRetriever):
    """Retrieve with ``retriever_dict[root_id]``; every retrieved :class:`IndexNode` is replaced
    by what its ``index_id`` names, recursively:

    * a node in ``node_dict`` → that node, with the IndexNode's score;
    * a retriever in ``retriever_dict`` → its results, themselves followed;
    * a query engine in ``query_engine_dict`` (any object with ``query(str)`` returning something
      with ``.response`` and ``.source_nodes``) → one :class:`TextNode` holding
      ``query_response_tmpl`` filled with the query and the answer, with the IndexNode's score;
      the answer's source nodes are returned by :meth:`retrieve_all`.

    When the id is registered nowhere, the IndexNode's own ``obj`` (a node, retriever or query
    engine) is used.  An IndexNode's score defaults to 1.0 when it has none.  Index nodes
    pointing at the same ``index_id`` within one result list are followed once (the first,
    best-ranked one); final results are de-duplicated by node id, first occurrence kept.  Other
    nodes pass through unchanged.

    Args:
        root_id: key of the retriever to start from; must be in ``retriever_dict``.
        retriever_dict: id → retriever (``retrieve(QueryBundle)``).
        query_engine_dict: id → query engine.
        node_dict: id → node.
        query_response_tmpl: template with ``{query_str}`` and ``{response}``.
        verbose: log each step at INFO (otherwise DEBUG).

    Raises:
        ValueError: ``root_id`` not in ``retriever_dict``, overlapping retriever / query engine
            ids; at retrieval, an ``index_id`` that names nothing (and no ``obj``), an ``obj``
            that is neither node, retriever nor query engine, or a reference cycle.
    """

    def __init__(
        self,
        root_id: str,
        retriever_dict: Dict[str, Any],
        query_engine_dict: Optional[Dict[str, Any]] = None,
        node_dict: Optional[Dict[str, BaseNode]] = None,
        query_response_tmpl: Optional[str] = None,
        verbose: bool = False,
    ) -> None:
        if root_id not in retriever_dict:
            raise ValueError(f"root_id {root_id!r} is not in retriever_dict; the root must be a retriever")
        self._root_id = root_id
        self._retriever_dict = dict(retriever_dict)
        self._query_engine_dict = dict(query_engine_dict or {})
        self._node_dict = dict(node_dict or {})
        overlap = set(self._retriever_dict) & set(self._query_engine_dict)
        if overlap:
            raise ValueError(f"retriever_dict and query_engine_dict share the ids {sorted(overlap)}")
        self._query_response_tmpl = query_response_tmpl or DEFAULT_QUERY_RESPONSE_TMPL
        self._verbose = bool(verbose)

    def _log(self, msg: str, *args: Any) -> None:
        logger.log(logging.INFO if self._verbose else logging.DEBUG, msg, *args)

    def _get_object(self, query_id: str, fallback: Any = None) -> Tuple[str, Any]:
        """``(kind, object)`` for ``query_id``; kind is ``"node"``, ``"retriever"`` or ``"query_engine"``
        (from the dict it is registered in; for an IndexNode's ``obj``, from its type)."""
        if query_id in self._node_dict:
            return "node", self._node_dict[query_id]
        if query_id in self._retriever_dict:
            return "retriever", self._retriever_dict[query_id]
        if query_id in self._query_engine_dict:
            return "query_engine", self._query_engine_dict[query_id]
        if fallback is None:
            raise ValueError(
                f"index_id {query_id!r} is in none of node_dict, retriever_dict and query_engine_dict, "
                "and its IndexNode has no obj"
            )
        if isinstance(fallback, BaseNode):
            return "node", fallback
        if isinstance(fallback, BaseRetriever):
            return "retriever", fallback
        if callable(getattr(fallback, "query", None)):
            return "query_engine", fallback
        if callable(getattr(fallback, "retrieve", None)):
            return "retriever", fallback
        raise ValueError(
            f"the obj of the IndexNode for {query_id!r} is a {type(fallback).__name__}: "
            "expected a node, a retriever or a query engine"
        )

    def _query_retrieved_nodes(
        self, query_bundle: QueryBundle, nodes: List[NodeWithScore], path: Tuple[str, ...]
    ) -> Tuple[List[NodeWithScore], List[NodeWithScore]]:
        found: List[NodeWithScore] = []
        extra: List[NodeWithScore] = []
        visited: set = set()
        for nws in nodes:
            node = nws.node
            if isinstance(node, IndexNode):
                if node.index_id in visited:
                    continue
                visited.add(node.index_id)
                self._log("retrieved index node %s, entering %r", node.node_id, node.index_id)
                sub, sub_extra = self._retrieve_rec(query_bundle, node.index_id, nws.score, path, node.obj)
                found.extend(sub)
                extra.extend(sub_extra)
            else:
                found.append(nws)
        return _dedup(found), _dedup(extra)

    def _retrieve_rec(
        self,
        query_bundle: QueryBundle,
        query_id: Optional[str] = None,
        cur_similarity: Optional[float] = None,
        path: Tuple[str, ...] = (),
        fallback: Any = None,
    ) -> Tuple[List[NodeWithScore], List[NodeWithScore]]:
        query_id = self._root_id if query_id is None else query_id
        score = 1.0 if cur_similarity is None else cur_similarity
        if query_id in path:
            raise ValueError(f"IndexNode references form a cycle: {' -> '.join((*path, query_id))}")
        kind, obj = self._get_object(query_id, fallback)
        if kind == "node":
            if not isinstance(obj, BaseNode):
                raise ValueError(f"node_dict[{query_id!r}] is a {type(obj).__name__}, not a node")
            return [NodeWithScore(node=obj, score=score)], []
        if kind == "retriever":
            self._log("retrieving with %r: %s", query_id, query_bundle.query_str)
            return self._query_retrieved_nodes(query_bundle, list(obj.retrieve(query_bundle)), (*path, query_id))
        response = obj.query(query_bundle.query_str)
        answer = getattr(response, "response", None)
        answer = str(response) if answer is None else str(answer)
        self._log("query engine %r answered: %s", query_id, answer)
        text = self._query_response_tmpl.format(query_str=query_bundle.query_str, response=answer)
        sources = list(getattr(response, "source_nodes", None) or [])
        return [NodeWithScore(node=TextNode(text=text), score=score)], sources

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        return self._retrieve_rec(query_bundle)[0]

    def retrieve_all(self, query_bundle: Any) -> Tuple[List[NodeWithScore], List[NodeWithScore]]:
        """``(nodes, additional source nodes)``: :meth:`retrieve`'s nodes, plus the source nodes of
        every query engine answer met on the way."""
        bundle = QueryBundle(query_str=query_bundle) if isinstance(query_bundle, str) else query_bundle
        return self._retrieve_rec(bundle)
