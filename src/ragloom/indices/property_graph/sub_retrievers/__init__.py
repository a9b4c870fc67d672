"""Sub-retrievers of :class:`~ragloom.indices.property_graph.PGRetriever` (LlamaIndex's subset)."""

from ragloom.indices.property_graph.sub_retrievers.base import BasePGRetriever
from ragloom.indices.property_graph.sub_retrievers.llm_synonym import LLMSynonymRetriever
from ragloom.indices.property_graph.sub_retrievers.vector import VectorContextRetriever

__all__ = ["BasePGRetriever", "LLMSynonymRetriever", "VectorContextRetriever"]
