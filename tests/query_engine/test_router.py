"""``RouterQueryEngine`` and ``RouterRetriever`` over two real indexes (bundled embedding model,
SQLite stores on disk), with LLM selectors answered by the recording HTTP server and the offline
``EmbeddingSingleSelector``."""

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from llm_server import OpenAICompatibleServer  # noqa: E402
from routing_helpers import (  # noqa: E402
    TEA_DESCRIPTION,
    TEA_FILE,
    TIRE_DESCRIPTION,
    TIRE_FILE,
    kind,
    llm_for,
    source_files,
    two_indexes,
)

from ragloom import Settings  # noqa: E402
from ragloom.base.response import Response  # noqa: E402
from ragloom.query_engine import RouterQueryEngine  # noqa: E402
from ragloom.retrievers import RouterRetriever  # noqa: E402
from ragloom.selectors import EmbeddingSingleSelector, LLMMultiSelector, LLMSingleSelector  # noqa: E402
from ragloom.tools import QueryEngineTool, RetrieverTool, ToolMetadata  # noqa: E402

TEA_ANSWER = "Tea: cool the water to about 80 degrees."
TIRE_ANSWER = "Tires: find the thorn before fitting a new tube."
SUMMARY = "Combined: cool tea water; check the tire for thorns."


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    return two_indexes(tmp_path_factory)


def make_answer(selection_json):
    """Selector prompts get ``selection_json``; answer prompts get the answer of the document
    they hold; the combining prompt gets SUMMARY."""

    def answer(prompt):
        k = kind(prompt)
        if k == "selector":
            return selection_json
        if k == "summarize":
            return SUMMARY
        if k == "qa":
            return TEA_ANSWER if "green tea" in prompt.lower() else TIRE_ANSWER
        return "unexpected prompt"

    return answer


def engine_tools(indexes, llm):
    return [
        QueryEngineTool.from_defaults(indexes["tea"].as_query_engine(llm=llm), name="tea", description=TEA_DESCRIPTION),
        QueryEngineTool(indexes["tires"].as_query_engine(llm=llm), ToolMetadata(TIRE_DESCRIPTION, name="tires")),
    ]


def test_single_selection_routes_to_the_chosen_engine(indexes):
    question = "My bike has a puncture, what do I do?"
    with OpenAICompatibleServer(answer=make_answer('```json\n[{"choice": 2, "reason": "bikes"}]\n```')) as srv:
        llm = llm_for(srv)
        router = RouterQueryEngine.from_defaults(engine_tools(indexes, llm), llm=llm)
        assert isinstance(router.selector, LLMSingleSelector)
        response = router.query(question)
        prompts = srv.prompts
    assert [kind(p) for p in prompts] == ["selector", "qa"]
    assert question in prompts[0] and TEA_DESCRIPTION in prompts[0] and TIRE_DESCRIPTION in prompts[0]
    assert "fifteen minutes" in prompts[1]  # the tire document went to the answer prompt
    assert isinstance(response, Response) and response.response == TIRE_ANSWER
    assert source_files(response) == {TIRE_FILE}
    result = response.metadata["selector_result"]
    assert result.ind == 1 and result.reason == "bikes"


def test_multi_selection_summarizes_the_answers(indexes):
    question = "Water for tea, and what to carry for a flat?"
    selection = '[{"choice": 1, "reason": "tea"}, {"choice": 2, "reason": "tire"}]'
    with OpenAICompatibleServer(answer=make_answer(selection)) as srv:
        llm = llm_for(srv)
        router = RouterQueryEngine.from_defaults(engine_tools(indexes, llm), llm=llm, select_multi=True)
        assert isinstance(router.selector, LLMMultiSelector)
        response = router.query(question)
        prompts = srv.prompts
    assert [kind(p) for p in prompts] == ["selector", "qa", "qa", "summarize"]
    # the combining call sees both engines' answers and the question
    assert TEA_ANSWER in prompts[3] and TIRE_ANSWER in prompts[3] and question in prompts[3]
    assert response.response == SUMMARY
    assert source_files(response) == {TEA_FILE, TIRE_FILE}
    assert response.metadata["selector_result"].inds == [0, 1]
    assert "summarizer:summary_template" in router.get_prompts()


def test_multi_selection_async(indexes):
    selection = '[{"choice": 2}, {"choice": 1}]'
    with OpenAICompatibleServer(answer=make_answer(selection)) as srv:
        llm = llm_for(srv)
        router = RouterQueryEngine.from_defaults(engine_tools(indexes, llm), llm=llm, select_multi=True)
        response = asyncio.run(router.aquery("tea and tires"))
        kinds = sorted(kind(p) for p in srv.prompts)
    assert kinds == ["qa", "qa", "selector", "summarize"]
    assert response.response == SUMMARY and source_files(response) == {TEA_FILE, TIRE_FILE}


