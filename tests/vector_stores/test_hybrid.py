"""Keyword (BM25 over FTS5) and hybrid search of the default SQLite store, and the analyzer."""

import numpy as np
import pytest

from ragloom.analysis import analyze
from ragloom.schema import NodeRelationship, RelatedNodeInfo, TextNode
from ragloom.vector_stores import SQLiteVectorStore
from ragloom.vector_stores.types import (
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

TEXTS = {
    "xiyou": "孙悟空拜菩提祖师为师父，学会了七十二变和筋斗云。",
    "hongloumeng": "林黛玉进贾府，与贾宝玉初次相见，两人都觉得似曾相识。",
    "sanguo": "诸葛亮草船借箭，向曹操借得十万支箭。",
    "fastapi": "Declare path parameters with the same syntax used by Python format strings.",
    "tea": "Steep green tea leaves in water at about eighty degrees.",
}


def _node(key, dim=8, seed=0):
    rng = np.random.default_rng(abs(hash(key)) % 2**32 + seed)
    v = rng.normal(size=dim).astype(np.float32)
    return TextNode(
        id_=key,
        text=TEXTS[key],
        embedding=(v / np.linalg.norm(v)).tolist(),
        metadata={"lang": "en" if key in ("fastapi", "tea") else "zh"},
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=f"doc-{key}")},
    )


@pytest.fixture()
def store():
    s = SQLiteVectorStore()
    s.add([_node(k) for k in TEXTS])
    return s


def test_analyzer_cjk_bigrams_and_english_stems():
    toks = analyze("孙悟空的师父 Declaring parameters, the FastAPI way")
    assert "悟空" in toks and "师父" in toks and "孙" in toks
    assert "declar" in toks and "paramet" in toks and "fastapi" in toks
    assert "the" not in toks


def test_text_search_finds_chinese_terms(store):
    res = store.query(VectorStoreQuery(query_str="孙悟空的师父是谁", similarity_top_k=2, mode="text_search"))
    assert res.ids[0] == "xiyou"
    assert res.similarities[0] >= res.similarities[-1]


def test_text_search_stems_english(store):
    res = store.query(
        VectorStoreQuery(query_str="How do I declare a path parameter?", similarity_top_k=1, mode="text_search")
    )
    assert res.ids == ["fastapi"]


def test_hybrid_fuses_dense_and_keyword(store):
    # the query vector points exactly at the tea node; the words point at the sanguo node
    q = _node("tea").embedding
    res = store.query(VectorStoreQuery(query_embedding=q, query_str="诸葛亮借箭", similarity_top_k=2, mode="hybrid"))
    assert set(res.ids) == {"tea", "sanguo"}
    dense = store.query(VectorStoreQuery(query_embedding=q, similarity_top_k=1))
    assert dense.ids == ["tea"]


def test_keyword_index_follows_deletes_and_replacements(store):
    store.delete("doc-xiyou")
    res = store.query(VectorStoreQuery(query_str="孙悟空", similarity_top_k=5, mode="text_search"))
    assert "xiyou" not in res.ids
    changed = _node("tea")
    changed.text = "孙悟空 drinks tea"
    store.add([changed])
    res = store.query(VectorStoreQuery(query_str="孙悟空", similarity_top_k=5, mode="text_search"))
    assert res.ids == ["tea"]
    res = store.query(VectorStoreQuery(query_str="eighty degrees", similarity_top_k=5, mode="text_search"))
    assert "tea" not in res.ids


def test_filters_apply_to_keyword_and_hybrid(store):
    f = MetadataFilters(filters=[MetadataFilter(key="lang", value="en", operator=FilterOperator.EQ)])
    res = store.query(VectorStoreQuery(query_str="孙悟空 tea", similarity_top_k=5, mode="text_search", filters=f))
    assert res.ids == ["tea"]
    res = store.query(VectorStoreQuery(query_embedding=_node("xiyou").embedding, query_str="孙悟空",
                                       similarity_top_k=5, mode="hybrid", filters=f))
    assert set(res.ids) <= {"tea", "fastapi"}


def test_mode_errors(store):
    with pytest.raises(ValueError, match="query_str"):
        store.query(VectorStoreQuery(query_embedding=_node("tea").embedding, similarity_top_k=1, mode="hybrid"))
    with pytest.raises(ValueError, match="mmr"):
        store.query(VectorStoreQuery(query_embedding=_node("tea").embedding, similarity_top_k=1, mode="mmr"))


def test_keyword_index_persists(tmp_path, store):
    path = tmp_path / "db"
    path.mkdir()
    store.persist(str(path))
    reopened = SQLiteVectorStore.from_persist_dir(str(path))
    res = reopened.query(VectorStoreQuery(query_str="林黛玉", similarity_top_k=1, mode="text_search"))
    assert res.ids == ["hongloumeng"]


def test_keyword_index_is_backfilled_for_databases_written_without_it(tmp_path, store):
    path = tmp_path / "db"
    path.mkdir()
    store.persist(str(path))
    old = SQLiteVectorStore.from_persist_dir(str(path))
    with old.database.transaction():
        old.client.execute('DROP TABLE "vs_default_fts"')
    reopened = SQLiteVectorStore.from_persist_dir(str(path))
    res = reopened.query(VectorStoreQuery(query_str="诸葛亮", similarity_top_k=1, mode="text_search"))
    assert res.ids == ["sanguo"]


def test_alpha_zero_is_keyword_order_and_needs_no_embedding(store):
    res = store.query(VectorStoreQuery(query_str="诸葛亮借箭", similarity_top_k=3, mode="hybrid", alpha=0.0))
    bm25 = store.query(VectorStoreQuery(query_str="诸葛亮借箭", similarity_top_k=3, mode="text_search"))
    assert res.ids == bm25.ids


def test_alpha_one_is_dense_order(store):
    q = _node("fastapi").embedding
    res = store.query(
        VectorStoreQuery(query_embedding=q, query_str="孙悟空", similarity_top_k=3, mode="hybrid", alpha=1.0)
    )
    dense = store.query(VectorStoreQuery(query_embedding=q, similarity_top_k=3))
    assert res.ids == dense.ids


def test_alpha_out_of_range(store):
    with pytest.raises(ValueError, match="alpha"):
        store.query(VectorStoreQuery(query_embedding=_node("tea").embedding, query_str="tea", similarity_top_k=1,
                                     mode="hybrid", alpha=1.5))


def test_is_mostly_cjk():
    from ragloom.analysis import is_mostly_cjk

    assert is_mostly_cjk("孙悟空的师父是谁")
    assert is_mostly_cjk("Adobe OnLocation的适用范围是什么？")
    assert not is_mostly_cjk("How do I declare a path parameter?")
    assert not is_mostly_cjk("")
