"""``TreeSelectLeafRetriever``: walk a :class:`~ragloom.indices.tree.TreeIndex` from the roots down,
the LLM choosing the branch at each level (LlamaIndex's)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, List, Optional, Tuple

from ragloom.indices.tree.utils import extract_choice_numbers, fill_prompt, numbered_text, prompt_helper_for
from ragloom.prompts.base import check_vars, to_prompt
from ragloom.prompts.tree_prompts import DEFAULT_QUERY_PROMPT, DEFAULT_QUERY_PROMPT_MULTIPLE
from ragloom.retrievers.base import BaseRetriever
from ragloom.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle

if TYPE_CHECKING:
    from ragloom.indices.tree.base import TreeIndex

logger = logging.getLogger(__name__)

__all__ = ["TreeSelectLeafRetriever"]


class TreeSelectLeafRetriever(BaseRetriever):
    """The leaves reached by walking down from the roots, choosing at each level.

    At each level with more than ``child_branch_factor`` nodes the LLM sees them numbered (their
    summaries, or the chunks' text at the bottom) and names the ``child_branch_factor`` that best lead
    to the answer (``query_template`` for one, ``query_template_multiple`` for more; answer
    ``ANSWER: <number>``); the children of the chosen nodes form the next level.  A chosen leaf is a
    result.  Prompts fit the LLM's window in its tokenizer (:func:`~ragloom.indices.tree.utils.fill_prompt`).
    Results are unscored (``score=None``), in the order chosen.  An answer without a usable number
    ends that branch with a warning (LlamaIndex: the same, silently).

    Args:
        index: the tree index.
        query_template: takes ``num_chunks``, ``context_list``, ``query_str``.
        query_template_multiple: also ``branching_factor``.
        child_branch_factor: nodes chosen per level, >= 1.
        llm: the model choosing (default: the index's).
        text_qa_template, refine_template, callback_manager, object_map, verbose: accepted for
            LlamaIndex compatibility (its retriever uses the two templates only in a query path that
            ragloom's query engines do not take; pass them to ``as_query_engine``).

    Raises:
        ValueError: ``child_branch_factor`` < 1, or a template without its variables.
    """

    def __init__(
        self,
        index: "TreeIndex",
        query_template: Any = None,
        text_qa_template: Any = None,
        refine_template: Any = None,
        query_template_multiple: Any = None,
        child_branch_factor: int = 1,
        verbose: bool = False,
        callback_manager: Any = None,
        object_map: Any = None,
        llm: Any = None,
    ) -> None:
        if isinstance(child_branch_factor, bool) or not isinstance(child_branch_factor, int) or child_branch_factor < 1:
            raise ValueError(f"child_branch_factor must be an int >= 1, got {child_branch_factor!r}")
        self._index = index
        self.query_template = to_prompt(query_template or DEFAULT_QUERY_PROMPT, "query_template")
        check_vars(self.query_template, ["num_chunks", "context_list", "query_str"], "query_template")
        self.query_template_multiple = to_prompt(query_template_multiple or DEFAULT_QUERY_PROMPT_MULTIPLE,
                                                 "query_template_multiple")
        check_vars(self.query_template_multiple, ["num_chunks", "context_list", "query_str", "branching_factor"],
                   "query_template_multiple")
        self.child_branch_factor = child_branch_factor
        self._llm_arg = llm
        self.callback_manager = callback_manager
        self._verbose = verbose

    @property
    def llm(self) -> Any:
        return self._llm_arg if self._llm_arg is not None else self._index.llm

    def _select_nodes(self, nodes: List[BaseNode], query_bundle: QueryBundle, level: int
                      ) -> List[Tuple[BaseNode, Optional[float]]]:
        """The nodes chosen among ``nodes`` with their score (``None`` here), best first."""
        llm = self.llm
        if self.child_branch_factor == 1:
            prompt = self.query_template.partial_format(num_chunks=len(nodes), query_str=query_bundle.query_str)
        else:
            prompt = self.query_template_multiple.partial_format(
                num_chunks=len(nodes), query_str=query_bundle.query_str, branching_factor=self.child_branch_factor)
        texts = [n.get_content(metadata_mode=MetadataMode.LLM) for n in nodes]
        filled = fill_prompt(prompt_helper_for(llm), llm, prompt, "context_list", texts, numbered_text)
        answer = str(llm.predict(filled))
        numbers = extract_choice_numbers(answer, len(nodes), self.child_branch_factor)
        if not numbers:
            logger.warning("tree retrieval, level %d: the LLM named no node in 1..%d (%r)", level, len(nodes),
                           answer[:200])
        return [(nodes[i - 1], None) for i in numbers]

    def _choose(self, nodes: List[BaseNode], query_bundle: QueryBundle, level: int
                ) -> List[Tuple[BaseNode, Optional[float]]]:
        """The nodes of one level to follow (all of them when there are ``child_branch_factor`` or fewer)."""
        if len(nodes) > self.child_branch_factor:
            return self._select_nodes(nodes, query_bundle, level)
        return [(n, None) for n in nodes]

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        index = self._index
        results: List[NodeWithScore] = []
        frontier = index._children_of(None)
        level = 0
        while frontier:
            chosen = self._choose(index._tree_nodes(frontier), query_bundle, level)
            frontier = []
            for node, score in chosen:
                kids = index._children_of(node.node_id)
                if kids:
                    frontier.extend(kids)
                else:
                    results.append(NodeWithScore(node=node, score=score))
            level += 1
        return results