def test_multi_selector_naming_one_engine_returns_its_answer_without_summarizing(indexes):
    with OpenAICompatibleServer(answer=make_answer('[{"choice": 1, "reason": "tea only"}]')) as srv:
        llm = llm_for(srv)
        router = RouterQueryEngine.from_defaults(engine_tools(indexes, llm), llm=llm, select_multi=True)
        response = router.query("How long do I steep green tea?")
        assert [kind(p) for p in srv.prompts] == ["selector", "qa"]
    assert response.response == TEA_ANSWER


def test_embedding_selector_routes_without_an_llm_for_routing(indexes, monkeypatch):
    monkeypatch.delenv("RAGLOOM_LLM", raising=False)
    assert Settings.llm is None
    with OpenAICompatibleServer(answer=make_answer("unused")) as srv:
        llm = llm_for(srv)
        # no llm for the router itself: the default summarizer waits until it is needed
        router = RouterQueryEngine(EmbeddingSingleSelector.from_defaults(), engine_tools(indexes, llm))
        response = router.query("How do I patch a bicycle inner tube?")
        assert [kind(p) for p in srv.prompts] == ["qa"]
        assert response.response == TIRE_ANSWER
        response = router.query("What water temperature suits green tea?")
        assert response.response == TEA_ANSWER
        assert "summarizer:summary_template" not in router.get_prompts()
        with pytest.raises(ValueError, match="Settings.llm"):
            _ = router.summarizer


def test_router_argument_errors(indexes):
    with OpenAICompatibleServer(answer="1") as srv:
        llm = llm_for(srv)
        with pytest.raises(ValueError, match="at least one tool"):
            RouterQueryEngine.from_defaults([], llm=llm)
        with pytest.raises(ValueError, match="QueryEngineTool"):
            RouterQueryEngine.from_defaults([indexes["tea"].as_query_engine(llm=llm)], llm=llm)
        with pytest.raises(ValueError, match="BaseSelector"):
            RouterQueryEngine("not a selector", engine_tools(indexes, llm))
        with pytest.raises(ValueError, match="RetrieverTool"):
            RouterRetriever.from_defaults(engine_tools(indexes, llm), llm=llm)
        assert srv.requests == []


# -- RouterRetriever ---------------------------------------------------------------------------
def retriever_tools(indexes):
    return [
        RetrieverTool.from_defaults(indexes["tea"].as_retriever(similarity_top_k=2), name="tea",
                                    description=TEA_DESCRIPTION),
        RetrieverTool.from_defaults(indexes["tires"].as_retriever(similarity_top_k=2), name="tires",
                                    description=TIRE_DESCRIPTION),
    ]


def test_router_retriever_single_selection(indexes):
    with OpenAICompatibleServer(answer='[{"choice": 1, "reason": "tea"}]') as srv:
        router = RouterRetriever.from_defaults(retriever_tools(indexes), llm=llm_for(srv))
        nodes = router.retrieve("How much tea per cup?")
        assert len(srv.requests) == 1 and "How much tea per cup?" in srv.prompts[0]
    expected = indexes["tea"].as_retriever(similarity_top_k=2).retrieve("How much tea per cup?")
    assert [n.node.node_id for n in nodes] == [n.node.node_id for n in expected]
    assert source_files(nodes) == {TEA_FILE}


def test_router_retriever_merges_multiple_selections_by_node_id(indexes):
    tools = retriever_tools(indexes)
    # a third tool over the tea index again: its nodes must not appear twice
    tools.append(RetrieverTool.from_defaults(indexes["tea"].as_retriever(similarity_top_k=3), name="tea2",
                                             description="Green tea again"))
    answer = '[{"choice": 1}, {"choice": 2}, {"choice": 3}]'
    with OpenAICompatibleServer(answer=answer) as srv:
        router = RouterRetriever.from_defaults(tools, llm=llm_for(srv), select_multi=True)
        nodes = router.retrieve("tea water temperature and a tire lever")
    ids = [n.node.node_id for n in nodes]
    assert len(ids) == len(set(ids))
    assert source_files(nodes) == {TEA_FILE, TIRE_FILE}
    tea_all = {n.node.node_id for n in indexes["tea"].as_retriever(similarity_top_k=3).retrieve("tea water")}
    assert tea_all <= set(ids)  # every node of the small tea index came back once


def test_router_retriever_with_embedding_selector_offline(indexes):
    router = RouterRetriever(EmbeddingSingleSelector.from_defaults(), retriever_tools(indexes))
    assert source_files(router.retrieve("How do I remove the tire from the rim?")) == {TIRE_FILE}
    assert source_files(router.retrieve("Which tea leaves need cooler water?")) == {TEA_FILE}
