"""Maximal marginal relevance: the selection itself and vector_store_query_mode="mmr" on a real index."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom import VectorStoreIndex
from ragloom.retrievers.mmr import mmr_select
from ragloom.schema import TextNode


def _brute_force_first_two(query, vectors, lam):
    unit = lambda v: v / np.linalg.norm(v)  # noqa: E731
    q = unit(np.asarray(query, float))
    c = np.array([unit(np.asarray(v, float)) for v in vectors])
    rel = c @ q
    first = int(np.argmax(rel))
    second_obj = [lam * rel[i] - (1 - lam) * float(c[i] @ c[first]) if i != first else -np.inf for i in range(len(c))]
    return first, int(np.argmax(second_obj))


vec = st.lists(st.floats(-1, 1, allow_nan=False).filter(lambda x: abs(x) > 1e-3), min_size=3, max_size=3)


@settings(max_examples=60)
@given(vec, st.lists(vec, min_size=2, max_size=8), st.floats(0, 1), st.integers(1, 10))
def test_mmr_select_is_a_greedy_diverse_choice(query, vectors, lam, k):
    picked = mmr_select(query, vectors, k, lam)
    idx = [i for i, _ in picked]
    assert len(idx) == min(k, len(vectors)) and len(set(idx)) == len(idx)
    q = np.asarray(query) / np.linalg.norm(query)
    for i, score in picked:  # scores are cosine similarities to the query
        v = np.asarray(vectors[i]) / np.linalg.norm(vectors[i])
        assert score == pytest.approx(float(v @ q), abs=1e-9)
    if k >= 2:
        first, second = _brute_force_first_two(query, vectors, lam)
        rel = [float((np.asarray(v) / np.linalg.norm(v)) @ q) for v in vectors]
        assert rel[idx[0]] == pytest.approx(rel[first])
        assert idx[1] == second or rel[idx[1]] == pytest.approx(rel[second])


def test_threshold_one_is_plain_relevance_and_lower_prefers_diversity():
    query = [1.0, 0.0]
    vectors = [[1.0, 0.01], [1.0, 0.02], [0.7, 0.7]]  # two near-duplicates and one different
    assert [i for i, _ in mmr_select(query, vectors, 2, 1.0)] == [0, 1]
    assert [i for i, _ in mmr_select(query, vectors, 2, 0.3)] == [0, 2]
    with pytest.raises(ValueError, match="mmr_threshold"):
        mmr_select(query, vectors, 2, 1.5)
    with pytest.raises(ValueError, match="top_k"):
        mmr_select(query, vectors, 0)


TEXTS = [
    "Green tea is brewed with water at about eighty degrees Celsius.",
    "Green tea is brewed with water at roughly eighty degrees Celsius.",
    "Green tea should be brewed with water of about eighty degrees.",
    "Black tea needs boiling water and steeps for four minutes.",
    "A flat bicycle tire is fixed by patching the inner tube.",
]


def test_mmr_mode_on_a_real_index_skips_near_duplicates():
    index = VectorStoreIndex([TextNode(id_=str(i), text=t) for i, t in enumerate(TEXTS)])
    dense = index.as_retriever(similarity_top_k=2, vector_store_query_mode="default").retrieve("how to brew green tea")
    assert {n.node.node_id for n in dense} <= {"0", "1", "2"}  # plain similarity: two near-duplicates
    diverse = index.as_retriever(
        similarity_top_k=2, vector_store_query_mode="mmr", vector_store_kwargs={"mmr_threshold": 0.3}
    ).retrieve("how to brew green tea")
    ids = [n.node.node_id for n in diverse]
    assert ids[0] in {"0", "1", "2"} and ids[1] not in {"0", "1", "2"}
    assert diverse[0].score == pytest.approx(dense[0].score, abs=1e-5)  # scores stay cosine
    same = index.as_retriever(similarity_top_k=2, vector_store_query_mode="mmr", mmr_threshold=1.0).retrieve(
        "how to brew green tea"
    )
    assert [n.node.node_id for n in same] == [n.node.node_id for n in dense]
    with pytest.raises(ValueError, match="vector_store_kwargs"):
        index.as_retriever(vector_store_query_mode="mmr", vector_store_kwargs={"mmr_treshold": 0.3})
    with pytest.raises(ValueError, match="mmr_threshold"):
        index.as_retriever(vector_store_query_mode="mmr", mmr_threshold=-0.1)
