"""``BaseNodePostprocessor``: a step between retrieval and synthesis that rewrites,
reorders or filters ``list[NodeWithScore]`` (LlamaIndex's method names)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Dict, List, Optional

from ragloom.schema import NodeWithScore, QueryBundle

__all__ = ["BaseNodePostprocessor"]


class BaseNodePostprocessor(ABC):
    """Base class of node postprocessors.  Subclasses implement :meth:`_postprocess_nodes`."""

    @classmethod
    def class_name(cls) -> str:
        return cls.__name__

    def to_config(self) -> Dict[str, Any]:
        return {"class_name": self.class_name()}

    def postprocess_nodes(
        self,
        nodes: List[NodeWithScore],
        query_bundle: Optional[QueryBundle] = None,
        query_str: Optional[str] = None,
    ) -> List[NodeWithScore]:
        """Postprocess retrieved ``nodes`` for the query (a ``QueryBundle`` or ``query_str``; both optional).

        Raises:
            ValueError: both ``query_bundle`` and ``query_str`` are given.
        """
        if query_str is not None and query_bundle is not None:
            raise ValueError("give query_bundle or query_str, not both")
        if query_str is not None:
            query_bundle = QueryBundle(query_str=query_str)
        return self._postprocess_nodes(list(nodes), query_bundle)

    async def apostprocess_nodes(
        self,
        nodes: List[NodeWithScore],
        query_bundle: Optional[QueryBundle] = None,
        query_str: Optional[str] = None,
    ) -> List[NodeWithScore]:
        return self.postprocess_nodes(nodes, query_bundle, query_str)

    @abstractmethod
    def _postprocess_nodes(
        self, nodes: List[NodeWithScore], query_bundle: Optional[QueryBundle] = None
    ) -> List[NodeWithScore]: ...
