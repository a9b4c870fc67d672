"""``SummaryIndex`` / ``ListIndex`` and its retrievers (``llama_index.core.indices.list``)."""

from ragloom.indices.list.base import GPTListIndex, ListIndex, ListRetrieverMode, SummaryIndex, SummaryRetrieverMode
from ragloom.indices.list.retrievers import (
    ListIndexEmbeddingRetriever,
    ListIndexLLMRetriever,
    ListIndexRetriever,
    SummaryIndexEmbeddingRetriever,
    SummaryIndexLLMRetriever,
    SummaryIndexRetriever,
)

__all__ = [
    "SummaryIndex",
    "ListIndex",
    "GPTListIndex",
    "ListRetrieverMode",
    "SummaryRetrieverMode",
    "SummaryIndexRetriever",
    "SummaryIndexEmbeddingRetriever",
    "SummaryIndexLLMRetriever",
    "ListIndexRetriever",
    "ListIndexEmbeddingRetriever",
    "ListIndexLLMRetriever",
]
