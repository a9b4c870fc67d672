"""GeminiEmbedding against a real local HTTP server that injects faults."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from fake_server import DIM, FakeEmbeddingServer, Fault, fake_vector

from ragloom.embeddings import EmbeddingProviderError
from ragloom.embeddings.gemini import GeminiEmbedding

FAST = dict(retry_backoff_base=0.001, retry_backoff_max=0.01, timeout=2.0, max_retries=3)


@pytest.fixture
def server():
    with FakeEmbeddingServer() as srv:
        yield srv


def make(server, **kw):
    args = dict(FAST, api_base=server.url + "/v1beta", api_key="g-key")
    args.update(kw)
    return GeminiEmbedding(**args)


def assert_vectors(got, texts, dim=DIM):
    got = np.asarray(got)
    assert got.shape == (len(texts), dim)
    for row, text in zip(got, texts, strict=True):
        assert np.allclose(row, fake_vector(text, dim), atol=1e-6), text


def test_task_types_not_prefixes_and_key_in_header(server):
    emb = make(server, model_name="models/text-embedding-004")
    texts = ["first doc", "second doc"]
    assert_vectors(emb.get_text_embedding_batch(texts), texts)
    q = emb.get_query_embedding("a question")
    assert np.allclose(q, fake_vector("a question"), atol=1e-6)
    doc_req, q_req = server.requests_to("gemini")
    assert doc_req.path == "/v1beta/models/text-embedding-004:batchEmbedContents"
    assert "key=" not in doc_req.path and doc_req.headers["x-goog-api-key"] == "g-key"
    assert {r["taskType"] for r in doc_req.body["requests"]} == {"RETRIEVAL_DOCUMENT"}
    assert q_req.body["requests"][0]["taskType"] == "RETRIEVAL_QUERY"
    assert q_req.body["requests"][0]["content"]["parts"][0]["text"] == "a question"
    assert all(r["model"] == "models/text-embedding-004" for r in doc_req.body["requests"])
    ident = emb.identity()
    assert ident["model_name"] == "text-embedding-004" and "g-key" not in repr(ident)


def test_at_most_100_per_request(server):
    emb = make(server)
    texts = [f"gemini {i}" for i in range(230)]
    assert_vectors(emb.get_text_embedding_batch(texts), texts)
    assert sorted(len(r.body["requests"]) for r in server.requests_to("gemini")) == [30, 100, 100]
    with pytest.raises(ValueError, match="<= 100"):
        make(server, embed_batch_size=101)


@pytest.mark.parametrize(
    "fault",
    [Fault("429", retry_after="0"), Fault("500"), Fault("short"), Fault("malformed"), Fault("reset")],
    ids=lambda f: f.kind,
)
def test_faults_are_retried(server, fault):
    emb = make(server, embed_batch_size=4)
    server.inject("gemini", fault)
    texts = [f"t{i}" for i in range(10)]
    assert_vectors(emb.get_text_embedding_batch(texts), texts)
    assert len(server.requests_to("gemini")) == 4


def test_permanent_403_is_not_retried(server):
    emb = make(server)
    server.inject("gemini", Fault("403", body="API key not valid"))
    with pytest.raises(EmbeddingProviderError, match="Gemini.*gemini-embedding-001.*HTTP 403.*API key not valid"):
        emb.get_text_embedding("x")
    assert len(server.requests_to("gemini")) == 1


def test_output_dimensionality_and_async(server):
    emb = make(server, output_dimensionality=6, embed_batch_size=3, max_concurrency=2)
    texts = [f"a{i}" for i in range(9)]
    out = asyncio.run(emb.aget_text_embedding_batch(texts))
    assert_vectors(out, texts, dim=6)
    assert all(r["outputDimensionality"] == 6 for req in server.requests_to("gemini") for r in req.body["requests"])
    assert emb.dimension == 6


def test_api_key_from_environment(server, monkeypatch):
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="GOOGLE_API_KEY"):
        GeminiEmbedding()
    monkeypatch.setenv("GEMINI_API_KEY", "env-key")
    emb = GeminiEmbedding(api_base=server.url + "/v1beta", **FAST)
    emb.get_text_embedding("x")
    assert server.requests_to("gemini")[0].headers["x-goog-api-key"] == "env-key"
    assert emb.max_text_tokens == int(2048 * 0.9) - 2  # registry limit, approximate count
