"""``RetrieverTool``: a retriever with a description (LlamaIndex's class and defaults)."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from ragloom.schema import MetadataMode, NodeWithScore, QueryBundle
from ragloom.tools.types import INPUT_KEY, AsyncBaseTool, ToolMetadata, ToolOutput, input_text

__all__ = ["RetrieverTool"]

DEFAULT_NAME = "retriever_tool"
DEFAULT_DESCRIPTION = "Finds the passages of a knowledge base most relevant to a natural-language query."


class RetrieverTool(AsyncBaseTool):
    """A retriever (anything with ``retrieve``) plus the :class:`ToolMetadata` a selector or an
    LLM chooses it by.

    ``tool("query")`` retrieves, applies ``node_postprocessors`` in order, and returns a
    :class:`ToolOutput` whose ``content`` is the nodes' text (``MetadataMode.LLM``), blank-line
    separated, and ``raw_output`` the ``list[NodeWithScore]``.

    Raises:
        ValueError: ``metadata`` is not a :class:`ToolMetadata`.
    """

    def __init__(
        self,
        retriever: Any,
        metadata: ToolMetadata,
        node_postprocessors: Optional[Sequence[Any]] = None,
    ) -> None:
        if not isinstance(metadata, ToolMetadata):
            raise ValueError(f"metadata must be a ToolMetadata, got {type(metadata).__name__}")
        self._retriever = retriever
        self._metadata = metadata
        self._node_postprocessors = list(node_postprocessors or [])

    @classmethod
    def from_defaults(
        cls,
        retriever: Any,
        name: Optional[str] = None,
        description: Optional[str] = None,
        return_direct: bool = False,
        node_postprocessors: Optional[Sequence[Any]] = None,
    ) -> "RetrieverTool":
        """A tool named ``name`` (default ``"retriever_tool"``) described by ``description``."""
        metadata = ToolMetadata(
            description=description or DEFAULT_DESCRIPTION, name=name or DEFAULT_NAME, return_direct=return_direct
        )
        return cls(retriever, metadata, node_postprocessors)

    @property
    def retriever(self) -> Any:
        return self._retriever

    @property
    def metadata(self) -> ToolMetadata:
        return self._metadata

    def _postprocess(self, nodes: List[NodeWithScore], query_str: str) -> List[NodeWithScore]:
        bundle = QueryBundle(query_str=query_str)
        for p in self._node_postprocessors:
            nodes = p.postprocess_nodes(nodes, query_bundle=bundle)
        return nodes

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """Retrieve for the query given as the one argument."""
        query_str = input_text(args, kwargs)
        nodes = self._postprocess(list(self._retriever.retrieve(query_str)), query_str)
        content = "\n\n".join(n.node.get_content(metadata_mode=MetadataMode.LLM) for n in nodes)
        return ToolOutput(
            content=content,
            tool_name=self._metadata.name or DEFAULT_NAME,
            raw_input={INPUT_KEY: query_str},
            raw_output=nodes,
        )
