"""LlamaIndex's module path for the default vector store (``vector_stores.simple.SimpleVectorStore``)."""

from ragloom.vector_stores.sqlite import SimpleVectorStore, SQLiteVectorStore

__all__ = ["SimpleVectorStore", "SQLiteVectorStore"]
