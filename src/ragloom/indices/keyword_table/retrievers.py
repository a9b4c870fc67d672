"""Retrievers of the keyword table indexes (LlamaIndex's names and arguments)."""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Any, Dict, List

from ragloom.prompts.mixin import PromptMixin
from ragloom.retrievers.base import BaseRetriever
from ragloom.schema import NodeWithScore, QueryBundle

if TYPE_CHECKING:
    from ragloom.indices.keyword_table.base import BaseKeywordTableIndex

__all__ = [
    "BaseKeywordTableRetriever",
    "KeywordTableGPTRetriever",
    "KeywordTableSimpleRetriever",
    "KeywordTableRAKERetriever",
]

DEFAULT_MAX_KEYWORDS_PER_QUERY = 10
DEFAULT_NUM_CHUNKS_PER_QUERY = 10


def _check_positive(value: Any, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    return value


class BaseKeywordTableRetriever(BaseRetriever, PromptMixin):
    """Find the query's keywords (:meth:`_get_keywords`), then return the ``num_chunks_per_query``
    nodes that share the most of them, most first.

    The score of a node is the number of the query's matching keys it has (LlamaIndex returns no
    score); ties keep the order of the query's keywords, then node id order.  Keywords are expanded
    and matched as the index does (see :mod:`ragloom.indices.keyword_table.base`).

    Args:
        index: the keyword table index.
        keyword_extract_template: accepted for LlamaIndex compatibility (the index's own is used to
            build it).
        query_keyword_extract_template: the LLM prompt for the query's keywords (variables
            ``question``, ``max_keywords``; :class:`KeywordTableGPTRetriever` only).
        max_keywords_per_query: keywords taken from the query (>= 1).
        num_chunks_per_query: most nodes returned (>= 1).

    Raises:
        ValueError: a count < 1, or a template without its variables.
    """

    def __init__(
        self,
        index: "BaseKeywordTableIndex",
        keyword_extract_template: Any = None,
        query_keyword_extract_template: Any = None,
        max_keywords_per_query: int = DEFAULT_MAX_KEYWORDS_PER_QUERY,
        num_chunks_per_query: int = DEFAULT_NUM_CHUNKS_PER_QUERY,
        callback_manager: Any = None,
        object_map: Any = None,
        verbose: bool = False,
    ) -> None:
        from ragloom.prompts.base import check_vars, to_prompt
        from ragloom.prompts.index_prompts import DEFAULT_QUERY_KEYWORD_EXTRACT_TEMPLATE

        self._index = index
        self.max_keywords_per_query = _check_positive(max_keywords_per_query, "max_keywords_per_query")
        self.num_chunks_per_query = _check_positive(num_chunks_per_query, "num_chunks_per_query")
        prompt = DEFAULT_QUERY_KEYWORD_EXTRACT_TEMPLATE if query_keyword_extract_template is None else to_prompt(
            query_keyword_extract_template, "query_keyword_extract_template")
        check_vars(prompt, ["question", "max_keywords"], "query_keyword_extract_template")
        self.query_keyword_extract_template = prompt
        self.callback_manager = callback_manager
        self._verbose = verbose

    def _get_prompts(self) -> Dict[str, Any]:
        return {"query_keyword_extract_template": self.query_keyword_extract_template}

    def _update_prompts(self, prompts: Dict[str, Any]) -> None:
        from ragloom.prompts.base import check_vars, to_prompt

        if "query_keyword_extract_template" in prompts:
            prompt = to_prompt(prompts["query_keyword_extract_template"], "query_keyword_extract_template")
            check_vars(prompt, ["question", "max_keywords"], "query_keyword_extract_template")
            self.query_keyword_extract_template = prompt

    @abstractmethod
    def _get_keywords(self, query_str: str) -> List[str]:
        """The query's keywords."""

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        from ragloom.keywords import expand_with_subtokens, keyword_key

        keys = list(dict.fromkeys(k for k in map(keyword_key, expand_with_subtokens(
            self._get_keywords(query_bundle.query_str))) if k))
        postings = self._index.lookup(keys)
        counts: Dict[str, int] = {}
        first: Dict[str, int] = {}
        for rank, key in enumerate(keys):
            for node_id in postings.get(key, []):
                counts[node_id] = counts.get(node_id, 0) + 1
                first.setdefault(node_id, rank)
        best = sorted(counts, key=lambda n: (-counts[n], first[n], n))[: self.num_chunks_per_query]
        nodes = {n.node_id: n for n in self._index._get_nodes(best)}
        return [NodeWithScore(node=nodes[n], score=float(counts[n])) for n in best if n in nodes]


class KeywordTableGPTRetriever(BaseKeywordTableRetriever):
    """Keywords of the query from the LLM (``query_keyword_extract_template``; the answer is read with
    :func:`ragloom.keywords.extract_keywords_given_response`).

    Args:
        llm: default: the index's LLM, else ``Settings.llm``.
        **kwargs: see :class:`BaseKeywordTableRetriever`.

    Raises:
        ValueError: as :class:`BaseKeywordTableRetriever`; no LLM configured (when retrieving).
    """

    def __init__(self, index: "BaseKeywordTableIndex", llm: Any = None, **kwargs: Any) -> None:
        super().__init__(index, **kwargs)
        self._llm_arg = llm

    @property
    def llm(self) -> Any:
        if self._llm_arg is not None:
            from ragloom.response_synthesizers.base import llm_or_default

            return llm_or_default(self._llm_arg)
        return self._index.llm

    def _get_keywords(self, query_str: str) -> List[str]:
        from ragloom.keywords import extract_keywords_given_response

        response = self.llm.predict(self.query_keyword_extract_template, question=query_str,
                                    max_keywords=self.max_keywords_per_query)
        return extract_keywords_given_response(response, start_token="KEYWORDS:")


class KeywordTableSimpleRetriever(BaseKeywordTableRetriever):
    """Keywords of the query: its most frequent content words (:func:`ragloom.keywords.simple_extract_keywords`)."""

    def _get_keywords(self, query_str: str) -> List[str]:
        from ragloom.keywords import simple_extract_keywords

        return simple_extract_keywords(query_str, self.max_keywords_per_query)


class KeywordTableRAKERetriever(BaseKeywordTableRetriever):
    """Keywords of the query: its RAKE phrases and their words (:func:`ragloom.keywords.rake_extract_keywords`)."""

    def _get_keywords(self, query_str: str) -> List[str]:
        from ragloom.keywords import rake_extract_keywords

        return rake_extract_keywords(query_str, self.max_keywords_per_query)
