"""Tools (LlamaIndex ``llama_index.core.tools`` names): a query engine or retriever with the
:class:`ToolMetadata` (name, description) that routers, sub-question engines and agents pick it by."""

from ragloom.tools.query_engine import QueryEngineTool
from ragloom.tools.retriever_tool import RetrieverTool
from ragloom.tools.types import AsyncBaseTool, BaseTool, ToolMetadata, ToolOutput

__all__ = ["AsyncBaseTool", "BaseTool", "QueryEngineTool", "RetrieverTool", "ToolMetadata", "ToolOutput"]
