"""Document stores (LlamaIndex names): the protocol and the SQLite default."""

from ragloom.storage.docstore.sqlite_docstore import (
    SimpleDocumentStore,
    SQLiteDocumentStore,
)
from ragloom.storage.docstore.types import BaseDocumentStore, RefDocInfo

# LlamaIndex's KV-backed docstore is, here, the SQLite one
DocumentStore = SQLiteDocumentStore

__all__ = ["BaseDocumentStore", "RefDocInfo", "SQLiteDocumentStore", "SimpleDocumentStore", "DocumentStore"]
