"""Indexes: ``VectorStoreIndex``, the docstore-backed kinds (``SummaryIndex``, keyword tables …), loading."""

from ragloom.indices.base import BaseIndex
from ragloom.indices.knowledge_graph import GPTKnowledgeGraphIndex, KnowledgeGraphIndex
from ragloom.indices.keyword_table import (
    GPTKeywordTableIndex,
    GPTRAKEKeywordTableIndex,
    GPTSimpleKeywordTableIndex,
    KeywordTableIndex,
    RAKEKeywordTableIndex,
    SimpleKeywordTableIndex,
)
from ragloom.indices.list import GPTListIndex, ListIndex, SummaryIndex
from ragloom.indices.loading import load_index_from_storage, load_indices_from_storage
from ragloom.indices.property_graph import PropertyGraphIndex
from ragloom.indices.tree import GPTTreeIndex, TreeIndex
from ragloom.indices.vector_store import VectorStoreIndex
from ragloom.ingestion.transform import run_transformations

__all__ = [
    "VectorStoreIndex", "load_index_from_storage", "load_indices_from_storage", "run_transformations",
    "BaseIndex", "SummaryIndex", "ListIndex", "GPTListIndex",
    "KeywordTableIndex", "SimpleKeywordTableIndex", "RAKEKeywordTableIndex",
    "GPTKeywordTableIndex", "GPTSimpleKeywordTableIndex", "GPTRAKEKeywordTableIndex",
    "TreeIndex", "GPTTreeIndex", "KnowledgeGraphIndex", "GPTKnowledgeGraphIndex", "PropertyGraphIndex",
]
