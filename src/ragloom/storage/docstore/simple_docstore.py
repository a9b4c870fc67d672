"""LlamaIndex's module path for the default docstore (``...docstore.simple_docstore.SimpleDocumentStore``)."""

from ragloom.storage.docstore.sqlite_docstore import (
    SimpleDocumentStore,
    SQLiteDocumentStore,
)

__all__ = ["SimpleDocumentStore", "SQLiteDocumentStore"]
