"""``BaseQueryEngine``: ``query(str | QueryBundle) -> Response`` (LlamaIndex names)."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Union

from ragloom.base.response.schema import RESPONSE_TYPE
from ragloom.callbacks.instrument import CallbackManagerMixin
from ragloom.callbacks.schema import CBEventType, EventPayload
from ragloom.prompts.mixin import PromptMixin
from ragloom.schema import QueryBundle

__all__ = ["BaseQueryEngine"]


def to_query_bundle(query: Any) -> QueryBundle:
    """``query`` as a :class:`QueryBundle`.

    Raises:
        ValueError: ``query`` is neither a ``str`` nor a ``QueryBundle``.
    """
    if isinstance(query, QueryBundle):
        return query
    if isinstance(query, str):
        return QueryBundle(query_str=query)
    raise ValueError(f"query must be a str or QueryBundle, got {type(query).__name__}")


class BaseQueryEngine(CallbackManagerMixin, PromptMixin):
    """Base class of query engines; subclasses implement :meth:`_query` and :meth:`_aquery`.

    :meth:`query` / :meth:`aquery` report each call as one ``QUERY`` event (start ``QUERY_STR``,
    end ``RESPONSE``) inside a ``"query"`` trace to :attr:`callback_manager`; the retrievers,
    synthesizers and LLMs the engine calls report inside it (to the same manager unless they have
    their own).  A subclass gets this by implementing ``_query`` / ``_aquery`` and passing
    ``callback_manager`` to ``super().__init__``.

    Args:
        callback_manager: where its events go (default: inherited, see :mod:`ragloom.callbacks.base`).

    Raises:
        ValueError: ``callback_manager`` is not a ``CallbackManager``.
    """

    def __init__(self, callback_manager: Any = None) -> None:
        self.callback_manager = callback_manager

    def query(self, str_or_query_bundle: Union[str, QueryBundle]) -> RESPONSE_TYPE:
        """Answer a question: a :class:`~ragloom.base.response.Response` (or a streaming one)."""
        bundle = to_query_bundle(str_or_query_bundle)
        cm = self.callback_manager
        if not cm.handlers:
            return self._query(bundle)
        payload = {EventPayload.QUERY_STR: bundle.query_str}
        with cm.as_trace("query"), cm.event(CBEventType.QUERY, payload=payload) as event:
            response = self._query(bundle)
            event.on_end(payload={EventPayload.RESPONSE: response})
        return response

    async def aquery(self, str_or_query_bundle: Union[str, QueryBundle]) -> RESPONSE_TYPE:
        """As :meth:`query`, with async LLM calls."""
        bundle = to_query_bundle(str_or_query_bundle)
        cm = self.callback_manager
        if not cm.handlers:
            return await self._aquery(bundle)
        payload = {EventPayload.QUERY_STR: bundle.query_str}
        with cm.as_trace("query"), cm.event(CBEventType.QUERY, payload=payload) as event:
            response = await self._aquery(bundle)
            event.on_end(payload={EventPayload.RESPONSE: response})
        return response

    @abstractmethod
    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE: ...

    @abstractmethod
    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE: ...
