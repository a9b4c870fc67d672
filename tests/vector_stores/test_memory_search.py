"""``SQLiteVectorStore(memory_search=True)``: the in-memory matrix gives the same dense results as
sqlite-vec, and sees every committed change, by this connection or another one."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.schema import TextNode
from ragloom.storage.sqlite import SQLiteDatabase
from ragloom.vector_stores.sqlite import SQLiteVectorStore
from ragloom.vector_stores.types import VectorStoreQuery

DIM = 8


def _nodes(rng, n, prefix="n"):
    return [TextNode(id_=f"{prefix}{i}", text=f"text {prefix}{i}", embedding=rng.standard_normal(DIM).tolist())
            for i in range(n)]


def _dense(store, q, k):
    res = store.query(VectorStoreQuery(query_embedding=q.tolist(), similarity_top_k=k))
    return list(res.ids or []), list(res.similarities or [])


def _same(a, b):
    ids_a, sims_a = a
    ids_b, sims_b = b
    np.testing.assert_allclose(sims_a, sims_b, atol=1e-5)
    # where similarities are distinct the order is fixed; ties may come in either order
    assert {round(s, 4): i for i, s in zip(ids_a, sims_a, strict=True)}.keys() == \
        {round(s, 4): i for i, s in zip(ids_b, sims_b, strict=True)}.keys()
    assert len(ids_a) == len(ids_b)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 80), k=st.integers(1, 100), seed=st.integers(0, 2**32 - 1))
def test_same_results_as_sqlite_vec(n, k, seed):
    rng = np.random.default_rng(seed)
    exact = SQLiteVectorStore()
    exact.add(_nodes(rng, n))
    fast = SQLiteVectorStore(exact.database, memory_search=True)
    for _ in range(3):
        q = rng.standard_normal(DIM)
        _same(_dense(fast, q, k), _dense(exact, q, k))


def test_sees_commits_of_this_and_other_connections(tmp_path):
    rng = np.random.default_rng(7)
    path = tmp_path / "db.sqlite"
    writer = SQLiteVectorStore(SQLiteDatabase(path))
    writer.add(_nodes(rng, 30))
    reader = SQLiteVectorStore(SQLiteDatabase(path), memory_search=True)
    q = rng.standard_normal(DIM)
    _same(_dense(reader, q, 10), _dense(writer, q, 10))

    # another connection adds the best match, replaces a node's vector and deletes others
    best = TextNode(id_="best", text="best", embedding=q.tolist())
    changed = TextNode(id_="n3", text="changed", embedding=(-q).tolist())
    writer.add([best, changed])
    writer.delete_nodes(node_ids=["n1", "n2"])
    ids, sims = _dense(reader, q, 40)
    assert ids[0] == "best" and abs(sims[0] - 1.0) < 1e-5
    assert ids[-1] == "n3" and abs(sims[-1] + 1.0) < 1e-5
    assert "n1" not in ids and "n2" not in ids and len(ids) == 29
    _same((ids, sims), _dense(writer, q, 40))

    # this connection's own writes
    reader.delete_nodes(node_ids=["best"])
    assert "best" not in _dense(reader, q, 40)[0]
    reader.add([TextNode(id_="again", text="again", embedding=q.tolist())])
    assert _dense(reader, q, 1)[0] == ["again"]


def test_filters_and_hybrid_still_answer(tmp_path):
    rng = np.random.default_rng(3)
    store = SQLiteVectorStore(memory_search=True)
    nodes = _nodes(rng, 20)
    for i, node in enumerate(nodes):
        node.metadata = {"half": i % 2}
    store.add(nodes)
    from ragloom.vector_stores.types import MetadataFilter, MetadataFilters

    q = rng.standard_normal(DIM)
    res = store.query(VectorStoreQuery(query_embedding=q.tolist(), similarity_top_k=5,
                                       filters=MetadataFilters(filters=[MetadataFilter(key="half", value=1)])))
    assert len(res.ids) == 5 and all(int(i[1:]) % 2 == 1 for i in res.ids)
    res = store.query(VectorStoreQuery(query_embedding=q.tolist(), query_str="text", similarity_top_k=5, mode="hybrid"))
    assert len(res.ids) == 5


def test_a_zero_vector_scores_zero():
    """(sqlite-vec gives a zero vector no distance, which the exact path ranks first with score 0.)"""
    store = SQLiteVectorStore(memory_search=True)
    store.add([TextNode(id_="zero", text="z", embedding=[0.0] * DIM),
               TextNode(id_="same", text="s", embedding=[1.0] + [0.0] * (DIM - 1)),
               TextNode(id_="opposite", text="o", embedding=[-1.0] + [0.0] * (DIM - 1))])
    ids, sims = _dense(store, np.array([2.0] + [0.0] * (DIM - 1)), 3)
    assert ids == ["same", "zero", "opposite"]
    np.testing.assert_allclose(sims, [1.0, 0.0, -1.0], atol=1e-6)
