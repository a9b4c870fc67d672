"""Reusable conformance tests for the ``VectorStore`` protocol.

Plug a backend in by subclassing :class:`VectorStoreConformance` in a ``test_*.py``
module and defining a ``store`` fixture that yields a fresh, empty store.  To also
run the cross-process persistence test, override :meth:`persist_writer_code`
(source code of a script that writes ``nodes.json``'s nodes into the store at
``path``) and :meth:`open_persisted` (reopen it in the test process).

Expected results are computed independently in Python/numpy: rankings by
brute-force cosine similarity, filters by plain predicates written per case.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest

from ragloom.schema import BaseNode, NodeRelationship, RelatedNodeInfo, TextNode
from ragloom.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

DIM = 16
N_NODES = 60
NODES_PER_DOC = 4
COLORS = ("red", "green", "blue")


def make_nodes(n: int = N_NODES, dim: int = DIM, seed: int = 0) -> List[TextNode]:
    """``n`` nodes with random embeddings, ``NODES_PER_DOC`` per source document, and varied metadata."""
    rng = np.random.default_rng(seed)
    emb = rng.standard_normal((n, dim)).astype(np.float32)
    nodes = []
    for i in range(n):
        meta: Dict[str, Any] = {
            "i": i,
            "score": round(i / 10, 1),
            "color": COLORS[i % 3],
            "flag": i % 2 == 0,
            "tags": [t for t, keep in (("alpha", i % 2 == 0), ("beta", i % 3 == 0), ("gamma", i % 5 == 0)) if keep],
            "title": f"Chapter {i} of The {'Long' if i % 4 == 0 else 'short'} Road",
        }
        if i % 4 == 0:
            meta["opt"] = i
        nodes.append(
            TextNode(
                id_=f"node-{i:03d}",
                text=f"text of node {i}",
                embedding=emb[i].tolist(),
                metadata=meta,
                relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=f"doc-{i // NODES_PER_DOC}")},
            )
        )
    return nodes


def bulk_add_check(store: Any, n: int = 100_000, dim: int = 384) -> None:
    """Add ``n`` random ``dim``-d nodes (10 per source document) to the empty ``store`` in one
    call, then check a top-10 query, a selective filter (exactly the 10 rows of one document),
    a delete by ``ref_doc_id`` and the count.  Behaviour only: the time these take is measured
    by ``benchmarks/sqlite_bulk_add.py``, not asserted (wall time depends on the machine's load)."""
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((n, dim)).astype(np.float32)
    emb_lists = emb.tolist()
    nodes = [
        TextNode(
            id_=f"n{i}",
            text="lorem ipsum " * 40,
            embedding=emb_lists[i],
            metadata={"doc": f"d{i // 10}", "chunk": i % 10},
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=f"d{i // 10}")},
        )
        for i in range(n)
    ]
    q = emb[123].tolist()
    store.add(nodes)
    result = store.query(VectorStoreQuery(query_embedding=q, similarity_top_k=10))
    doc_12 = MetadataFilters([MetadataFilter("doc", "d12")])
    filtered = store.query(VectorStoreQuery(query_embedding=q, similarity_top_k=10, filters=doc_12))
    store.delete("d5")
    assert result.ids[0] == "n123"
    # a selective filter returns every match (Milvus Lite returned 0 of 10 here)
    assert filtered.ids[0] == "n123" and sorted(filtered.ids) == sorted(f"n{i}" for i in range(120, 130))
    assert store.count() == n - 10


def cosine_ranking(nodes: Sequence[BaseNode], query: Sequence[float]) -> List[Tuple[str, float]]:
    """Reference ranking: (node_id, cosine similarity), best first."""
    if not nodes:
        return []
    m = np.ascontiguousarray(np.asarray([n.embedding for n in nodes], dtype=np.float64))
    q = np.asarray(query, dtype=np.float64)
    sims = (m @ q) / (np.linalg.norm(m, axis=1) * np.linalg.norm(q))
    order = np.argsort(-sims, kind="stable")
    return [(nodes[i].node_id, float(sims[i])) for i in order]


F = MetadataFilter
FS = MetadataFilters
AND, OR = FilterCondition.AND, FilterCondition.OR

