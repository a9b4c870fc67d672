"""Ollama LLM against a real HTTP server on 127.0.0.1 speaking Ollama's API (tests/llm_server.py)."""

from __future__ import annotations

import asyncio

import pytest
from llm_server import Fault, OpenAICompatibleServer, split_pieces

from ragloom.llms import ChatMessage, LLMProviderError, MessageRole
from ragloom.llms.ollama import DEFAULT_MAX_CONTEXT_WINDOW, Ollama

FAST = dict(retry_backoff_base=0.001, retry_backoff_max=0.01, request_timeout=5.0, max_retries=2)


def echo(prompt: str) -> str:
    return f"Ollama heard: {prompt}"


def make(server, model="llama3.2", **kw):
    args = dict(FAST, base_url=server.root)
    args.update(kw)
    return Ollama(model, **args)


def answering(srv):
    return [r for r in srv.requests if r["endpoint"] in ("ollama_chat", "ollama_generate")]


def shows(srv):
    return [r for r in srv.requests if r["endpoint"] == "ollama_show"]


def test_chat_reads_the_context_window_once_and_sends_num_ctx():
    with OpenAICompatibleServer(answer=echo, ollama_context_length=4096) as srv:
        llm = make(srv, temperature=0.2, additional_kwargs={"top_k": 20}, keep_alive="1m")
        assert llm.metadata.context_window == 4096
        r = llm.chat([ChatMessage(role=MessageRole.SYSTEM, content="s"), ChatMessage(content="hello")])
        assert r.message.content == echo("hello") and r.message.role == MessageRole.ASSISTANT
        llm.chat([ChatMessage(content="again")])
        assert len(shows(srv)) == 1  # asked once
        body = answering(srv)[0]["body"]
        assert answering(srv)[0]["path"] == "/api/chat"
        assert body["stream"] is False and body["keep_alive"] == "1m"
        assert body["options"] == {"num_ctx": 4096, "num_predict": 256, "temperature": 0.2, "top_k": 20}
        assert body["messages"] == [{"role": "system", "content": "s"}, {"role": "user", "content": "hello"}]


@pytest.mark.parametrize(
    "trained, num_ctx, given, expected, asks",
    [
        (131072, None, None, DEFAULT_MAX_CONTEXT_WINDOW, 1),  # capped: bounds the server's KV cache
        (32768, 2048, None, 2048, 1),  # the Modelfile's num_ctx is what the server runs with
        (4096, None, 1000, 1000, 0),  # given: the server is not asked
        (4096, None, -1, 4096, 1),  # LlamaIndex's "ask the server"
    ],
)
def test_context_window_resolution(trained, num_ctx, given, expected, asks):
    with OpenAICompatibleServer(answer=echo, ollama_context_length=trained, ollama_num_ctx=num_ctx) as srv:
        llm = make(srv, context_window=given)
        llm.complete("x")
        assert llm.metadata.context_window == expected
        assert answering(srv)[0]["body"]["options"]["num_ctx"] == expected
        assert len(shows(srv)) == asks


def test_complete_uses_generate_and_raw_when_formatted():
    with OpenAICompatibleServer(answer=echo) as srv:
        llm = make(srv, context_window=2048, json_mode=True)
        assert llm.complete("Why is the sky blue?", num_predict=12).text == echo("Why is the sky blue?")
        req = answering(srv)[-1]
        assert req["path"] == "/api/generate" and "raw" not in req["body"]
        assert req["body"]["format"] == "json"
        assert req["body"]["options"]["num_predict"] == 12  # per-call kwargs are model options
        llm.complete("<|im_start|>user\nhi<|im_end|>", formatted=True)
        assert answering(srv)[-1]["body"]["raw"] is True


def test_ndjson_streaming_chat_and_generate():
    with OpenAICompatibleServer(answer=echo) as srv:
        llm = make(srv, context_window=2048)
        chat = list(llm.stream_chat([ChatMessage(content="one two")]))
        assert [c.delta for c in chat] == split_pieces(echo("one two"))
        assert chat[-1].message.content == echo("one two")
        assert answering(srv)[-1]["body"]["stream"] is True
        comp = list(llm.stream_complete("three"))
        assert "".join(c.delta for c in comp) == comp[-1].text == echo("three")
        assert answering(srv)[-1]["path"] == "/api/generate"


def test_async_chat_and_stream():
    with OpenAICompatibleServer(answer=echo, ollama_context_length=3000) as srv:
        llm = make(srv)

        async def main():
            a = await llm.achat([ChatMessage(content="a1")])
            b = await llm.acomplete("b1")
            c = [p.delta async for p in llm.astream_complete("c1 c2")]
            return a, b, c

        a, b, c = asyncio.run(main())
        assert a.message.content == echo("a1") and b.text == echo("b1")
        assert c == split_pieces(echo("c1 c2"))
        assert all(r["body"]["options"]["num_ctx"] == 3000 for r in answering(srv))


def test_model_not_pulled_is_a_clear_404():
    with OpenAICompatibleServer(answer=echo, models=["llama3.2"]) as srv:
        llm = make(srv, model="mistral")
        with pytest.raises(LLMProviderError) as ei:
            llm.complete("x")
        assert ei.value.status == 404 and "mistral" in str(ei.value) and "try pulling it" in str(ei.value)
        llm = make(srv, model="mistral", context_window=2048)  # no /api/show: the chat call itself fails
        with pytest.raises(LLMProviderError, match="HTTP 404.*not found"):
            llm.chat([ChatMessage(content="x")])


def test_faults_are_retried_and_broken_streams_reported():
    with OpenAICompatibleServer(answer=echo) as srv:
        llm = make(srv, context_window=2048)
        srv.inject(Fault("500"), Fault("reset"))
        assert llm.complete("after faults").text == echo("after faults")
        assert [r["fault"] for r in answering(srv)] == ["500", "reset", None]
        srv.inject(Fault("malformed"))
        with pytest.raises(LLMProviderError, match="malformed JSON in stream"):
            list(llm.stream_complete("a b c"))
        srv.inject(*[Fault("503")] * 3)
        with pytest.raises(LLMProviderError, match="Ollama LLM request.*failed after 3 attempts: HTTP 503"):
            llm.complete("x")


def test_unreachable_server_falls_back_then_fails_clearly():
    llm = Ollama("llama3.2", base_url="http://127.0.0.1:9", **dict(FAST, max_retries=0))
    with pytest.raises(LLMProviderError, match="is the server running at 127.0.0.1:9"):
        llm.complete("x")
    assert llm.context_window == 3900  # /api/show failed: the documented fallback


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(temperature=-0.1), "temperature"),
        (dict(context_window=0), "context_window"),
        (dict(max_context_window=0), "max_context_window"),
        (dict(num_output=0), "num_output"),
        (dict(base_url="localhost:11434"), "base_url"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Ollama("m", **kwargs)
