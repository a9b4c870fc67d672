"""``LLMSynonymRetriever``: graph paths from the entities an LLM names for a query (LlamaIndex's)."""

from __future__ import annotations

from typing import Any, Callable, List, Optional

from ragloom.indices.property_graph.sub_retrievers.base import BasePGRetriever
from ragloom.prompts.base import check_vars, to_prompt
from ragloom.prompts.graph_prompts import DEFAULT_SYNONYM_EXPAND_PROMPT
from ragloom.schema import NodeWithScore, QueryBundle

__all__ = ["LLMSynonymRetriever"]


class LLMSynonymRetriever(BasePGRetriever):
    """The LLM lists names and variants for the query (``synonym_prompt``, answer
    ``kw1^kw2^...``); the entities among them (matched case-insensitively) and the triplets within
    ``path_depth`` hops of them are returned, score 1.0 each.

    Args:
        graph_store: the property graph store.
        include_text: see :class:`~ragloom.indices.property_graph.sub_retrievers.base.BasePGRetriever`.
        synonym_prompt: takes ``query_str`` and ``max_keywords``.
        max_keywords: >= 1 (default 10).
        path_depth: hops, >= 1 (default 1).
        output_parsing_fn: ``fn(answer) -> [keyword]`` instead of splitting at ``^``.
        llm: default ``Settings.llm``.
        limit: triplets returned at most (default 30, the store's ``get_rel_map`` default).

    Differences from LlamaIndex: keywords are not capitalised (names are matched by key).

    Raises:
        ValueError: ``max_keywords`` / ``path_depth`` / ``limit`` < 1, or a prompt without ``query_str``.
    """

    def __init__(self, graph_store: Any, include_text: bool = True, synonym_prompt: Any = None,
                 max_keywords: int = 10, path_depth: int = 1,
                 output_parsing_fn: Optional[Callable[[str], List[str]]] = None, llm: Any = None,
                 include_text_preamble: Optional[str] = None, limit: int = 30, callback_manager: Any = None) -> None:
        for name, value in (("max_keywords", max_keywords), ("path_depth", path_depth), ("limit", limit)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        self._synonym_prompt = to_prompt(synonym_prompt or DEFAULT_SYNONYM_EXPAND_PROMPT, "synonym_prompt")
        check_vars(self._synonym_prompt, ["query_str"], "synonym_prompt")
        self._max_keywords = max_keywords
        self._path_depth = path_depth
        self._output_parsing_fn = output_parsing_fn
        self._llm_arg = llm
        self._limit = limit
        super().__init__(graph_store=graph_store, include_text=include_text,
                         include_text_preamble=include_text_preamble, callback_manager=callback_manager)

    def _parse_llm_output(self, output: str) -> List[str]:
        matches = self._output_parsing_fn(output) if self._output_parsing_fn else output.strip().split("^")
        cleaned = [m.strip().strip("\"'`*").strip() for m in matches]
        return list(dict.fromkeys(m for m in cleaned if m))[: self._max_keywords]

    def retrieve_from_graph(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        from ragloom.response_synthesizers.base import llm_or_default

        llm = llm_or_default(self._llm_arg)
        prompt = self._synonym_prompt
        if "max_keywords" in prompt.template_vars:
            prompt = prompt.partial_format(max_keywords=self._max_keywords)
        keywords = self._parse_llm_output(str(llm.predict(prompt, query_str=query_bundle.query_str)))
        if not keywords:
            return []
        entities = self._graph_store.get(ids=keywords)
        triplets = self._graph_store.get_rel_map(entities, depth=self._path_depth, limit=self._limit)
        return self._get_nodes_with_score(triplets)
