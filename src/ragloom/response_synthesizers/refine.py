"""``Refine`` and ``CompactAndRefine`` (response modes ``refine`` and ``compact``).

``Refine``: the first chunk is answered with the QA prompt; every further chunk goes into the
refine prompt with the answer so far (``existing_answer``), whose answer replaces it.  One LLM
call per chunk at least — more when a chunk plus the prompt does not fit the context window
(the chunk is then re-split with :meth:`PromptHelper.repack`).

``CompactAndRefine``: first packs all chunks into as few window-sized pieces as possible
(:meth:`PromptHelper.repack` against the larger of the two prompts), then refines over the
pieces — the same answer procedure with fewer calls.
"""

from __future__ import annotations

from collections import deque
from typing import Any, List, Optional, Sequence

from ragloom.prompts.default_prompts import DEFAULT_REFINE_PROMPT, DEFAULT_TEXT_QA_PROMPT
from ragloom.response_synthesizers.base import BaseSynthesizer, LLMCall, Plan

__all__ = ["Refine", "CompactAndRefine"]

#: the QA prompt spec shared by the modes that fill ``text_qa_template`` (see ``BaseSynthesizer._prompt_specs``)
TEXT_QA_SPEC = ("_text_qa_template", DEFAULT_TEXT_QA_PROMPT, ("context_str",))


class Refine(BaseSynthesizer):
    """Answer from the first chunk, then refine the answer with each further chunk.

    Args:
        llm, prompt_helper, streaming, callback_manager, verbose: see :class:`BaseSynthesizer`.
        text_qa_template: prompt with ``{context_str}`` and ``{query_str}``; default
            :data:`~ragloom.prompts.DEFAULT_TEXT_QA_PROMPT`.
        refine_template: prompt with ``{query_str}``, ``{existing_answer}`` and ``{context_msg}``;
            default :data:`~ragloom.prompts.DEFAULT_REFINE_PROMPT`.

    Raises:
        ValueError: a template lacks ``context_str`` / ``context_msg``; no LLM is configured.
    """

    _prompt_specs = {
        "text_qa_template": TEXT_QA_SPEC,
        "refine_template": ("_refine_template", DEFAULT_REFINE_PROMPT, ("context_msg",)),
    }

    def __init__(
        self,
        llm: Any = None,
        callback_manager: Any = None,
        prompt_helper: Any = None,
        text_qa_template: Any = None,
        refine_template: Any = None,
        streaming: bool = False,
        verbose: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(llm=llm, callback_manager=callback_manager, prompt_helper=prompt_helper,
                         streaming=streaming, verbose=verbose, **kwargs)
        self._set_prompt("text_qa_template", text_qa_template)
        self._set_prompt("refine_template", refine_template)

    def _plan(
        self, query_str: str, text_chunks: Sequence[str], prev_response: Optional[str] = None, **kwargs: Any
    ) -> Plan:
        helper, llm = self.prompt_helper, self._llm
        answer: Optional[str] = prev_response
        chunks = [c for c in text_chunks if c and c.strip()]
        if not chunks:
            return answer if answer is not None else ""
        for ci, chunk in enumerate(chunks):
            last_chunk = ci == len(chunks) - 1
            todo = deque([chunk])
            while todo:
                # the prompt changes with every answer, so what is left is re-fitted to the prompt in use
                if answer is None:
                    prompt = self._text_qa_template.partial_format(query_str=query_str)
                    var = "context_str"
                else:
                    prompt = self._refine_template.partial_format(query_str=query_str, existing_answer=answer)
                    var = "context_msg"
                pieces = helper.repack(prompt, [todo.popleft()], llm=llm)
                if not pieces:
                    continue
                todo.extendleft(reversed(pieces[1:]))
                call = LLMCall(prompt, {var: pieces[0]})
                if last_chunk and not todo:
                    return call
                (answer,) = yield [call]
        return answer if answer is not None else ""


class CompactAndRefine(Refine):
    """``refine`` over chunks first packed into as few context-window-sized pieces as possible.

    Arguments as :class:`Refine`.
    """

    def _plan(
        self, query_str: str, text_chunks: Sequence[str], prev_response: Optional[str] = None, **kwargs: Any
    ) -> Plan:
        packed = self._compact(query_str, text_chunks)
        return (yield from super()._plan(query_str, packed, prev_response=prev_response, **kwargs))

    def _compact(self, query_str: str, text_chunks: Sequence[str]) -> List[str]:
        helper, llm = self.prompt_helper, self._llm
        qa = self._text_qa_template.partial_format(query_str=query_str)
        refine = self._refine_template.partial_format(query_str=query_str)
        biggest = max((qa, refine), key=lambda p: helper.prompt_tokens(p, llm=llm))
        return helper.repack(biggest, text_chunks, llm=llm)

