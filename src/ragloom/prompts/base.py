"""``PromptTemplate``: a ``str.format``-style template with partial formatting (LlamaIndex names).

A template is a string with ``{name}`` fields (``{{`` and ``}}`` are literal braces, as in
:meth:`str.format`).  Values are substituted once: braces inside a value (JSON, code) are
never re-read as fields, so node text can be fed in as is.
"""

from __future__ import annotations

import string
from enum import Enum
from typing import Any, Dict, List, Optional, Sequence

from ragloom.llms.types import ChatMessage, MessageRole

__all__ = ["PromptTemplate", "BasePromptTemplate", "PromptType", "MissingPromptVariableError"]


class PromptType(str, Enum):
    """What a prompt is for (values as LlamaIndex's, used only as a label)."""

    SUMMARY = "summary"
    QUESTION_ANSWER = "text_qa"
    REFINE = "refine"
    SIMPLE_INPUT = "simple_input"
    CUSTOM = "custom"


class MissingPromptVariableError(KeyError, ValueError):
    """``format`` was called without a value for some template variable.

    Subclasses both ``KeyError`` (what ``str.format`` raises) and ``ValueError`` (a bad argument).
    """

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


_FORMATTER = string.Formatter()


def _parse(template: str) -> List[tuple]:
    """``(literal, field_name, format_spec, conversion)`` pieces of ``template``.

    Raises:
        ValueError: unbalanced braces, or a positional (``{}`` / ``{0}``) field.
    """
    try:
        pieces = list(_FORMATTER.parse(template))
    except ValueError as exc:
        raise ValueError(
            f"template is not a valid format string ({exc}); write literal braces as '{{{{' and '}}}}'"
        ) from None
    for _, field, _, _ in pieces:
        if field is not None and (field == "" or field.isdigit()):
            raise ValueError(f"template has a positional field {{{field}}}; name every field, e.g. {{context_str}}")
    return pieces


def _root(field: str) -> str:
    """Variable name of a field such as ``a``, ``a.b`` or ``a[0]``."""
    for i, ch in enumerate(field):
        if ch in ".[":
            return field[:i]
    return field


class BasePromptTemplate:
    """Common interface of prompt templates: ``format``, ``format_messages``, ``partial_format``, ``template_vars``."""

    template_vars: List[str]
    kwargs: Dict[str, Any]

    def format(self, llm: Any = None, **kwargs: Any) -> str:  # pragma: no cover - interface
        raise NotImplementedError

    def format_messages(self, llm: Any = None, **kwargs: Any) -> List[ChatMessage]:
        """The formatted prompt as one user message."""
        return [ChatMessage(role=MessageRole.USER, content=self.format(llm=llm, **kwargs))]

    def partial_format(self, **kwargs: Any) -> "BasePromptTemplate":  # pragma: no cover - interface
        raise NotImplementedError

    def get_template(self, llm: Any = None) -> str:  # pragma: no cover - interface
        raise NotImplementedError


