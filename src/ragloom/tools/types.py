"""Tool types (LlamaIndex ``llama_index.core.tools.types`` names): :class:`ToolMetadata`, :class:`ToolOutput`.

A *tool* is something an LLM-driven component (a router, a sub-question engine, an agent or a
chat engine) can pick by its description and call.  ``ToolMetadata`` is what the LLM reads about
the tool; ``ToolOutput`` is what a call returned.
"""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

__all__ = ["ToolMetadata", "ToolOutput", "BaseTool", "AsyncBaseTool"]

#: the argument name a one-string tool takes its input under (as LlamaIndex)
INPUT_KEY = "input"


@dataclass
class ToolMetadata:
    """What a selector or an LLM reads about a tool.

    Attributes:
        description: what the tool knows or does, in words an LLM can match a question against
            (the selectors put it in their prompts; ``EmbeddingSingleSelector`` embeds it).
        name: a short identifier (``[A-Za-z0-9_-]``-like; the sub-question generator asks the LLM
            to return it). ``None`` is allowed, as in LlamaIndex, but :meth:`get_name` then raises.
        fn_schema: an optional pydantic (v2) model class describing the tool's input (kept for
            LlamaIndex compatibility and agents; ragloom's query-engine tools take one string).
        return_direct: agents return this tool's output to the user without another LLM turn.

    Raises:
        ValueError: ``description`` is not a non-empty string, or ``name`` is given and is not a
            non-empty string.
    """

    description: str
    name: Optional[str] = None
    fn_schema: Optional[Any] = None
    return_direct: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.description, str) or not self.description.strip():
            raise ValueError(f"description must be a non-empty str, got {self.description!r}")
        if self.name is not None and (not isinstance(self.name, str) or not self.name.strip()):
            raise ValueError(f"name must be None or a non-empty str, got {self.name!r}")

    def get_name(self) -> str:
        """The tool's name.

        Raises:
            ValueError: the tool has no name.
        """
        if self.name is None:
            raise ValueError("name is not set on this ToolMetadata (pass name=...)")
        return self.name

    def get_parameters_dict(self) -> Dict[str, Any]:
        """JSON schema of the tool's input: ``fn_schema``'s when it is a pydantic model class,
        else one required string property ``input`` (the query text)."""
        if self.fn_schema is not None:
            schema = dict(self.fn_schema.model_json_schema())
            return {k: v for k, v in schema.items() if k in ("type", "properties", "required", "$defs")}
        return {
            "type": "object",
            "properties": {INPUT_KEY: {"title": INPUT_KEY, "type": "string"}},
            "required": [INPUT_KEY],
        }

    @property
    def fn_schema_str(self) -> str:
        """:meth:`get_parameters_dict` as JSON text."""
        return json.dumps(self.get_parameters_dict(), ensure_ascii=False)

    def to_openai_tool(self) -> Dict[str, Any]:
        """The tool in OpenAI's function-calling format (``{"type": "function", "function": ...}``).

        Raises:
            ValueError: the tool has no name.
        """
        return {
            "type": "function",
            "function": {
                "name": self.get_name(),
                "description": self.description,
                "parameters": self.get_parameters_dict(),
            },
        }


@dataclass
class ToolOutput:
    """What one tool call returned.

    Attributes:
        content: the output as text (what an LLM reads next; ``str(output)`` gives it).
        tool_name: the name of the tool that was called.
        raw_input: the call's arguments, e.g. ``{"input": "the question"}``.
        raw_output: the tool's own return value (a ``Response`` for a query-engine tool, a list of
            ``NodeWithScore`` for a retriever tool).
        is_error: the call raised; ``content`` then holds the error message.
    """

    content: str
    tool_name: str
    raw_input: Dict[str, Any] = field(default_factory=dict)
    raw_output: Any = None
    is_error: bool = False

    def __str__(self) -> str:
        return self.content


class BaseTool(ABC):
    """A tool: :attr:`metadata` describes it, calling it returns a :class:`ToolOutput`."""

    @property
    @abstractmethod
    def metadata(self) -> ToolMetadata: ...

    @abstractmethod
    def __call__(self, *args: Any, **kwargs: Any) -> ToolOutput: ...


class AsyncBaseTool(BaseTool):
    """A tool with :meth:`call` and :meth:`acall` (``tool(...)`` is ``tool.call(...)``).

    Subclasses implement :meth:`call`; the default :meth:`acall` runs it in a worker thread.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> ToolOutput:
        return self.call(*args, **kwargs)

    @abstractmethod
    def call(self, *args: Any, **kwargs: Any) -> ToolOutput: ...

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        return await asyncio.to_thread(self.call, *args, **kwargs)


def input_text(args: tuple, kwargs: Dict[str, Any], resolve_input_errors: bool = True) -> str:
    """The one string a query-engine or retriever tool was called with.

    ``tool("q")``, ``tool(input="q")``; with ``resolve_input_errors`` (LlamaIndex's default) any
    other call uses its arguments joined by spaces (an LLM agent may name the argument ``query``).

    Raises:
        ValueError: no usable input, or several arguments and ``resolve_input_errors`` is False.
    """
    if len(args) == 1 and not kwargs and isinstance(args[0], str):
        return args[0]
    if not args and set(kwargs) == {INPUT_KEY} and isinstance(kwargs[INPUT_KEY], str):
        return kwargs[INPUT_KEY]
    if resolve_input_errors:
        parts = [str(a) for a in args] + [str(v) for v in kwargs.values()]
        text = " ".join(p for p in parts if p)
        if text.strip():
            return text
    raise ValueError(
        f"call the tool with one string: tool('question') or tool({INPUT_KEY}='question'); "
        f"got args={args!r} kwargs={sorted(kwargs)}"
    )
