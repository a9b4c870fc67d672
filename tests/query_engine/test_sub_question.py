"""``SubQuestionQueryEngine`` and ``LLMQuestionGenerator`` over two real indexes (bundled model,
SQLite on disk), every LLM call answered by the recording HTTP server."""

import asyncio
import json
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

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

from ragloom.output_parsers import OutputParserException  # noqa: E402
from ragloom.query_engine import BaseQueryEngine, SubQuestionQueryEngine  # noqa: E402
from ragloom.question_gen import LLMQuestionGenerator, SubQuestion, parse_sub_questions  # noqa: E402
from ragloom.schema import QueryBundle  # noqa: E402
from ragloom.tools import QueryEngineTool, ToolMetadata  # noqa: E402

QUESTION = "Compare the patience needed for brewing green tea and for fixing a flat tire."
TEA_Q = "How long does brewing green tea take?"
TIRE_Q = "How long does fixing a flat bicycle tire take?"
TEA_ANSWER = "Tea takes one to two minutes per infusion."
TIRE_ANSWER = "A flat takes about fifteen minutes."
FINAL = "Tea is quicker than a tire repair."
SUB_QUESTIONS_JSON = (
    "Here are the sub-questions:\n```json\n"
    + json.dumps([{"sub_question": TEA_Q, "tool_name": "tea"}, {"sub_question": TIRE_Q, "tool_name": "Tires"}])
    + "\n```"
)


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    return two_indexes(tmp_path_factory)


def answer_with(sub_questions_json):
    def answer(prompt):
        k = kind(prompt)
        if k == "sub_question":
            return sub_questions_json
        if k == "qa" and "Sub question:" in prompt:
            return FINAL
        if k == "qa":
            return TEA_ANSWER if "green tea" in prompt.lower() else TIRE_ANSWER
        return "unexpected prompt"

    return answer


def tools_for(indexes, llm):
    return [
        QueryEngineTool.from_defaults(indexes["tea"].as_query_engine(llm=llm), name="tea", description=TEA_DESCRIPTION),
        QueryEngineTool.from_defaults(indexes["tires"].as_query_engine(llm=llm), name="tires",
                                      description=TIRE_DESCRIPTION),
    ]


def check_response(response, prompts, indexes):
    assert [kind(p) for p in prompts].count("sub_question") == 1
    gen_prompt = next(p for p in prompts if kind(p) == "sub_question")
    assert QUESTION in gen_prompt
    for name, desc in (("tea", TEA_DESCRIPTION), ("tires", TIRE_DESCRIPTION)):
        assert json.dumps(name) in gen_prompt and desc in gen_prompt
    sub_prompts = [p for p in prompts if kind(p) == "qa" and "Sub question:" not in p]
    assert len(sub_prompts) == 2 and len(prompts) == 4
    assert any(TEA_Q in p for p in sub_prompts) and any(TIRE_Q in p for p in sub_prompts)
    final_prompt = prompts[-1]
    assert f"Sub question: {TEA_Q}\nResponse: {TEA_ANSWER}" in final_prompt
    assert f"Sub question: {TIRE_Q}\nResponse: {TIRE_ANSWER}" in final_prompt
    assert QUESTION in final_prompt
    assert response.response == FINAL
    # source nodes: one node per sub-answer, then every sub-answer's own sources (as LlamaIndex)
    texts = [n.node.get_content() for n in response.source_nodes[:2]]
    assert texts == [
        f"Sub question: {TEA_Q}\nResponse: {TEA_ANSWER}",
        f"Sub question: {TIRE_Q}\nResponse: {TIRE_ANSWER}",
    ]
    assert source_files(response.source_nodes[2:]) == {TEA_FILE, TIRE_FILE}
    tea_ids = [n.node.node_id for n in indexes["tea"].as_retriever().retrieve(TEA_Q)]
    assert [n.node.node_id for n in response.source_nodes[2:2 + len(tea_ids)]] == tea_ids


