"""``get_response_synthesizer``: a synthesizer for a :class:`ResponseMode` (LlamaIndex arguments)."""

from __future__ import annotations

from typing import Any

from ragloom.response_synthesizers.accumulate import Accumulate, CompactAccumulate
from ragloom.response_synthesizers.base import BaseSynthesizer
from ragloom.response_synthesizers.no_text import ContextOnly, Generation, NoText
from ragloom.response_synthesizers.refine import CompactAndRefine, Refine
from ragloom.response_synthesizers.simple_summarize import SimpleSummarize
from ragloom.response_synthesizers.tree_summarize import TreeSummarize
from ragloom.response_synthesizers.type import ResponseMode

__all__ = ["get_response_synthesizer"]


def get_response_synthesizer(
    llm: Any = None,
    prompt_helper: Any = None,
    text_qa_template: Any = None,
    refine_template: Any = None,
    summary_template: Any = None,
    simple_template: Any = None,
    response_mode: Any = ResponseMode.COMPACT,
    callback_manager: Any = None,
    use_async: bool = False,
    streaming: bool = False,
    verbose: bool = False,
    **kwargs: Any,
) -> BaseSynthesizer:
    """The synthesizer of ``response_mode`` (a :class:`ResponseMode` or its string value).

    Args:
        llm: the model; default ``Settings.llm`` (not needed for ``no_text`` / ``context_only``).
        prompt_helper: token budgeting; default from the LLM (context window, output budget, tokenizer).
        text_qa_template / refine_template / summary_template / simple_template: prompts
            replacing the defaults of :mod:`ragloom.prompts` (``str`` or ``PromptTemplate``).
        use_async: concurrent calls within ``tree_summarize`` levels and ``accumulate``.
        streaming: the answer as a stream of deltas (``StreamingResponse``).

    Raises:
        ValueError: unknown ``response_mode`` (lists the allowed ones); a template without its
            required variables; ``streaming`` with an accumulate mode; an LLM is needed but
            neither ``llm`` nor ``Settings.llm`` is set.
    """
    try:
        mode = ResponseMode(response_mode)
    except ValueError:
        allowed = ", ".join(m.value for m in ResponseMode)
        raise ValueError(f"response_mode must be one of {allowed}; got {response_mode!r}") from None
    common = dict(llm=llm, callback_manager=callback_manager, prompt_helper=prompt_helper,
                  streaming=streaming, verbose=verbose, **kwargs)
    if mode == ResponseMode.REFINE:
        return Refine(text_qa_template=text_qa_template, refine_template=refine_template, **common)
    if mode == ResponseMode.COMPACT:
        return CompactAndRefine(text_qa_template=text_qa_template, refine_template=refine_template, **common)
    if mode == ResponseMode.TREE_SUMMARIZE:
        return TreeSummarize(summary_template=summary_template, use_async=use_async, **common)
    if mode == ResponseMode.SIMPLE_SUMMARIZE:
        return SimpleSummarize(text_qa_template=text_qa_template, **common)
    if mode == ResponseMode.GENERATION:
        return Generation(simple_template=simple_template, **common)
    if mode == ResponseMode.ACCUMULATE:
        return Accumulate(text_qa_template=text_qa_template, use_async=use_async, **common)
    if mode == ResponseMode.COMPACT_ACCUMULATE:
        return CompactAccumulate(text_qa_template=text_qa_template, use_async=use_async, **common)
    if mode == ResponseMode.NO_TEXT:
        return NoText(**common)
    return ContextOnly(**common)
