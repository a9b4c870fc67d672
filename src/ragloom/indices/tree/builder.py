"""Filling a :class:`~ragloom.indices.tree.shape.TreeShape` with LLM summaries (LlamaIndex's
``GPTTreeIndexBuilder`` and ``TreeIndexInserter`` behaviour).

* :meth:`TreeBuilder.build` (an empty tree, many leaves): bottom up.  The leaves are cut into groups
  of ``num_children`` in order, each group gets a summary node, and the summaries are grouped again
  until at most ``num_children`` nodes are left: those are the roots.  ``n`` leaves cost about
  ``n / (num_children - 1)`` LLM calls; ``n <= num_children`` leaves cost none (they are the roots).
* :meth:`TreeBuilder.insert` (one more leaf in a built tree): from the roots down, while the
  current nodes are summaries the LLM picks the one the new text belongs under
  (``insert_prompt``, answer ``ANSWER: <number>``); at the level of leaves the new leaf joins them.
  A node left with more than ``num_children`` children has them split into two halves, each under a
  new summary node (two LLM calls).  An answer with no usable number puts the leaf at the current
  level, as in LlamaIndex.
* :meth:`TreeBuilder.refresh`: every summary whose children changed (*stale*, see
  :mod:`~ragloom.indices.tree.shape`) is summarised again, deepest first, once.  LlamaIndex
  re-summarises every ancestor after every inserted leaf; ragloom does it once per write call, so
  inserting a document of ``k`` chunks costs ``k`` descents but one re-summary per affected node.
  During the descents of one call, ancestors not yet re-summarised show their previous summary.

Summary prompts are filled by :func:`~ragloom.indices.tree.utils.fill_prompt`: they fit the LLM's
context window in its own tokenizer, children cut max-min fairly when they do not.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Optional

from ragloom.indices.tree.shape import TreeShape, summary_id
from ragloom.indices.tree.utils import (
    extract_choice_numbers,
    fill_prompt,
    numbered_text,
    prompt_helper_for,
    texts_by_id,
)

logger = logging.getLogger(__name__)

__all__ = ["TreeBuilder"]

#: share of the room the new text may take in an insert prompt (the rest is for the summaries)
_NEW_TEXT_SHARE = 0.5


class TreeBuilder:
    """Summaries for a tree, made with ``llm``.

    Args:
        llm: an :class:`~ragloom.llms.LLM`.
        num_children: most children per node (>= 2).
        summary_template: takes ``context_str``.
        insert_prompt: takes ``num_chunks``, ``context_list``, ``new_chunk_text``.
        leaf_text: ``{leaf id: text the LLM sees}`` for a list of leaf ids.

    Attributes:
        llm_calls: LLM calls made so far.
    """

    def __init__(self, llm: Any, num_children: int, summary_template: Any, insert_prompt: Any,
                 leaf_text: Callable[[List[str]], Dict[str, str]]) -> None:
        self.llm = llm
        self.num_children = num_children
        self.summary_template = summary_template
        self.insert_prompt = insert_prompt
        self._leaf_text = leaf_text
        self._helper = prompt_helper_for(llm)
        self.llm_calls = 0

    # -- text ------------------------------------------------------------------------------------
    def _texts(self, shape: TreeShape, ids: List[str]) -> List[str]:
        return texts_by_id(ids, shape.texts, self._leaf_text)

    def _ask(self, prompt: str) -> str:
        self.llm_calls += 1
        return str(self.llm.predict(prompt))

    def summarize(self, shape: TreeShape, kids: List[str]) -> str:
        """A summary of the texts of ``kids`` (one LLM call; children joined by newlines)."""
        prompt = fill_prompt(self._helper, self.llm, self.summary_template, "context_str",
                             self._texts(shape, kids), "\n".join)
        return self._ask(prompt).strip()

    # -- building ----------------------------------------------------------------------------------
    def build(self, shape: TreeShape, leaves: List[str]) -> None:
        """Build ``shape`` (empty) bottom up over ``leaves``, in order."""
        if not shape.empty:
            raise ValueError("build() needs an empty tree; use insert() to add to a built one")
        level = list(leaves)
        while len(level) > self.num_children:
            parents: List[str] = []
            for start in range(0, len(level), self.num_children):
                kids = level[start : start + self.num_children]
                parents.append(shape.add_summary(kids, self.summarize(shape, kids)))
            level = parents
        shape.roots[:] = level

    # -- inserting ----------------------------------------------------------------------------------
    def insert(self, shape: TreeShape, leaf: str) -> None:
        """Insert ``leaf`` as LlamaIndex's inserter does (see the module docstring)."""
        parent: Optional[str] = None
        while True:
            kids = shape.kids(parent)
            if not kids or not shape.is_summary(kids[0]):
                break
            choice = self._choose(shape, kids, leaf)
            if choice is None:
                break
            parent = choice
        shape.kids(parent).append(leaf)
        if len(shape.kids(parent)) > self.num_children:
            self._split(shape, parent)

    def _choose(self, shape: TreeShape, kids: List[str], leaf: str) -> Optional[str]:
        """The child of ``kids`` the LLM puts ``leaf`` under, or ``None`` (no usable answer)."""
        helper = self._helper
        new_text = self._texts(shape, [leaf])[0]
        room = helper.context_window - helper.num_output - helper.prompt_tokens(self.insert_prompt, llm=self.llm)
        new_text = helper.truncate_text(new_text, max(1, int(room * _NEW_TEXT_SHARE)))
        prompt = self.insert_prompt.partial_format(num_chunks=len(kids), new_chunk_text=new_text)
        filled = fill_prompt(helper, self.llm, prompt, "context_list", self._texts(shape, kids), numbered_text)
        numbers = extract_choice_numbers(self._ask(filled), len(kids), 1)
        if not numbers:
            logger.warning("tree insert: the LLM named no summary in 1..%d; the node goes at this level", len(kids))
            return None
        return kids[numbers[0] - 1]

    def _split(self, shape: TreeShape, parent: Optional[str]) -> None:
        """Put the children of ``parent`` (``None``: the roots) under two new summaries, half each."""
        kids = list(shape.kids(parent))
        half = len(kids) // 2
        new = [shape.add_summary(part, self.summarize(shape, part)) for part in (kids[:half], kids[half:])]
        shape.kids(parent)[:] = new

    # -- refreshing ----------------------------------------------------------------------------------
    def refresh(self, shape: TreeShape) -> None:
        """Re-summarise every stale summary once, deepest first (see the module docstring)."""
        if not shape.stale():
            return
        depths = shape.depths()
        by_depth: Dict[int, List[str]] = {}
        for node, depth in depths.items():
            if shape.is_summary(node):
                by_depth.setdefault(depth, []).append(node)
        for depth in sorted(by_depth, reverse=True):
            parents = shape.parents()
            for node in by_depth[depth]:
                kids = shape.children[node]
                fresh = summary_id(kids)
                if fresh == node:
                    continue
                text = self.summarize(shape, kids)
                shape.rename(node, fresh, parents[node])
                shape.texts[fresh] = text
