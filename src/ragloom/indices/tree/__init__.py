"""``TreeIndex`` and its retrievers (LlamaIndex's ``llama_index.core.indices.tree``)."""

from ragloom.indices.tree.all_leaf_retriever import TreeAllLeafRetriever
from ragloom.indices.tree.base import GPTTreeIndex, TreeIndex, TreeRetrieverMode
from ragloom.indices.tree.select_leaf_embedding_retriever import TreeSelectLeafEmbeddingRetriever
from ragloom.indices.tree.select_leaf_retriever import TreeSelectLeafRetriever
from ragloom.indices.tree.tree_root_retriever import TreeRootRetriever

__all__ = [
    "TreeIndex",
    "GPTTreeIndex",
    "TreeRetrieverMode",
    "TreeSelectLeafRetriever",
    "TreeSelectLeafEmbeddingRetriever",
    "TreeAllLeafRetriever",
    "TreeRootRetriever",
]
