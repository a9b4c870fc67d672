"""Selectors (LlamaIndex ``llama_index.core.selectors`` names): pick the tools (query engines,
retrievers) that fit a query, by an LLM's choice or by embedding similarity.

``selector.select(choices, query) -> SelectorResult``; ``result.ind`` / ``result.inds`` are
0-based indices into ``choices``.
"""

from ragloom.selectors.embedding_selectors import EmbeddingSingleSelector
from ragloom.selectors.llm_selectors import LLMMultiSelector, LLMSingleSelector, parse_selections
from ragloom.selectors.types import BaseSelector, SelectorResult, SingleSelection

__all__ = [
    "BaseSelector",
    "SelectorResult",
    "SingleSelection",
    "LLMSingleSelector",
    "LLMMultiSelector",
    "EmbeddingSingleSelector",
    "parse_selections",
]
