"""``LLMRerank``: an LLM rates retrieved nodes for a query, batch by batch, and the best-rated are
kept (LlamaIndex's class, arguments and prompt variables)."""

from __future__ import annotations

import logging
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ragloom.callbacks.schema import CBEventType, EventPayload
from ragloom.postprocessor.types import BaseNodePostprocessor
from ragloom.prompts.base import PromptTemplate, check_vars, to_prompt
from ragloom.prompts.mixin import PromptMixin
from ragloom.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle

logger = logging.getLogger(__name__)

__all__ = [
    "LLMRerank",
    "DEFAULT_CHOICE_SELECT_PROMPT_TMPL",
    "DEFAULT_CHOICE_SELECT_PROMPT",
    "default_format_node_batch_fn",
    "default_parse_choice_select_answer_fn",
]

#: ragloom's own wording, LlamaIndex's variables (``context_str``: the numbered documents,
#: ``query_str``) and LlamaIndex's answer format, so templates written for either drop in
DEFAULT_CHOICE_SELECT_PROMPT_TMPL = (
    "Below are numbered documents, then a question. Decide which documents help answer the "
    "question and rate each of those from 1 (barely) to 10 (answers it fully). Leave out "
    "documents that do not help.\n"
    "====================\n"
    "{context_str}\n"
    "====================\n"
    "Question: {query_str}\n"
    "Answer with one line per helpful document, most helpful first, exactly like this and "
    "nothing else:\n"
    "Doc: 2, Relevance: 9\n"
    "Doc: 1, Relevance: 4\n"
    "Answer:\n"
)
DEFAULT_CHOICE_SELECT_PROMPT = PromptTemplate(DEFAULT_CHOICE_SELECT_PROMPT_TMPL, prompt_type="choice_select")

_DOC = re.compile(r"\b(?:doc(?:ument)?)\b\s*(?:#|no\.?|number)?\s*[:=]?\s*\(?(\d+)\)?", re.IGNORECASE)
_RELEVANCE = re.compile(
    r"\b(?:relevance|relevancy|score|rating)\b\s*(?:score)?\s*[:=]?\s*(-?\d+(?:\.\d+)?)", re.IGNORECASE
)


def default_format_node_batch_fn(nodes: Sequence[BaseNode]) -> str:
    """``"Document N:\\n<text>"`` per node (N from 1, text with ``MetadataMode.LLM``), blank-line separated."""
    return "\n\n".join(
        f"Document {i}:\n{node.get_content(metadata_mode=MetadataMode.LLM)}" for i, node in enumerate(nodes, 1)
    )


def default_parse_choice_select_answer_fn(answer: str, num_choices: int) -> Tuple[List[int], List[float]]:
    """The documents an answer names and their ratings: ``([1-based numbers], [relevances])``.

    Each line is read on its own; a line counts when it names a document (``Doc: 2``,
    ``Document 2``, ``doc #2``) and a rating (``Relevance: 9``, ``score=9.5``), in any
    punctuation, Markdown bullets and bold included.  A number outside ``1..num_choices`` or
    a document named twice (the first line wins) is ignored.  When no line has a rating but some
    name documents, those documents all get relevance 1.0 (as LlamaIndex).  An answer that names
    none gives two empty lists (logged as a warning).
    """
    rated: Dict[int, float] = {}
    unrated: List[int] = []
    for line in answer.splitlines():
        doc = _DOC.search(line)
        if doc is None:
            continue
        number = int(doc.group(1))
        if not 1 <= number <= num_choices:
            logger.warning("LLMRerank: the LLM rated document %d; the batch has 1..%d: ignored", number, num_choices)
            continue
        rel = _RELEVANCE.search(line[doc.end():]) or _RELEVANCE.search(line)
        if rel is not None:
            rated.setdefault(number, float(rel.group(1)))
        elif number not in unrated:
            unrated.append(number)
    if rated:
        return list(rated), list(rated.values())
    if not unrated and answer.strip():
        logger.warning("LLMRerank: no 'Doc: N, Relevance: S' line in the LLM's answer: %r", answer[:300])
    return unrated, [1.0] * len(unrated)


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    return value


