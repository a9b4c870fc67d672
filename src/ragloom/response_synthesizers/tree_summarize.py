"""``TreeSummarize`` (response mode ``tree_summarize``).

1. Pack the chunks into as few window-sized pieces as fit the summary prompt
   (:meth:`PromptHelper.repack`).
2. One piece: its answer is the response.  Otherwise answer every piece (one *level*; the calls
   of a level run concurrently with ``use_async=True``), and go to 1 with the answers as chunks.

Each level needs fewer pieces than the one below it when answers are shorter than their
inputs; if a level packs into as many pieces as the previous one (answers as long as the
text), the pieces are cut to fit one last call instead (:meth:`PromptHelper.truncate`), so the
recursion always ends.
"""

from __future__ import annotations

import logging
from typing import Any, List, Optional, Sequence

from ragloom.prompts.default_prompts import DEFAULT_TREE_SUMMARIZE_PROMPT
from ragloom.response_synthesizers.base import BaseSynthesizer, LLMCall, Plan

logger = logging.getLogger(__name__)

__all__ = ["TreeSummarize"]


class TreeSummarize(BaseSynthesizer):
    """Summarize packed chunks, then summaries of summaries, until one call answers all.

    Args:
        llm, prompt_helper, streaming, callback_manager, verbose: see :class:`BaseSynthesizer`.
        summary_template: prompt with ``{context_str}`` and ``{query_str}``; default
            :data:`~ragloom.prompts.DEFAULT_TREE_SUMMARIZE_PROMPT`.
        use_async: run the calls of one level concurrently (``LLM.apredict`` + ``asyncio.gather``).

    Raises:
        ValueError: ``summary_template`` lacks ``context_str``; no LLM is configured.
    """

    _prompt_specs = {"summary_template": ("_summary_template", DEFAULT_TREE_SUMMARIZE_PROMPT, ("context_str",))}

    def __init__(
        self,
        llm: Any = None,
        callback_manager: Any = None,
        prompt_helper: Any = None,
        summary_template: Any = None,
        streaming: bool = False,
        use_async: bool = False,
        verbose: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(llm=llm, callback_manager=callback_manager, prompt_helper=prompt_helper,
                         streaming=streaming, verbose=verbose, **kwargs)
        self._set_prompt("summary_template", summary_template)
        self._use_async = bool(use_async)

    def _plan(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> Plan:
        helper, llm = self.prompt_helper, self._llm
        prompt = self._summary_template.partial_format(query_str=query_str)
        chunks: List[str] = list(text_chunks)
        previous: Optional[int] = None
        level = 0
        while True:
            packed = helper.repack(prompt, chunks, llm=llm)
            if not packed:
                return LLMCall(prompt, {"context_str": ""})
            if len(packed) == 1:
                return LLMCall(prompt, {"context_str": packed[0]})
            if previous is not None and len(packed) >= previous:
                logger.warning(
                    "tree_summarize: level %d answers pack into %d pieces, no fewer than the level before; "
                    "truncating them into one final call", level, len(packed)
                )
                cut = helper.truncate(prompt, [c.strip() for c in chunks if c.strip()], llm=llm)
                return LLMCall(prompt, {"context_str": "\n".join(c for c in cut if c)})
            calls = [LLMCall(prompt, {"context_str": p}, parallel=self._use_async) for p in packed]
            chunks = yield calls
            previous = len(packed)
            level += 1

