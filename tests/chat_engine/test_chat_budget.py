"""The chat engines' token budgets: passages and history always fit the window, in the LLM's tokenizer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.chat_engine.utils import PASSAGE_PADDING, build_context_turn, fit_texts, prompt_budget
from ragloom.indices.prompt_helper import PromptHelper
from ragloom.llms import ChatMessage, MessageRole, MockLLM
from ragloom.memory import messages_token_count
from ragloom.prompts import PromptTemplate
from ragloom.schema import NodeWithScore, TextNode
from ragloom.tokenizers import get_tokenizer

TEMPLATE = PromptTemplate("Context:\n{context_str}\nEnd.")


class CharLLM(MockLLM):
    """A model whose tokenizer counts characters."""

    def __init__(self, context_window: int, num_output: int) -> None:
        super().__init__(max_tokens=num_output, context_window=context_window)
        self._tok = get_tokenizer(lambda s: list(s))

    def get_tokenizer(self):
        return self._tok


def _nodes(texts):
    return [NodeWithScore(node=TextNode(text=t), score=1.0 - i / 100) for i, t in enumerate(texts)]


def test_water_filling_keeps_short_passages_whole_and_cuts_long_ones():
    helper = PromptHelper(context_window=10_000, num_output=0, tokenizer=lambda s: list(s))
    short, long1, long2 = "s" * 40, " ".join(["long"] * 100), " ".join(["word"] * 100)
    picked = fit_texts(helper, [long1, short, long2], 300)
    assert [i for i, _ in picked] == [0, 1, 2]
    assert picked[1][1] == short  # whole
    for i, text in ((0, long1), (2, long2)):
        assert text.startswith(picked[i][1]) and len(picked[i][1]) < len(text)
    assert sum(len(t) for _, t in picked) + 3 * PASSAGE_PADDING <= 300
    # too little room for three passages of at least 32 tokens each: the best-ranked ones only
    assert [i for i, _ in fit_texts(helper, [long1, long2, long1], 80)] == [0, 1]  # 35 tokens each
    assert [i for i, _ in fit_texts(helper, [long1, long2, long1], 60)] == [0]
    assert fit_texts(helper, [long1], 3) == [] and fit_texts(helper, [], 100) == []


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=300), max_size=6),
    history=st.lists(st.tuples(st.sampled_from(["user", "assistant"]), st.text(max_size=80)), max_size=10),
    window=st.integers(min_value=60, max_value=1500),
    num_output=st.integers(min_value=1, max_value=50),
    message=st.text(min_size=1, max_size=60),
)
def test_context_turn_always_fits_the_window(texts, history, window, num_output, message):
    llm = CharLLM(window, num_output)
    past = [ChatMessage(role=MessageRole(r), content=c) for r, c in history]
    nodes = _nodes(texts)
    try:
        turn = build_context_turn(llm, TEMPLATE, "Be brief.", [], past, message, nodes)
    except ValueError as exc:  # only when the fixed parts alone do not fit
        fixed = [ChatMessage(role=MessageRole.SYSTEM, content="Be brief.\n\n" + TEMPLATE.format(context_str="")),
                 ChatMessage(role=MessageRole.USER, content=message)]
        assert messages_token_count(fixed, len) > prompt_budget(llm)
        assert "context_window" in str(exc)
        return
    assert messages_token_count(turn.messages, len) <= prompt_budget(llm)
    assert turn.messages[-1].content == message and turn.messages[0].role == MessageRole.SYSTEM
    sent_past = turn.messages[1:-1]
    assert sent_past == past[len(past) - len(sent_past):]
    assert not sent_past or sent_past[0].role != MessageRole.ASSISTANT
    # the kept nodes are best-ranked ones, in order, and their text (whole or cut) is in the context
    ids = [n.node.node_id for n in turn.nodes]
    assert ids == [n.node.node_id for n in nodes if n.node.node_id in ids]
    for n in turn.nodes:
        assert n.node.get_content().strip()[:1] in turn.context_str


def test_nothing_fits_is_a_value_error_naming_the_window():
    llm = CharLLM(50, 10)
    with pytest.raises(ValueError, match="context_window=50 - num_output=10"):
        build_context_turn(llm, TEMPLATE, None, [], [], "x" * 100, [])
