"""Retrievers: dense ``VectorIndexRetriever``, keyword ``BM25Retriever``, ``QueryFusionRetriever``,
``AutoMergingRetriever`` and ``RecursiveRetriever`` (LlamaIndex's names)."""

from typing import Any

from ragloom.fusion import FUSION_MODES
from ragloom.retrievers.auto_merging_retriever import AutoMergingRetriever
from ragloom.retrievers.base import BaseRetriever
from ragloom.retrievers.bm25 import BM25Retriever
from ragloom.retrievers.fusion_retriever import QueryFusionRetriever
from ragloom.retrievers.recursive_retriever import RecursiveRetriever
from ragloom.retrievers.router_retriever import RouterRetriever
from ragloom.retrievers.vector import VectorIndexRetriever

__all__ = [
    "BaseRetriever",
    "VectorIndexRetriever",
    "BM25Retriever",
    "QueryFusionRetriever",
    "FUSION_MODES",
    "AutoMergingRetriever",
    "RecursiveRetriever",
    "RouterRetriever",
]

# retrievers of the docstore-backed index kinds load on first use (their modules import the indexes,
# which import this package)
_LAZY = {
    "TreeSelectLeafRetriever": "ragloom.indices.tree",
    "TreeSelectLeafEmbeddingRetriever": "ragloom.indices.tree",
    "TreeAllLeafRetriever": "ragloom.indices.tree",
    "TreeRootRetriever": "ragloom.indices.tree",
    "KGTableRetriever": "ragloom.indices.knowledge_graph",
    "PGRetriever": "ragloom.indices.property_graph",
    "LLMSynonymRetriever": "ragloom.indices.property_graph",
    "VectorContextRetriever": "ragloom.indices.property_graph",
    "SummaryIndexRetriever": "ragloom.indices.list",
    "SummaryIndexEmbeddingRetriever": "ragloom.indices.list",
    "SummaryIndexLLMRetriever": "ragloom.indices.list",
    "KeywordTableGPTRetriever": "ragloom.indices.keyword_table",
    "KeywordTableSimpleRetriever": "ragloom.indices.keyword_table",
    "KeywordTableRAKERetriever": "ragloom.indices.keyword_table",
}
__all__ += list(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
