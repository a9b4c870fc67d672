"""``QueryEngineTool``: a query engine with a description, for routers, sub-question engines and
agents (LlamaIndex's class and defaults)."""

from __future__ import annotations

from typing import Any, Optional

from ragloom.tools.types import INPUT_KEY, AsyncBaseTool, ToolMetadata, ToolOutput, input_text

__all__ = ["QueryEngineTool", "DEFAULT_NAME", "DEFAULT_DESCRIPTION"]

DEFAULT_NAME = "query_engine_tool"
DEFAULT_DESCRIPTION = (
    "Answers a question in natural language from a knowledge base, with a natural-language answer."
)


class QueryEngineTool(AsyncBaseTool):
    """A query engine (anything with ``query`` and ``aquery``, e.g. ``index.as_query_engine()``)
    plus the :class:`ToolMetadata` a selector or an LLM chooses it by.

    ``tool("question")`` (or ``tool(input="question")``) runs ``query_engine.query`` and returns a
    :class:`ToolOutput` whose ``content`` is the answer text and ``raw_output`` the ``Response``.

    Args:
        query_engine: the engine.
        metadata: its name and description; the description is what routers match queries against.
        resolve_input_errors: accept other call shapes (see :func:`~ragloom.tools.types.input_text`).

    Raises:
        ValueError: ``metadata`` is not a :class:`ToolMetadata`.
    """

    def __init__(self, query_engine: Any, metadata: ToolMetadata, resolve_input_errors: bool = True) -> None:
        if not isinstance(metadata, ToolMetadata):
            raise ValueError(f"metadata must be a ToolMetadata, got {type(metadata).__name__}")
        self._query_engine = query_engine
        self._metadata = metadata
        self._resolve_input_errors = resolve_input_errors

    @classmethod
    def from_defaults(
        cls,
        query_engine: Any,
        name: Optional[str] = None,
        description: Optional[str] = None,
        return_direct: bool = False,
        resolve_input_errors: bool = True,
    ) -> "QueryEngineTool":
        """A tool named ``name`` (default ``"query_engine_tool"``) described by ``description``
        (default: a generic knowledge-base description; give a real one for routing)."""
        metadata = ToolMetadata(
            description=description or DEFAULT_DESCRIPTION, name=name or DEFAULT_NAME, return_direct=return_direct
        )
        return cls(query_engine, metadata, resolve_input_errors)

    @property
    def query_engine(self) -> Any:
        return self._query_engine

    @property
    def metadata(self) -> ToolMetadata:
        return self._metadata

    def _output(self, query_str: str, response: Any) -> ToolOutput:
        return ToolOutput(
            content=str(response),
            tool_name=self._metadata.name or DEFAULT_NAME,
            raw_input={INPUT_KEY: query_str},
            raw_output=response,
        )

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """Answer the question given as the one argument."""
        query_str = input_text(args, kwargs, self._resolve_input_errors)
        return self._output(query_str, self._query_engine.query(query_str))

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        query_str = input_text(args, kwargs, self._resolve_input_errors)
        return self._output(query_str, await self._query_engine.aquery(query_str))
