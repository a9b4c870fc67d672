"""``SimpleKeywordTableIndex``: a keyword table built from word frequencies, without a model."""

from __future__ import annotations

from typing import ClassVar, List

from ragloom.indices.keyword_table.base import BaseKeywordTableIndex, KeywordTableRetrieverMode

__all__ = ["SimpleKeywordTableIndex", "GPTSimpleKeywordTableIndex"]


class SimpleKeywordTableIndex(BaseKeywordTableIndex):
    """A keyword table whose node keywords are their ``max_keywords_per_chunk`` most frequent content
    words (:func:`ragloom.keywords.simple_extract_keywords`: Chinese segmented by rjieba, English
    stopwords dropped).  No LLM at build or query time (``as_retriever()`` defaults to ``"simple"``)."""

    extractor: ClassVar[str] = "simple"
    default_retriever_mode: ClassVar[str] = KeywordTableRetrieverMode.SIMPLE.value

    def _extract_keywords(self, text: str) -> List[str]:
        from ragloom.keywords import simple_extract_keywords

        return simple_extract_keywords(text, self.max_keywords_per_chunk)


#: LlamaIndex's older name.
GPTSimpleKeywordTableIndex = SimpleKeywordTableIndex
