"""DashScopeEmbedding, OpenAI's model limits, the remote ``--embed-model`` specs and the rebuilding of a
remote model from an index's record, against a real local HTTP server (tests/embeddings/fake_server.py,
which serves ``POST /v1/embeddings`` and Ollama's ``/api/embed``)."""

from __future__ import annotations

import numpy as np
import pytest
from fake_server import FakeEmbeddingServer, Fault, fake_vector

from ragloom.embeddings import (
    EmbeddingProviderError,
    embed_model_from_identity,
    resolve_embed_model,
)
from ragloom.embeddings.dashscope import DASHSCOPE_API_BASE, DashScopeEmbedding
from ragloom.embeddings.limits import lookup_model_limits
from ragloom.embeddings.ollama import OllamaEmbedding
from ragloom.embeddings.openai import OpenAIEmbedding

FAST = dict(retry_backoff_base=0.001, retry_backoff_max=0.01, timeout=2.0, max_retries=1)
TEXTS = [f"第{i}段 text number {i}" for i in range(23)]


@pytest.fixture()
def server():
    with FakeEmbeddingServer() as srv:
        yield srv


@pytest.fixture()
def no_env(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL", "DASHSCOPE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def make(server, **kw):
    return DashScopeEmbedding(**{"api_base": server.url + "/v1", "api_key": "sk-ds", **FAST, **kw})


def test_documents_and_queries_carry_their_text_type(server):
    emb = make(server, model_name="text-embedding-v4")
    docs = emb.get_text_embedding_batch(TEXTS[:3])
    query = emb.get_query_embedding("熊猫吃什么")
    reqs = server.requests_to("openai")
    assert [r.path for r in reqs] == ["/v1/embeddings"] * 2
    assert [r.body["text_type"] for r in reqs] == ["document", "query"]
    assert all(r.body["model"] == "text-embedding-v4" for r in reqs)
    assert all(r.headers["authorization"] == "Bearer sk-ds" for r in reqs)
    assert np.allclose(docs, [fake_vector(t) for t in TEXTS[:3]], atol=1e-6)
    assert np.allclose(query, fake_vector("熊猫吃什么"), atol=1e-6)


def test_text_type_none_sends_no_field_and_query_type_for_texts(server):
    make(server, text_type=None).get_text_embedding("a")
    make(server, text_type="query").get_text_embedding("b")
    bodies = [r.body for r in server.requests_to("openai")]
    assert "text_type" not in bodies[0] and bodies[1]["text_type"] == "query"
    with pytest.raises(ValueError, match="text_type"):
        make(server, text_type="passage")


@pytest.mark.parametrize("model,cap", [("text-embedding-v4", 10), ("text-embedding-v3", 10),
                                       ("text-embedding-v2", 25), ("text-embedding-v1", 25)])
def test_requests_stay_within_the_per_request_input_cap(server, model, cap):
    emb = make(server, model_name=model, embed_batch_size=100)
    out = emb.get_text_embedding_batch(TEXTS)
    sizes = [len(r.body["input"]) for r in server.requests_to("openai")]
    assert max(sizes) <= cap and sum(sizes) == len(TEXTS)
    assert np.allclose(out, [fake_vector(t) for t in TEXTS], atol=1e-6)


def test_key_comes_from_dashscope_env_never_from_openai(server, no_env):
    no_env.setenv("OPENAI_API_KEY", "sk-openai-must-not-leak")
    DashScopeEmbedding(api_base=server.url + "/v1", **FAST).get_text_embedding("x")
    assert "authorization" not in server.requests_to("openai")[0].headers
    no_env.setenv("DASHSCOPE_API_KEY", "sk-from-env")
    DashScopeEmbedding(api_base=server.url + "/v1", **FAST).get_text_embedding("y")
    assert server.requests_to("openai")[1].headers["authorization"] == "Bearer sk-from-env"


def test_defaults_and_a_missing_key_for_dashscope_hosts(no_env):
    with pytest.raises(ValueError, match="DASHSCOPE_API_KEY"):
        DashScopeEmbedding()
    emb = DashScopeEmbedding(api_key="k")
    assert emb.model_name == "text-embedding-v2" and emb.api_base == DASHSCOPE_API_BASE
    assert emb.embed_batch_size == 25 and emb.text_type == "document" and emb.dimension == 1536


def test_dimensions_are_checked_against_the_model(server):
    emb = make(server, model_name="text-embedding-v4", dimensions=512)
    assert len(emb.get_text_embedding("x")) == 512
    assert server.requests_to("openai")[0].body["dimensions"] == 512
    with pytest.raises(ValueError, match=r"dimensions for text-embedding-v4 must be one of \[64, 128"):
        make(server, model_name="text-embedding-v4", dimensions=300)
    with pytest.raises(ValueError, match=r"\[1536\]"):
        make(server, model_name="text-embedding-v2", dimensions=512)


def test_limits_known_and_long_inputs_truncated(server):
    assert lookup_model_limits("text-embedding-v4").max_tokens == 8192
    assert lookup_model_limits("text-embedding-v1").max_tokens == 2048
    emb = make(server, model_name="text-embedding-v1")
    # not counted in the model's own tokenizer: the approximate count keeps a 10 % margin
    assert emb.max_text_tokens == int(2048 * 0.9) - 2
    emb.get_text_embedding("word " * 5000)
    assert emb.truncated_count == 1


def test_permanent_error_names_provider_and_model(server):
    emb = make(server, model_name="text-embedding-v3")
    server.inject("openai", Fault("400", body="InvalidParameter: text_type"))
    with pytest.raises(EmbeddingProviderError) as err:
        emb.get_text_embedding("x")
    msg = str(err.value)
    assert "DashScope" in msg and "text-embedding-v3" in msg and "InvalidParameter" in msg and "sk-ds" not in msg


def test_identity_records_text_type_never_the_key(server):
    emb = make(server, model_name="text-embedding-v4", text_type="query")
    ident = emb.identity()
    assert ident["class_name"] == "DashScopeEmbedding" and ident["text_type"] == "query"
    assert "sk-ds" not in repr(ident) and "sk-ds" not in repr(emb.cache_identity())
    assert emb.cache_identity() != make(server, model_name="text-embedding-v4").cache_identity()


# -- OpenAI's own models ----------------------------------------------------------------------------
@pytest.mark.parametrize("model,dim", [("text-embedding-3-small", 1536), ("text-embedding-3-large", 3072),
                                       ("text-embedding-ada-002", 1536)])
def test_openai_models_limits_are_known(no_env, model, dim):
    emb = OpenAIEmbedding(model=model, api_key="k")
    assert emb.dimension == dim and emb.max_text_tokens == 8191  # exact count in cl100k_base
    assert emb.get_tokenizer().name.endswith("cl100k_base")
    assert emb.max_items_per_request == 2048 and emb.max_tokens_per_request == 300_000


# -- specifications -------------------------------------------------------------------------------
def test_remote_specs(server, no_env):
    no_env.setenv("OPENAI_API_KEY", "sk-o")
    no_env.setenv("DASHSCOPE_API_KEY", "sk-d")
    openai = resolve_embed_model(f"openai:my-embedder@{server.url}/v1")
    assert isinstance(openai, OpenAIEmbedding) and openai.model_name == "my-embedder"
    ollama = resolve_embed_model(f"ollama:nomic-embed-text:latest@{server.url}")
    assert isinstance(ollama, OllamaEmbedding) and ollama.model_name == "nomic-embed-text:latest"
    dash = resolve_embed_model(f"dashscope:text-embedding-v4@{server.url}/v1")
    assert isinstance(dash, DashScopeEmbedding)
    openai.get_text_embedding("a")
    ollama.get_text_embedding("b")
    dash.get_text_embedding("c")
    assert server.requests_to("openai")[0].body["model"] == "my-embedder"
    assert server.requests_to("openai")[0].headers["authorization"] == "Bearer sk-o"
    assert server.requests_to("ollama")[0].body["model"] == "nomic-embed-text:latest"
    assert server.requests_to("openai")[1].headers["authorization"] == "Bearer sk-d"
    assert resolve_embed_model("ollama:bge-m3").api_base == "http://localhost:11434"
    assert resolve_embed_model("dashscope:text-embedding-v3").api_base == DASHSCOPE_API_BASE


@pytest.mark.parametrize("spec,message", [
    ("openai:", "names no model"),
    ("ollama:@http://h:1", "names no model"),
    ("openai:m@ftp://h/v1", "must start with http"),
    ("gemini:text-embedding-004", "GeminiEmbedding in Python"),
    ("cohere:embed", "openai:<model>"),
])
def test_bad_specs(spec, message, no_env):
    with pytest.raises(ValueError, match=message):
        resolve_embed_model(spec)


def test_openai_spec_without_key_for_openai_itself_is_refused(no_env):
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        resolve_embed_model("openai:text-embedding-3-small")


# -- rebuilding from an index's record --------------------------------------------------------------
def test_rebuilt_from_identity_with_the_same_settings(server, no_env):
    for emb in (OpenAIEmbedding(model="m", api_base=server.url + "/v1", api_key="", dimensions=4,
                                query_instruction="q: "),
                OllamaEmbedding(model_name="nomic-embed-text", base_url=server.url),
                make(server, model_name="text-embedding-v4", text_type="query", api_key="")):
        again = embed_model_from_identity(emb.identity())
        assert type(again) is type(emb)
        assert again.identity() == emb.identity() and again.cache_identity() == emb.cache_identity()


def test_rebuilt_model_sends_env_keys_only_to_the_providers_own_host(server, no_env):
    no_env.setenv("OPENAI_API_KEY", "sk-o")
    no_env.setenv("DASHSCOPE_API_KEY", "sk-d")
    # an index that records another host gets no key from the environment
    local = embed_model_from_identity({"class_name": "OpenAIEmbedding", "model_name": "m",
                                       "api_base": server.url + "/v1"})
    local.get_query_embedding("q")
    dash = embed_model_from_identity({"class_name": "DashScopeEmbedding", "model_name": "text-embedding-v4",
                                      "api_base": server.url + "/v1", "text_type": "document"})
    dash.get_query_embedding("q")
    assert all("authorization" not in r.headers for r in server.requests_to("openai"))
    # the providers' own hosts get it
    assert embed_model_from_identity({"class_name": "OpenAIEmbedding", "model_name": "text-embedding-3-small",
                                      "api_base": "https://api.openai.com/v1"}).transport.headers == {
        "Authorization": "Bearer sk-o"}
    assert embed_model_from_identity({"class_name": "DashScopeEmbedding", "model_name": "text-embedding-v4",
                                      "api_base": DASHSCOPE_API_BASE}).transport.headers == {
        "Authorization": "Bearer sk-d"}
    no_env.delenv("DASHSCOPE_API_KEY")
    with pytest.raises(ValueError, match="DASHSCOPE_API_KEY"):
        embed_model_from_identity({"class_name": "DashScopeEmbedding", "model_name": "text-embedding-v4",
                                   "api_base": DASHSCOPE_API_BASE})