class PromptTemplate(BasePromptTemplate):
    """A text prompt with named ``{fields}``.

    Args:
        template: the text, with ``{name}`` fields (``{{``/``}}`` for literal braces).
        prompt_type: a label (:class:`PromptType` or string).
        template_var_mappings: ``{name_passed_to_format: name_in_template}``, so a template
            written with other variable names can stand in for a default one (e.g.
            ``{"context_str": "my_context"}`` for a template using ``{my_context}``).
        function_mappings: ``{name: fn(**all_kwargs) -> str}``: variables computed at format time.
        **kwargs: partial values, as :meth:`partial_format`.

    Raises:
        ValueError: ``template`` is not a string, has unbalanced braces or positional fields.
    """

    def __init__(
        self,
        template: str,
        prompt_type: Any = PromptType.CUSTOM,
        output_parser: Any = None,
        metadata: Optional[Dict[str, Any]] = None,
        template_var_mappings: Optional[Dict[str, str]] = None,
        function_mappings: Optional[Dict[str, Any]] = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(template, str):
            raise ValueError(f"template must be a str, got {type(template).__name__}")
        self.template = template
        self._pieces = _parse(template)
        seen: List[str] = []
        for _, field, _, _ in self._pieces:
            if field is not None:
                name = _root(field)
                if name not in seen:
                    seen.append(name)
        self.template_vars: List[str] = seen
        self.prompt_type = prompt_type
        self.output_parser = output_parser
        self.metadata: Dict[str, Any] = dict(metadata or {})
        self.metadata.setdefault("prompt_type", prompt_type)
        self.template_var_mappings: Dict[str, str] = dict(template_var_mappings or {})
        self.function_mappings: Dict[str, Any] = dict(function_mappings or {})
        self.kwargs: Dict[str, Any] = dict(kwargs)

    # -- formatting ------------------------------------------------------------------
    def _values(self, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        allv = {**self.kwargs, **kwargs}
        for name, fn in self.function_mappings.items():
            allv[name] = fn(**allv)
        out = dict(allv)
        for key, value in allv.items():
            target = self.template_var_mappings.get(key)
            if target is not None:
                out[target] = value
        return out

    def format(self, llm: Any = None, **kwargs: Any) -> str:
        """The prompt with every field filled (partial values first, then ``kwargs``).

        Values are converted with ``format(value, spec)`` (``!r``/``!s`` honoured) and never
        re-parsed, so braces inside values are kept literally.

        Raises:
            MissingPromptVariableError: (a ``KeyError`` and ``ValueError``) some variable has no value.
        """
        values = self._values(kwargs)
        missing = [v for v in self.template_vars if v not in values]
        if missing:
            raise MissingPromptVariableError(
                f"prompt variables without a value: {missing}; pass them to format() or partial_format()"
            )
        parts: List[str] = []
        for literal, field, spec, conversion in self._pieces:
            parts.append(literal)
            if field is None:
                continue
            obj, _ = _FORMATTER.get_field(field, (), values)
            obj = _FORMATTER.convert_field(obj, conversion)
            parts.append(format(obj, spec or ""))
        return "".join(parts)

    def partial_format(self, **kwargs: Any) -> "PromptTemplate":
        """A copy with some variables fixed; ``template_vars`` is unchanged."""
        new = PromptTemplate(
            self.template,
            prompt_type=self.prompt_type,
            output_parser=self.output_parser,
            metadata=dict(self.metadata),
            template_var_mappings=self.template_var_mappings,
            function_mappings=self.function_mappings,
            **{**self.kwargs, **kwargs},
        )
        return new

    def get_template(self, llm: Any = None) -> str:
        return self.template

    def missing_vars(self) -> List[str]:
        """Template variables not fixed by :meth:`partial_format` (nor computed by ``function_mappings``)."""
        known = set(self.kwargs) | set(self.function_mappings)
        known |= {self.template_var_mappings.get(k, k) for k in known}
        return [v for v in self.template_vars if v not in known]

    def __repr__(self) -> str:
        return f"PromptTemplate(template={self.template!r}, kwargs={sorted(self.kwargs)})"

    def __str__(self) -> str:
        return self.template


def to_prompt(prompt: Any, name: str = "prompt") -> PromptTemplate:
    """``prompt`` as a :class:`PromptTemplate` (a ``str`` is wrapped).

    Raises:
        ValueError: ``prompt`` is neither.
    """
    if isinstance(prompt, BasePromptTemplate):
        return prompt  # type: ignore[return-value]
    if isinstance(prompt, str):
        return PromptTemplate(prompt)
    raise ValueError(f"{name} must be a PromptTemplate or str, got {type(prompt).__name__}")


def check_vars(prompt: Any, required: Sequence[str], name: str) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``prompt`` takes every variable in ``required``
    (directly or through ``template_var_mappings``)."""
    tvars = set(getattr(prompt, "template_vars", []))
    mappings = getattr(prompt, "template_var_mappings", {}) or {}
    missing = [v for v in required if v not in tvars and mappings.get(v) not in tvars]
    if missing:
        raise ValueError(f"{name} must contain the variables {list(required)}; missing {missing}")
