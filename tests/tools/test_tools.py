"""``ToolMetadata``, ``ToolOutput``, ``QueryEngineTool`` and ``RetrieverTool`` over a real index
(bundled embedding model, SQLite on disk) and the recording HTTP server."""

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "query_engine"))
from llm_server import OpenAICompatibleServer  # noqa: E402
from routing_helpers import TIRE_FILE, build_index, llm_for, source_files  # noqa: E402

from ragloom.base.response import Response  # noqa: E402
from ragloom.schema import MetadataMode  # noqa: E402
from ragloom.tools import QueryEngineTool, RetrieverTool, ToolMetadata, ToolOutput  # noqa: E402


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return build_index(TIRE_FILE, tmp_path_factory.mktemp("tools"))


def test_tool_metadata():
    meta = ToolMetadata("Answers questions about tires.", name="tires")
    assert meta.get_name() == "tires"
    assert meta.to_openai_tool() == {
        "type": "function",
        "function": {
            "name": "tires",
            "description": "Answers questions about tires.",
            "parameters": {
                "type": "object",
                "properties": {"input": {"title": "input", "type": "string"}},
                "required": ["input"],
            },
        },
    }
    with pytest.raises(ValueError, match="name is not set"):
        ToolMetadata("no name").get_name()
    with pytest.raises(ValueError, match="description"):
        ToolMetadata("  ", name="x")
    with pytest.raises(ValueError, match="name"):
        ToolMetadata("d", name="")


def test_tool_output_str():
    out = ToolOutput(content="text", tool_name="t", raw_input={"input": "q"}, raw_output=42)
    assert str(out) == "text" and not out.is_error


def test_query_engine_tool_call_and_acall(index):
    with OpenAICompatibleServer(answer="Use two tire levers.") as srv:
        tool = QueryEngineTool.from_defaults(index.as_query_engine(llm=llm_for(srv)), name="tires",
                                             description="Bicycle repair")
        out = tool("How do I get the tire off?")
        assert isinstance(out, ToolOutput) and out.content == "Use two tire levers."
        assert out.tool_name == "tires" and out.raw_input == {"input": "How do I get the tire off?"}
        assert isinstance(out.raw_output, Response) and source_files(out.raw_output) == {TIRE_FILE}
        assert "How do I get the tire off?" in srv.prompts[0]
        out = asyncio.run(tool.acall(input="And then?"))
        assert out.raw_input == {"input": "And then?"} and len(srv.requests) == 2
        # an agent naming the argument differently still works (resolve_input_errors, LlamaIndex's default)
        assert tool.call(query="Which pump?").raw_input == {"input": "Which pump?"}
        strict = QueryEngineTool(tool.query_engine, tool.metadata, resolve_input_errors=False)
        with pytest.raises(ValueError, match="one string"):
            strict.call(query="x")
    default = QueryEngineTool.from_defaults(tool.query_engine)
    assert default.metadata.name == "query_engine_tool" and "knowledge base" in default.metadata.description
    with pytest.raises(ValueError, match="ToolMetadata"):
        QueryEngineTool(tool.query_engine, {"name": "x"})  # type: ignore[arg-type]


def test_retriever_tool(index):
    tool = RetrieverTool.from_defaults(index.as_retriever(similarity_top_k=1), name="tires_search")
    out = tool("patch kit")
    assert out.tool_name == "tires_search" and len(out.raw_output) == 1
    assert out.content == out.raw_output[0].node.get_content(metadata_mode=MetadataMode.LLM)
    assert "patch" in out.content
    assert asyncio.run(tool.acall("patch kit")).content == out.content
    assert RetrieverTool.from_defaults(tool.retriever).metadata.name == "retriever_tool"
