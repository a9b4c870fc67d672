"""``LLMSingleSelector`` and ``LLMMultiSelector``: an LLM reads numbered choice descriptions and
answers with the numbers of the best ones (LlamaIndex names, arguments and prompt variables).

Reading the answer (:func:`parse_selections`) is tolerant, because small local models rarely
follow a format exactly: JSON inside a Markdown code fence or inside prose, a bare object instead
of a list, ``"choice": "2"`` or ``"(2)"``, keys ``index``/``option``, a list of numbers, or (no
JSON at all) an answer that starts with the number.  Numbers are 1-based, as the prompt shows them.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Dict, List, Optional, Sequence

from ragloom.output_parsers.utils import OutputParserException, parse_json_markdown
from ragloom.prompts.base import PromptTemplate, check_vars, to_prompt
from ragloom.schema import QueryBundle
from ragloom.selectors.prompts import DEFAULT_MULTI_SELECT_PROMPT_TMPL, DEFAULT_SINGLE_SELECT_PROMPT_TMPL
from ragloom.selectors.types import BaseSelector, SelectorResult, SingleSelection
from ragloom.tools.types import ToolMetadata

logger = logging.getLogger(__name__)

__all__ = ["LLMSingleSelector", "LLMMultiSelector", "parse_selections", "build_choices_text"]

_CHOICE_KEYS = ("choice", "index", "option", "selection", "number", "id")
_REASON_KEYS = ("reason", "reasoning", "why", "explanation")
_LIST_KEYS = ("choices", "selections", "answers", "items", "options", "output")
_NUMBER = re.compile(r"-?\d+")
_CHOICE_FIELD = re.compile(r"""["']?choice["']?\s*[:=]\s*["'(]*\s*(-?\d+)""", re.IGNORECASE)
_REASON_FIELD = re.compile(r'["\']?reason["\']?\s*[:=]\s*"((?:[^"\\]|\\.)*)"', re.IGNORECASE)
_LEADING_NUMBER = re.compile(r"^\W*(?:choice|option)?\W*(\d+)\b", re.IGNORECASE)


def build_choices_text(choices: Sequence[ToolMetadata]) -> str:
    """``"(1) description"`` per choice, blank-line separated, each description on one line."""
    return "\n\n".join(f"({i + 1}) {' '.join(c.description.split())}" for i, c in enumerate(choices))


def _as_number(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        m = _NUMBER.search(value)
        return int(m.group()) if m else None
    return None


def _item(value: Any) -> Optional[tuple]:
    """``(number, reason)`` of one answer item, or ``None``."""
    if isinstance(value, dict):
        lowered = {str(k).lower(): v for k, v in value.items()}
        number = next((_as_number(lowered[k]) for k in _CHOICE_KEYS if k in lowered), None)
        reason = next((str(lowered[k]) for k in _REASON_KEYS if k in lowered), "")
        return (number, reason) if number is not None else None
    number = _as_number(value)
    return (number, "") if number is not None else None


def _items_from_json(value: Any) -> List[tuple]:
    if isinstance(value, dict):
        lowered = {str(k).lower(): v for k, v in value.items()}
        for key in _LIST_KEYS:
            if isinstance(lowered.get(key), list):
                return _items_from_json(lowered[key])
        value = [value]
    if not isinstance(value, list):
        value = [value]
    return [it for it in (_item(v) for v in value) if it is not None]


def _items_from_text(answer: str) -> List[tuple]:
    """``"choice": N`` fields found anywhere (broken JSON, several bare objects), else a leading number."""
    numbers = [int(m.group(1)) for m in _CHOICE_FIELD.finditer(answer)]
    if numbers:
        reasons = [m.group(1) for m in _REASON_FIELD.finditer(answer)]
        return [(n, reasons[i] if i < len(reasons) else "") for i, n in enumerate(numbers)]
    m = _LEADING_NUMBER.match(answer)
    return [(int(m.group(1)), "")] if m else []


def parse_selections(answer: str, num_choices: int) -> List[SingleSelection]:
    """The choices an LLM answer names, as 0-based :class:`SingleSelection` s in answer order.

    Reads JSON first (:func:`~ragloom.output_parsers.parse_json_markdown`: a list of
    ``{"choice": n, "reason": "..."}`` objects, one such object, ``{"choices": [...]}``, or a list
    of numbers), else every ``"choice": n`` in the text (broken JSON, or several objects not in a
    list), else a number the answer starts with (``"2"``, ``"(2) because ..."``).  Numbers are
    1-based.  A number outside ``1..num_choices`` is dropped with a warning (a 0 is not read as
    a 0-based answer); a repeated number counts once.

    Raises:
        OutputParserException: (a ``ValueError``) no number in ``1..num_choices`` was found; the
            message quotes the answer.
    """
    try:
        items = _items_from_json(parse_json_markdown(answer))
    except OutputParserException:
        items = []
    text_items = _items_from_text(answer)
    if len(text_items) > len(items):  # e.g. two objects not in a list: JSON reading saw the first
        items = text_items
    seen: Dict[int, SingleSelection] = {}
    for number, reason in items:
        if not 1 <= number <= num_choices:
            logger.warning("the selector LLM named choice %d; there are only choices 1..%d: ignored",
                           number, num_choices)
            continue
        seen.setdefault(number - 1, SingleSelection(index=number - 1, reason=reason))
    if not seen:
        quoted = answer if len(answer) <= 500 else answer[:500] + "..."
        raise OutputParserException(
            f"the selector LLM's answer names no choice between 1 and {num_choices}: {quoted!r}"
        )
    return list(seen.values())


def _check_llm_output_count(value: Optional[int], name: str) -> Optional[int]:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be None or an int >= 1, got {value!r}")
    return value


class _LLMSelector(BaseSelector):
    """Shared parts: the LLM, one prompt (``"prompt"`` in :meth:`get_prompts`), the call."""

    _required_vars: tuple = ("context_list", "query_str")

    def __init__(self, llm: Any, prompt: Any) -> None:
        from ragloom.response_synthesizers.base import llm_or_default

        self._llm = llm_or_default(llm)
        self._prompt = self._checked(prompt)

    def _checked(self, prompt: Any) -> PromptTemplate:
        prompt = to_prompt(prompt, "prompt")
        check_vars(prompt, list(self._required_vars), "prompt")
        return prompt

    @property
    def llm(self) -> Any:
        return self._llm

    def _get_prompts(self) -> Dict[str, Any]:
        return {"prompt": self._prompt}

    def _update_prompts(self, prompts: Dict[str, Any]) -> None:
        if "prompt" in prompts:
            self._prompt = self._checked(prompts["prompt"])

    def _prompt_args(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> Dict[str, Any]:
        return {"num_choices": len(choices), "context_list": build_choices_text(choices),
                "query_str": query.query_str}

    def _result(self, answer: str, num_choices: int) -> SelectorResult:
        return SelectorResult(selections=parse_selections(answer, num_choices))

    def _select(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> SelectorResult:
        answer = self._llm.predict(self._prompt, **self._prompt_args(choices, query))
        return self._result(answer, len(choices))

    async def _aselect(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> SelectorResult:
        answer = await self._llm.apredict(self._prompt, **self._prompt_args(choices, query))
        return self._result(answer, len(choices))


class LLMSingleSelector(_LLMSelector):
    """Ask an LLM for the one choice that best fits the query.

    The prompt lists the choices' descriptions numbered from 1 (``num_choices``,
    ``context_list``, ``query_str``); the answer is read by :func:`parse_selections`.

    Deliberate difference from LlamaIndex: the result always holds exactly one selection (the
    first usable number in the answer), so ``result.ind`` never fails on an over-eager answer;
    an answer naming no choice in range raises instead of indexing out of range later.

    Args:
        llm: the model (default ``Settings.llm``).
        prompt: a ``PromptTemplate`` or string with ``{context_list}`` and ``{query_str}``
            (``{num_choices}`` optional).

    Raises:
        ValueError: no LLM is configured; the prompt lacks a required variable.
        OutputParserException: (a ``ValueError``, from :meth:`select`) the answer names no choice.
    """

    def __init__(self, llm: Any = None, prompt: Any = None) -> None:
        super().__init__(llm, prompt if prompt is not None else DEFAULT_SINGLE_SELECT_PROMPT_TMPL)

    @classmethod
    def from_defaults(cls, llm: Any = None, prompt_template_str: Optional[str] = None) -> "LLMSingleSelector":
        """A selector with ``llm`` (default ``Settings.llm``) and ``prompt_template_str`` (default
        :data:`~ragloom.selectors.prompts.DEFAULT_SINGLE_SELECT_PROMPT_TMPL`)."""
        return cls(llm=llm, prompt=prompt_template_str)

    def _result(self, answer: str, num_choices: int) -> SelectorResult:
        return SelectorResult(selections=parse_selections(answer, num_choices)[:1])


class LLMMultiSelector(_LLMSelector):
    """Ask an LLM for every choice that helps with the query, at most ``max_outputs``.

    Prompt variables: ``num_choices``, ``context_list``, ``query_str``, ``max_outputs`` (``None``:
    the number of choices).  Deliberate difference from LlamaIndex: the result is cut to
    ``max_outputs`` selections even when the LLM names more (LlamaIndex only asks).

    Args:
        llm: the model (default ``Settings.llm``).
        prompt: a ``PromptTemplate`` or string with ``{context_list}`` and ``{query_str}``.
        max_outputs: most selections returned; ``None`` or an int >= 1.

    Raises:
        ValueError: ``max_outputs`` < 1; no LLM is configured; the prompt lacks a required variable.
        OutputParserException: (a ``ValueError``, from :meth:`select`) the answer names no choice.
    """

    def __init__(self, llm: Any = None, prompt: Any = None, max_outputs: Optional[int] = None) -> None:
        self._max_outputs = _check_llm_output_count(max_outputs, "max_outputs")
        super().__init__(llm, prompt if prompt is not None else DEFAULT_MULTI_SELECT_PROMPT_TMPL)

    @classmethod
    def from_defaults(
        cls, llm: Any = None, prompt_template_str: Optional[str] = None, max_outputs: Optional[int] = None
    ) -> "LLMMultiSelector":
        """A selector with ``llm`` (default ``Settings.llm``), ``prompt_template_str`` (default
        :data:`~ragloom.selectors.prompts.DEFAULT_MULTI_SELECT_PROMPT_TMPL`) and ``max_outputs``."""
        return cls(llm=llm, prompt=prompt_template_str, max_outputs=max_outputs)

    def _limit(self, num_choices: int) -> int:
        return self._max_outputs or num_choices

    def _prompt_args(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> Dict[str, Any]:
        return {**super()._prompt_args(choices, query), "max_outputs": self._limit(len(choices))}

    def _result(self, answer: str, num_choices: int) -> SelectorResult:
        return SelectorResult(selections=parse_selections(answer, num_choices)[: self._limit(num_choices)])