class LLMRerank(BaseNodePostprocessor, PromptMixin):
    """Ask an LLM to rate the retrieved nodes; keep the ``top_n`` best-rated.

    The nodes go to the LLM ``choice_batch_size`` at a time (one call per batch), numbered from 1
    within the batch (:func:`default_format_node_batch_fn`); the answer is read by
    :func:`default_parse_choice_select_answer_fn`.  Returned nodes are new ``NodeWithScore`` s
    whose score is the LLM's rating (1-10 with the default prompt), sorted by it, highest first
    (ties keep retrieval order).  Nodes the LLM leaves out are dropped, as LlamaIndex.  Ratings of
    different batches are compared as they are.

    Unlike LlamaIndex, a batch whose answer names no document of the batch at all (the answer
    could not be read, or the parser returned nothing) is not dropped: its nodes are kept, with
    their retrieval scores, after every rated node, in retrieval order, and a warning is logged.
    LlamaIndex drops them, so one unreadable answer from a small model leaves the query engine
    with no context ("Empty Response").  Each call reports one ``RERANKING`` callback
    event (``MODEL_NAME``: the LLM's model name, ``TOP_K``: ``top_n``).

    Args:
        llm: the model (default ``Settings.llm``).
        choice_select_prompt: a ``PromptTemplate`` or string with ``{context_str}`` and ``{query_str}``.
        choice_batch_size: nodes per LLM call (>= 1).
        format_node_batch_fn: ``fn(list[BaseNode]) -> str``, the ``context_str`` of a batch.
        parse_choice_select_answer_fn: ``fn(answer, batch_size) -> ([1-based numbers], [relevances])``.
        top_n: most nodes returned (>= 1).

    Raises:
        ValueError: ``choice_batch_size`` or ``top_n`` < 1; the prompt lacks a variable; no LLM is
            configured; (postprocessing) no query given.
    """

    def __init__(
        self,
        llm: Any = None,
        choice_select_prompt: Any = None,
        choice_batch_size: int = 10,
        format_node_batch_fn: Optional[Callable[[Sequence[BaseNode]], str]] = None,
        parse_choice_select_answer_fn: Optional[Callable[[str, int], Tuple[List[int], List[float]]]] = None,
        top_n: int = 10,
    ) -> None:
        from ragloom.response_synthesizers.base import llm_or_default

        self.choice_batch_size = _positive_int(choice_batch_size, "choice_batch_size")
        self.top_n = _positive_int(top_n, "top_n")
        self.llm = llm_or_default(llm)
        self.choice_select_prompt = self._checked(
            choice_select_prompt if choice_select_prompt is not None else DEFAULT_CHOICE_SELECT_PROMPT
        )
        self._format_node_batch_fn = format_node_batch_fn or default_format_node_batch_fn
        self._parse_choice_select_answer_fn = parse_choice_select_answer_fn or default_parse_choice_select_answer_fn

    @staticmethod
    def _checked(prompt: Any) -> PromptTemplate:
        prompt = to_prompt(prompt, "choice_select_prompt")
        check_vars(prompt, ["context_str", "query_str"], "choice_select_prompt")
        return prompt

    callback_event_type = CBEventType.RERANKING

    def _callback_payload(self) -> Dict[EventPayload, Any]:
        return {EventPayload.MODEL_NAME: self.llm.metadata.model_name, EventPayload.TOP_K: self.top_n}

    def to_config(self) -> Dict[str, Any]:
        return {"class_name": self.class_name(), "top_n": self.top_n, "choice_batch_size": self.choice_batch_size}

    def _get_prompts(self) -> Dict[str, Any]:
        return {"choice_select_prompt": self.choice_select_prompt}

    def _update_prompts(self, prompts: Dict[str, Any]) -> None:
        if "choice_select_prompt" in prompts:
            self.choice_select_prompt = self._checked(prompts["choice_select_prompt"])

    def _rate_batch(self, batch: List[BaseNode], query_str: str) -> List[Tuple[int, float]]:
        """``[(0-based position in batch, relevance)]`` of the documents the answer rates; ``[]``
        when it names none of them."""
        answer = self.llm.predict(
            self.choice_select_prompt, context_str=self._format_node_batch_fn(batch), query_str=query_str
        )
        numbers, relevances = self._parse_choice_select_answer_fn(answer, len(batch))
        relevances = list(relevances) or [1.0] * len(numbers)
        out: Dict[int, float] = {}
        for n, r in zip(numbers, relevances, strict=False):
            if 1 <= n <= len(batch):
                out.setdefault(n - 1, float(r))  # a custom parser's repeats count once
        return list(out.items())

    def _postprocess_nodes(
        self, nodes: List[NodeWithScore], query_bundle: Optional[QueryBundle] = None
    ) -> List[NodeWithScore]:
        if query_bundle is None:
            raise ValueError("LLMRerank needs the query: pass query_bundle or query_str")
        rated: List[Tuple[float, int, NodeWithScore]] = []
        unread: List[NodeWithScore] = []  # batches whose answer rated nothing, in retrieval order
        for start in range(0, len(nodes), self.choice_batch_size):
            chunk = nodes[start:start + self.choice_batch_size]
            batch = [n.node for n in chunk]
            ratings = self._rate_batch(batch, query_bundle.query_str)
            if not ratings:
                logger.warning(
                    "LLMRerank: the LLM's answer for nodes %d..%d rates none of them; keeping them in "
                    "retrieval order after the rated nodes", start + 1, start + len(chunk),
                )
                unread.extend(NodeWithScore(node=n.node, score=n.score) for n in chunk)
            for i, relevance in ratings:
                rated.append((relevance, start + i, NodeWithScore(node=batch[i], score=relevance)))
        rated.sort(key=lambda t: (-t[0], t[1]))
        return ([n for _, _, n in rated] + unread)[: self.top_n]
