"""OpenAILike against a real OpenAI-compatible HTTP server on 127.0.0.1 (tests/llm_server.py)."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
from llm_server import Fault, OpenAICompatibleServer, split_pieces

from ragloom.llms import ChatMessage, LLMProviderError, MessageRole
from ragloom.llms.openai_like import OpenAILike

FAST = dict(retry_backoff_base=0.001, retry_backoff_max=0.01, timeout=5.0, max_retries=2)


def echo(prompt: str) -> str:
    return f"You said: {prompt}"


@pytest.fixture()
def server():
    with OpenAICompatibleServer(answer=echo, api_key="sk-test", models=["tiny-chat"]) as srv:
        yield srv


def make(server, **kw):
    args = dict(FAST, model="tiny-chat", api_base=server.url, api_key="sk-test")
    args.update(kw)
    return OpenAILike(**args)


def test_chat_model_complete_sends_one_user_message(server):
    llm = make(server, max_tokens=64, temperature=0.3, additional_kwargs={"top_p": 0.5})
    r = llm.complete("What is 2+2?")
    assert r.text == "You said: What is 2+2?"
    (req,) = server.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["authorization"] == "Bearer sk-test"
    body = req["body"]
    assert body["messages"] == [{"role": "user", "content": "What is 2+2?"}]
    assert body["model"] == "tiny-chat" and body["max_tokens"] == 64 and body["temperature"] == 0.3
    assert body["top_p"] == 0.5 and "stream" not in body
    assert r.raw["usage"]["completion_tokens"] == 5  # the raw reply is kept


def test_chat_with_system_prompt_and_history(server):
    llm = make(server, system_prompt="Be brief.")
    assert llm.predict("Capital of {country}?", country="France") == "You said: Capital of France?"
    assert server.requests[-1]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Capital of France?"},
    ]
    msgs = [ChatMessage(role=MessageRole.USER, content="hi"), ChatMessage(role=MessageRole.ASSISTANT, content="hello"),
            ChatMessage(role=MessageRole.USER, content="again")]
    r = llm.chat(msgs, stop=["\n"])
    assert r.message.role == MessageRole.ASSISTANT and r.message.content == "You said: again"
    assert [m["role"] for m in server.requests[-1]["messages"]] == ["user", "assistant", "user"]
    assert server.requests[-1]["body"]["stop"] == ["\n"]  # per-call kwargs are request fields


def test_completion_model_uses_completions_endpoint(server):
    llm = make(server, is_chat_model=False)
    assert llm.metadata.is_chat_model is False
    assert llm.complete("Once upon").text == "You said: Once upon"
    assert server.requests[-1]["path"] == "/v1/completions"
    assert server.requests[-1]["body"]["prompt"] == "Once upon"
    # chat on a completion model: messages rendered as one prompt
    r = llm.chat([ChatMessage(role=MessageRole.SYSTEM, content="sys"), ChatMessage(content="q")])
    sent = server.requests[-1]["body"]["prompt"]
    assert sent == "system: sys\nuser: q\nassistant: "
    assert r.message.content == "You said: " + sent


@pytest.mark.parametrize("chat", [True, False])
def test_streaming_yields_the_pieces_in_order(server, chat):
    llm = make(server, is_chat_model=chat)
    pieces = list(llm.stream_complete("one two three four"))
    answer = echo("one two three four")
    assert [p.delta for p in pieces] == split_pieces(answer)
    assert pieces[-1].text == answer
    assert server.requests[-1]["body"]["stream"] is True
    chats = list(llm.stream_chat([ChatMessage(content="x y")]))
    assert chats[-1].message.content == (echo("x y") if chat else echo("user: x y\nassistant: "))
    assert "".join(c.delta for c in chats) == chats[-1].message.content


def test_streaming_is_incremental(server):
    """The first piece arrives long before the server has finished sending."""
    server.stream_delay = 0.25
    llm = make(server)
    t0 = time.monotonic()
    gen = llm.stream("a b c d e")
    first = next(gen)
    t_first = time.monotonic() - t0
    rest = list(gen)
    total = time.monotonic() - t0
    assert first == "You "
    assert "".join([first] + rest) == echo("a b c d e")
    assert total >= 1.0 and t_first < total - 0.7


def test_async_methods_run_concurrently(server):
    server.stream_delay = 0.0
    llm = make(server)

    async def main():
        texts = await asyncio.gather(*(llm.acomplete(f"q{i}") for i in range(4)))
        chat = await llm.achat([ChatMessage(content="async chat")])
        pieces = [p.delta async for p in llm.astream_complete("s t u")]
        chat_pieces = [p.delta async for p in llm.astream_chat([ChatMessage(content="v w")])]
        return texts, chat, pieces, chat_pieces

    texts, chat, pieces, chat_pieces = asyncio.run(main())
    assert [t.text for t in texts] == [echo(f"q{i}") for i in range(4)]
    assert chat.message.content == echo("async chat")
    assert pieces == split_pieces(echo("s t u"))
    assert chat_pieces == split_pieces(echo("v w"))


def test_500_then_success_is_retried(server):
    llm = make(server)
    server.inject(Fault("500"), Fault("502"))
    assert llm.complete("retry me").text == echo("retry me")
    assert [r["fault"] for r in server.requests] == ["500", "502", None]


def test_429_retry_after_is_honoured(server):
    llm = make(server, retry_backoff_base=0.0, retry_backoff_max=0.0)
    server.inject(Fault("429", retry_after="0.4"))
    t0 = time.monotonic()
    assert llm.complete("slow down").text == echo("slow down")
    assert time.monotonic() - t0 >= 0.38
    assert len(server.requests) == 2


def test_5xx_after_retries_is_a_clear_error(server):
    llm = make(server, max_retries=2)
    server.inject(*[Fault("503")] * 3)
    with pytest.raises(LLMProviderError) as ei:
        llm.complete("x")
    err = ei.value
    assert err.status == 503 and err.attempts == 3 and err.provider == "OpenAI-compatible"
    assert "tiny-chat" in str(err) and "HTTP 503" in str(err) and "3 attempts" in str(err)
    assert server.pending_faults() == 0


def test_malformed_json_is_retried_then_reported(server):
    llm = make(server, max_retries=1)
    server.inject(Fault("malformed"))
    assert llm.complete("ok after one").text == echo("ok after one")
    server.inject(Fault("malformed"), Fault("malformed"))
    with pytest.raises(LLMProviderError, match="malformed JSON") as ei:
        llm.complete("never")
    assert ei.value.attempts == 2


def test_empty_choices_is_a_bad_response(server):
    llm = make(server, max_retries=0)
    server.inject(Fault("empty"))
    with pytest.raises(LLMProviderError, match="no choices"):
        llm.complete("x")


def test_401_is_not_retried_and_says_check_the_key(server):
    llm = make(server, api_key="wrong")
    with pytest.raises(LLMProviderError) as ei:
        llm.complete("x")
    assert ei.value.status == 401 and ei.value.attempts == 1
    assert "Incorrect API key" in str(ei.value) and "check the API key" in str(ei.value)
    assert "wrong" not in str(ei.value)  # the key itself is never printed


def test_404_unknown_model(server):
    llm = make(server, model="no-such-model")
    with pytest.raises(LLMProviderError) as ei:
        llm.complete("x")
    assert ei.value.status == 404 and ei.value.attempts == 1
    assert "no-such-model" in str(ei.value) and "does not exist" in str(ei.value)
    with pytest.raises(LLMProviderError, match="HTTP 404"):
        list(llm.stream_complete("x"))


def test_connection_refused_names_the_address():
    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = OpenAILike(model="m", api_base=f"http://127.0.0.1:{port}/v1", **dict(FAST, max_retries=1))
    with pytest.raises(LLMProviderError, match=f"connection error.*is the server running at 127.0.0.1:{port}") as ei:
        llm.complete("x")
    assert ei.value.attempts == 2 and ei.value.status is None


def test_timeout_is_reported(server):
    llm = make(server, timeout=0.3, max_retries=0)
    server.inject(Fault("hang", seconds=1.0))
    with pytest.raises(LLMProviderError, match="timed out after 0.3s"):
        llm.complete("x")


def test_stream_opening_is_retried_but_a_broken_event_is_an_error(server):
    llm = make(server)
    server.inject(Fault("500"))
    assert "".join(llm.stream("retried stream")) == echo("retried stream")
    server.inject(Fault("malformed"))
    got = []
    with pytest.raises(LLMProviderError, match="malformed JSON in stream"):
        for piece in llm.stream("p q r"):
            got.append(piece)
    assert got == ["You "]  # the pieces before the broken event were delivered


def test_async_errors_are_the_same(server):
    llm = make(server, max_retries=0)
    server.inject(Fault("500"))
    with pytest.raises(LLMProviderError, match="HTTP 500"):
        asyncio.run(llm.acomplete("x"))


def test_api_key_from_environment(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    llm = OpenAILike(model="tiny-chat", api_base=server.url, **FAST)
    assert llm.complete("env key").text == echo("env key")
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(LLMProviderError, match="HTTP 401"):
        OpenAILike(model="tiny-chat", api_base=server.url, **FAST).complete("no key")


def test_max_tokens_none_sends_no_limit(server):
    llm = make(server, max_tokens=None)
    assert llm.metadata.num_output == 256
    llm.complete("x")
    assert "max_tokens" not in server.requests[-1]["body"]


def test_metadata_and_tokenizer():
    llm = OpenAILike(model="m", api_base="http://127.0.0.1:1/v1", context_window=8192, max_tokens=100)
    md = llm.metadata
    assert (md.context_window, md.num_output, md.is_chat_model, md.model_name) == (8192, 100, True, "m")
    assert llm.count_tokens("hello world") == 2  # cl100k_base by default
    wp = OpenAILike(model="m", api_base="http://127.0.0.1:1/v1", tokenizer="o200k_base")
    assert wp.get_tokenizer().name == "tiktoken:o200k_base"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(temperature=3.0), "temperature"),
        (dict(max_tokens=0), "max_tokens"),
        (dict(context_window=0), "context_window"),
        (dict(api_base="localhost:8000"), "api_base"),
        (dict(max_retries=-1), "max_retries"),
        (dict(timeout=0), "timeout"),
        (dict(model=""), "model"),
    ],
)
def test_bad_arguments(kwargs, match):
    args = dict(model="m", api_base="http://127.0.0.1:1/v1")
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        OpenAILike(**args)


def test_llamaindex_only_arguments():
    OpenAILike(model="m", api_base="http://127.0.0.1:1/v1", is_function_calling_model=False)
    with pytest.raises(TypeError, match="bogus"):
        OpenAILike(model="m", api_base="http://127.0.0.1:1/v1", bogus=1)
