"""``KnowledgeGraphIndex`` and its retriever (LlamaIndex's ``llama_index.core.indices.knowledge_graph``)."""

from ragloom.indices.knowledge_graph.base import GPTKnowledgeGraphIndex, KnowledgeGraphIndex
from ragloom.indices.knowledge_graph.retrievers import KGRetrieverMode, KGTableRetriever

__all__ = ["KnowledgeGraphIndex", "GPTKnowledgeGraphIndex", "KGTableRetriever", "KGRetrieverMode"]
