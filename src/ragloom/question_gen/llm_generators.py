"""``LLMQuestionGenerator``: an LLM splits a question into sub-questions, each for one named
tool (LlamaIndex's class, arguments and prompt variables)."""

from __future__ import annotations

import json
import logging
from typing import Any, Dict, List, Optional, Sequence

from ragloom.output_parsers.utils import OutputParserException, parse_json_markdown
from ragloom.prompts.base import PromptTemplate, check_vars, to_prompt
from ragloom.question_gen.prompts import DEFAULT_SUB_QUESTION_PROMPT_TMPL
from ragloom.question_gen.types import BaseQuestionGenerator, SubQuestion
from ragloom.schema import QueryBundle
from ragloom.tools.types import ToolMetadata

logger = logging.getLogger(__name__)

__all__ = ["LLMQuestionGenerator", "parse_sub_questions", "build_tools_text"]

_QUESTION_KEYS = ("sub_question", "subquestion", "question", "query", "sub_query")
_TOOL_KEYS = ("tool_name", "tool", "toolname", "name", "engine")
_LIST_KEYS = ("items", "sub_questions", "subquestions", "questions", "output")


def build_tools_text(tools: Sequence[ToolMetadata]) -> str:
    """``{name: description}`` of ``tools`` as indented JSON (non-ASCII kept as is).

    Raises:
        ValueError: a tool has no name.
    """
    return json.dumps({t.get_name(): t.description for t in tools}, ensure_ascii=False, indent=2)


def _items(value: Any) -> List[Any]:
    if isinstance(value, dict):
        lowered = {str(k).lower(): v for k, v in value.items()}
        for key in _LIST_KEYS:
            if isinstance(lowered.get(key), list):
                return list(lowered[key])
        return [value]
    return list(value) if isinstance(value, list) else [value]


def _field(item: Dict[str, Any], keys: Sequence[str]) -> str:
    lowered = {str(k).lower(): v for k, v in item.items()}
    for key in keys:
        value = lowered.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _tool_lookup(tool_names: Sequence[str]) -> Dict[str, str]:
    """Spellings an LLM may use for each name -> the name (exact first, then case-folded)."""
    lookup = {n.strip(" `'\"").casefold(): n for n in tool_names}
    lookup.update({n: n for n in tool_names})
    return lookup


def _sub_question(item: Any, lookup: Dict[str, str]) -> Optional[SubQuestion]:
    if not isinstance(item, dict):
        logger.warning("sub-question item is not an object, ignored: %r", item)
        return None
    question, tool = _field(item, _QUESTION_KEYS), _field(item, _TOOL_KEYS)
    name = lookup.get(tool) or lookup.get(tool.strip(" `'\"").casefold())
    if not question or name is None:
        logger.warning("sub-question %r names no known tool (%r), ignored", question, tool)
        return None
    return SubQuestion(sub_question=question, tool_name=name)


def parse_sub_questions(answer: str, tool_names: Sequence[str]) -> List[SubQuestion]:
    """The sub-questions in an LLM answer.

    Reads the JSON (:func:`~ragloom.output_parsers.parse_json_markdown`: code fences and prose
    around it are fine): a list of objects, ``{"items": [...]}`` (LlamaIndex's shape) or
    ``{"sub_questions": [...]}``, or one object.  An object's question is under ``sub_question``
    (or ``question``/``query``), its tool under ``tool_name`` (or ``tool``/``name``); a tool name
    matches exactly, else ignoring case and quotes.  Objects without a question or with an
    unknown tool are dropped with a warning; repeated (question, tool) pairs count once.  An empty
    list gives no sub-questions.

    Raises:
        OutputParserException: (a ``ValueError``) no JSON in the answer, or it lists sub-questions
            but none is usable (the message names the known tools and quotes the answer).
    """
    items = _items(parse_json_markdown(answer))
    lookup = _tool_lookup(tool_names)
    out: List[SubQuestion] = []
    for item in items:
        sq = _sub_question(item, lookup)
        if sq is not None and sq not in out:
            out.append(sq)
    if items and not out:
        quoted = answer if len(answer) <= 500 else answer[:500] + "..."
        raise OutputParserException(
            f"the LLM's sub-questions name no known tool (known: {list(tool_names)}): {quoted!r}"
        )
    return out


class LLMQuestionGenerator(BaseQuestionGenerator):
    """Ask an LLM for sub-questions, each routed to one tool by name.

    The prompt gets ``tools_str`` (:func:`build_tools_text`) and ``query_str``; the answer is read
    by :func:`parse_sub_questions`.

    Args:
        llm: the model (default ``Settings.llm``).
        prompt: a ``PromptTemplate`` or string with ``{tools_str}`` and ``{query_str}``.

    Raises:
        ValueError: no LLM is configured; the prompt lacks a variable; (generating) a tool has no
            name; ``OutputParserException`` (a ``ValueError``) as :func:`parse_sub_questions`.
    """

    def __init__(self, llm: Any = None, prompt: Any = None) -> None:
        from ragloom.response_synthesizers.base import llm_or_default

        self._llm = llm_or_default(llm)
        self._prompt = self._checked(prompt if prompt is not None else DEFAULT_SUB_QUESTION_PROMPT_TMPL)

    @classmethod
    def from_defaults(cls, llm: Any = None, prompt_template_str: Optional[str] = None) -> "LLMQuestionGenerator":
        """A generator with ``llm`` (default ``Settings.llm``) and ``prompt_template_str`` (default
        :data:`~ragloom.question_gen.prompts.DEFAULT_SUB_QUESTION_PROMPT_TMPL`)."""
        return cls(llm=llm, prompt=prompt_template_str)

    @staticmethod
    def _checked(prompt: Any) -> PromptTemplate:
        prompt = to_prompt(prompt, "prompt")
        check_vars(prompt, ["tools_str", "query_str"], "prompt")
        return prompt

    @property
    def llm(self) -> Any:
        return self._llm

    def _get_prompts(self) -> Dict[str, Any]:
        return {"question_gen_prompt": self._prompt}

    def _update_prompts(self, prompts: Dict[str, Any]) -> None:
        if "question_gen_prompt" in prompts:
            self._prompt = self._checked(prompts["question_gen_prompt"])

    def generate(self, tools: Sequence[ToolMetadata], query: QueryBundle) -> List[SubQuestion]:
        tools_str = build_tools_text(tools)
        answer = self._llm.predict(self._prompt, tools_str=tools_str, query_str=query.query_str)
        return parse_sub_questions(answer, [t.get_name() for t in tools])

    async def agenerate(self, tools: Sequence[ToolMetadata], query: QueryBundle) -> List[SubQuestion]:
        tools_str = build_tools_text(tools)
        answer = await self._llm.apredict(self._prompt, tools_str=tools_str, query_str=query.query_str)
        return parse_sub_questions(answer, [t.get_name() for t in tools])
