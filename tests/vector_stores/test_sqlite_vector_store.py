"""The default store (SQLite + sqlite-vec) against the conformance suite, plus its own guarantees."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from vector_store_conformance import (
    DIM,
    FILTER_CASES,
    VectorStoreConformance,
    bulk_add_check,
    cosine_ranking,
    make_nodes,
)

from ragloom.schema import TextNode
from ragloom.storage.sqlite import SQLiteDatabase
from ragloom.vector_stores import (
    MetadataFilter,
    MetadataFilters,
    SimpleVectorStore,
    SQLiteVectorStore,
    VectorStore,
    VectorStoreQuery,
    metadata_matches,
)
from ragloom.vector_stores import sqlite as sqlite_module


def _sub_env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


class TestSQLiteVectorStoreInMemory(VectorStoreConformance):
    @pytest.fixture
    def store(self) -> Any:
        return SQLiteVectorStore()

    def persist_writer_code(self, path: Path) -> str:
        return f"""
            from ragloom.schema import node_from_json
            from ragloom.vector_stores import SQLiteVectorStore
            store = SQLiteVectorStore()
            store.add([node_from_json(line) for line in open("nodes.json", encoding="utf-8")])
            store.persist({str(path / "ragloom.sqlite")!r})
        """

    def open_persisted(self, path: Path) -> Any:
        return SQLiteVectorStore.from_persist_dir(path)


class TestSQLiteVectorStoreOnFile(VectorStoreConformance):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Any:
        db = SQLiteDatabase(tmp_path / "ragloom.sqlite")
        yield SQLiteVectorStore(db)
        db.close()

    def persist_writer_code(self, path: Path) -> str:
        # writes straight into the file and is killed without closing: committed data must survive
        return f"""
            import os, signal
            from pathlib import Path
            from ragloom.schema import node_from_json
            from ragloom.storage.sqlite import SQLiteDatabase
            from ragloom.vector_stores import SQLiteVectorStore
            Path({str(path)!r}).mkdir()
            store = SQLiteVectorStore(SQLiteDatabase({str(path / "ragloom.sqlite")!r}))
            store.add([node_from_json(line) for line in open("nodes.json", encoding="utf-8")])
            os.kill(os.getpid(), signal.SIGKILL)
        """

    def test_persistence_across_processes(self, tmp_path: Path) -> None:
        # the writer dies by SIGKILL: returncode is -9, so check the data rather than the exit code
        target = tmp_path / "store"
        nodes = make_nodes()
        (tmp_path / "nodes.json").write_text("\n".join(n.to_json() for n in nodes), encoding="utf-8")
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(self.persist_writer_code(target))],
            cwd=tmp_path, capture_output=True, text=True, timeout=120, env=_sub_env(),
        )
        assert proc.returncode == -9, proc.stderr
        store = self.open_persisted(target)
        q = np.random.default_rng(4).standard_normal(DIM)
        self._assert_ranking(self._query(store, q, 7), cosine_ranking(nodes, q)[:7])

    def open_persisted(self, path: Path) -> Any:
        return SQLiteVectorStore.from_persist_dir(path)


def test_protocol_names() -> None:
    assert SimpleVectorStore is SQLiteVectorStore
    store = SQLiteVectorStore()
    assert isinstance(store, VectorStore)
    assert store.stores_text is True and store.is_embedding_query is True
    assert store.client is store.database.connection


@pytest.mark.parametrize("case", FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_python_filter_evaluator_agrees_with_sql(case: Any) -> None:
    _, filters, predicate = case
    nodes = make_nodes()
    assert [metadata_matches(n.metadata, filters) for n in nodes] == [bool(predicate(n.metadata)) for n in nodes]


def test_filter_value_types_are_checked() -> None:
    store = SQLiteVectorStore()
    store.add(make_nodes(4))
    with pytest.raises(ValueError):
        MetadataFilter("color", "red", "in")  # in needs a list
    with pytest.raises(ValueError):
        store.get_nodes(filters=MetadataFilters([MetadataFilter("color", {"a": 1})]))
    with pytest.raises(ValueError):
        MetadataFilter("color", "red", "like")


def test_keys_with_dots_and_unicode() -> None:
    store = SQLiteVectorStore()
    nodes = make_nodes(4)
    for i, n in enumerate(nodes):
        n.metadata = {"file.name": f"章节{i}.md", "作者": "曹雪芹" if i % 2 else "x"}
    store.add(nodes)
    got = store.get_nodes(filters=MetadataFilters([MetadataFilter("file.name", "章节2.md")]))
    assert [n.node_id for n in got] == [nodes[2].node_id]
    got = store.get_nodes(filters=MetadataFilters([MetadataFilter("作者", "雪", "text_match")]))
    assert [n.node_id for n in got] == [nodes[1].node_id, nodes[3].node_id]


def test_query_mode_and_missing_embedding() -> None:
    store = SQLiteVectorStore()
    store.add(make_nodes(4))
    with pytest.raises(ValueError):
        store.query(VectorStoreQuery(query_embedding=[0.1] * DIM, mode="hybrid"))
    with pytest.raises(ValueError):
        store.query(VectorStoreQuery(query_embedding=None))


def test_top_k_beyond_vec0_limit_uses_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_module, "_VEC0_MAX_K", 5)
    store = SQLiteVectorStore()
    nodes = make_nodes()
    store.add(nodes)
    q = np.random.default_rng(9).standard_normal(DIM)
    for filters in (None, FILTER_CASES[0][1]):
        expected = cosine_ranking([n for n in nodes if filters is None or n.metadata["color"] == "red"], q)[:12]
        result = store.query(VectorStoreQuery(query_embedding=q.tolist(), similarity_top_k=12, filters=filters))
        assert result.ids == [i for i, _ in expected]
        np.testing.assert_allclose(result.similarities, [s for _, s in expected], atol=1e-4)


def test_dimension_recorded_and_reset_by_clear(tmp_path: Path) -> None:
    db = SQLiteDatabase(tmp_path / "ragloom.sqlite")
    store = SQLiteVectorStore(db)
    assert store.dimension is None
    store.add(make_nodes(3))
    assert store.dimension == DIM
    db.close()
    reopened = SQLiteVectorStore.from_persist_path(tmp_path / "ragloom.sqlite")
    assert reopened.dimension == DIM
    reopened.clear()
    reopened.add([TextNode(id_="n", text="t", embedding=[1.0, 0.0, 0.0])])
    assert reopened.dimension == 3


def test_collections_are_independent() -> None:
    db = SQLiteDatabase()
    a = SQLiteVectorStore(db, collection="a")
    b = SQLiteVectorStore(db, collection="b")
    a.add(make_nodes(5))
    b.add([TextNode(id_="x", text="t", embedding=[1.0, 0.0])])
    assert len(a) == 5 and len(b) == 1
    with pytest.raises(ValueError):
        SQLiteVectorStore(db, collection="bad name;")


def test_failed_add_inside_outer_transaction_rolls_back_everything() -> None:
    db = SQLiteDatabase()
    store = SQLiteVectorStore(db)
    store.add(make_nodes(4))
    with pytest.raises(RuntimeError):
        with db.transaction():
            store.add(make_nodes(8, seed=5)[4:])
            store.delete("doc-0")
            raise RuntimeError("crash before commit")
    assert sorted(n.node_id for n in store.get_nodes()) == [f"node-{i:03d}" for i in range(4)]


def test_two_processes_write_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "ragloom.sqlite"
    SQLiteVectorStore(SQLiteDatabase(path)).add(make_nodes(1))  # fix the dimension first
    code = textwrap.dedent(
        f"""
        import sys, numpy as np
        from ragloom.schema import TextNode
        from ragloom.storage.sqlite import SQLiteDatabase
        from ragloom.vector_stores import SQLiteVectorStore
        w = int(sys.argv[1])
        store = SQLiteVectorStore(SQLiteDatabase({str(path)!r}))
        rng = np.random.default_rng(w)
        for b in range(20):
            store.add([TextNode(id_=f"w{{w}}-{{b}}-{{i}}", text="t", embedding=rng.standard_normal({DIM}).tolist())
                       for i in range(25)])
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(w)], env=_sub_env(), stderr=subprocess.PIPE) for w in (1, 2)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    store = SQLiteVectorStore.from_persist_path(path)
    nodes = store.get_nodes()
    assert len(nodes) == 1 + 2 * 20 * 25
    for n in nodes[::50]:  # each vector is found by itself
        assert store.query(VectorStoreQuery(query_embedding=n.embedding, similarity_top_k=1)).ids == [n.node_id]