@pytest.mark.parametrize("use_async", [True, False])
def test_sub_questions_answered_and_combined(indexes, use_async):
    with OpenAICompatibleServer(answer=answer_with(SUB_QUESTIONS_JSON)) as srv:
        llm = llm_for(srv)
        engine = SubQuestionQueryEngine.from_defaults(tools_for(indexes, llm), llm=llm, use_async=use_async)
        response = engine.query(QUESTION)
        prompts = srv.prompts
    assert kind(prompts[0]) == "sub_question"
    check_response(response, prompts, indexes)


def test_sub_questions_aquery(indexes):
    with OpenAICompatibleServer(answer=answer_with(SUB_QUESTIONS_JSON)) as srv:
        llm = llm_for(srv)
        engine = SubQuestionQueryEngine.from_defaults(tools_for(indexes, llm), llm=llm)
        response = asyncio.run(engine.aquery(QUESTION))
        check_response(response, srv.prompts, indexes)


def test_verbose_prints_questions_and_answers(indexes, capsys):
    with OpenAICompatibleServer(answer=answer_with(SUB_QUESTIONS_JSON)) as srv:
        llm = llm_for(srv)
        engine = SubQuestionQueryEngine.from_defaults(tools_for(indexes, llm), llm=llm, verbose=True, use_async=False)
        engine.query(QUESTION)
    out = capsys.readouterr().out
    assert "Generated 2 sub questions." in out
    assert f"[tea] Q: {TEA_Q}" in out and f"[tires] A: {TIRE_ANSWER}" in out


class Broken(BaseQueryEngine):
    """A query engine whose source is down."""

    def _query(self, query_bundle):
        raise RuntimeError("source unavailable")

    async def _aquery(self, query_bundle):
        raise RuntimeError("source unavailable")


def test_a_failing_sub_question_is_left_out(indexes, caplog):
    with OpenAICompatibleServer(answer=answer_with(SUB_QUESTIONS_JSON)) as srv:
        llm = llm_for(srv)
        tools = [tools_for(indexes, llm)[0], QueryEngineTool.from_defaults(Broken(), name="tires", description="x")]
        engine = SubQuestionQueryEngine.from_defaults(tools, llm=llm)
        response = engine.query(QUESTION)
        assert len(srv.prompts) == 3  # question generation, the tea sub-question, the final answer
        assert TIRE_Q not in srv.prompts[-1] and TEA_ANSWER in srv.prompts[-1]
    assert response.response == FINAL
    assert "source unavailable" in caplog.text


def test_every_sub_question_failing_raises_the_error(indexes):
    with OpenAICompatibleServer(answer=answer_with(SUB_QUESTIONS_JSON)) as srv:
        llm = llm_for(srv)
        tools = [QueryEngineTool.from_defaults(Broken(), name=n, description=n) for n in ("tea", "tires")]
        engine = SubQuestionQueryEngine.from_defaults(tools, llm=llm)
        with pytest.raises(RuntimeError, match="source unavailable"):
            engine.query(QUESTION)
        with pytest.raises(RuntimeError, match="source unavailable"):
            asyncio.run(engine.aquery(QUESTION))


def test_no_sub_questions_gives_empty_response(indexes):
    with OpenAICompatibleServer(answer=answer_with("[]")) as srv:
        llm = llm_for(srv)
        engine = SubQuestionQueryEngine.from_defaults(tools_for(indexes, llm), llm=llm)
        response = engine.query(QUESTION)
        assert len(srv.prompts) == 1
    assert response.response == "Empty Response" and response.source_nodes == []


def test_unreadable_generator_answer_raises(indexes):
    with OpenAICompatibleServer(answer=answer_with("I would ask about tea and tires.")) as srv:
        llm = llm_for(srv)
        engine = SubQuestionQueryEngine.from_defaults(tools_for(indexes, llm), llm=llm)
        with pytest.raises(OutputParserException, match="no readable JSON"):
            engine.query(QUESTION)


