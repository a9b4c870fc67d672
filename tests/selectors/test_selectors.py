"""Selectors: answer parsing (unit + property tests), LLM selectors against the recording HTTP
server, and ``EmbeddingSingleSelector`` with the bundled embedding model (offline)."""

import asyncio
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "query_engine"))
from llm_server import OpenAICompatibleServer  # noqa: E402
from routing_helpers import llm_for  # noqa: E402

from ragloom.output_parsers import OutputParserException, parse_json_markdown  # noqa: E402
from ragloom.schema import QueryBundle  # noqa: E402
from ragloom.selectors import (  # noqa: E402
    EmbeddingSingleSelector,
    LLMMultiSelector,
    LLMSingleSelector,
    SelectorResult,
    SingleSelection,
    parse_selections,
)
from ragloom.tools import ToolMetadata  # noqa: E402

POETRY = ToolMetadata(
    name="poetry",
    description=(
        "Chinese classical poetry 中国古诗词: Tang and Song poems 唐诗宋词, poets such as Li Bai 李白 and Du Fu 杜甫"
    ),
)
PYTHON = ToolMetadata(
    name="python", description="Python programming: functions, classes, modules, exceptions and the standard library"
)
COOKING = ToolMetadata(name="cooking", description="Cooking recipes: baking bread, soups and sauces")


# -- parsing -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "answer, expected",
    [
        ('[{"choice": 2, "reason": "about code"}]', [(1, "about code")]),
        ('```json\n[{"choice": 1, "reason": "poems"}]\n```', [(0, "poems")]),
        ('Sure! Here is my pick:\n```\n{"choice": 3, "reason": "food"}\n```\nHope it helps.', [(2, "food")]),
        ('I think {"choice": "(2)", "reason": "x"} fits.', [(1, "x")]),
        ('{"choices": [{"index": 3, "reasoning": "r3"}, {"option": 1}]}', [(2, "r3"), (0, "")]),
        ("[2, 3]", [(1, ""), (2, "")]),
        ('{"choice": 1, "reason": "a"}\n{"choice": 3, "reason": "b"}', [(0, "a"), (2, "b")]),
        ('[{"choice": 2, "reason": "a",}]', [(1, "a")]),  # trailing comma
        ("2", [(1, "")]),
        ("(3) because it is about food", [(2, "")]),
        ("Choice 1: poetry", [(0, "")]),
        ('[{"choice": 7}, {"choice": 2, "reason": "ok"}]', [(1, "ok")]),  # 7 is out of range: dropped
        ('[{"choice": 2}, {"choice": 2}, {"choice": 1}]', [(1, ""), (0, "")]),  # repeats count once
    ],
)
def test_parse_selections_reads_what_small_models_write(answer, expected):
    got = parse_selections(answer, num_choices=3)
    assert [(s.index, s.reason) for s in got] == expected


@pytest.mark.parametrize("answer", ['[{"choice": 0}]', '[{"choice": 4}]', "I cannot decide.", "", "[]"])
def test_parse_selections_without_a_usable_choice_raises_a_value_error(answer):
    with pytest.raises(OutputParserException, match="between 1 and 3") as err:
        parse_selections(answer, num_choices=3)
    assert isinstance(err.value, ValueError)


@settings(max_examples=200, deadline=None)
@given(
    numbers=st.lists(st.integers(min_value=-2, max_value=12), min_size=1, max_size=8),
    wrapper=st.sampled_from(["{}", "```json\n{}\n```", "Here you go: {} -- done", "```\n{}```"]),
    num_choices=st.integers(min_value=1, max_value=10),
)
def test_parse_selections_property(numbers, wrapper, num_choices):
    payload = json.dumps([{"choice": n, "reason": f"r{n}"} for n in numbers])
    answer = wrapper.replace("{}", payload)
    expected = []
    for n in numbers:
        if 1 <= n <= num_choices and n - 1 not in expected:
            expected.append(n - 1)
    if not expected:
        with pytest.raises(ValueError):
            parse_selections(answer, num_choices)
        return
    got = parse_selections(answer, num_choices)
    assert [s.index for s in got] == expected
    assert all(s.reason == f"r{s.index + 1}" for s in got)


def test_parse_json_markdown_finds_json_in_prose_and_fences():
    assert parse_json_markdown('text ```json\n{"a": [1, 2]}\n``` more') == {"a": [1, 2]}
    assert parse_json_markdown('The list is [1, {"b": "c"}] and that is all') == [1, {"b": "c"}]
    assert parse_json_markdown('{"a": 1,}') == {"a": 1}
    # a trailing comma in an outer list inside prose: the whole list, not its first item
    assert parse_json_markdown('Sure: [{"a": 1}, {"a": 2},] ok') == [{"a": 1}, {"a": 2}]
    with pytest.raises(OutputParserException, match="no readable JSON"):
        parse_json_markdown("no json here {oops")


def test_selector_result_accessors():
    one = SelectorResult(selections=[SingleSelection(index=2, reason="why")])
    assert (one.ind, one.reason, one.inds, one.reasons) == (2, "why", [2], ["why"])
    two = SelectorResult(selections=[SingleSelection(0, "a"), SingleSelection(1, "b")])
    assert two.inds == [0, 1]
    with pytest.raises(ValueError, match="exactly one"):
        _ = two.ind
    with pytest.raises(ValueError, match="exactly one"):
        _ = two.reason


