"""Adaptive batch size: out-of-memory back-off on the real bundled model (the OOM itself is simulated).

The torch backend is the one that meets accelerator memory limits, so these tests pin it."""

import logging

import numpy as np
import pytest
import torch

from ragloom.embeddings import HuggingFaceEmbedding
from ragloom.embeddings.base import EmbeddingOutOfMemoryError, is_out_of_memory
from ragloom.embeddings.huggingface import (
    CPU_BATCH_SIZE,
    CUDA_MAX_BATCH_SIZE,
    activation_bytes_per_token,
    cuda_batch_cap,
)

TEXTS = [f"sentence number {i} about {'green tea ' * (i % 7)}brewing" for i in range(23)]


@pytest.fixture(scope="module")
def reference():
    return HuggingFaceEmbedding(embed_batch_size=8, device="cpu").get_text_embedding_batch_array(TEXTS)


def _oom_above(monkeypatch, st, limit, calls):
    real = st.encode

    def encode(sentences, *args, **kwargs):
        calls.append(len(sentences))
        if len(sentences) > limit:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (simulated)")
        return real(sentences, *args, **kwargs)

    monkeypatch.setattr(st, "encode", encode)


def test_oom_halves_retries_and_keeps_the_smaller_size(monkeypatch, reference, caplog):
    emb = HuggingFaceEmbedding(embed_batch_size=16, device="cpu", backend="torch")
    released = []
    monkeypatch.setattr(emb, "_release_memory", lambda: released.append(1))
    calls = []
    _oom_above(monkeypatch, emb.model, 5, calls)
    with caplog.at_level(logging.WARNING, logger="ragloom.embeddings.base"):
        out = emb.get_text_embedding_batch_array(TEXTS)
    assert out.shape == (len(TEXTS), 384)
    assert np.allclose(out, reference, atol=1e-5)  # complete and in input order
    assert emb.embed_batch_size == 4  # 16 -> 8 -> 4, kept
    assert calls[:3] == [16, 8, 4]
    assert len(released) == 2
    assert "ran out of memory at batch size 16; retrying with 8" in caplog.text

    calls.clear()
    again = emb.get_text_embedding_batch_array(TEXTS[:9])
    assert np.allclose(again, reference[:9], atol=1e-5)
    assert max(calls) <= 4  # the reduced size stays for the rest of the run: no new OOM


def test_oom_at_batch_size_one_fails_clearly(monkeypatch):
    emb = HuggingFaceEmbedding(embed_batch_size=4, device="cpu", backend="torch")
    calls = []
    _oom_above(monkeypatch, emb.model, 0, calls)
    with pytest.raises(EmbeddingOutOfMemoryError, match="out of memory embedding a single text"):
        emb.get_text_embedding_batch_array(TEXTS[:3])
    assert calls == [3, 1]  # 3 -> 1, then give up
    assert emb.embed_batch_size == 1


def test_runtime_error_mentioning_oom_is_recognised_other_errors_are_not(monkeypatch):
    assert is_out_of_memory(RuntimeError("CUDA error: out of memory"))
    assert is_out_of_memory(torch.cuda.OutOfMemoryError("x"))
    assert not is_out_of_memory(RuntimeError("shape mismatch"))
    emb = HuggingFaceEmbedding(embed_batch_size=8, device="cpu", backend="torch")

    def broken(*a, **k):
        raise RuntimeError("shape mismatch")

    monkeypatch.setattr(emb.model, "encode", broken)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        emb.get_text_embedding_batch_array(TEXTS[:3])
    assert emb.embed_batch_size == 8  # untouched


def test_device_default_batch_size_and_cuda_cap():
    assert HuggingFaceEmbedding(device="cpu").embed_batch_size == CPU_BATCH_SIZE
    assert HuggingFaceEmbedding(device="cpu", embed_batch_size=7).embed_batch_size == 7
    # MiniLM (hidden 384, 12 heads) at 256 tokens, fp16: 24.6 kB per token, 6.3 MB per text
    per_token = activation_bytes_per_token(384, 12, 256, 2)
    assert per_token == 2 * (16 * 384 + 2 * 12 * 256)
    assert cuda_batch_cap(80 * 2**30, 384, 12, 256) == CUDA_MAX_BATCH_SIZE
    assert cuda_batch_cap(256 * 2**20, 384, 12, 256) == 16  # 128 MB usable / 6.3 MB = 20 -> 16
    assert cuda_batch_cap(1, 384, 12, 256) == 1