def test_engine_argument_errors(indexes):
    with OpenAICompatibleServer(answer="[]") as srv:
        llm = llm_for(srv)
        tea = tools_for(indexes, llm)[0]
        with pytest.raises(ValueError, match="at least one tool"):
            SubQuestionQueryEngine.from_defaults([], llm=llm)
        with pytest.raises(ValueError, match="distinct"):
            SubQuestionQueryEngine.from_defaults([tea, tea], llm=llm)
        unnamed = QueryEngineTool(indexes["tea"].as_query_engine(llm=llm), ToolMetadata(description="tea"))
        with pytest.raises(ValueError, match="name"):
            SubQuestionQueryEngine.from_defaults([unnamed], llm=llm)
        keys = SubQuestionQueryEngine.from_defaults([tea], llm=llm).get_prompts()
        assert "question_gen:question_gen_prompt" in keys and "response_synthesizer:text_qa_template" in keys


# -- the generator and its parser ---------------------------------------------------------------
def test_question_generator_alone():
    answer = '{"items": [{"sub_question": "What is X?", "tool_name": "alpha"}]}'
    with OpenAICompatibleServer(answer=answer) as srv:
        gen = LLMQuestionGenerator.from_defaults(llm=llm_for(srv))
        tools = [ToolMetadata("Knows about X", name="alpha"), ToolMetadata("Knows about Y", name="beta")]
        subs = gen.generate(tools, QueryBundle(query_str="X and Y?"))
        assert subs == [SubQuestion(sub_question="What is X?", tool_name="alpha")]
        assert asyncio.run(gen.agenerate(tools, QueryBundle(query_str="X?"))) == subs
        assert '"alpha": "Knows about X"' in srv.prompts[0] and "X and Y?" in srv.prompts[0]


@pytest.mark.parametrize(
    "answer, expected",
    [
        ('[{"sub_question": "q1", "tool_name": "tea"}]', [("q1", "tea")]),
        ('```json\n{"sub_questions": [{"question": "q1", "tool": "TEA"}]}\n```', [("q1", "tea")]),
        ('{"sub_question": "q1", "tool_name": "`tires`"}', [("q1", "tires")]),
        ('[{"sub_question": "q1", "tool_name": "tea"}, {"sub_question": "q1", "tool_name": "tea"}]', [("q1", "tea")]),
        ('[{"sub_question": "q1", "tool_name": "coffee"}, {"sub_question": "q2", "tool_name": "tires"}]',
         [("q2", "tires")]),
        ('[{"sub_question": "", "tool_name": "tea"}, {"sub_question": "q2", "tool_name": "tea",}]', [("q2", "tea")]),
        ("[]", []),
    ],
)
def test_parse_sub_questions(answer, expected):
    got = parse_sub_questions(answer, ["tea", "tires"])
    assert [(s.sub_question, s.tool_name) for s in got] == expected


def test_parse_sub_questions_with_only_unknown_tools_names_the_known_ones():
    with pytest.raises(OutputParserException, match=r"known: \['tea', 'tires'\]"):
        parse_sub_questions('[{"sub_question": "q", "tool_name": "coffee"}]', ["tea", "tires"])


@settings(max_examples=150, deadline=None)
@given(
    items=st.lists(
        st.tuples(st.text(min_size=1, max_size=30).filter(lambda s: s.strip()), st.sampled_from(["a", "b", "zz"])),
        max_size=6,
    ),
    fenced=st.booleans(),
)
# found in CI: a "```" inside a question ended the fenced block early (only the first item was read)
@example(items=[("0", "a"), ("```", "a")], fenced=True)
@example(items=[("0", "zz"), ("```", "a")], fenced=True)
def test_parse_sub_questions_property(items, fenced):
    payload = json.dumps([{"sub_question": q, "tool_name": t} for q, t in items], ensure_ascii=False)
    answer = f"```json\n{payload}\n```" if fenced else f"Sure. {payload}"
    expected = []
    for q, t in items:
        pair = (q.strip(), t)
        if t != "zz" and pair not in expected:
            expected.append(pair)
    if items and not expected:
        with pytest.raises(ValueError):
            parse_sub_questions(answer, ["a", "b"])
        return
    got = parse_sub_questions(answer, ["a", "b"])
    assert [(s.sub_question, s.tool_name) for s in got] == expected
