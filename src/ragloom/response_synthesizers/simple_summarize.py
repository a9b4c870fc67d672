"""``SimpleSummarize`` (response mode ``simple_summarize``): one LLM call.

Every chunk is cut to an equal share of the context window (:meth:`PromptHelper.truncate`) and
the pieces, joined by newlines, fill the QA prompt.  The filled prompt is then counted exactly;
if it is still over ``context_window - num_output`` (token merges at the joins), the pieces are
cut again with more padding, so the prompt sent always fits.
"""

from __future__ import annotations

from typing import Any, Sequence

from ragloom.response_synthesizers.base import BaseSynthesizer, LLMCall, Plan
from ragloom.response_synthesizers.refine import TEXT_QA_SPEC

__all__ = ["SimpleSummarize"]


class SimpleSummarize(BaseSynthesizer):
    """Truncate every chunk to its share of the window and answer in one call.

    Args:
        llm, prompt_helper, streaming, callback_manager, verbose: see :class:`BaseSynthesizer`.
        text_qa_template: prompt with ``{context_str}`` and ``{query_str}``; default
            :data:`~ragloom.prompts.DEFAULT_TEXT_QA_PROMPT`.

    Raises:
        ValueError: ``text_qa_template`` lacks ``context_str``; no LLM is configured.
    """

    _prompt_specs = {"text_qa_template": TEXT_QA_SPEC}

    def __init__(
        self,
        llm: Any = None,
        callback_manager: Any = None,
        prompt_helper: Any = None,
        text_qa_template: Any = None,
        streaming: bool = False,
        verbose: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(llm=llm, callback_manager=callback_manager, prompt_helper=prompt_helper,
                         streaming=streaming, verbose=verbose, **kwargs)
        self._set_prompt("text_qa_template", text_qa_template)

    def _plan(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> Plan:
        helper, llm = self.prompt_helper, self._llm
        prompt = self._qa_prompt(query_str)
        chunks = [c for c in text_chunks if c and c.strip()]
        room = helper.context_window - helper.num_output
        system = getattr(llm, "system_prompt", None)
        extra = helper.count_tokens(system + "\n\n") if system else 0
        padding = 5
        while True:
            cut = helper.truncate(prompt, chunks, padding=padding, llm=llm) if chunks else []
            call = LLMCall(prompt, {"context_str": "\n".join(c for c in cut if c)})
            used = helper.count_tokens(call.text()) + extra
            if used <= room:
                return call
            padding += max(1, (used - room) // max(1, len(chunks)) + 1)
        yield []  # pragma: no cover - makes this a generator

    def _qa_prompt(self, query_str: str) -> Any:
        return self._text_qa_template.partial_format(query_str=query_str)
