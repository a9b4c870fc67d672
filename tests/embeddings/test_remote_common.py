"""Token-limit registry, Retry-After parsing and the rate limiter of the remote providers."""

from __future__ import annotations

import email.utils
import logging
import time

import pytest

from ragloom.embeddings import EmbeddingProviderError
from ragloom.embeddings.http import RateLimiter, parse_retry_after
from ragloom.embeddings.limits import (
    DEFAULT_MAX_TOKENS,
    KNOWN_MODEL_LIMITS,
    get_token_limit,
    lookup_model_limits,
    register_model_limits,
)
from ragloom.errors import RagloomError


@pytest.mark.parametrize(
    "name, limit",
    [
        ("text-embedding-3-small", 8191),  # exact
        ("text-embedding-3-large", 8191),
        ("text-embedding-ada-002", 8191),
        ("Text-Embedding-3-Small", 8191),  # case-insensitive
        ("nomic-embed-text", 8192),
        ("nomic-embed-text:latest", 8192),  # tag dropped
        ("mxbai-embed-large:335m", 512),
        ("all-minilm:l6-v2", 256),
        ("BAAI/bge-m3", 8192),  # org dropped
        ("sentence-transformers/all-MiniLM-L6-v2", 256),
        ("hf.co/mixedbread-ai/mxbai-embed-large-v1:Q8_0", 512),
        ("models/gemini-embedding-001", 2048),  # Gemini resource prefix
        ("nomic-embed-text-v1.5-q8_0", 8192),  # substring
        ("Alibaba-NLP/gte-base-en-v1.5", 8192),  # longest substring wins over gte-base
        ("my-bge-m3-finetune", 8192),
    ],
)
def test_registry_lookup(name, limit):
    assert get_token_limit(name) == limit


def test_unknown_model_gets_the_logged_default(caplog):
    assert lookup_model_limits("totally-unknown-model") is None
    with caplog.at_level(logging.WARNING):
        assert get_token_limit("totally-unknown-model") == DEFAULT_MAX_TOKENS
    assert "totally-unknown-model" in caplog.text


def test_register_model_limits():
    try:
        register_model_limits("Org/My-Embedder", 1000, dimension=64)
        assert get_token_limit("my-embedder:latest") == 1000
        assert lookup_model_limits("org/my-embedder").dimension == 64
        with pytest.raises(ValueError):
            register_model_limits("x", 0)
    finally:
        KNOWN_MODEL_LIMITS.pop("org/my-embedder", None)


def test_parse_retry_after():
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "soon"}) is None
    now = time.time()
    date = email.utils.formatdate(now + 10, usegmt=True)
    assert 8.5 <= parse_retry_after({"retry-after": date}, now=now) <= 10.5
    past = email.utils.formatdate(now - 100, usegmt=True)
    assert parse_retry_after({"retry-after": past}, now=now) == 0.0


def test_rate_limiter_burst_then_spacing():
    lim = RateLimiter(requests_per_minute=1200, burst=3)  # 0.05 s apart after a burst of 3
    waits = [lim.reserve() for _ in range(6)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3] == pytest.approx(0.05, abs=0.01)
    assert waits[5] == pytest.approx(0.15, abs=0.01)
    with pytest.raises(ValueError):
        RateLimiter(0)


def test_error_is_a_ragloom_error_with_fields():
    err = EmbeddingProviderError("OpenAI", "m", "boom", status=502, attempts=4, url="http://h/v1/embeddings")
    assert isinstance(err, RagloomError)
    assert (
        str(err)
        == "OpenAI embedding request for model 'm' at http://h/v1/embeddings failed after 4 attempts: HTTP 502: boom"
    )
