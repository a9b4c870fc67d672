"""Query engines end to end: a real index (bundled embedding model, real SQLite store) answered
through the real ``OpenAILike`` client against the recording HTTP server on 127.0.0.1."""

import asyncio
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from llm_server import OpenAICompatibleServer  # noqa: E402

from ragloom import Settings, SimpleDirectoryReader, VectorStoreIndex  # noqa: E402
from ragloom.base.response import Response, StreamingResponse  # noqa: E402
from ragloom.llms.openai_like import OpenAILike  # noqa: E402
from ragloom.postprocessor import BaseNodePostprocessor  # noqa: E402
from ragloom.query_engine import RetrieverQueryEngine  # noqa: E402
from ragloom.schema import MetadataMode  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "data")
QUESTION = "How hot should the water be for green tea?"


@pytest.fixture(scope="module")
def index():
    docs = SimpleDirectoryReader(input_dir=EXAMPLES).load_data()
    return VectorStoreIndex.from_documents(docs)


@pytest.fixture
def server():
    with OpenAICompatibleServer(answer="Use water at about 80 degrees.") as srv:
        yield srv


def _llm(srv, context_window=3900):
    return OpenAILike(
        model="test-model", api_base=srv.url, api_key="unused", context_window=context_window, max_tokens=128
    )


@pytest.mark.parametrize("mode", ["compact", "refine", "tree_summarize", "simple_summarize", "accumulate"])
def test_as_query_engine_prompts_hold_the_retrieved_nodes(index, server, mode):
    expected = index.as_retriever(similarity_top_k=2).retrieve(QUESTION)
    engine = index.as_query_engine(llm=_llm(server), response_mode=mode, similarity_top_k=2)
    response = engine.query(QUESTION)
    assert isinstance(response, Response)
    assert [n.node.node_id for n in response.source_nodes] == [n.node.node_id for n in expected]
    assert os.path.basename(response.source_nodes[0].node.metadata["file_path"]) == "brewing_green_tea.md"
    prompts = server.prompts
    assert prompts and all(QUESTION in p for p in prompts)
    joined = "\n".join(prompts)
    for n in response.source_nodes:
        # the text the LLM sees is the node content with its LLM-visible metadata
        assert n.node.get_content(MetadataMode.NONE) in joined
    if mode in ("compact", "simple_summarize", "tree_summarize"):
        assert len(prompts) == 1  # two small nodes fit one call
    assert "Use water at about 80 degrees." in response.response
    assert response.metadata == {n.node.node_id: n.node.metadata for n in response.source_nodes}


def test_as_query_engine_streaming_and_async(index, server):
    engine = index.as_query_engine(llm=_llm(server), streaming=True, similarity_top_k=2)
    response = engine.query(QUESTION)
    assert isinstance(response, StreamingResponse)
    assert "".join(response.response_gen) == "Use water at about 80 degrees."
    assert len(response.source_nodes) == 2
    engine = index.as_query_engine(llm=_llm(server), similarity_top_k=1)
    response = asyncio.run(engine.aquery(QUESTION))
    assert response.response == "Use water at about 80 degrees." and len(response.source_nodes) == 1


def test_as_query_engine_without_llm_explains_the_options(index, monkeypatch):
    monkeypatch.delenv("RAGLOOM_LLM", raising=False)
    assert Settings.llm is None
    with pytest.raises(ValueError, match="Settings.llm") as err:
        index.as_query_engine()
    assert "OpenAILike" in str(err.value) and "ragloom[llm]" in str(err.value)
    # retrieval through the engine interface needs no LLM
    response = index.as_query_engine(response_mode="no_text", similarity_top_k=3).query(QUESTION)
    assert response.response == "" and len(response.source_nodes) == 3


def test_settings_llm_is_the_default(index, server):
    Settings.llm = _llm(server)
    response = index.as_query_engine(similarity_top_k=1).query(QUESTION)
    assert response.response == "Use water at about 80 degrees." and len(server.prompts) == 1


def test_llm_as_a_specification_string(index, server):
    engine = index.as_query_engine(llm=f"openai_like:test-model@{server.url}", similarity_top_k=1)
    assert engine.query(QUESTION).response == "Use water at about 80 degrees."
    assert server.requests[-1]["body"]["model"] == "test-model"


class KeepFirst(BaseNodePostprocessor):
    def _postprocess_nodes(self, nodes, query_bundle=None):
        return nodes[:1]


def test_node_postprocessors_run_between_retrieval_and_synthesis(index, server):
    engine = index.as_query_engine(llm=_llm(server), similarity_top_k=3, node_postprocessors=[KeepFirst()])
    assert len(engine.retrieve(QUESTION)) == 1
    response = engine.query(QUESTION)
    assert len(response.source_nodes) == 1
    (prompt,) = server.prompts
    others = index.as_retriever(similarity_top_k=3).retrieve(QUESTION)[1:]
    for n in others:
        assert n.node.get_content() not in prompt


def test_retriever_query_engine_from_args_and_prompt_keys(index, server):
    engine = RetrieverQueryEngine.from_args(
        index.as_retriever(similarity_top_k=1), llm=_llm(server), response_mode="refine"
    )
    assert set(engine.get_prompts()) == {
        "response_synthesizer:text_qa_template",
        "response_synthesizer:refine_template",
    }
    engine.update_prompts({"response_synthesizer:text_qa_template": "Q={query_str} C={context_str}"})
    engine.query(QUESTION)
    (prompt,) = server.prompts
    assert prompt.startswith(f"Q={QUESTION} C=")
    with pytest.raises(ValueError, match="retrieve"):
        RetrieverQueryEngine(retriever=object(), response_synthesizer=engine.response_synthesizer)
    with pytest.raises(ValueError, match="query must be a str or QueryBundle"):
        engine.query(42)
