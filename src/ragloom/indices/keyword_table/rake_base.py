"""``RAKEKeywordTableIndex``: a keyword table built from RAKE keyphrases, without a model."""

from __future__ import annotations

from typing import ClassVar, List

from ragloom.indices.keyword_table.base import BaseKeywordTableIndex, KeywordTableRetrieverMode

__all__ = ["RAKEKeywordTableIndex", "GPTRAKEKeywordTableIndex"]


class RAKEKeywordTableIndex(BaseKeywordTableIndex):
    """A keyword table whose node keywords are their ``max_keywords_per_chunk`` best RAKE phrases and
    the words of those phrases (:func:`ragloom.keywords.rake_extract_keywords`; Chinese phrases are
    bounded by the function words and punctuation rjieba finds).  LlamaIndex needs the ``rake_nltk``
    package and NLTK data for this; ragloom needs nothing more.  No LLM (``as_retriever()`` defaults
    to ``"rake"``)."""

    extractor: ClassVar[str] = "rake"
    default_retriever_mode: ClassVar[str] = KeywordTableRetrieverMode.RAKE.value

    def _extract_keywords(self, text: str) -> List[str]:
        from ragloom.keywords import rake_extract_keywords

        return rake_extract_keywords(text, self.max_keywords_per_chunk)


#: LlamaIndex's older name.
GPTRAKEKeywordTableIndex = RAKEKeywordTableIndex
