"""Keyword table indexes and their retrievers (``llama_index.core.indices.keyword_table``)."""

from ragloom.indices.keyword_table.base import (
    BaseKeywordTableIndex,
    GPTKeywordTableIndex,
    KeywordTableIndex,
    KeywordTableRetrieverMode,
)
from ragloom.indices.keyword_table.rake_base import GPTRAKEKeywordTableIndex, RAKEKeywordTableIndex
from ragloom.indices.keyword_table.retrievers import (
    BaseKeywordTableRetriever,
    KeywordTableGPTRetriever,
    KeywordTableRAKERetriever,
    KeywordTableSimpleRetriever,
)
from ragloom.indices.keyword_table.simple_base import GPTSimpleKeywordTableIndex, SimpleKeywordTableIndex

__all__ = [
    "BaseKeywordTableIndex",
    "KeywordTableIndex",
    "GPTKeywordTableIndex",
    "SimpleKeywordTableIndex",
    "GPTSimpleKeywordTableIndex",
    "RAKEKeywordTableIndex",
    "GPTRAKEKeywordTableIndex",
    "KeywordTableRetrieverMode",
    "BaseKeywordTableRetriever",
    "KeywordTableGPTRetriever",
    "KeywordTableSimpleRetriever",
    "KeywordTableRAKERetriever",
]
