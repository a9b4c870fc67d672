"""``Accumulate`` and ``CompactAccumulate`` (response modes ``accumulate`` and ``compact_accumulate``).

``Accumulate`` asks the QA prompt once per chunk (a chunk too large for the window is split
into several calls) and joins the answers as ``"Response 1: …"``, ``"Response 2: …"`` with
``separator`` (default a line of dashes), as LlamaIndex does.  ``CompactAccumulate`` first packs the
chunks into as few window-sized pieces as possible.  Streaming is not available in these modes.
"""

from __future__ import annotations

from typing import Any, List, Sequence

from ragloom.response_synthesizers.base import EMPTY_RESPONSE, BaseSynthesizer, LLMCall, Plan
from ragloom.response_synthesizers.refine import TEXT_QA_SPEC

__all__ = ["Accumulate", "CompactAccumulate", "DEFAULT_ACCUMULATE_SEPARATOR"]

DEFAULT_ACCUMULATE_SEPARATOR = "\n---------------------\n"


class Accumulate(BaseSynthesizer):
    """One answer per chunk, all returned together.

    Args:
        llm, prompt_helper, callback_manager, verbose: see :class:`BaseSynthesizer`.
        text_qa_template: prompt with ``{context_str}`` and ``{query_str}``; default
            :data:`~ragloom.prompts.DEFAULT_TEXT_QA_PROMPT`.
        use_async: make the calls concurrently (``LLM.apredict`` + ``asyncio.gather``).
        streaming: must be False.

    Raises:
        ValueError: ``streaming=True``; ``text_qa_template`` lacks ``context_str``; no LLM.
    """

    _prompt_specs = {"text_qa_template": TEXT_QA_SPEC}

    def __init__(
        self,
        llm: Any = None,
        callback_manager: Any = None,
        prompt_helper: Any = None,
        text_qa_template: Any = None,
        use_async: bool = False,
        streaming: bool = False,
        verbose: bool = False,
        **kwargs: Any,
    ) -> None:
        if streaming:
            raise ValueError("streaming=True is not available with response_mode='accumulate' / 'compact_accumulate'")
        super().__init__(llm=llm, callback_manager=callback_manager, prompt_helper=prompt_helper,
                         streaming=False, verbose=verbose, **kwargs)
        self._set_prompt("text_qa_template", text_qa_template)
        self._use_async = bool(use_async)

    def _pieces(self, prompt: Any, text_chunks: Sequence[str]) -> List[str]:
        helper, llm = self.prompt_helper, self._llm
        out: List[str] = []
        for chunk in text_chunks:
            out.extend(helper.repack(prompt, [chunk], llm=llm))
        return out

    def _plan(
        self, query_str: str, text_chunks: Sequence[str], separator: str = DEFAULT_ACCUMULATE_SEPARATOR, **kwargs: Any
    ) -> Plan:
        prompt = self._text_qa_template.partial_format(query_str=query_str)
        pieces = self._pieces(prompt, text_chunks)
        if not pieces:
            return ""
        answers = yield [LLMCall(prompt, {"context_str": p}, parallel=self._use_async) for p in pieces]
        return separator.join(f"Response {i + 1}: {a or EMPTY_RESPONSE}" for i, a in enumerate(answers))


class CompactAccumulate(Accumulate):
    """:class:`Accumulate` over chunks first packed into as few window-sized pieces as possible."""

    def _pieces(self, prompt: Any, text_chunks: Sequence[str]) -> List[str]:
        return self.prompt_helper.repack(prompt, text_chunks, llm=self._llm)
