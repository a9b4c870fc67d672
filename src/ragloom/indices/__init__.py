"""Indexes: ``VectorStoreIndex`` and loading from storage."""

from ragloom.indices.loading import load_index_from_storage, load_indices_from_storage
from ragloom.indices.vector_store import VectorStoreIndex
from ragloom.ingestion.transform import run_transformations

__all__ = ["VectorStoreIndex", "load_index_from_storage", "load_indices_from_storage", "run_transformations"]
