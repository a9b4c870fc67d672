"""PromptTemplate formatting and the default prompts."""

import pytest

from ragloom import PromptTemplate
from ragloom.prompts import (
    DEFAULT_REFINE_PROMPT,
    DEFAULT_SIMPLE_INPUT_PROMPT,
    DEFAULT_TEXT_QA_PROMPT,
    DEFAULT_TREE_SUMMARIZE_PROMPT,
    MissingPromptVariableError,
)


def test_format_partial_and_template_vars():
    p = PromptTemplate("Context: {context_str}\nQ: {query_str}\nA: ")
    assert p.template_vars == ["context_str", "query_str"]
    q = p.partial_format(query_str="why?")
    assert q.template_vars == ["context_str", "query_str"]  # unchanged, as LlamaIndex
    assert q.missing_vars() == ["context_str"]
    assert q.format(context_str="because") == "Context: because\nQ: why?\nA: "
    assert p.missing_vars() == ["context_str", "query_str"]  # the original is not modified
    # values passed to format() override partial ones
    assert q.format(context_str="c", query_str="how?").endswith("Q: how?\nA: ")


def test_braces_in_values_are_kept_and_escaped_braces_work():
    p = PromptTemplate('JSON like {{"a": 1}} then {context_str}')
    assert p.template_vars == ["context_str"]
    text = p.format(context_str='code: def f(): return {"x": "{query_str}"}')
    assert text == 'JSON like {"a": 1} then code: def f(): return {"x": "{query_str}"}'


def test_missing_variable_is_keyerror_and_valueerror():
    p = PromptTemplate("{a} and {b}")
    with pytest.raises(MissingPromptVariableError, match=r"\['b'\]"):
        p.format(a=1)
    with pytest.raises(KeyError):
        p.format()
    with pytest.raises(ValueError):
        p.format()


def test_bad_templates():
    with pytest.raises(ValueError, match="template must be a str"):
        PromptTemplate(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positional"):
        PromptTemplate("a {} b")
    with pytest.raises(ValueError, match="not a valid format string"):
        PromptTemplate("a { b")


def test_template_var_mappings_and_function_mappings():
    p = PromptTemplate(
        "ctx={my_context} q={my_query} n={n}",
        template_var_mappings={"context_str": "my_context", "query_str": "my_query"},
        function_mappings={"n": lambda **kw: str(len(kw.get("context_str", "")))},
    )
    assert p.format(context_str="abcd", query_str="q?") == "ctx=abcd q=q? n=4"
    assert p.partial_format(query_str="x").missing_vars() == ["my_context"]


def test_format_messages_is_one_user_message():
    msgs = PromptTemplate("hi {x}").format_messages(x="there")
    assert len(msgs) == 1 and msgs[0].role.value == "user" and msgs[0].content == "hi there"


def test_default_prompts_variables_and_language_instruction():
    assert set(DEFAULT_TEXT_QA_PROMPT.template_vars) == {"context_str", "query_str"}
    assert set(DEFAULT_REFINE_PROMPT.template_vars) == {"query_str", "existing_answer", "context_msg"}
    assert set(DEFAULT_TREE_SUMMARIZE_PROMPT.template_vars) == {"context_str", "query_str"}
    assert DEFAULT_SIMPLE_INPUT_PROMPT.template_vars == ["query_str"]
    for p in (DEFAULT_TEXT_QA_PROMPT, DEFAULT_REFINE_PROMPT, DEFAULT_TREE_SUMMARIZE_PROMPT):
        assert "same language as the question" in p.template
    # filled text keeps values verbatim
    text = DEFAULT_TEXT_QA_PROMPT.format(context_str="绿茶用80°C的水。", query_str="绿茶用多少度的水？")
    assert "绿茶用80°C的水。" in text and "绿茶用多少度的水？" in text
