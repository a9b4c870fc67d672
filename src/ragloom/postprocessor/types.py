"""``BaseNodePostprocessor``: a step between retrieval and synthesis that rewrites,
reorders or filters ``list[NodeWithScore]`` (LlamaIndex's method names)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Dict, List, Optional

from ragloom.callbacks.instrument import CallbackManagerMixin
from ragloom.callbacks.schema import CBEventType, EventPayload
from ragloom.schema import NodeWithScore, QueryBundle

__all__ = ["BaseNodePostprocessor"]


class BaseNodePostprocessor(CallbackManagerMixin, ABC):
    """Base class of node postprocessors.  Subclasses implement :meth:`_postprocess_nodes`.

    Callbacks: a subclass that sets :attr:`callback_event_type` (rerankers:
    ``CBEventType.RERANKING``) reports each :meth:`postprocess_nodes` call as one such event of
    :attr:`callback_manager` (start ``NODES``, ``QUERY_STR`` and :meth:`_callback_payload`, e.g.
    ``MODEL_NAME`` and ``TOP_K``; end ``NODES``).  Filters and reorderers report nothing (as in
    LlamaIndex).  ``postprocessor.callback_manager = cm`` sets the manager.
    """

    #: the event type each :meth:`postprocess_nodes` call reports; ``None``: no event
    callback_event_type: ClassVar[Optional[CBEventType]] = None

    def _callback_payload(self) -> Dict[EventPayload, Any]:
        """More start payload of the event (a reranker: ``MODEL_NAME``, ``TOP_K``)."""
        return {}

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
        event_type = self.callback_event_type
        if event_type is None:
            return self._postprocess_nodes(list(nodes), query_bundle)
        cm = self.callback_manager
        if not cm.handlers:
            return self._postprocess_nodes(list(nodes), query_bundle)
        payload = {EventPayload.NODES: list(nodes),
                   EventPayload.QUERY_STR: query_bundle.query_str if query_bundle is not None else None,
                   **self._callback_payload()}
        with cm.event(event_type, payload=payload) as event:
            out = self._postprocess_nodes(list(nodes), query_bundle)
            event.on_end(payload={EventPayload.NODES: out})
        return out

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
