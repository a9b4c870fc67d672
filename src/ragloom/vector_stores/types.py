"""The vector store protocol, its query types and metadata filters (LlamaIndex names).

A store keeps one embedding per node and answers nearest-neighbour queries with
cosine similarity (higher is more similar), optionally restricted by metadata
filters.  Filters are evaluated by the store itself (pushed down), never by
post-filtering a top-k.

Filter semantics (shared by every store so results agree across backends):
a node whose metadata lacks the filter's key never matches, whatever the
operator (``!=`` and ``nin`` included), as in LlamaIndex's simple store.
``in``/``nin`` take a list of values; ``contains`` matches a list-valued field
holding the value (or a string field containing it as a substring);
``text_match`` is a case-insensitive substring match on a string field.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import Enum
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ragloom.schema import BaseNode

__all__ = [
    "FilterOperator",
    "FilterCondition",
    "MetadataFilter",
    "ExactMatchFilter",
    "MetadataFilters",
    "VectorStoreQueryMode",
    "VectorStoreQuery",
    "VectorStoreQueryResult",
    "BasePydanticVectorStore",
    "VectorStore",
]


class FilterOperator(str, Enum):
    EQ = "=="
    NE = "!="
    GT = ">"
    LT = "<"
    GTE = ">="
    LTE = "<="
    IN = "in"
    NIN = "nin"
    TEXT_MATCH = "text_match"
    CONTAINS = "contains"
    #: a list value holds at least one of the filter's values (a value that is not a list: never)
    ANY = "any"
    #: a list value holds every one of the filter's values (a value that is not a list: never)
    ALL = "all"
    #: the key is missing, ``None`` or an empty list (the filter's value is ignored)
    IS_EMPTY = "is_empty"


class FilterCondition(str, Enum):
    AND = "and"
    OR = "or"


MetadataValue = Union[str, int, float, bool, List[str], List[int], List[float], None]


@dataclass
class MetadataFilter:
    """``metadata[key] <operator> value`` (``operator`` may be given as its string, e.g. ``">="``)."""

    key: str
    value: Any
    operator: FilterOperator = FilterOperator.EQ

    def __post_init__(self) -> None:
        self.operator = FilterOperator(self.operator)
        if self.operator in (FilterOperator.IN, FilterOperator.NIN) and not isinstance(self.value, (list, tuple, set)):
            raise ValueError(f"filter {self.key!r} {self.operator.value}: value must be a list, got {self.value!r}")
        if self.operator in (FilterOperator.ANY, FilterOperator.ALL) and (
                not isinstance(self.value, (list, tuple, set)) or not self.value):
            raise ValueError(
                f"filter {self.key!r} {self.operator.value}: value must be a non-empty list, got {self.value!r}")


#: LlamaIndex's legacy name for an equality filter.
ExactMatchFilter = MetadataFilter


@dataclass
class MetadataFilters:
    """Filters (or nested groups of filters) combined with ``condition`` (``"and"``/``"or"``)."""

    filters: List[Union[MetadataFilter, "MetadataFilters"]]
    condition: FilterCondition = FilterCondition.AND

    def __post_init__(self) -> None:
        self.filters = list(self.filters)
        self.condition = FilterCondition(self.condition or FilterCondition.AND)
        for f in self.filters:
            if not isinstance(f, (MetadataFilter, MetadataFilters)):
                raise ValueError(f"MetadataFilters takes MetadataFilter or MetadataFilters, got {f!r}")

    @classmethod
    def from_dict(cls, data: Any) -> "MetadataFilters":
        """Filters from their JSON form: ``{"filters": [{"key", "value", "operator"} | nested group,
        ...], "condition": "and" | "or"}`` (``operator`` defaults to ``"=="``, ``condition`` to
        ``"and"``), as the HTTP API of ``ragloom serve`` takes them.

        Raises:
            ValueError: not that shape, an unknown field, operator or condition.
        """
        if not isinstance(data, dict) or not isinstance(data.get("filters"), list):
            raise ValueError(f'filters must be {{"filters": [...], "condition": "and"|"or"}}, got {data!r}')
        unknown = set(data) - {"filters", "condition"}
        if unknown:
            raise ValueError(f"filters: unknown field(s) {sorted(unknown)}; allowed: filters, condition")
        items: List[Union[MetadataFilter, MetadataFilters]] = []
        for item in data["filters"]:
            if isinstance(item, dict) and "filters" in item:
                items.append(cls.from_dict(item))
                continue
            if isinstance(item, dict) and item.get("operator") == FilterOperator.IS_EMPTY.value:
                item = {"value": None, **item}  # is_empty takes no value
            if not isinstance(item, dict) or not isinstance(item.get("key"), str) or "value" not in item:
                raise ValueError(f'each filter must be {{"key": str, "value": ..., "operator": str}}, got {item!r}')
            unknown = set(item) - {"key", "value", "operator"}
            if unknown:
                raise ValueError(f"filter {item['key']!r}: unknown field(s) {sorted(unknown)}")
            operator = item.get("operator", "==")
            if operator not in {op.value for op in FilterOperator}:
                raise ValueError(f"filter {item['key']!r}: operator must be one of "
                                 f"{[op.value for op in FilterOperator]}, got {operator!r}")
            items.append(MetadataFilter(key=item["key"], value=item["value"], operator=FilterOperator(operator)))
        condition = data.get("condition", "and")
        if condition not in ("and", "or"):
            raise ValueError(f"filters: condition must be 'and' or 'or', got {condition!r}")
        return cls(filters=items, condition=FilterCondition(condition))


class VectorStoreQueryMode(str, Enum):
    DEFAULT = "default"
    SPARSE = "sparse"
    HYBRID = "hybrid"
    TEXT_SEARCH = "text_search"
    MMR = "mmr"


@dataclass
class VectorStoreQuery:
    """A nearest-neighbour query: ``similarity_top_k`` nodes closest to ``query_embedding``.

    ``doc_ids`` restricts to nodes of those source documents, ``node_ids`` to those
    nodes, ``filters`` to nodes whose metadata match.
    """

    query_embedding: Optional[List[float]] = None
    similarity_top_k: int = 1
    doc_ids: Optional[List[str]] = None
    node_ids: Optional[List[str]] = None
    query_str: Optional[str] = None
    output_fields: Optional[List[str]] = None
    embedding_field: Optional[str] = None
    mode: Union[VectorStoreQueryMode, str] = VectorStoreQueryMode.DEFAULT
    alpha: Optional[float] = None
    filters: Optional[MetadataFilters] = None
    mmr_threshold: Optional[float] = None
    sparse_top_k: Optional[int] = None
    hybrid_top_k: Optional[int] = None


@dataclass
class VectorStoreQueryResult:
    """Best first: ``nodes`` (if the store keeps text), ``similarities`` and ``ids`` in the same order."""

    nodes: Optional[List[BaseNode]] = None
    similarities: Optional[List[float]] = None
    ids: Optional[List[str]] = None


class BasePydanticVectorStore(ABC):
    """The vector store protocol every backend implements.

    (The name is LlamaIndex's; ragloom stores are plain classes, not pydantic models.)
    """

    #: the store keeps node text and metadata (queries return whole nodes)
    stores_text: bool = False
    #: the store answers ``VectorStoreQueryMode.HYBRID`` / ``TEXT_SEARCH`` itself
    supports_hybrid: bool = False
    is_embedding_query: bool = True
    flat_metadata: bool = False

    @property
    def database(self) -> Any:
        """The :class:`~ragloom.storage.sqlite.SQLiteDatabase` this store writes to, or ``None`` (a
        server store, which commits on its own).  Writers open one transaction when the docstore
        has the same database."""
        return None

    @property
    def dimension(self) -> Optional[int]:
        """The length of the vectors this store holds, or ``None`` when unknown (empty, or a backend
        that does not say)."""
        return None

    def count(self) -> int:
        """Number of nodes stored.

        Raises:
            NotImplementedError: the backend cannot count.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot count its nodes")

    def ref_doc_nodes(self) -> Dict[str, Tuple[List[str], Dict[str, Any]]]:
        """``{ref_doc_id: (node ids, metadata of the first node)}`` of every source document.

        Raises:
            NotImplementedError: the backend cannot list its nodes by document.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot list its nodes by document")

    def optimize(self, force: bool = False) -> Dict[str, Any]:
        """Bring derived search structures (an approximate-nearest-neighbour index) up to date with
        what is stored; writers call it after an ingestion, holding the index's writer lock.

        Args:
            force: rebuild even when the store thinks it is current.

        Returns:
            What was done, JSON-ready (``{}``: nothing to do for this backend).
        """
        return {}

    def index_stats(self) -> Optional[Dict[str, Any]]:
        """The state of the store's derived search structures, JSON-ready, for ``/stats`` (the SQLite
        store: ``{"ann": {...}, "metadata_index": bool}``), or ``None``: this backend keeps none that
        ragloom manages."""
        return None

    @property
    @abstractmethod
    def client(self) -> Any:
        """The underlying client (for the default store: the apsw connection)."""

    @abstractmethod
    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> List[str]:
        """Add (or replace, by node id) nodes with their ``embedding``; return their ids."""

    @abstractmethod
    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node whose ``ref_doc_id`` is ``ref_doc_id``."""

    def delete_nodes(
        self,
        node_ids: Optional[List[str]] = None,
        filters: Optional[MetadataFilters] = None,
        **delete_kwargs: Any,
    ) -> None:
        """Delete nodes by id and/or matching ``filters`` (both given: nodes matching both)."""
        raise NotImplementedError(f"{type(self).__name__} cannot delete nodes")

    def get_nodes(
        self,
        node_ids: Optional[List[str]] = None,
        filters: Optional[MetadataFilters] = None,
    ) -> List[BaseNode]:
        """Nodes by id and/or matching ``filters``."""
        raise NotImplementedError(f"{type(self).__name__} cannot get nodes")

    @abstractmethod
    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The ``similarity_top_k`` nearest nodes, best first, scored by cosine similarity."""

    def validate_nodes(self, nodes: Sequence[BaseNode]) -> None:
        """Check that ``nodes`` can be stored here, *before* their embeddings are paid for.

        Writers (``VectorStoreIndex``; any code that embeds and then calls :meth:`add`) call it on
        every node of a write before embedding any of them.  It checks what the backend would
        reject later (metadata types, reserved keys, field sizes), not embeddings.  Default: accept.

        Raises:
            ValueError: a node this store cannot hold; the message names the node id and the reason.
        """
        return None

    def clear(self) -> None:
        """Delete every node."""
        raise NotImplementedError(f"{type(self).__name__} cannot clear")

    def persist(self, persist_path: str, fs: Any = None) -> None:
        """Make the store durable at ``persist_path`` (no-op for stores that always are)."""
        return None

    # -- async variants (the embedded store is local and fast: they run inline) ------------
    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> List[str]:
        return self.add(nodes, **kwargs)

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        self.delete(ref_doc_id, **delete_kwargs)

    async def adelete_nodes(
        self,
        node_ids: Optional[List[str]] = None,
        filters: Optional[MetadataFilters] = None,
        **delete_kwargs: Any,
    ) -> None:
        self.delete_nodes(node_ids, filters, **delete_kwargs)

    async def aget_nodes(
        self,
        node_ids: Optional[List[str]] = None,
        filters: Optional[MetadataFilters] = None,
    ) -> List[BaseNode]:
        return self.get_nodes(node_ids, filters)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        return self.query(query, **kwargs)

    async def aclear(self) -> None:
        self.clear()


#: Short name for the protocol.
VectorStore = BasePydanticVectorStore
