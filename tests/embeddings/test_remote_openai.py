"""OpenAIEmbedding against a real local HTTP server that injects faults."""

from __future__ import annotations

import asyncio
import email.utils
import time

import numpy as np
import pytest
from fake_server import DIM, FakeEmbeddingServer, Fault, fake_vector

from ragloom.embeddings import EmbeddingProviderError
from ragloom.embeddings.openai import OpenAIEmbedding
from ragloom.tokenizers import get_tokenizer

FAST = dict(retry_backoff_base=0.001, retry_backoff_max=0.01, timeout=2.0, max_retries=3)


@pytest.fixture
def server():
    with FakeEmbeddingServer() as srv:
        yield srv


def make(server, **kw):
    args = dict(FAST, api_base=server.url + "/v1", api_key="sk-test", embed_batch_size=4)
    args.update(kw)
    return OpenAIEmbedding(**args)


TEXTS = [f"text number {i} " + "word " * (i % 5) for i in range(10)]


def assert_vectors(got, texts):
    got = np.asarray(got)
    assert got.shape == (len(texts), DIM)
    for row, text in zip(got, texts, strict=True):
        assert np.allclose(row, fake_vector(text), atol=1e-6), text


def test_batches_auth_and_order(server):
    emb = make(server)
    out = emb.get_text_embedding_batch(TEXTS)
    assert_vectors(out, TEXTS)
    reqs = server.requests_to("openai")
    assert sorted(len(r.body["input"]) for r in reqs) == [2, 4, 4]
    for r in reqs:
        assert r.headers["authorization"] == "Bearer sk-test"
        assert r.body["model"] == "text-embedding-3-small"
        assert "dimensions" not in r.body
    assert sorted(t for r in reqs for t in r.body["input"]) == sorted(TEXTS)


def test_dimensions_and_identity_never_leak_key(server):
    emb = make(server, dimensions=5)
    vec = emb.get_text_embedding("hello")
    assert np.allclose(vec, fake_vector("hello", 5), atol=1e-6)
    assert server.requests_to("openai")[0].body["dimensions"] == 5
    ident = emb.identity()
    assert ident["class_name"] == "OpenAIEmbedding"
    assert ident["model_name"] == ident["model"] == "text-embedding-3-small"
    assert ident["dimension"] == 5 and ident["api_base"] == server.url + "/v1"
    assert "sk-test" not in repr(ident) and "sk-test" not in repr(emb.to_config())


@pytest.mark.parametrize(
    "fault",
    [
        Fault("429", retry_after="0"),
        Fault("500"),
        Fault("502"),
        Fault("503", retry_after="0.01"),
        Fault("408"),
        Fault("hang", seconds=0.6),
        Fault("malformed"),
        Fault("short"),
        Fault("bad_index"),
        Fault("reset"),
    ],
    ids=lambda f: f.kind,
)
def test_transient_fault_is_retried_without_losing_or_misordering(server, fault):
    emb = make(server, timeout=0.3 if fault.kind == "hang" else 2.0)
    server.inject("openai", fault)
    out = emb.get_text_embedding_batch(TEXTS)
    assert_vectors(out, TEXTS)
    assert len(server.requests_to("openai")) == 4  # 3 batches + 1 retry
    assert server.pending_faults("openai") == 0


def test_shuffled_indices_are_put_back_in_order(server):
    emb = make(server, embed_batch_size=10)
    server.inject("openai", Fault("shuffle"))
    assert_vectors(emb.get_text_embedding_batch(TEXTS), TEXTS)
    assert len(server.requests_to("openai")) == 1


def test_many_faults_in_a_row_across_batches(server):
    emb = make(server, max_retries=6)
    server.inject(
        "openai", Fault("500"), Fault("short"), Fault("reset"), Fault("429", retry_after="0"), Fault("malformed")
    )
    assert_vectors(emb.get_text_embedding_batch(TEXTS), TEXTS)


def test_permanent_fault_raises_clear_error_after_bounded_attempts(server):
    emb = make(server, max_retries=2)
    server.inject("openai", *[Fault("500")] * 10)
    with pytest.raises(EmbeddingProviderError) as ei:
        emb.get_text_embedding_batch(TEXTS)
    err = ei.value
    assert err.attempts == 3 and err.status == 500 and err.provider == "OpenAI"
    assert len(server.requests_to("openai")) == 3
    msg = str(err)
    assert "OpenAI" in msg and "text-embedding-3-small" in msg and "HTTP 500" in msg and "3 attempts" in msg
    assert "sk-test" not in msg


