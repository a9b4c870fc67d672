"""``ResponseMode``: how retrieved text becomes an answer (values as LlamaIndex's)."""

from __future__ import annotations

from enum import Enum

__all__ = ["ResponseMode"]


class ResponseMode(str, Enum):
    """Response modes of :func:`~ragloom.response_synthesizers.get_response_synthesizer`.

    - ``refine``: answer from the first chunk, refine with each further chunk (>= 1 call per chunk).
    - ``compact`` (default): pack chunks into as few window-sized pieces as possible, then refine.
    - ``tree_summarize``: summarize packed pieces, then the summaries, until one call covers all.
    - ``simple_summarize``: truncate every chunk to fit one call.
    - ``accumulate``: one answer per chunk, concatenated; ``compact_accumulate`` packs first.
    - ``generation``: answer the question without the retrieved text.
    - ``no_text``: no LLM call; only the retrieved nodes.
    - ``context_only``: no LLM call; the retrieved text as the response.
    """

    REFINE = "refine"
    COMPACT = "compact"
    SIMPLE_SUMMARIZE = "simple_summarize"
    TREE_SUMMARIZE = "tree_summarize"
    GENERATION = "generation"
    NO_TEXT = "no_text"
    CONTEXT_ONLY = "context_only"
    ACCUMULATE = "accumulate"
    COMPACT_ACCUMULATE = "compact_accumulate"