# -- LLM selectors over HTTP ---------------------------------------------------------------------
def test_llm_single_selector_prompt_and_answer():
    answer = 'My choice:\n```json\n[{"choice": 2, "reason": "the question is about code"}]\n```'
    with OpenAICompatibleServer(answer=answer) as srv:
        selector = LLMSingleSelector.from_defaults(llm=llm_for(srv))
        result = selector.select([POETRY, PYTHON, COOKING], "How do I define a class?")
        assert len(srv.requests) == 1
        prompt = srv.prompts[0]
    assert result.ind == 1 and result.reason == "the question is about code"
    assert "How do I define a class?" in prompt
    for i, tool in enumerate([POETRY, PYTHON, COOKING], 1):
        assert f"({i}) {tool.description}" in prompt
    assert "3 numbered options" in prompt


def test_llm_single_selector_keeps_one_selection_and_takes_plain_strings():
    with OpenAICompatibleServer(answer='[{"choice": 3}, {"choice": 1}]') as srv:
        selector = LLMSingleSelector.from_defaults(llm=llm_for(srv))
        result = selector.select(["first thing", "second thing", "third thing"], "q")
        assert result.inds == [2] and result.ind == 2
        # async path, same parsing
        result = asyncio.run(selector.aselect(["a", "b", "c"], "q"))
        assert result.ind == 2 and len(srv.requests) == 2


def test_llm_single_selector_out_of_range_answer_raises():
    with OpenAICompatibleServer(answer='[{"choice": 5, "reason": "?"}]') as srv:
        selector = LLMSingleSelector.from_defaults(llm=llm_for(srv))
        with pytest.raises(ValueError, match="between 1 and 2"):
            selector.select([POETRY, PYTHON], "q")


def test_llm_multi_selector_asks_for_max_outputs_and_cuts_to_it():
    answer = '[{"choice": 3, "reason": "c"}, {"choice": 1, "reason": "a"}, {"choice": 2, "reason": "b"}]'
    with OpenAICompatibleServer(answer=answer) as srv:
        selector = LLMMultiSelector.from_defaults(llm=llm_for(srv), max_outputs=2)
        result = selector.select([POETRY, PYTHON, COOKING], "poems and recipes")
        prompt = srv.prompts[0]
        assert result.inds == [2, 0] and result.reasons == ["c", "a"]
        assert "at most 2" in prompt and "poems and recipes" in prompt
        unlimited = LLMMultiSelector.from_defaults(llm=llm_for(srv))
        assert unlimited.select([POETRY, PYTHON, COOKING], "q").inds == [2, 0, 1]
        assert "at most 3" in srv.prompts[1]


def test_custom_prompt_template_and_prompt_dict():
    tmpl = "Options:\n{context_list}\nQ: {query_str}\nNumber only:"
    with OpenAICompatibleServer(answer="1") as srv:
        selector = LLMSingleSelector.from_defaults(llm=llm_for(srv), prompt_template_str=tmpl)
        assert selector.select([POETRY, PYTHON], "李白").ind == 0
        assert srv.prompts[0].startswith("Options:\n(1) Chinese classical poetry")
        assert list(selector.get_prompts()) == ["prompt"]
        with pytest.raises(ValueError, match="query_str"):
            selector.update_prompts({"prompt": "only {context_list}"})


def test_bad_arguments_raise_value_errors():
    with OpenAICompatibleServer(answer="1") as srv:
        with pytest.raises(ValueError, match="max_outputs"):
            LLMMultiSelector.from_defaults(llm=llm_for(srv), max_outputs=0)
        with pytest.raises(ValueError, match="context_list"):
            LLMSingleSelector.from_defaults(llm=llm_for(srv), prompt_template_str="{query_str}")
        selector = LLMSingleSelector.from_defaults(llm=llm_for(srv))
        with pytest.raises(ValueError, match="at least one"):
            selector.select([], "q")
        with pytest.raises(ValueError, match="choices\\[0\\]"):
            selector.select([42], "q")
        assert srv.requests == []


# -- embedding selector (offline, bundled model) -------------------------------------------------
@pytest.fixture(scope="module")
def embedding_selector():
    return EmbeddingSingleSelector.from_defaults()


@pytest.mark.parametrize(
    "query, expected",
    [
        ("李白的诗有什么特点？", 0),
        ("杜甫写过哪些唐诗？", 0),
        ("How do I define a class in Python?", 1),
        ("What exception does dividing by zero raise in Python?", 1),
        ("How long should bread dough rise before baking?", 2),
    ],
)
def test_embedding_selector_picks_the_matching_description(embedding_selector, query, expected):
    result = embedding_selector.select([POETRY, PYTHON, COOKING], query)
    assert result.ind == expected
    assert "cosine similarity" in result.reason
    sims = embedding_selector.similarities([POETRY, PYTHON, COOKING], QueryBundle(query_str=query))
    assert max(range(3), key=lambda i: sims[i]) == expected
    assert all(-1.0 <= s <= 1.0 for s in sims)


def test_embedding_selector_async_and_empty_query(embedding_selector):
    assert asyncio.run(embedding_selector.aselect([POETRY, PYTHON], "Python list comprehension")).ind == 1
    with pytest.raises(ValueError, match="empty"):
        embedding_selector.select([POETRY, PYTHON], "")
