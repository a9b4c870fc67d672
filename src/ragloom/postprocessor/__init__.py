"""Node postprocessors: run on retrieved ``list[NodeWithScore]`` before synthesis."""

from ragloom.postprocessor.keyword import KeywordNodePostprocessor
from ragloom.postprocessor.llm_rerank import LLMRerank
from ragloom.postprocessor.metadata_replacement import MetadataReplacementPostProcessor
from ragloom.postprocessor.node import SimilarityPostprocessor
from ragloom.postprocessor.prev_next import AutoPrevNextNodePostprocessor, PrevNextNodePostprocessor
from ragloom.postprocessor.reorder import LongContextReorder
from ragloom.postprocessor.sbert_rerank import SentenceTransformerRerank
from ragloom.postprocessor.types import BaseNodePostprocessor

__all__ = [
    "AutoPrevNextNodePostprocessor",
    "BaseNodePostprocessor",
    "KeywordNodePostprocessor",
    "LLMRerank",
    "LongContextReorder",
    "PrevNextNodePostprocessor",
    "MetadataReplacementPostProcessor",
    "SimilarityPostprocessor",
    "SentenceTransformerRerank",
]
