"""Chat engines end to end: a real index (bundled embedding model, SQLite) answered through the real
``OpenAILike`` client against the prompt-recording server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import io
import logging
import os

import pytest
from chat_support import condensing_answer  # type: ignore[import-not-found, unused-ignore]

from ragloom import Settings
from ragloom.chat_engine import (
    AgentChatResponse,
    CondensePlusContextChatEngine,
    CondenseQuestionChatEngine,
    ContextChatEngine,
    SimpleChatEngine,
    StreamingAgentChatResponse,
)
from ragloom.chat_engine.utils import prompt_budget
from ragloom.llms import ChatMessage, MessageRole
from ragloom.llms.openai_like import OpenAILike
from ragloom.memory import ChatMemoryBuffer, messages_token_count
from ragloom.prompts.chat_prompts import DEFAULT_CONTEXT_TEMPLATE_TMPL
from ragloom.schema import MetadataMode

pytestmark = pytest.mark.requires_extra("remote")

FIRST = "Tell me about the Eiffel Tower."
FIRST_ANSWER = "It is a wrought-iron tower in Paris."
SECOND = "When was it completed?"
STANDALONE = "When was the Eiffel Tower completed?"
ANSWER = "It was completed in 1889."


def _llm(srv, **kwargs):
    kwargs.setdefault("context_window", 3900)
    kwargs.setdefault("max_tokens", 128)
    return OpenAILike(model="m", api_base=srv.url, **kwargs)


def _chats(srv):
    return [r for r in srv.requests if r["endpoint"] == "chat"]


def _messages(request):
    return [(m["role"], m["content"]) for m in request["messages"]]


def _texts(nodes):
    return [n.node.get_content(MetadataMode.NONE) for n in nodes]


def test_condense_plus_context_condenses_the_history_and_retrieves_with_the_question(index, server_factory):
    srv = server_factory(condensing_answer(STANDALONE, FIRST_ANSWER))
    engine = index.as_chat_engine(llm=_llm(srv), similarity_top_k=1)  # "best"
    assert isinstance(engine, CondensePlusContextChatEngine)

    first = engine.chat(FIRST)
    assert isinstance(first, AgentChatResponse) and first.response == FIRST_ANSWER
    (req,) = _chats(srv)  # no history yet: nothing to condense
    assert req["messages"][0]["role"] == "system" and req["messages"][-1] == {"role": "user", "content": FIRST}
    assert os.path.basename(first.source_nodes[0].node.metadata["file_path"]) == "eiffel.md"
    assert _texts(first.source_nodes)[0] in req["messages"][0]["content"]

    srv.answer = condensing_answer(STANDALONE, ANSWER)
    second = engine.chat(SECOND)
    condense, answer = _chats(srv)[1:]
    # the condense prompt carries the conversation and the new message
    prompt = condense["prompt"]
    assert f"user: {FIRST}" in prompt and f"assistant: {FIRST_ANSWER}" in prompt and SECOND in prompt
    # retrieval used the standalone question, and its node text is in the system message
    assert second.sources[0].raw_input == {"message": STANDALONE}
    expected = index.as_retriever(similarity_top_k=1).retrieve(STANDALONE)
    assert [n.node.node_id for n in second.source_nodes] == [n.node.node_id for n in expected]
    assert _texts(expected)[0] in answer["messages"][0]["content"]
    # the answer prompt: context, then the conversation, then the new message as typed
    assert _messages(answer)[1:] == [("user", FIRST), ("assistant", FIRST_ANSWER), ("user", SECOND)]
    assert second.response == ANSWER
    assert [(m.role.value, m.content) for m in engine.chat_history] == [
        ("user", FIRST), ("assistant", FIRST_ANSWER), ("user", SECOND), ("assistant", ANSWER)]


def test_skip_condense_retrieves_with_the_message(index, server_factory):
    srv = server_factory(ANSWER)
    engine = index.as_chat_engine("condense_plus_context", llm=_llm(srv), similarity_top_k=1, skip_condense=True,
                                  system_prompt="You are terse.",
                                  chat_history=[ChatMessage(role=MessageRole.USER, content=FIRST),
                                                ChatMessage(role=MessageRole.ASSISTANT, content=FIRST_ANSWER)])
    response = engine.chat(SECOND)
    (req,) = _chats(srv)
    assert response.sources[0].raw_input == {"message": SECOND}
    system = req["messages"][0]["content"]
    assert system.startswith("You are terse.\n\n")
    assert _messages(req)[1:] == [("user", FIRST), ("assistant", FIRST_ANSWER), ("user", SECOND)]


def test_context_engine_puts_the_retrieved_text_in_the_system_prompt(index, server_factory):
    srv = server_factory(ANSWER)
    engine = index.as_chat_engine("context", llm=_llm(srv), similarity_top_k=2, system_prompt="You are terse.")
    assert isinstance(engine, ContextChatEngine)
    question = "How hot should the water be for green tea?"
    response = engine.chat(question)
    expected = index.as_retriever(similarity_top_k=2).retrieve(question)
    assert [n.node.node_id for n in response.source_nodes] == [n.node.node_id for n in expected]
    (req,) = _chats(srv)
    system = req["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("You are terse.")
    for text in _texts(expected):
        assert text in system["content"]
    assert response.sources[0].tool_name == "retriever" and response.sources[0].content in system["content"]
    assert req["messages"][-1] == {"role": "user", "content": question}


def test_condense_question_engine_queries_with_the_standalone_question(index, server_factory, capsys):
    srv = server_factory(condensing_answer(STANDALONE, FIRST_ANSWER))
    engine = index.as_chat_engine("condense_question", llm=_llm(srv), similarity_top_k=1, verbose=True)
    assert isinstance(engine, CondenseQuestionChatEngine)
    engine.chat(FIRST)
    (query,) = _chats(srv)  # no history: the message is the question, no condense call
    assert FIRST in query["prompt"] and "Querying with: " + FIRST in capsys.readouterr().out

    srv.answer = condensing_answer(STANDALONE, ANSWER)
    response = engine.stream_chat(SECOND)
    assert isinstance(response, StreamingAgentChatResponse)
    deltas = list(response.response_gen)
    condense, query = _chats(srv)[1:]
    assert f"user: {FIRST}" in condense["prompt"] and f"assistant: {FIRST_ANSWER}" in condense["prompt"]
    assert STANDALONE in query["prompt"]  # the query engine got the standalone question
    assert query["body"]["stream"] is True and len(deltas) > 1 and "".join(deltas) == ANSWER
    assert response.sources[0].tool_name == "query_engine" and response.sources[0].raw_input == {"query": STANDALONE}
    assert "eiffel.md" in response.source_nodes[0].node.metadata["file_path"]
    assert _texts(response.source_nodes)[0] in query["prompt"]
    assert engine.chat_history[-1].content == ANSWER and len(engine.chat_history) == 4
    assert "Querying with: " + STANDALONE in capsys.readouterr().out
    # chat() reads the streaming query engine whole
    assert engine.chat(SECOND).response == ANSWER


def test_streaming_deltas_join_to_the_answer_and_memory_holds_it(index, server_factory):
    answer = "The tower was completed in 1889 for the World's Fair."
    srv = server_factory(answer)
    engine = index.as_chat_engine("context", llm=_llm(srv), similarity_top_k=1)
    response = engine.stream_chat(FIRST)
    assert engine.chat_history == []  # nothing recorded before the answer is read
    assert os.path.basename(response.source_nodes[0].node.metadata["file_path"]) == "eiffel.md"
    deltas = list(response.response_gen)
    assert len(deltas) > 3 and "".join(deltas) == answer == response.response == str(response)
    assert _chats(srv)[0]["body"]["stream"] is True
    assert [(m.role, m.content) for m in engine.chat_history] == [
        (MessageRole.USER, FIRST), (MessageRole.ASSISTANT, answer)]
    assert list(response.response_gen) == []  # read once

    out = io.StringIO()
    engine.stream_chat(SECOND).print_response_stream(file=out)
    assert out.getvalue() == answer + "\n" and len(engine.chat_history) == 4


def test_async_chat_and_stream(index, server_factory):
    srv = server_factory(ANSWER)
    engine = index.as_chat_engine("context", llm=_llm(srv), similarity_top_k=1)

    async def run():
        first = await engine.achat(FIRST)
        streamed = await engine.astream_chat(SECOND)
        deltas = [d async for d in streamed.async_response_gen()]
        return first, streamed, deltas

    first, streamed, deltas = asyncio.run(run())
    assert first.response == ANSWER and "".join(deltas) == ANSWER == streamed.response
    assert [m.content for m in engine.chat_history] == [FIRST, ANSWER, SECOND, ANSWER]
    assert _messages(_chats(srv)[1])[1:] == [("user", FIRST), ("assistant", ANSWER), ("user", SECOND)]
    with pytest.raises(ValueError, match="async_response_gen"):
        asyncio.run(engine.astream_chat(FIRST)).response_gen  # noqa: B018


def test_reset_clears_and_chat_history_seeds(index, server_factory):
    srv = server_factory(condensing_answer(STANDALONE, ANSWER))
    engine = index.as_chat_engine(llm=_llm(srv), similarity_top_k=1)
    seed = [ChatMessage(role=MessageRole.USER, content=FIRST), ChatMessage(role=MessageRole.ASSISTANT,
                                                                         content=FIRST_ANSWER)]
    engine.chat(SECOND, chat_history=seed)
    condense, answer = _chats(srv)
    assert f"user: {FIRST}" in condense["prompt"]
    assert _messages(answer)[1:] == [("user", FIRST), ("assistant", FIRST_ANSWER), ("user", SECOND)]
    assert [m.content for m in engine.chat_history] == [FIRST, FIRST_ANSWER, SECOND, ANSWER]

    engine.reset()
    assert engine.chat_history == []
    engine.chat(SECOND)
    (answer,) = _chats(srv)[2:]  # no history: no condense call, no past messages
    assert _messages(answer)[1:] == [("user", SECOND)]


def _char_llm(srv, context_window):
    return _llm(srv, context_window=context_window, max_tokens=100, tokenizer=lambda s: list(s))


def _sent(srv):
    (req,) = _chats(srv)
    return [ChatMessage(role=MessageRole(m["role"]), content=m["content"]) for m in req["messages"]]


def test_history_fits_the_window_in_the_llms_tokenizer(index, server_factory):
    """A model whose tokenizer counts characters: the prompt fits its window counted that way, which
    keeps less history than cl100k (LlamaIndex's counter) would."""
    srv = server_factory(ANSWER)
    llm = _char_llm(srv, 1500)
    seed = []
    for i in range(12):
        seed += [ChatMessage(role=MessageRole.USER, content=f"Question {i} about towers and tea?"),
                 ChatMessage(role=MessageRole.ASSISTANT, content=f"Answer {i}: " + "towers are tall " * 3)]
    engine = index.as_chat_engine("context", llm=llm, similarity_top_k=1, chat_history=seed)
    engine.chat("How tall is the Eiffel Tower?")
    sent = _sent(srv)
    assert messages_token_count(sent, len) <= prompt_budget(llm) == 1400
    past = sent[1:-1]
    assert past and past == seed[len(seed) - len(past):] and past[0].role == MessageRole.USER
    assert len(past) < len(seed)
    # one more turn would be over the memory's limit (0.75 x window, in characters) or the window
    limit = engine.memory.token_limit
    assert limit == 1125
    more = seed[len(seed) - len(past) - 2:]
    assert messages_token_count(more, len) > limit or messages_token_count([*more, *sent], len) > 1400
    # the same limit counted in cl100k (LlamaIndex's counter) would have kept more of the conversation
    assert len(ChatMemoryBuffer(token_limit=limit, chat_history=seed).get()) > len(past)
    assert len(engine.chat_history) == len(seed) + 2  # the memory keeps everything


def test_passages_are_cut_to_fit_the_window(index, server_factory):
    srv = server_factory(ANSWER)
    llm = _char_llm(srv, 900)
    question = "How tall is the Eiffel Tower?"
    engine = index.as_chat_engine("context", llm=llm, similarity_top_k=3)
    response = engine.chat(question)
    sent = _sent(srv)
    assert messages_token_count(sent, len) <= prompt_budget(llm)
    system = sent[0].content
    passages = [n.node.get_content(MetadataMode.LLM).strip() for n in index.as_retriever(
        similarity_top_k=3).retrieve(question)]
    # whole, the passages and the template would be over the 800 characters left for the prompt
    assert sum(map(len, passages)) + len(DEFAULT_CONTEXT_TEMPLATE_TMPL) > 800
    cut = [p for p in passages if p not in system]
    assert cut  # cut at a token boundary to the share left ...
    for p in passages:  # ... but every passage keeps its start (its file path and title)
        assert p[:60] in system
    assert len(response.source_nodes) == 3


def test_a_message_too_long_for_the_window_is_a_clear_error(index, server_factory):
    srv = server_factory(ANSWER)
    engine = index.as_chat_engine("context", llm=_llm(srv, context_window=300, max_tokens=100), similarity_top_k=1)
    with pytest.raises(ValueError, match="context_window=300"):
        engine.chat("tower " * 400)
    assert engine.chat_history == [] and _chats(srv) == []
    with pytest.raises(ValueError, match="message must be a non-empty str"):
        engine.chat("   ")


def test_simple_mode_and_chat_mode_errors(index, server_factory, caplog, monkeypatch):
    srv = server_factory(ANSWER)
    llm = _llm(srv)
    with caplog.at_level(logging.WARNING, logger="ragloom.chat_engine.factory"):
        engine = index.as_chat_engine("simple", llm=llm, similarity_top_k=3, system_prompt="Be kind.")
    assert isinstance(engine, SimpleChatEngine) and "similarity_top_k" in caplog.text
    engine.chat("hi")
    engine.chat("again")
    assert _messages(_chats(srv)[1]) == [("system", "Be kind."), ("user", "hi"), ("assistant", ANSWER),
                                         ("user", "again")]

    for agent in ("react", "openai"):
        with pytest.raises(ValueError, match="agent"):
            index.as_chat_engine(agent, llm=llm)
    with pytest.raises(ValueError, match="chat_mode must be one of"):
        index.as_chat_engine("nonsense", llm=llm)
    with pytest.raises(ValueError, match="system_prompt and prefix_messages are not supported"):
        index.as_chat_engine("condense_question", llm=llm, system_prompt="x")
    with pytest.raises(ValueError, match="context_str"):
        index.as_chat_engine("context", llm=llm, context_template="no variable here")
    with pytest.raises(ValueError, match="chat_history or memory"):
        index.as_chat_engine("context", llm=llm, chat_history=[], memory=ChatMemoryBuffer(token_limit=10))
    monkeypatch.delenv("RAGLOOM_LLM", raising=False)
    with pytest.raises(ValueError, match="Settings.llm"):
        index.as_chat_engine()
    Settings.llm = llm  # llm=None resolves Settings.llm
    assert index.as_chat_engine("simple").llm is llm
