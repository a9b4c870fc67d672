"""OpenAI and DashScope LLMs against a real OpenAI-compatible HTTP server on 127.0.0.1
(tests/llm_server.py): URL paths, model names, auth headers, keys from the environment,
context windows and error messages."""

from __future__ import annotations

import logging

import pytest
from llm_server import OpenAICompatibleServer

from ragloom.llms import LLMProviderError, resolve_llm
from ragloom.llms.dashscope import (
    DASHSCOPE_API_BASE,
    DashScope,
    DashScopeGenerationModels,
    dashscope_context_window,
)
from ragloom.llms.openai import OPENAI_MODELS, OpenAI, openai_model_info

FAST = dict(retry_backoff_base=0.001, retry_backoff_max=0.01, timeout=5.0, max_retries=1)


@pytest.fixture()
def no_env(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL", "DASHSCOPE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def echo(prompt: str) -> str:
    return f"echo: {prompt}"


# -- OpenAI ------------------------------------------------------------------------------------
def test_openai_key_from_env_model_and_path(no_env):
    no_env.setenv("OPENAI_API_KEY", "sk-from-env")
    with OpenAICompatibleServer(answer=echo, api_key="sk-from-env", models=["gpt-4o-mini"]) as srv:
        llm = OpenAI(model="gpt-4o-mini", api_base=srv.url, temperature=0.3, max_tokens=50,
                     additional_kwargs={"top_p": 0.5}, **FAST)
        assert llm.complete("capital of France?").text == "echo: capital of France?"
        (req,) = srv.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["authorization"] == "Bearer sk-from-env"
    assert req["body"]["model"] == "gpt-4o-mini"
    assert req["body"]["temperature"] == 0.3 and req["body"]["max_tokens"] == 50 and req["body"]["top_p"] == 0.5
    assert req["messages"] == [{"role": "user", "content": "capital of France?"}]
    meta = llm.metadata
    assert (meta.context_window, meta.is_chat_model, meta.model_name) == (128_000, True, "gpt-4o-mini")
    assert llm.get_tokenizer().name.endswith("o200k_base")


def test_openai_llamaindex_defaults_and_default_url(no_env):
    no_env.setenv("OPENAI_API_KEY", "sk-x")
    llm = OpenAI()
    assert llm.model == "gpt-3.5-turbo" and llm.temperature == 0.1 and llm.max_tokens is None
    assert llm.api_base == "https://api.openai.com/v1"
    assert llm.metadata.context_window == 16_385 and llm.metadata.num_output == 256
    assert llm.get_tokenizer().name.endswith("cl100k_base")


def test_openai_instruct_model_uses_completions(no_env):
    with OpenAICompatibleServer(answer="done") as srv:
        llm = OpenAI(model="gpt-3.5-turbo-instruct", api_base=srv.url, api_key="k", **FAST)
        assert not llm.metadata.is_chat_model and llm.metadata.context_window == 4_096
        assert llm.complete("go").text == "done"
        assert srv.requests[0]["path"] == "/v1/completions" and srv.requests[0]["body"]["prompt"] == "go"


def test_openai_reasoning_model_sends_max_completion_tokens_and_no_temperature(no_env):
    with OpenAICompatibleServer(answer="ok") as srv:
        llm = OpenAI(model="o3-mini", api_base=srv.url, api_key="k", max_tokens=99, temperature=0.7, **FAST)
        llm.complete("think")
        body = srv.requests[0]["body"]
    assert body["max_completion_tokens"] == 99 and "max_tokens" not in body and "temperature" not in body
    assert llm.temperature == 1.0 and llm.metadata.context_window == 200_000
    # a chat snapshot of gpt-5 is not a reasoning model
    assert not OpenAI(model="gpt-5-chat-latest", api_key="k").reasoning


def test_openai_snapshots_and_fine_tunes_take_their_base_model():
    assert openai_model_info("gpt-4o-2024-08-06") == ("gpt-4o", 128_000, True)
    assert openai_model_info("ft:gpt-4o-mini-2024-07-18:my-org::abc123") == ("gpt-4o-mini", 128_000, True)
    assert openai_model_info("gpt-4-0613") == ("gpt-4-0613", 8_192, True)
    assert openai_model_info("llama3") is None
    assert all(w > 0 for w, _ in OPENAI_MODELS.values())


def test_openai_unknown_model_is_a_clear_error_unless_context_window_given(no_env):
    with pytest.raises(ValueError, match="unknown OpenAI model 'my-model'.*context_window="):
        OpenAI(model="my-model", api_key="k")
    llm = OpenAI(model="my-model", api_key="k", context_window=9000)
    assert llm.metadata.context_window == 9000 and llm.metadata.is_chat_model


def test_openai_needs_a_key_for_api_openai_com(no_env):
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAI(model="gpt-4o")


def test_openai_wrong_key_and_unknown_model_errors(no_env):
    with OpenAICompatibleServer(answer="x", api_key="sk-right", models=["gpt-4o"]) as srv:
        with pytest.raises(LLMProviderError, match="401") as err:
            OpenAI(model="gpt-4o", api_base=srv.url, api_key="sk-wrong", **FAST).complete("hi")
        assert "sk-wrong" not in str(err.value)
        with pytest.raises(LLMProviderError, match="404"):
            OpenAI(model="gpt-4.1", api_base=srv.url, api_key="sk-right", **FAST).complete("hi")


def test_openai_streams(no_env):
    with OpenAICompatibleServer(answer="one two three") as srv:
        llm = OpenAI(model="gpt-4o", api_base=srv.url, api_key="k", **FAST)
        pieces = [r.delta for r in llm.stream_complete("count")]
    assert "".join(pieces) == "one two three" and len(pieces) == 3


# -- DashScope ---------------------------------------------------------------------------------
def test_dashscope_key_from_its_own_env_var_never_openais(no_env):
    no_env.setenv("OPENAI_API_KEY", "sk-openai-must-not-leak")
    no_env.setenv("DASHSCOPE_API_KEY", "sk-dashscope")
    with OpenAICompatibleServer(answer=echo, api_key="sk-dashscope", models=["qwen-plus"]) as srv:
        llm = DashScope(model_name=DashScopeGenerationModels.QWEN_PLUS, api_base=srv.url, **FAST)
        assert llm.complete("你好").text == "echo: 你好"
        (req,) = srv.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["authorization"] == "Bearer sk-dashscope"
    body = req["body"]
    assert body["model"] == "qwen-plus"
    # LlamaIndex's defaults: max_tokens 256, temperature 0.1, seed 1234
    assert (body["max_tokens"], body["temperature"], body["seed"]) == (256, 0.1, 1234)
    assert "enable_search" not in body and "top_k" not in body
    assert llm.model_name == "qwen-plus" and llm.metadata.context_window == 131_072


def test_dashscope_no_dashscope_key_sends_no_header_even_with_an_openai_key(no_env):
    no_env.setenv("OPENAI_API_KEY", "sk-openai-must-not-leak")
    with OpenAICompatibleServer(answer="ok") as srv:
        DashScope(model_name="qwen-max", api_base=srv.url, **FAST).complete("x")
        assert "authorization" not in srv.requests[0]["headers"]


def test_dashscope_extensions_and_defaults(no_env):
    with OpenAICompatibleServer(answer="ok") as srv:
        llm = DashScope(model_name="qwen-turbo", api_base=srv.url, api_key="k", enable_search=True, top_k=20,
                        top_p=0.8, stop=["\n"], repetition_penalty=1.1, seed=None, **FAST)
        llm.complete("x")
        body = srv.requests[0]["body"]
    assert body["enable_search"] is True and body["top_k"] == 20 and body["top_p"] == 0.8
    assert body["stop"] == ["\n"] and body["repetition_penalty"] == 1.1 and "seed" not in body
    default = DashScope(api_key="k")
    assert default.model_name == "qwen-max" and default.api_base == DASHSCOPE_API_BASE
    assert default.metadata.context_window == 32_768 and default.metadata.num_output == 256


def test_dashscope_context_windows():
    assert dashscope_context_window("qwen-max-2025-01-25") == 32_768
    assert dashscope_context_window("qwen-plus-latest") == 131_072
    assert dashscope_context_window(DashScopeGenerationModels.QWEN_MAX_LONGCONTEXT) == 30_720
    assert dashscope_context_window("deepseek-v3") is None


def test_dashscope_unknown_model_gets_llamaindex_default_window_with_a_warning(no_env, caplog):
    with caplog.at_level(logging.WARNING, logger="ragloom.llms.dashscope"):
        llm = DashScope(model_name="qwen3-coder-plus", api_key="k")
    assert llm.metadata.context_window == 3900
    assert "qwen3-coder-plus" in caplog.text and "context_window=" in caplog.text
    given = DashScope(model_name="qwen3-coder-plus", api_key="k", context_window=65_536)
    assert given.metadata.context_window == 65_536


def test_dashscope_needs_a_key_for_its_hosts(no_env):
    with pytest.raises(ValueError, match="DASHSCOPE_API_KEY"):
        DashScope()
    with pytest.raises(ValueError, match="seed"):
        DashScope(api_key="k", seed=-1)


def test_dashscope_bad_key_is_a_provider_error(no_env):
    with OpenAICompatibleServer(answer="x", api_key="right") as srv:
        with pytest.raises(LLMProviderError, match="401"):
            DashScope(model_name="qwen-max", api_base=srv.url, api_key="wrong", **FAST).complete("x")


# -- resolve_llm specs ----------------------------------------------------------------------------
def test_resolve_llm_openai_and_dashscope_specs(no_env):
    no_env.setenv("OPENAI_API_KEY", "sk-o")
    no_env.setenv("DASHSCOPE_API_KEY", "sk-d")
    with OpenAICompatibleServer(answer="ok") as srv:
        llm = resolve_llm(f"openai:gpt-4o-mini@{srv.url}", max_tokens=7)
        assert isinstance(llm, OpenAI) and llm.max_tokens == 7
        llm.complete("a")
        qwen = resolve_llm(f"dashscope:qwen-plus@{srv.url}")
        assert isinstance(qwen, DashScope)
        qwen.complete("b")
        auth = [r["headers"]["authorization"] for r in srv.requests]
    assert auth == ["Bearer sk-o", "Bearer sk-d"]
    assert isinstance(resolve_llm("dashscope:qwen-max"), DashScope)
    with pytest.raises(ValueError, match="unknown OpenAI model"):
        resolve_llm("openai:no-such-model")
