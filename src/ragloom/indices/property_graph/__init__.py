"""``PropertyGraphIndex``, its extractor and retrievers (LlamaIndex's
``llama_index.core.indices.property_graph``, the subset listed in
:class:`~ragloom.indices.property_graph.base.PropertyGraphIndex`)."""

from ragloom.indices.property_graph.base import PropertyGraphIndex
from ragloom.indices.property_graph.retriever import PGRetriever
from ragloom.indices.property_graph.sub_retrievers import BasePGRetriever, LLMSynonymRetriever, VectorContextRetriever
from ragloom.indices.property_graph.transformations import SimpleLLMPathExtractor
from ragloom.indices.property_graph.utils import default_parse_triplets_fn

__all__ = [
    "PropertyGraphIndex",
    "PGRetriever",
    "BasePGRetriever",
    "LLMSynonymRetriever",
    "VectorContextRetriever",
    "SimpleLLMPathExtractor",
    "default_parse_triplets_fn",
]
