"""LlamaIndex's module path for the default index store (``...index_store.simple_index_store.SimpleIndexStore``)."""

from ragloom.storage.index_store.sqlite_index_store import (
    SimpleIndexStore,
    SQLiteIndexStore,
)

__all__ = ["SimpleIndexStore", "SQLiteIndexStore"]
