"""Add the neighbours of retrieved nodes: ``PrevNextNodePostprocessor`` and ``AutoPrevNextNodePostprocessor``.

Neighbours are found through the nodes' ``PREVIOUS`` / ``NEXT`` relationships (set by every
ragloom node parser) and read from a docstore.  With ragloom's default storage the docstore
records nodes by link and reads their text from the vector store
(:meth:`~ragloom.storage.docstore.types.BaseDocumentStore.set_node_source`), so
``docstore=index.docstore`` works as in LlamaIndex.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional

from ragloom.postprocessor.types import BaseNodePostprocessor
from ragloom.prompts import PromptTemplate
from ragloom.schema import BaseNode, NodeWithScore, QueryBundle

__all__ = ["AutoPrevNextNodePostprocessor", "PrevNextNodePostprocessor"]

logger = logging.getLogger(__name__)

_MODES = ("next", "previous", "both")

DEFAULT_INFER_PREV_NEXT_TMPL = PromptTemplate(
    "A question will be answered from an excerpt of a longer text. Decide whether the passages just "
    "BEFORE the excerpt, just AFTER it, or NEITHER are also needed.\n"
    "Examples:\n"
    "Question: What happened after the wedding?\nAnswer: NEXT\n"
    "Question: What led up to the strike?\nAnswer: PREVIOUS\n"
    "Question: Who wrote the letter?\nAnswer: NONE\n\n"
    "Excerpt:\n{context_str}\n\n"
    "Question: {query_str}\n"
    "Answer with exactly one word, NEXT, PREVIOUS or NONE.\nAnswer: "
)

DEFAULT_REFINE_INFER_PREV_NEXT_TMPL = PromptTemplate(
    "A question will be answered from an excerpt of a longer text. An earlier judgement on whether "
    "the passages BEFORE or AFTER the excerpt are needed was: {existing_answer}\n"
    "Given more of the excerpt below, keep or change it.\n"
    "Excerpt:\n{context_msg}\n\n"
    "Question: {query_str}\n"
    "Answer with exactly one word, NEXT, PREVIOUS or NONE.\nAnswer: "
)


def _check(num_nodes: int, mode: str) -> None:
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 1:
        raise ValueError(f"num_nodes must be an int >= 1, got {num_nodes!r}")
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {', '.join(_MODES)}, got {mode!r}")


def _walk(docstore: Any, node: BaseNode, num_nodes: int, forward: bool) -> List[BaseNode]:
    """Up to ``num_nodes`` neighbours of ``node`` in one direction, nearest first; stops at a
    missing link or a neighbour the docstore does not have (logged once per walk)."""
    out: List[BaseNode] = []
    current = node
    for _ in range(num_nodes):
        info = current.next_node if forward else current.prev_node
        if info is None:
            break
        found = docstore.get_nodes([info.node_id], raise_error=False)
        if not found:
            logger.warning("neighbour %s of node %s is not in the docstore; not added", info.node_id, current.node_id)
            break
        current = found[0]
        out.append(current)
    return out


def _with_neighbours(
    docstore: Any, nodes: List[NodeWithScore], num_nodes: int, mode: str
) -> List[NodeWithScore]:
    """Each retrieved node in retrieval order, its neighbours around it in document order; a node
    that is already present (retrieved, or another node's neighbour) is not repeated.  A neighbour
    carries the score of the retrieved node that brought it in (LlamaIndex gives it none, which a
    later ``SimilarityPostprocessor`` would drop)."""
    seen: Dict[str, bool] = {n.node.node_id: True for n in nodes}
    out: List[NodeWithScore] = []
    for hit in nodes:
        before = _walk(docstore, hit.node, num_nodes, forward=False) if mode in ("previous", "both") else []
        after = _walk(docstore, hit.node, num_nodes, forward=True) if mode in ("next", "both") else []
        for neighbour in reversed(before):
            if neighbour.node_id not in seen:
                seen[neighbour.node_id] = True
                out.append(NodeWithScore(node=neighbour, score=hit.score))
        out.append(hit)
        for neighbour in after:
            if neighbour.node_id not in seen:
                seen[neighbour.node_id] = True
                out.append(NodeWithScore(node=neighbour, score=hit.score))
    return out


class PrevNextNodePostprocessor(BaseNodePostprocessor):
    """Add up to ``num_nodes`` neighbours before and/or after each retrieved node (LlamaIndex's class).

    Args:
        docstore: where neighbours are read (``index.docstore``); any
            :class:`~ragloom.storage.docstore.types.BaseDocumentStore`.
        num_nodes: neighbours per side, >= 1.
        mode: ``"next"`` (default), ``"previous"`` or ``"both"``.

    Each neighbour is placed beside its node in document order (see :func:`_with_neighbours`).

    Raises:
        ValueError: ``num_nodes`` < 1 or an unknown ``mode``.
    """

    def __init__(self, docstore: Any, num_nodes: int = 1, mode: str = "next") -> None:
        _check(num_nodes, mode)
        self.docstore = docstore
        self.num_nodes = num_nodes
        self.mode = mode

    def to_config(self) -> Dict[str, Any]:
        return {"class_name": self.class_name(), "num_nodes": self.num_nodes, "mode": self.mode}

    def _postprocess_nodes(
        self, nodes: List[NodeWithScore], query_bundle: Optional[QueryBundle] = None
    ) -> List[NodeWithScore]:
        return _with_neighbours(self.docstore, nodes, self.num_nodes, self.mode)


def _parse_direction(answer: str) -> Optional[str]:
    """``"next"``, ``"previous"``, ``"none"`` from the model's answer (the first of the three words
    it contains, case-insensitive), or ``None`` when it contains none of them."""
    lowered = answer.lower()
    hits = [(lowered.find(w), w) for w in ("next", "previous", "none") if w in lowered]
    return min(hits)[1] if hits else None


class AutoPrevNextNodePostprocessor(BaseNodePostprocessor):
    """Let the LLM decide per query whether the previous or the next nodes are needed, then add
    them as :class:`PrevNextNodePostprocessor` does (LlamaIndex's class).

    The LLM sees the retrieved text (packed to its context window) and the question and answers
    ``NEXT``, ``PREVIOUS`` or ``NONE``; an answer with none of the three words adds nothing and is
    logged (LlamaIndex raises).  One LLM call per query, more only when the retrieved text does not
    fit one prompt (then the answer is refined over the parts).

    Args:
        docstore: where neighbours are read (``index.docstore``).
        llm: the model; default ``Settings.llm``.
        num_nodes: neighbours per side, >= 1.
        infer_prev_next_tmpl / refine_prev_next_tmpl: prompts (``{context_str}``/``{context_msg}``,
            ``{query_str}``, ``{existing_answer}``).
        verbose: print the model's decision.

    Raises:
        ValueError: ``num_nodes`` < 1.
    """

    def __init__(
        self,
        docstore: Any,
        llm: Any = None,
        num_nodes: int = 1,
        infer_prev_next_tmpl: Any = None,
        refine_prev_next_tmpl: Any = None,
        verbose: bool = False,
    ) -> None:
        _check(num_nodes, "both")
        from ragloom.settings import Settings

        self.docstore = docstore
        self.llm = llm if llm is not None else Settings.llm
        self.num_nodes = num_nodes
        self.infer_prev_next_tmpl = infer_prev_next_tmpl or DEFAULT_INFER_PREV_NEXT_TMPL
        self.refine_prev_next_tmpl = refine_prev_next_tmpl or DEFAULT_REFINE_INFER_PREV_NEXT_TMPL
        self.verbose = verbose

    def to_config(self) -> Dict[str, Any]:
        return {"class_name": self.class_name(), "num_nodes": self.num_nodes}

    def _decide(self, nodes: List[NodeWithScore], query_str: str) -> Optional[str]:
        from ragloom.response_synthesizers import get_response_synthesizer

        synthesizer = get_response_synthesizer(
            llm=self.llm,
            response_mode="compact",
            text_qa_template=self.infer_prev_next_tmpl,
            refine_template=self.refine_prev_next_tmpl,
        )
        answer = str(synthesizer.synthesize(query_str, nodes=nodes))
        direction = _parse_direction(answer)
        if self.verbose:
            print(f"> neighbours needed: {direction or 'unclear'} (model said {answer.strip()!r})")
        if direction is None:
            logger.warning("AutoPrevNextNodePostprocessor: the model answered %r, not NEXT/PREVIOUS/NONE; "
                           "no neighbours added", answer.strip()[:200])
        return direction

    def _postprocess_nodes(
        self, nodes: List[NodeWithScore], query_bundle: Optional[QueryBundle] = None
    ) -> List[NodeWithScore]:
        if query_bundle is None:
            raise ValueError("AutoPrevNextNodePostprocessor needs the query (query_bundle or query_str)")
        if not nodes:
            return []
        direction = self._decide(nodes, query_bundle.query_str)
        if direction in (None, "none"):
            return list(nodes)
        return _with_neighbours(self.docstore, nodes, self.num_nodes, str(direction))
