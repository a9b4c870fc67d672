"""Vector stores: the protocol (:mod:`.types`) and the embedded default (:class:`SQLiteVectorStore`)."""

from ragloom.vector_stores.filters import filters_to_sql, metadata_matches
from ragloom.vector_stores.sqlite import SimpleVectorStore, SQLiteVectorStore
from ragloom.vector_stores.types import (
    BasePydanticVectorStore,
    ExactMatchFilter,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStore,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)

__all__ = [
    "BasePydanticVectorStore",
    "VectorStore",
    "ExactMatchFilter",
    "FilterCondition",
    "FilterOperator",
    "MetadataFilter",
    "MetadataFilters",
    "VectorStoreQuery",
    "VectorStoreQueryMode",
    "VectorStoreQueryResult",
    "SQLiteVectorStore",
    "SimpleVectorStore",
    "filters_to_sql",
    "metadata_matches",
]
