"""Index stores (LlamaIndex names): the protocol and the SQLite default."""

from ragloom.storage.index_store.sqlite_index_store import (
    SimpleIndexStore,
    SQLiteIndexStore,
)
from ragloom.storage.index_store.types import BaseIndexStore

__all__ = ["BaseIndexStore", "SQLiteIndexStore", "SimpleIndexStore"]
