"""``BaseRetriever``: turns a query (``str`` or :class:`QueryBundle`) into ``list[NodeWithScore]``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import List, Union

from ragloom.schema import NodeWithScore, QueryBundle

QueryType = Union[str, QueryBundle]


class BaseRetriever(ABC):
    """Base class of retrievers (LlamaIndex's ``retrieve`` / ``aretrieve``).

    Subclasses implement :meth:`_retrieve`; instantiating a subclass that does not raises
    ``TypeError``.
    """

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
        return self._retrieve(bundle)

    async def aretrieve(self, str_or_query_bundle: QueryType) -> List[NodeWithScore]:
        return self.retrieve(str_or_query_bundle)


def _check_not_empty(bundle: QueryBundle) -> None:
    if bundle.embedding is None and not (bundle.query_str or "").strip():
        raise ValueError("the query is empty: pass a non-empty query string (or a QueryBundle with an embedding)")