def test_bulk_add_100k_384d(tmp_path: Path) -> None:
    """100k × 384-d nodes in one add (timed by benchmarks/sqlite_bulk_add.py, not here)."""
    db = SQLiteDatabase(tmp_path / "ragloom.sqlite")
    bulk_add_check(SQLiteVectorStore(db))
    db.close()


def test_a_path_instead_of_a_database_is_a_clear_type_error(tmp_path) -> None:
    """``SQLiteVectorStore("v.sqlite")`` failed later with "'str' object has no attribute 'transaction'"."""
    from ragloom.vector_stores.sqlite import SQLiteVectorStore

    with pytest.raises(TypeError, match=r"database must be a SQLiteDatabase, got str .*from_persist_path"):
        SQLiteVectorStore(str(tmp_path / "v.sqlite"))  # type: ignore[arg-type]
    assert not (tmp_path / "v.sqlite").exists()


def test_any_all_is_empty_from_json_and_their_values_checked() -> None:
    """LlamaIndex's ``any`` / ``all`` / ``is_empty`` operators, as the HTTP API's JSON gives them."""
    from ragloom.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

    got = MetadataFilters.from_dict({"filters": [{"key": "tags", "operator": "any", "value": ["a", "b"]},
                                                 {"key": "opt", "operator": "is_empty"}]})
    assert [(f.operator, f.value) for f in got.filters] == [(FilterOperator.ANY, ["a", "b"]),
                                                            (FilterOperator.IS_EMPTY, None)]
    for bad in ("a", [], None):
        with pytest.raises(ValueError, match="non-empty list"):
            MetadataFilter("tags", bad, "all")
