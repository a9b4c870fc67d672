"""``ChatMemoryBuffer``: what ``get()`` keeps, counted in the LLM's own tokenizer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.llms import ChatMessage, MessageRole, MockLLM
from ragloom.memory import (
    DEFAULT_TOKEN_LIMIT,
    MESSAGE_OVERHEAD_TOKENS,
    BaseMemory,
    ChatMemoryBuffer,
    fit_to_token_limit,
    messages_token_count,
)


def _chars(text: str) -> list:
    return list(text)


class CharLLM(MockLLM):
    """A model whose tokenizer counts characters (so its counts differ from cl100k's)."""

    def count_tokens(self, text: str) -> int:
        return len(text)


def _msg(role: str, text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole(role), content=text)


messages_st = st.lists(
    st.builds(_msg, st.sampled_from(["user", "assistant", "system"]), st.text(max_size=40)), max_size=14
)


@settings(max_examples=300, deadline=None)
@given(messages=messages_st, limit=st.integers(min_value=1, max_value=400), initial=st.integers(0, 400))
def test_get_is_the_longest_valid_suffix_that_fits(messages, limit, initial):
    memory = ChatMemoryBuffer(token_limit=limit, tokenizer_fn=_chars, chat_history=messages)
    initial = min(initial, limit)
    got = memory.get(initial_token_count=initial)
    count = len
    # fits
    assert messages_token_count(got, count) + initial <= limit
    assert memory.token_count(got) == messages_token_count(got, count)
    # a suffix of the whole history, which get() leaves untouched
    assert memory.get_all() == messages
    assert got == messages[len(messages) - len(got):]
    # never opens with an answer whose question was dropped
    assert not got or got[0].role != MessageRole.ASSISTANT
    # the longest such suffix: any longer valid suffix is over the limit
    for start in range(len(messages) - len(got)):
        longer = messages[start:]
        if longer[0].role != MessageRole.ASSISTANT:
            assert messages_token_count(longer, count) + initial > limit


def test_counts_in_the_llms_tokenizer_and_drops_whole_turns():
    llm = CharLLM(context_window=1000)
    turns = []
    for i in range(4):
        turns += [_msg("user", f"question {i} " + "x" * 20), _msg("assistant", f"answer {i} " + "y" * 20)]
    per_turn = messages_token_count(turns[:2], llm.count_tokens)
    assert per_turn == len("user: question 0 " + "x" * 20) + len("assistant: answer 0 " + "y" * 20) \
        + 2 * MESSAGE_OVERHEAD_TOKENS
    # room for two turns and a half: the half turn (an assistant message) is dropped too
    memory = ChatMemoryBuffer.from_defaults(chat_history=turns, llm=llm, token_limit=2 * per_turn + per_turn // 2)
    assert memory.get() == turns[4:]
    # the same limit in cl100k tokens (the default without an LLM) keeps everything: counts differ
    assert ChatMemoryBuffer.from_defaults(chat_history=turns, token_limit=2 * per_turn + per_turn // 2).get() == turns


def test_a_single_message_over_the_limit_leaves_nothing_and_limits_default_from_the_window():
    llm = CharLLM(context_window=1000)
    memory = ChatMemoryBuffer.from_defaults(llm=llm)
    assert memory.token_limit == 750  # 0.75 x context window
    assert ChatMemoryBuffer.from_defaults().token_limit == DEFAULT_TOKEN_LIMIT
    memory.put(_msg("user", "z" * 800))
    assert memory.get() == [] and len(memory.get_all()) == 1
    memory.put(_msg("assistant", "short"))
    assert memory.get() == []  # the answer alone would open the history
    memory.put(_msg("user", "next"))
    assert memory.get() == [memory.get_all()[-1]]
    memory.set([_msg("user", "a")])
    assert memory.get_all() == [_msg("user", "a")]
    memory.reset()
    assert memory.get_all() == [] and memory.get() == []
    assert isinstance(memory, BaseMemory)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="token_limit"):
        ChatMemoryBuffer(token_limit=0)
    with pytest.raises(ValueError, match="tokenizer_fn"):
        ChatMemoryBuffer(token_limit=5, tokenizer_fn="cl100k")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"chat_history\[1\]"):
        ChatMemoryBuffer(token_limit=5, chat_history=[_msg("user", "a"), "b"])  # type: ignore[list-item]
    memory = ChatMemoryBuffer(token_limit=5)
    with pytest.raises(ValueError, match="initial_token_count"):
        memory.get(initial_token_count=6)
    with pytest.raises(ValueError, match="message"):
        memory.put("hello")  # type: ignore[arg-type]
    assert fit_to_token_limit([_msg("user", "a")], -1, len) == []
