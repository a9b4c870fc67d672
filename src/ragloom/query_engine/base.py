"""``BaseQueryEngine``: ``query(str | QueryBundle) -> Response`` (LlamaIndex names)."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Union

from ragloom.base.response.schema import RESPONSE_TYPE
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


class BaseQueryEngine(PromptMixin):
    """Base class of query engines; subclasses implement :meth:`_query` and :meth:`_aquery`."""

    def __init__(self, callback_manager: Any = None) -> None:
        self.callback_manager = callback_manager

    def query(self, str_or_query_bundle: Union[str, QueryBundle]) -> RESPONSE_TYPE:
        """Answer a question: a :class:`~ragloom.base.response.Response` (or a streaming one)."""
        return self._query(to_query_bundle(str_or_query_bundle))

    async def aquery(self, str_or_query_bundle: Union[str, QueryBundle]) -> RESPONSE_TYPE:
        """As :meth:`query`, with async LLM calls."""
        return await self._aquery(to_query_bundle(str_or_query_bundle))

    @abstractmethod
    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE: ...

    @abstractmethod
    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE: ...
