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
    assert len(ids_a) == len(ids_b)
    np.testing.assert_allclose(sims_a, sims_b, atol=1e-5)
    # where a similarity is distinct from its neighbours the id at that rank is fixed (ties may
    # come in either order)
    for i, sim in enumerate(sims_a):
        near = [j for j in (i - 1, i + 1) if 0 <= j < len(sims_a) and abs(sims_a[j] - sim) < 1e-5]
        if not near:
            assert ids_a[i] == ids_b[i], (i, ids_a, ids_b)


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


def test_concurrent_hybrid_queries_while_another_connection_writes(tmp_path):
    """Readers in threads never fail nor return a node under another node's score or id while a
    writer commits replacements and deletions (every returned node is the one its id names)."""
    import threading

    rng = np.random.default_rng(11)
    path = tmp_path / "db.sqlite"
    writer = SQLiteVectorStore(SQLiteDatabase(path))
    writer.add(_nodes(rng, 60))
    reader = SQLiteVectorStore(SQLiteDatabase(path), memory_search=True)
    stop = threading.Event()
    errors = []

    def write():
        w_rng = np.random.default_rng(5)
        i = 0
        while not stop.is_set():
            node_id = f"w{i % 7}"
            writer.add([TextNode(id_=node_id, text=f"text {node_id}", embedding=w_rng.standard_normal(DIM).tolist())])
            if i % 3 == 0:
                writer.delete_nodes(node_ids=[f"w{(i + 3) % 7}"])
            i += 1

    def read(seed):
        r_rng = np.random.default_rng(seed)
        try:
            for _ in range(60):
                q = r_rng.standard_normal(DIM)
                res = reader.query(VectorStoreQuery(query_embedding=q.tolist(), query_str="text", similarity_top_k=8,
                                                    mode="hybrid"))
                for node_id, node in zip(res.ids, res.nodes, strict=True):
                    assert node.node_id == node_id and node.text == f"text {node_id}"
                dense = reader.query(VectorStoreQuery(query_embedding=q.tolist(), similarity_top_k=5))
                sims = list(dense.similarities)
                assert sims == sorted(sims, reverse=True)
        except Exception as exc:  # reported below
            errors.append(exc)

    w = threading.Thread(target=write)
    w.start()
    readers = [threading.Thread(target=read, args=(s,)) for s in range(4)]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    stop.set()
    w.join()
    assert not errors, errors[0]