#: (case id, filters, predicate over metadata) — every operator, plus nested groups
FILTER_CASES: List[Tuple[str, MetadataFilters, Callable[[Dict[str, Any]], bool]]] = [
    ("eq_str", FS([F("color", "red")]), lambda m: m["color"] == "red"),
    ("eq_int", FS([F("i", 7, FilterOperator.EQ)]), lambda m: m["i"] == 7),
    ("eq_bool", FS([F("flag", True)]), lambda m: m["flag"] is True),
    ("ne", FS([F("color", "red", FilterOperator.NE)]), lambda m: m["color"] != "red"),
    ("ne_missing_key", FS([F("opt", 8, "!=")]), lambda m: "opt" in m and m["opt"] != 8),
    ("gt", FS([F("i", 50, FilterOperator.GT)]), lambda m: m["i"] > 50),
    ("lt_float", FS([F("score", 0.5, FilterOperator.LT)]), lambda m: m["score"] < 0.5),
    ("gte", FS([F("i", 50, FilterOperator.GTE)]), lambda m: m["i"] >= 50),
    ("lte", FS([F("score", 1.0, FilterOperator.LTE)]), lambda m: m["score"] <= 1.0),
    ("gt_str", FS([F("color", "green", FilterOperator.GT)]), lambda m: m["color"] > "green"),
    ("in", FS([F("color", ["red", "blue"], FilterOperator.IN)]), lambda m: m["color"] in ("red", "blue")),
    ("in_int", FS([F("i", [1, 2, 3, 99], FilterOperator.IN)]), lambda m: m["i"] in (1, 2, 3)),
    ("nin", FS([F("color", ["red", "blue"], FilterOperator.NIN)]), lambda m: m["color"] not in ("red", "blue")),
    ("nin_missing_key", FS([F("opt", [0, 4], "nin")]), lambda m: "opt" in m and m["opt"] not in (0, 4)),
    ("contains_list", FS([F("tags", "beta", FilterOperator.CONTAINS)]), lambda m: "beta" in m["tags"]),
    # LlamaIndex's any / all / is_empty (a scalar value is no list: any / all never match it)
    ("any_list", FS([F("tags", ["beta", "zeta"], FilterOperator.ANY)]), lambda m: "beta" in m["tags"]),
    ("all_list", FS([F("tags", ["alpha", "beta"], "all")]), lambda m: {"alpha", "beta"} <= set(m["tags"])),
    ("any_scalar", FS([F("color", ["red"], "any")]), lambda m: False),
    ("is_empty", FS([F("tags", None, FilterOperator.IS_EMPTY)]), lambda m: not m["tags"]),
    ("is_empty_missing_key", FS([F("opt", None, "is_empty")]), lambda m: "opt" not in m),
    ("text_match", FS([F("title", "long", FilterOperator.TEXT_MATCH)]), lambda m: "long" in m["title"].lower()),
    ("missing_key", FS([F("nope", 1)]), lambda m: False),
    (
        "and",
        FS([F("color", "red"), F("i", 30, FilterOperator.GT)], condition=AND),
        lambda m: m["color"] == "red" and m["i"] > 30,
    ),
    (
        "or",
        FS([F("color", "red"), F("i", 30, FilterOperator.GT)], condition=OR),
        lambda m: m["color"] == "red" or m["i"] > 30,
    ),
    (
        "nested_and_of_or",
        FS(
            [
                FS([F("color", "red"), F("color", "blue")], condition=OR),
                FS([F("flag", True), F("tags", "gamma", "contains")], condition=OR),
                F("i", 10, ">="),
            ],
            condition=AND,
        ),
        lambda m: m["color"] in ("red", "blue") and (m["flag"] or "gamma" in m["tags"]) and m["i"] >= 10,
    ),
    (
        "nested_or_of_and",
        FS(
            [
                FS([F("color", "green"), F("i", 10, "<")], condition=AND),
                FS([F("title", "LONG", "text_match"), F("score", 5.0, ">")], condition=AND),
            ],
            condition=OR,
        ),
        lambda m: (m["color"] == "green" and m["i"] < 10) or ("long" in m["title"].lower() and m["score"] > 5.0),
    ),
    ("empty_group", FS([]), lambda m: True),
]


