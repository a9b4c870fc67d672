"""Retrievers: dense ``VectorIndexRetriever``, keyword ``BM25Retriever``, ``QueryFusionRetriever``,
``AutoMergingRetriever`` and ``RecursiveRetriever`` (LlamaIndex's names)."""

from ragloom.fusion import FUSION_MODES
from ragloom.retrievers.auto_merging_retriever import AutoMergingRetriever
from ragloom.retrievers.base import BaseRetriever
from ragloom.retrievers.bm25 import BM25Retriever
from ragloom.retrievers.fusion_retriever import QueryFusionRetriever
from ragloom.retrievers.recursive_retriever import RecursiveRetriever
from ragloom.retrievers.vector import VectorIndexRetriever

__all__ = [
    "BaseRetriever",
    "VectorIndexRetriever",
    "BM25Retriever",
    "QueryFusionRetriever",
    "FUSION_MODES",
    "AutoMergingRetriever",
    "RecursiveRetriever",
]
