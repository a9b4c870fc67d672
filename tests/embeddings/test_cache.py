"""Persistent embedding cache: hits cost no model call, keys separate models/instructions,
files persist across processes."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ragloom.embeddings import EmbeddingCache, HuggingFaceEmbedding
from ragloom.embeddings.cache import namespace_of, text_hash

TEXTS = ["green tea is brewed at eighty degrees", "the panda eats bamboo", "绿茶用八十度的水冲泡"]


def _count_encodes(monkeypatch, emb):
    """Texts that reach the model (either backend)."""
    seen = []
    real = emb._get_text_embeddings

    def encode(sentences):
        seen.extend(sentences)
        return real(sentences)

    monkeypatch.setattr(emb, "_get_text_embeddings", encode)
    return seen


def test_hits_cost_no_model_call_and_order_is_kept(tmp_path, monkeypatch):
    plain = HuggingFaceEmbedding(embed_batch_size=4, device="cpu")
    ref = plain.get_text_embedding_batch_array(TEXTS + ["a new text"])
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    emb = HuggingFaceEmbedding(embed_batch_size=4, device="cpu", embed_cache=cache)
    seen = _count_encodes(monkeypatch, emb)

    first = emb.get_text_embedding_batch_array(TEXTS)
    assert np.allclose(first, ref[:3], atol=1e-6)
    assert sorted(seen) == sorted(TEXTS) and cache.stats() == {"hits": 0, "misses": 3, "writes": 3}

    seen.clear()
    again = emb.get_text_embedding_batch_array(TEXTS)
    assert seen == []  # no model call at all
    assert np.array_equal(again, first)
    assert cache.hits == 3

    seen.clear()
    mixed = emb.get_text_embedding_batch_array([TEXTS[2], "a new text", TEXTS[0], TEXTS[2]])
    assert seen == ["a new text"]  # only the miss is embedded
    assert np.allclose(mixed, ref[[2, 3, 0, 2]], atol=1e-6)
    assert len(cache) == 4


def test_different_instruction_or_model_identity_misses(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    a = HuggingFaceEmbedding(device="cpu", embed_cache=cache)
    b = HuggingFaceEmbedding(device="cpu", embed_cache=cache, text_instruction="passage: ")
    c = HuggingFaceEmbedding(device="cpu", embed_cache=cache, max_length=64)
    d = HuggingFaceEmbedding(device="cpu", embed_cache=cache, normalize=False)
    q = HuggingFaceEmbedding(device="cpu", embed_cache=cache, query_instruction="query: ")
    va = a.get_text_embedding_batch_array(TEXTS[:1])
    for other in (b, c, d):
        cache.reset_counters()
        vo = other.get_text_embedding_batch_array(TEXTS[:1])
        assert cache.stats()["hits"] == 0 and cache.stats()["misses"] == 1
        if other is b:
            assert not np.allclose(vo, va, atol=1e-3)  # the instruction changes the vector
    cache.reset_counters()
    q.get_text_embedding_batch_array(TEXTS[:1])  # a query-only setting does not change document vectors
    assert cache.hits == 1
    assert len({m._namespace() for m in (a, b, c, d)}) == 4
    assert a.cache_identity()["class_name"] == "HuggingFaceEmbedding"
    assert a.cache_identity()["dimension"] == 384


def test_cache_persists_across_processes_and_two_writers_share_it(tmp_path):
    path = tmp_path / "shared.sqlite"
    emb = HuggingFaceEmbedding(device="cpu", embed_cache=path)
    vecs = emb.get_text_embedding_batch_array(TEXTS)
    emb.embed_cache.close()

    # another process: the model must not be called; every text is a hit
    reader = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        from ragloom.embeddings import HuggingFaceEmbedding
        class NoModel(HuggingFaceEmbedding):
            @classmethod
            def class_name(cls):
                return "HuggingFaceEmbedding"  # same provider key as the writer
            def _get_text_embeddings(self, texts):
                raise AssertionError("model called for " + repr(texts))
        emb = NoModel(device="cpu", embed_batch_size=8, embed_cache={str(path)!r})
        out = emb.get_text_embedding_batch_array({TEXTS!r})
        print(json.dumps({{"stats": emb.embed_cache.stats(), "vecs": out.tolist()}}))
    """)
    res = subprocess.run([sys.executable, "-c", reader], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["stats"]["hits"] == 3 and got["stats"]["misses"] == 0
    assert np.array_equal(np.asarray(got["vecs"], dtype=np.float32), vecs)

    # two processes writing the same file at once: nothing lost, nothing fails
    writer = textwrap.dedent(f"""
        import sys, numpy as np
        from ragloom.embeddings.cache import EmbeddingCache, text_hash
        c = EmbeddingCache({str(path)!r}, busy_timeout_ms=60000)
        who = sys.argv[1]
        for i in range(40):
            hs = [text_hash(f"{{who}}-{{i}}-{{j}}") for j in range(25)]
            c.put_many("ns-test", hs, np.full((25, 8), i, dtype=np.float32))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", writer, w], stderr=subprocess.PIPE, text=True) for w in "ab"]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read()
    cache = EmbeddingCache(path)
    assert cache.count("ns-test") == 2 * 40 * 25
    got = cache.get_many("ns-test", [text_hash("b-39-24"), text_hash("a-0-0"), text_hash("missing")])
    assert set(got) == {text_hash("b-39-24"), text_hash("a-0-0")}
    assert got[text_hash("b-39-24")].tolist() == [39.0] * 8


def test_cache_api_and_arguments(tmp_path):
    cache = EmbeddingCache(tmp_path / "sub" / "c.sqlite")  # parent folders are created
    ident = {"class_name": "X", "model_name": "m", "dimension": 2}
    cache.put(ident, "t", [1.0, 2.0])
    assert cache.get(ident, "t").tolist() == [1.0, 2.0]
    assert cache.get({**ident, "model_name": "n"}, "t") is None
    assert namespace_of(ident) == namespace_of(dict(reversed(list(ident.items()))))
    assert text_hash("t") != text_hash("t ")
    with pytest.raises(ValueError, match="one vector per hash"):
        cache.put_many("ns", [text_hash("a")], np.zeros((2, 2), dtype=np.float32))
    cache.clear()
    assert len(cache) == 0
    with pytest.raises(ValueError, match="embed_cache"):
        HuggingFaceEmbedding(device="cpu", embed_cache=42)
    emb = HuggingFaceEmbedding(device="cpu", embed_cache=str(tmp_path / "p.sqlite"))
    assert isinstance(emb.embed_cache, EmbeddingCache)
    emb.embed_cache = None
    assert emb.embed_cache is None


def test_ragloom_index_uses_a_cache_under_the_index_dir(tmp_path):
    from ragloom.cli.indexing import run_index

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Tea\n\nGreen tea is brewed at eighty degrees for two minutes.\n", encoding="utf-8")
    (docs / "b.md").write_text("# Pandas\n\nThe giant panda eats bamboo for ten hours a day.\n", encoding="utf-8")
    index_dir = tmp_path / "index"
    first = run_index([docs], index_dir, show_progress=False)
    assert (index_dir / "embed_cache.sqlite").exists()
    assert first["embed_cache"]["misses"] == first["nodes_embedded"] > 0
    second = run_index([docs], index_dir, full=True, show_progress=False)  # rewrites everything: all cache hits
    assert second["embed_cache"]["hits"] == second["nodes_reused"] == second["nodes_written"] == first["nodes_embedded"]
    assert second["nodes_embedded"] == 0  # the model computed nothing
    assert second["embed_cache"]["misses"] == 0
