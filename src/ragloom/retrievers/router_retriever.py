"""``RouterRetriever``: a selector picks the retriever(s) that fit a query (LlamaIndex's class)."""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Sequence

import msgspec

from ragloom.retrievers.base import BaseRetriever
from ragloom.schema import NodeWithScore, QueryBundle
from ragloom.selectors.llm_selectors import LLMMultiSelector, LLMSingleSelector
from ragloom.selectors.types import BaseSelector
from ragloom.tools.retriever_tool import RetrieverTool

logger = logging.getLogger(__name__)

__all__ = ["RouterRetriever", "merge_by_node_id"]


def merge_by_node_id(result_lists: Sequence[Sequence[NodeWithScore]]) -> List[NodeWithScore]:
    """The nodes of every list, each node id once: at the place it first appears, with the
    highest score any list gave it (``None`` scores count as lowest)."""
    merged: Dict[str, NodeWithScore] = {}
    for results in result_lists:
        for n in results:
            kept = merged.get(n.node.node_id)
            if kept is None:
                merged[n.node.node_id] = n
            elif n.score is not None and (kept.score is None or n.score > kept.score):
                merged[n.node.node_id] = NodeWithScore(node=kept.node, score=n.score)
    return list(merged.values())


class RouterRetriever(BaseRetriever):
    """Retrieve with the retriever(s) whose description fits the query.

    The selector sees the tools' descriptions; each selected retriever runs (in selection order)
    and the results are merged by node id (:func:`merge_by_node_id`): first occurrence's place,
    highest score.  Scores of different retrievers are not on one scale, so the merged list is
    not re-sorted across retrievers.  Deliberate difference from LlamaIndex, whose merge keeps the
    last retriever's copy of a repeated node.

    Args:
        selector: a :class:`~ragloom.selectors.BaseSelector`.
        retriever_tools: the candidates, as :class:`~ragloom.tools.RetrieverTool` s.
        llm: kept for LlamaIndex compatibility (the selector holds the model it uses).
        callback_manager: see :class:`~ragloom.retrievers.BaseRetriever`.

    Raises:
        ValueError: no tools, a tool that is not a ``RetrieverTool``, or ``selector`` not a ``BaseSelector``.
    """

    def __init__(
        self,
        selector: BaseSelector,
        retriever_tools: Sequence[RetrieverTool],
        llm: Any = None,
        callback_manager: Any = None,
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        if not isinstance(selector, BaseSelector):
            raise ValueError(f"selector must be a BaseSelector, got {type(selector).__name__}")
        tools = list(retriever_tools)
        if not tools:
            raise ValueError("retriever_tools must hold at least one tool")
        for i, tool in enumerate(tools):
            if not isinstance(tool, RetrieverTool):
                raise ValueError(f"retriever_tools[{i}] must be a RetrieverTool, got {type(tool).__name__}")
        self._selector = selector
        self._retrievers = [t.retriever for t in tools]
        self._metadatas = [t.metadata for t in tools]
        self._llm = llm

    @classmethod
    def from_defaults(
        cls,
        retriever_tools: Sequence[RetrieverTool],
        llm: Any = None,
        selector: Optional[BaseSelector] = None,
        select_multi: bool = False,
    ) -> "RouterRetriever":
        """A router whose selector is ``selector``, else ``LLMMultiSelector.from_defaults(llm)``
        when ``select_multi``, else ``LLMSingleSelector.from_defaults(llm)``.

        Raises:
            ValueError: as the constructor; no LLM for the default selector.
        """
        if selector is None:
            selector = (LLMMultiSelector if select_multi else LLMSingleSelector).from_defaults(llm=llm)
        return cls(selector, retriever_tools, llm=llm)

    @property
    def selector(self) -> BaseSelector:
        return self._selector

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        result = self._selector.select(self._metadatas, query_bundle)
        for ind, reason in zip(result.inds, result.reasons, strict=True):
            logger.info("Selecting retriever %d (%s): %s", ind, self._metadatas[ind].name, reason)
        # each retriever gets its own copy: a vector retriever stores its query embedding on the
        # bundle, and the next retriever's index may use another embed model
        return merge_by_node_id(
            [self._retrievers[i].retrieve(msgspec.structs.replace(query_bundle)) for i in result.inds]
        )