def test_permanent_bad_response_is_an_error_not_a_short_result(server):
    emb = make(server, max_retries=1)
    server.inject("openai", Fault("short"), Fault("short"))
    with pytest.raises(EmbeddingProviderError, match="3 vectors for 4 inputs"):
        emb.get_text_embedding_batch(TEXTS[:4])


@pytest.mark.parametrize("status", ["400", "401", "404", "422"])
def test_client_errors_are_not_retried(server, status):
    emb = make(server)
    server.inject("openai", Fault(status, body="input is bad"))
    with pytest.raises(EmbeddingProviderError) as ei:
        emb.get_text_embedding("x")
    assert ei.value.status == int(status) and ei.value.attempts == 1
    assert "input is bad" in str(ei.value)
    assert len(server.requests_to("openai")) == 1


def test_retry_after_seconds_is_honoured(server):
    emb = make(server)
    server.inject("openai", Fault("429", retry_after="0.3"))
    t0 = time.monotonic()
    emb.get_text_embedding("x")
    assert time.monotonic() - t0 >= 0.29


def test_retry_after_http_date_is_honoured_and_capped(server):
    emb = make(server, max_retry_after=0.25)
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    server.inject("openai", Fault("429", retry_after=when))
    t0 = time.monotonic()
    emb.get_text_embedding("x")
    elapsed = time.monotonic() - t0
    assert 0.24 <= elapsed < 15  # the cap (0.25 s) applied, not the 30 s the date asks for


def test_connection_refused_is_a_clear_error():
    emb = OpenAIEmbedding(api_base="http://127.0.0.1:9/v1", api_key="k", **dict(FAST, max_retries=1))
    with pytest.raises(EmbeddingProviderError, match="connection error") as ei:
        emb.get_text_embedding("x")
    assert ei.value.attempts == 2 and ei.value.status is None


def test_instructions_applied_exactly_once(server):
    emb = make(server, query_instruction="query: ", text_instruction="passage: ")
    doc = emb.get_text_embedding("tea")
    q = emb.get_query_embedding("tea?")
    assert np.allclose(doc, fake_vector("passage: tea"), atol=1e-6)
    assert np.allclose(q, fake_vector("query: tea?"), atol=1e-6)
    aq = asyncio.run(emb.aget_query_embedding("tea?"))
    assert np.allclose(aq, q, atol=1e-6)
    sent = [t for r in server.requests_to("openai") for t in r.body["input"]]
    assert sent == ["passage: tea", "query: tea?", "query: tea?"]


def test_texts_over_the_limit_are_truncated_and_counted(server):
    emb = make(server, max_input_tokens=16)
    assert emb.max_text_tokens == 16
    tok = get_tokenizer("cl100k_base")
    long = "the quick brown fox jumps over the lazy dog " * 20
    out = emb.get_text_embedding_batch([long, "short one"])
    sent = server.requests_to("openai")[0].body["input"]
    cut = [t for t in sent if t != "short one"][0]
    assert long.startswith(cut) and 0 < tok.count(cut) <= 16
    assert emb.truncated_count == 1
    assert np.allclose(out[0], fake_vector(cut), atol=1e-6)


def test_openai_model_counts_in_cl100k_with_registry_limit(server):
    emb = make(server)
    assert emb.max_text_tokens == 8191
    assert emb.get_tokenizer().name == get_tokenizer("cl100k_base").name


def test_empty_text_is_sent_as_a_space(server):
    emb = make(server)
    emb.get_text_embedding("")
    assert server.requests_to("openai")[0].body["input"] == [" "]


def test_per_request_token_cap_splits_requests(server):
    emb = make(server, embed_batch_size=10)
    emb.max_tokens_per_request = 12  # instance override of the API's 300k cap
    texts = ["alpha beta gamma delta epsilon"] * 2 + ["one two three four five six"] * 4
    assert_vectors(emb.get_text_embedding_batch(texts), texts)
    reqs = server.requests_to("openai")
    assert len(reqs) > 1 and sum(len(r.body["input"]) for r in reqs) == len(texts)


