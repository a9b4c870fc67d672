"""Storage: the shared SQLite database, docstore, index store and :class:`StorageContext`.

``load_index_from_storage`` is re-exported lazily from :mod:`ragloom.indices.loading`
(importing it eagerly would pull the index classes into every storage import).
"""

from __future__ import annotations

import importlib
from typing import Any

from ragloom.storage.docstore import (
    BaseDocumentStore,
    RefDocInfo,
    SimpleDocumentStore,
    SQLiteDocumentStore,
)
from ragloom.storage.index_store import (
    BaseIndexStore,
    SimpleIndexStore,
    SQLiteIndexStore,
)
from ragloom.storage.sqlite import DEFAULT_DB_NAME, SQLiteDatabase
from ragloom.storage.storage_context import StorageContext

__all__ = [
    "StorageContext",
    "SQLiteDatabase",
    "DEFAULT_DB_NAME",
    "BaseDocumentStore",
    "RefDocInfo",
    "SQLiteDocumentStore",
    "SimpleDocumentStore",
    "BaseIndexStore",
    "SQLiteIndexStore",
    "SimpleIndexStore",
    "load_index_from_storage",
]

_LAZY = {
    "load_index_from_storage": "ragloom.indices.loading",
    "load_indices_from_storage": "ragloom.indices.loading",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ragloom.storage' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
