"""Node postprocessors: run on retrieved ``list[NodeWithScore]`` before synthesis."""

from ragloom.postprocessor.metadata_replacement import MetadataReplacementPostProcessor
from ragloom.postprocessor.node import SimilarityPostprocessor
from ragloom.postprocessor.sbert_rerank import SentenceTransformerRerank
from ragloom.postprocessor.types import BaseNodePostprocessor

__all__ = [
    "BaseNodePostprocessor",
    "MetadataReplacementPostProcessor",
    "SimilarityPostprocessor",
    "SentenceTransformerRerank",
]