def test_environment_variables(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_BASE", server.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    emb = OpenAIEmbedding(**FAST)
    emb.get_text_embedding("x")
    assert server.requests_to("openai")[0].headers["authorization"] == "Bearer sk-env"
    monkeypatch.delenv("OPENAI_API_BASE")
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIEmbedding()


def test_async_bounded_concurrency_and_order():
    with FakeEmbeddingServer(delay=0.05) as srv:
        emb = make(srv, embed_batch_size=2, max_concurrency=3)
        texts = [f"async text {i}" * (1 + i % 3) for i in range(24)]
        out = asyncio.run(emb.aget_text_embedding_batch(texts))
        assert_vectors(out, texts)
        assert len(srv.requests_to("openai")) == 12
        assert 2 <= srv.max_in_flight <= 3


def test_async_faults_do_not_lose_or_misorder():
    with FakeEmbeddingServer(delay=0.01) as srv:
        emb = make(srv, embed_batch_size=3, max_concurrency=4, timeout=0.3)
        srv.inject("openai", Fault("500"), Fault("reset"), Fault("short"), Fault("hang", seconds=0.6), Fault("shuffle"))
        texts = [f"doc {i}" for i in range(20)]
        out = asyncio.run(emb.aget_text_embedding_batch(texts))
        assert_vectors(out, texts)


def test_async_permanent_fault_raises():
    with FakeEmbeddingServer() as srv:
        emb = make(srv, max_retries=1)
        srv.inject("openai", *[Fault("503")] * 50)
        with pytest.raises(EmbeddingProviderError, match="HTTP 503"):
            asyncio.run(emb.aget_text_embedding_batch([f"t{i}" for i in range(8)]))


def test_rate_limit_spaces_requests(server):
    emb = make(server, embed_batch_size=1, requests_per_minute=600)  # one per 0.1 s
    emb.get_text_embedding("warm up the connection")
    emb.get_text_embedding_batch(["a", "b", "c", "d"])
    starts = [r.started for r in server.requests_to("openai")][1:]
    gaps = np.diff(starts)
    assert len(starts) == 4 and (gaps >= 0.085).all()


def test_embeds_nodes_in_an_index(server):
    from ragloom import Document
    from ragloom.indices.vector_store import VectorStoreIndex

    emb = make(server, embed_batch_size=8)
    docs = [Document(text=f"Paragraph {i} about tea and coffee. " * 5, id_=f"d{i}") for i in range(5)]
    index = VectorStoreIndex.from_documents(docs, embed_model=emb)
    hits = index.as_retriever(similarity_top_k=2).retrieve("Paragraph 3 about tea and coffee.")
    assert hits and server.requests_to("openai")


def test_unknown_model_limit_probed_from_vllm_models_listing():
    with FakeEmbeddingServer() as srv:
        srv.state.openai_max_model_len = 64
        srv.state.openai_model_id = "acme/custom-embedder"
        emb = make(srv, model="acme/custom-embedder")
        assert emb.max_text_tokens == int(64 * 0.9) - 2  # approximate count: margin + [CLS]/[SEP]
        assert [r.path for r in srv.requests_to("get")] == ["/v1/models"]


def test_known_model_on_compatible_server_is_not_probed(server):
    emb = make(server, model="BAAI/bge-m3")
    assert emb.max_text_tokens == int(8192 * 0.9) - 2
    emb.get_text_embedding("x")
    assert not server.requests_to("get")


def test_embed_cache_skips_the_server_sync_and_async(server, tmp_path):
    pytest.importorskip("ragloom.embeddings.cache")
    texts = [f"cached {i}" for i in range(6)]
    first = make(server, embed_cache=str(tmp_path / "cache.sqlite"))
    assert_vectors(first.get_text_embedding_batch(texts), texts)
    n = len(server.requests_to("openai"))
    again = make(server, embed_cache=str(tmp_path / "cache.sqlite"))
    assert_vectors(again.get_text_embedding_batch(texts), texts)
    assert len(server.requests_to("openai")) == n  # all hits
    more = texts + ["new one"]
    assert_vectors(asyncio.run(again.aget_text_embedding_batch(more)), more)
    sent = [t for r in server.requests_to("openai")[n:] for t in r.body["input"]]
    assert sent == ["new one"]
