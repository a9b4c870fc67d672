"""Metadata extractors (LlamaIndex's ``llama_index.core.extractors``): transformations that add
metadata to nodes between the node parser and the embed model, cached per node, concurrent, and
fitted to the embed model's input limit (see :mod:`ragloom.extractors.interface`)."""

from ragloom.extractors.interface import DEFAULT_NODE_TEXT_TEMPLATE, BaseExtractor, EmbedBudget
from ragloom.extractors.metadata_extractors import (
    KEYWORD_MODES,
    KeywordExtractor,
    QuestionsAnsweredExtractor,
    SummaryExtractor,
    TitleExtractor,
)

__all__ = [
    "DEFAULT_NODE_TEXT_TEMPLATE",
    "KEYWORD_MODES",
    "BaseExtractor",
    "EmbedBudget",
    "KeywordExtractor",
    "QuestionsAnsweredExtractor",
    "SummaryExtractor",
    "TitleExtractor",
]
