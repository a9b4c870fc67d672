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
    "ChromaVectorStore",
    "MilvusVectorStore",
]

#: server/foreign-store adapters, imported on first use (their client libraries are extras)
_ADAPTERS = {
    "ChromaVectorStore": "ragloom.vector_stores.chroma",
    "MilvusVectorStore": "ragloom.vector_stores.milvus",
}


def __getattr__(name: str):  # PEP 562: lazy adapter classes
    if name in _ADAPTERS:
        import importlib

        return getattr(importlib.import_module(_ADAPTERS[name]), name)
    raise AttributeError(f"module 'ragloom.vector_stores' has no attribute {name!r}")
