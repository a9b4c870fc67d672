"""``BaseRetriever``: turns a query (``str`` or :class:`QueryBundle`) into ``list[NodeWithScore]``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, List, Union

from ragloom.callbacks.instrument import CallbackManagerMixin
from ragloom.callbacks.schema import CBEventType, EventPayload
from ragloom.schema import NodeWithScore, QueryBundle

QueryType = Union[str, QueryBundle]


class BaseRetriever(CallbackManagerMixin, ABC):
    """Base class of retrievers (LlamaIndex's ``retrieve`` / ``aretrieve``).

    Subclasses implement :meth:`_retrieve`; instantiating a subclass that does not raises
    ``TypeError``.  :meth:`retrieve` reports each call as one ``RETRIEVE`` event (start
    ``QUERY_STR``, end ``NODES``) inside a ``"query"`` trace to :attr:`callback_manager`, so a
    subclass gets callbacks by implementing :meth:`_retrieve` (and leaving :meth:`retrieve` /
    :meth:`aretrieve` alone, or calling them).  A subclass takes ``callback_manager=`` by passing
    it to ``super().__init__`` or assigning ``self.callback_manager``.

    Args:
        callback_manager: where its events go (default: inherited, see :mod:`ragloom.callbacks.base`).
        object_map, objects, verbose: accepted for LlamaIndex compatibility; unused here.

    Raises:
        ValueError: ``callback_manager`` is not a ``CallbackManager``.
    """

    def __init__(self, callback_manager: Any = None, object_map: Any = None, objects: Any = None,
                 verbose: bool = False) -> None:
        self.callback_manager = callback_manager

    @abstractmethod
    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        """Nodes most relevant to ``query_bundle`` (already checked to be non-empty), best first."""

    def retrieve(self, str_or_query_bundle: QueryType) -> List[NodeWithScore]:
        """Nodes most relevant to the query, best first.

        Raises:
            ValueError: the query string is empty or whitespace and no query embedding is given.
        """
        bundle = (
            QueryBundle(query_str=str_or_query_bundle)
            if isinstance(str_or_query_bundle, str)
            else str_or_query_bundle
        )
        _check_not_empty(bundle)
        cm = self.callback_manager
        if not cm.handlers:
            return self._retrieve(bundle)
        payload = {EventPayload.QUERY_STR: bundle.query_str}
        with cm.as_trace("query"), cm.event(CBEventType.RETRIEVE, payload=payload) as event:
            nodes = self._retrieve(bundle)
            event.on_end(payload={EventPayload.NODES: nodes})
        return nodes

    async def aretrieve(self, str_or_query_bundle: QueryType) -> List[NodeWithScore]:
        return self.retrieve(str_or_query_bundle)


def _check_not_empty(bundle: QueryBundle) -> None:
    if bundle.embedding is None and not (bundle.query_str or "").strip():
        raise ValueError("the query is empty: pass a non-empty query string (or a QueryBundle with an embedding)")
