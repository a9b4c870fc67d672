"""LlamaIndex's keyword utilities (``llama_index.core.indices.keyword_table.utils``), returning sets
as LlamaIndex does; the ranked-list versions are in :mod:`ragloom.keywords`."""

from __future__ import annotations

from typing import Iterable, Optional, Set

from ragloom import keywords as _kw

__all__ = [
    "simple_extract_keywords",
    "rake_extract_keywords",
    "extract_keywords_given_response",
    "expand_tokens_with_subtokens",
]


def simple_extract_keywords(text_chunk: str, max_keywords: Optional[int] = None,
                            filter_stopwords: bool = True) -> Set[str]:
    """``set`` of :func:`ragloom.keywords.simple_extract_keywords`."""
    return set(_kw.simple_extract_keywords(text_chunk, max_keywords, filter_stopwords))


def rake_extract_keywords(text_chunk: str, max_keywords: Optional[int] = None,
                          expand_with_subtokens: bool = True) -> Set[str]:
    """``set`` of :func:`ragloom.keywords.rake_extract_keywords`."""
    return set(_kw.rake_extract_keywords(text_chunk, max_keywords, expand_with_subtokens))


def extract_keywords_given_response(response: str, lowercase: bool = True, start_token: str = "") -> Set[str]:
    """``set`` of :func:`ragloom.keywords.extract_keywords_given_response`."""
    return set(_kw.extract_keywords_given_response(response, lowercase, start_token))


def expand_tokens_with_subtokens(tokens: Iterable[str]) -> Set[str]:
    """``set`` of :func:`ragloom.keywords.expand_with_subtokens`."""
    return set(_kw.expand_with_subtokens(tokens))
