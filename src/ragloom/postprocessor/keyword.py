"""``KeywordNodePostprocessor``: keep nodes that contain required keywords and none of the excluded ones."""

from __future__ import annotations

import unicodedata
from typing import Any, Dict, List, Optional, Sequence

import regex

from ragloom.postprocessor.types import BaseNodePostprocessor
from ragloom.schema import MetadataMode, NodeWithScore, QueryBundle

__all__ = ["KeywordNodePostprocessor"]

# scripts written without spaces between words: a keyword in them matches as a substring
_UNSPACED = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}]")


def _normalise(text: str) -> str:
    """NFKC (full-width letters and digits become ASCII) and case-folded."""
    return unicodedata.normalize("NFKC", text).casefold()


class _Matcher:
    """One keyword: a substring test for keywords in unspaced scripts, a whole-word test otherwise."""

    def __init__(self, keyword: str) -> None:
        norm = _normalise(keyword).strip()
        if not norm:
            raise ValueError(f"keywords must not be empty or blank, got {keyword!r}")
        self.keyword = keyword
        if _UNSPACED.search(norm):
            self._pattern = regex.compile(regex.escape(norm))
        else:
            # words of the keyword separated by any whitespace; not inside a longer word
            parts = [regex.escape(p) for p in norm.split()]
            self._pattern = regex.compile(r"(?<![\p{L}\p{N}_])" + r"\s+".join(parts) + r"(?![\p{L}\p{N}_])")

    def found_in(self, normalised_text: str) -> bool:
        return self._pattern.search(normalised_text) is not None


class KeywordNodePostprocessor(BaseNodePostprocessor):
    """Keep the nodes whose text contains every ``required_keywords`` entry and no
    ``exclude_keywords`` entry (LlamaIndex's class; order and scores are kept).

    Matching is case-insensitive and NFKC-normalised (full-width ``ＡＢＣ`` matches ``abc``).
    A keyword containing Chinese or Japanese characters (or Thai, Lao, Khmer, Myanmar:
    scripts written without spaces) matches anywhere in the text, so ``"苹果"`` finds
    ``"我喜欢苹果手机"``; any other keyword matches whole words only (``"cat"`` does not match
    ``"concatenate"``; a phrase matches across any whitespace).  LlamaIndex matches with a
    spaCy tokenizer per ``lang`` and needs spaCy installed; here no language model is needed and
    ``lang`` is accepted and ignored.

    Args:
        required_keywords: every one must occur (a single string is one keyword).
        exclude_keywords: none may occur (a single string is one keyword).
        lang: accepted for compatibility.
        metadata_mode: which view of the node is searched (default: its text alone, ``NONE``).

    Raises:
        ValueError: an empty or blank keyword.
    """

    def __init__(
        self,
        required_keywords: Optional[Sequence[str]] = None,
        exclude_keywords: Optional[Sequence[str]] = None,
        lang: str = "en",
        metadata_mode: MetadataMode = MetadataMode.NONE,
    ) -> None:
        # a bare string is one keyword (list("苹果") would be two one-character keywords)
        if isinstance(required_keywords, str):
            required_keywords = [required_keywords]
        if isinstance(exclude_keywords, str):
            exclude_keywords = [exclude_keywords]
        self.required_keywords = list(required_keywords or [])
        self.exclude_keywords = list(exclude_keywords or [])
        self.lang = lang
        self.metadata_mode = MetadataMode(metadata_mode)
        self._required = [_Matcher(k) for k in self.required_keywords]
        self._excluded = [_Matcher(k) for k in self.exclude_keywords]

    def to_config(self) -> Dict[str, Any]:
        return {
            "class_name": self.class_name(),
            "required_keywords": self.required_keywords,
            "exclude_keywords": self.exclude_keywords,
        }

    def _keep(self, text: str) -> bool:
        norm = _normalise(text)
        return all(m.found_in(norm) for m in self._required) and not any(m.found_in(norm) for m in self._excluded)

    def _postprocess_nodes(
        self, nodes: List[NodeWithScore], query_bundle: Optional[QueryBundle] = None
    ) -> List[NodeWithScore]:
        return [n for n in nodes if self._keep(n.node.get_content(metadata_mode=self.metadata_mode))]
