"""``NoText`` (``no_text``), ``ContextOnly`` (``context_only``) and ``Generation`` (``generation``).

- ``NoText``: no LLM call; the response text is ``""`` and ``source_nodes`` are the retrieved
  nodes (retrieval through the query-engine interface).
- ``ContextOnly``: no LLM call; the response is the chunks' text joined by blank lines.
- ``Generation``: one call with the question alone (``{query_str}``), ignoring the chunks.
"""

from __future__ import annotations

from typing import Any, Sequence

from ragloom.prompts.default_prompts import DEFAULT_SIMPLE_INPUT_PROMPT
from ragloom.response_synthesizers.base import BaseSynthesizer, LLMCall, Plan

__all__ = ["NoText", "ContextOnly", "Generation"]


class NoText(BaseSynthesizer):
    """Return the nodes without an answer (no LLM needed: ``llm`` may be None)."""

    _needs_llm = False

    def _plan(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> Plan:
        return ""
        yield []  # pragma: no cover - makes this a generator


class ContextOnly(BaseSynthesizer):
    """Return the chunks' text, joined by ``"\\n\\n"``, as the response (no LLM needed)."""

    _needs_llm = False

    def _plan(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> Plan:
        return "\n\n".join(text_chunks)
        yield []  # pragma: no cover - makes this a generator


class Generation(BaseSynthesizer):
    """Answer the question alone in one call, without the retrieved text.

    Args:
        simple_template: prompt with ``{query_str}``; default ``"{query_str}"``.

    Raises:
        ValueError: ``simple_template`` lacks ``query_str``; no LLM is configured.
    """

    _prompt_specs = {"simple_template": ("_input_prompt", DEFAULT_SIMPLE_INPUT_PROMPT, ("query_str",))}

    def __init__(self, llm: Any = None, callback_manager: Any = None, prompt_helper: Any = None,
                 simple_template: Any = None, streaming: bool = False, verbose: bool = False, **kwargs: Any) -> None:
        super().__init__(llm=llm, callback_manager=callback_manager, prompt_helper=prompt_helper,
                         streaming=streaming, verbose=verbose, **kwargs)
        self._set_prompt("simple_template", simple_template)

    def _plan(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> Plan:
        return LLMCall(self._input_prompt, {"query_str": query_str})
        yield []  # pragma: no cover - makes this a generator

