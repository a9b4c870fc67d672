"""``BaseRetriever``: turns a query (``str`` or :class:`QueryBundle`) into ``list[NodeWithScore]``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import List, Union

from ragloom.schema import NodeWithScore, QueryBundle

QueryType = Union[str, QueryBundle]


class BaseRetriever(ABC):
    """Base class of retrievers (LlamaIndex's ``retrieve`` / ``aretrieve``)."""

    def retrieve(self, str_or_query_bundle: QueryType) -> List[NodeWithScore]:
        """Nodes most relevant to the query, best first."""
        bundle = (
            QueryBundle(query_str=str_or_query_bundle)
            if isinstance(str_or_query_bundle, str)
            else str_or_query_bundle
        )
        return self._retrieve(bundle)

    async def aretrieve(self, str_or_query_bundle: QueryType) -> List[NodeWithScore]:
        return self.retrieve(str_or_query_bundle)

    @abstractmethod
    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]: ...
