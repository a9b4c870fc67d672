"""OllamaEmbedding against a real local HTTP server that injects faults."""

from __future__ import annotations

import asyncio
import logging

import numpy as np
import pytest
from fake_server import DIM, FakeEmbeddingServer, Fault, fake_vector

from ragloom.embeddings import EmbeddingProviderError
from ragloom.embeddings.http import APPROX_TOKEN_MARGIN
from ragloom.embeddings.ollama import OllamaEmbedding
from ragloom.tokenizers import get_default_tokenizer

FAST = dict(retry_backoff_base=0.001, retry_backoff_max=0.01, timeout=2.0, max_retries=3)
TEXTS = [f"ollama text {i} " + "x " * i for i in range(12)]


def make(server, model="nomic-embed-text", **kw):
    args = dict(FAST, base_url=server.url, embed_batch_size=5)
    args.update(kw)
    return OllamaEmbedding(model_name=model, **args)


def assert_vectors(got, texts):
    got = np.asarray(got)
    assert got.shape == (len(texts), DIM)
    for row, text in zip(got, texts, strict=True):
        assert np.allclose(row, fake_vector(text), atol=1e-6), text


def test_one_batched_request_per_batch_never_per_text():
    with FakeEmbeddingServer() as srv:
        emb = make(srv)
        assert_vectors(emb.get_text_embedding_batch(TEXTS), TEXTS)
        embeds = srv.requests_to("ollama")
        assert sorted(len(r.body["input"]) for r in embeds) == [2, 5, 5]
        assert all(isinstance(r.body["input"], list) and r.body["model"] == "nomic-embed-text" for r in embeds)
        assert len(srv.requests_to("ollama_show")) == 1  # probed once
        emb.get_text_embedding_batch(TEXTS[:3])
        assert len(srv.requests_to("ollama_show")) == 1


def test_context_length_from_api_show_is_the_token_limit():
    with FakeEmbeddingServer(ollama_context_length=32) as srv:
        emb = make(srv)  # nomic-embed-text: WordPiece, counted exactly; [CLS]/[SEP] reserved
        assert emb.max_text_tokens == 30
        assert emb.dimension == DIM  # from <arch>.embedding_length
        show = srv.requests_to("ollama_show")[0]
        assert show.body == {"model": "nomic-embed-text"}
        long = "tea leaves are picked by hand in the early spring morning " * 10
        out = emb.get_text_embedding_batch([long, "short"])
        sent = srv.requests_to("ollama")[0].body["input"]
        cut = [t for t in sent if t != "short"][0]
        assert long.startswith(cut) and 0 < get_default_tokenizer().count(cut) <= 30
        assert emb.truncated_count == 1
        assert np.allclose(out[0], fake_vector(cut), atol=1e-6)


def test_num_ctx_parameter_lowers_the_limit():
    with FakeEmbeddingServer(ollama_context_length=8192, ollama_num_ctx=64) as srv:
        assert make(srv).max_text_tokens == 62


def test_unknown_model_is_counted_approximately_with_a_margin():
    with FakeEmbeddingServer(ollama_context_length=100) as srv:
        emb = make(srv, model="my-custom-embedder:q4")
        assert emb.max_text_tokens == int(100 * APPROX_TOKEN_MARGIN) - 2


def test_explicit_max_input_tokens_skips_the_probe():
    with FakeEmbeddingServer() as srv:
        emb = make(srv, max_input_tokens=50)
        emb.get_text_embedding("hi")
        assert emb.max_text_tokens == 48 and not srv.requests_to("ollama_show")


def test_failed_probe_falls_back_to_the_registry(caplog):
    with FakeEmbeddingServer() as srv:
        srv.inject("ollama_show", Fault("404", body="model not found"))
        emb = make(srv, model="mxbai-embed-large:latest")
        with caplog.at_level(logging.WARNING):
            assert emb.max_text_tokens == 510
        assert "could not read" in caplog.text
        assert_vectors(emb.get_text_embedding_batch(TEXTS[:3]), TEXTS[:3])


@pytest.mark.parametrize(
    "fault",
    [
        Fault("500"),
        Fault("429", retry_after="0"),
        Fault("short"),
        Fault("malformed"),
        Fault("reset"),
        Fault("hang", seconds=0.6),
    ],
    ids=lambda f: f.kind,
)
def test_faults_are_retried(fault):
    with FakeEmbeddingServer() as srv:
        emb = make(srv, timeout=0.3 if fault.kind == "hang" else 2.0)
        srv.inject("ollama", fault)
        assert_vectors(emb.get_text_embedding_batch(TEXTS), TEXTS)
        assert len(srv.requests_to("ollama")) == 4


def test_model_not_found_is_a_clear_error():
    with FakeEmbeddingServer() as srv:
        srv.inject("ollama", Fault("404", body='model "nope" not found, try pulling it first'))
        emb = make(srv, max_input_tokens=512)
        with pytest.raises(EmbeddingProviderError, match="Ollama.*HTTP 404.*try pulling"):
            emb.get_text_embedding("x")


def test_instructions_once_and_async_order():
    with FakeEmbeddingServer(delay=0.02) as srv:
        emb = make(srv, query_instruction="search_query: ", text_instruction="search_document: ", max_concurrency=2,
                   embed_batch_size=2)
        texts = [f"doc {i}" for i in range(10)]
        out = asyncio.run(emb.aget_text_embedding_batch(texts))
        assert_vectors(out, ["search_document: " + t for t in texts])
        q = emb.get_query_embedding("what?")
        assert np.allclose(q, fake_vector("search_query: what?"), atol=1e-6)
        assert srv.max_in_flight <= 2
        sent = [t for r in srv.requests_to("ollama") for t in r.body["input"]]
        assert all(t.count("search_") == 1 for t in sent)


def test_options_keep_alive_dimensions_are_sent():
    with FakeEmbeddingServer() as srv:
        emb = make(srv, ollama_additional_kwargs={"num_ctx": 256}, keep_alive="1m", dimensions=4)
        vec = emb.get_text_embedding("x")
        assert np.allclose(vec, fake_vector("x", 4), atol=1e-6)
        body = srv.requests_to("ollama")[0].body
        assert body["options"] == {"num_ctx": 256} and body["keep_alive"] == "1m" and body["dimensions"] == 4
        assert emb.max_text_tokens == 254  # options.num_ctx caps the probed context