class VectorStoreConformance:
    """Protocol tests; subclasses provide the ``store`` fixture (a fresh, empty store)."""

    #: similarity tolerance between the store and float64 numpy
    atol = 1e-4

    # -- hooks for the cross-process test -------------------------------------------------
    def persist_writer_code(self, path: Path) -> Optional[str]:
        """Python source that reads ``nodes.json`` (node JSON lines) from the cwd and stores them at ``path``."""
        return None

    def open_persisted(self, path: Path) -> Any:
        raise NotImplementedError

    # -- helpers --------------------------------------------------------------------------
    @staticmethod
    def _query(store: Any, embedding: Sequence[float], k: int, **kw: Any):
        return store.query(VectorStoreQuery(query_embedding=list(embedding), similarity_top_k=k, **kw))

    def _assert_ranking(self, result: Any, expected: List[Tuple[str, float]]) -> None:
        assert result.ids == [i for i, _ in expected]
        np.testing.assert_allclose(result.similarities, [s for _, s in expected], atol=self.atol)
        assert list(result.similarities) == sorted(result.similarities, reverse=True)
        if getattr(result, "nodes", None) is not None:
            assert [n.node_id for n in result.nodes] == result.ids

    # -- tests ------------------------------------------------------------------------------
    def test_add_returns_ids_and_query_top_k(self, store: Any) -> None:
        nodes = make_nodes()
        assert store.add(nodes) == [n.node_id for n in nodes]
        rng = np.random.default_rng(1)
        for _ in range(5):
            q = rng.standard_normal(DIM)
            for k in (1, 5, 10):
                self._assert_ranking(self._query(store, q, k), cosine_ranking(nodes, q)[:k])

    def test_query_own_vector_scores_one(self, store: Any) -> None:
        nodes = make_nodes()
        store.add(nodes)
        result = self._query(store, nodes[17].embedding, 1)
        assert result.ids == [nodes[17].node_id]
        assert result.similarities[0] == pytest.approx(1.0, abs=1e-5)

    def test_query_returns_full_nodes(self, store: Any) -> None:
        if not store.stores_text:
            pytest.skip("store does not keep node text")
        nodes = make_nodes()
        store.add(nodes)
        result = self._query(store, nodes[3].embedding, 1)
        got = result.nodes[0]
        assert got.node_id == nodes[3].node_id
        assert got.get_content() == nodes[3].get_content()
        assert got.metadata == nodes[3].metadata
        assert got.ref_doc_id == nodes[3].ref_doc_id

    def test_top_k_larger_than_store(self, store: Any) -> None:
        nodes = make_nodes(8)
        store.add(nodes)
        q = nodes[0].embedding
        self._assert_ranking(self._query(store, q, 50), cosine_ranking(nodes, q))

    def test_query_empty_store(self, store: Any) -> None:
        result = self._query(store, [0.1] * DIM, 3)
        assert list(result.ids or []) == []

    @pytest.mark.parametrize("case", FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
    def test_metadata_filters(self, store: Any, case: Any) -> None:
        _, filters, predicate = case
        nodes = make_nodes()
        store.add(nodes)
        expected_nodes = [n for n in nodes if predicate(n.metadata)]
        q = np.random.default_rng(2).standard_normal(DIM)
        # every match, ranked
        result = self._query(store, q, N_NODES, filters=filters)
        self._assert_ranking(result, cosine_ranking(expected_nodes, q))
        # a top-k smaller than the matches is the best k of the matches, not a post-filtered top-k
        result = self._query(store, q, 3, filters=filters)
        self._assert_ranking(result, cosine_ranking(expected_nodes, q)[:3])
        # the same filter selects the same nodes for get_nodes
        got = store.get_nodes(filters=filters)
        assert sorted(n.node_id for n in got) == sorted(n.node_id for n in expected_nodes)

    def test_doc_ids_and_node_ids_restrict_query(self, store: Any) -> None:
        nodes = make_nodes()
        store.add(nodes)
        q = np.random.default_rng(3).standard_normal(DIM)
        docs = {"doc-1", "doc-5"}
        result = self._query(store, q, 10, doc_ids=sorted(docs))
        self._assert_ranking(result, cosine_ranking([n for n in nodes if n.ref_doc_id in docs], q))
        ids = [nodes[i].node_id for i in (0, 9, 33, 47)]
        result = self._query(store, q, 10, node_ids=ids)
        self._assert_ranking(result, cosine_ranking([n for n in nodes if n.node_id in ids], q))

    def test_delete_by_ref_doc_id(self, store: Any) -> None:
        nodes = make_nodes()
        store.add(nodes)
        store.delete("doc-2")
        remaining = [n for n in nodes if n.ref_doc_id != "doc-2"]
        q = nodes[2 * NODES_PER_DOC].embedding  # a node of doc-2
        self._assert_ranking(self._query(store, q, N_NODES), cosine_ranking(remaining, q))
        store.delete("doc-does-not-exist")  # no error
        assert len(store.get_nodes()) == len(remaining)

    def test_delete_nodes_by_id_and_filter(self, store: Any) -> None:
        nodes = make_nodes()
        store.add(nodes)
        store.delete_nodes(node_ids=[nodes[0].node_id, nodes[1].node_id])
        store.delete_nodes(filters=MetadataFilters([MetadataFilter("color", "blue")]))
        remaining = {n.node_id for n in nodes[2:] if n.metadata["color"] != "blue"}
        assert {n.node_id for n in store.get_nodes()} == remaining
        # ids and filters together: only nodes matching both
        store.delete_nodes(node_ids=[nodes[3].node_id, nodes[4].node_id], filters=MetadataFilters([F("flag", True)]))
        remaining.discard(nodes[4].node_id)
        assert {n.node_id for n in store.get_nodes()} == remaining

    def test_get_nodes_by_id(self, store: Any) -> None:
        nodes = make_nodes()
        store.add(nodes)
        wanted = [nodes[9].node_id, "missing", nodes[2].node_id]
        got = store.get_nodes(node_ids=wanted)
        assert [n.node_id for n in got] == [nodes[9].node_id, nodes[2].node_id]
        assert got[0].metadata == nodes[9].metadata
        if got[0].embedding is not None:
            np.testing.assert_allclose(got[0].embedding, nodes[9].embedding, rtol=1e-6)

    def test_add_replaces_same_node_id(self, store: Any) -> None:
        nodes = make_nodes(10)
        store.add(nodes)
        new = TextNode(id_=nodes[0].node_id, text="replaced", embedding=nodes[5].embedding, metadata={"v": 2})
        store.add([new])
        assert len(store.get_nodes()) == 10
        result = self._query(store, nodes[5].embedding, 2)
        assert set(result.ids) == {nodes[0].node_id, nodes[5].node_id}
        got = store.get_nodes(node_ids=[nodes[0].node_id])[0]
        assert got.metadata == {"v": 2}
        if store.stores_text:
            assert got.get_content() == "replaced"

    def test_wrong_dimension_raises_naming_node(self, store: Any) -> None:
        store.add(make_nodes(4))
        bad = TextNode(id_="bad-node", text="x", embedding=[0.1] * (DIM + 1))
        with pytest.raises(ValueError, match="bad-node"):
            store.add([bad])
        with pytest.raises(ValueError):
            self._query(store, [0.1] * (DIM - 1), 1)
        assert len(store.get_nodes()) == 4

    def test_mixed_dimensions_in_first_add_raise(self, store: Any) -> None:
        nodes = make_nodes(3)
        nodes.append(TextNode(id_="odd-one", text="x", embedding=[0.3] * (DIM + 2)))
        with pytest.raises(ValueError, match="odd-one"):
            store.add(nodes)
        assert store.get_nodes() == []

    def test_missing_embedding_raises_naming_node(self, store: Any) -> None:
        nodes = make_nodes(3) + [TextNode(id_="no-embedding", text="x")]
        with pytest.raises(ValueError, match="no-embedding"):
            store.add(nodes)
        assert store.get_nodes() == []  # nothing of the failed batch was written

    def test_clear(self, store: Any) -> None:
        store.add(make_nodes(10))
        store.clear()
        assert store.get_nodes() == []
        assert list(self._query(store, [0.2] * DIM, 3).ids or []) == []

    def test_async_methods_delegate(self, store: Any) -> None:
        import asyncio

        nodes = make_nodes(10)

        async def run() -> Any:
            await store.async_add(nodes)
            await store.adelete("doc-0")
            return await store.aquery(VectorStoreQuery(query_embedding=nodes[5].embedding, similarity_top_k=1))

        result = asyncio.run(run())
        assert result.ids == [nodes[5].node_id]
        assert len(store.get_nodes()) == 10 - NODES_PER_DOC

    def test_persistence_across_processes(self, tmp_path: Path) -> None:
        target = tmp_path / "store"
        code = self.persist_writer_code(target)
        if code is None:
            pytest.skip("store has no cross-process persistence hook")
        nodes = make_nodes()
        (tmp_path / "nodes.json").write_text("\n".join(n.to_json() for n in nodes), encoding="utf-8")
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        assert proc.returncode == 0, proc.stderr
        store = self.open_persisted(target)
        q = np.random.default_rng(4).standard_normal(DIM)
        self._assert_ranking(self._query(store, q, 7), cosine_ranking(nodes, q)[:7])
        flt = FILTER_CASES[0]
        got = store.get_nodes(filters=flt[1])
        assert sorted(n.node_id for n in got) == sorted(n.node_id for n in nodes if flt[2](n.metadata))
