"""The SQLite store's metadata index (``ragloom.vector_stores.metadata_index``): the table always holds
exactly what ``json_extract`` reads, a filter answered through it selects exactly the rows the per-row
SQL selects (every operator, nested groups, odd values), the ANN tier scores a selective filter's rows
exactly, and a database written before the index existed keeps working and is indexed by optimize()."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator, List
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from vector_store_conformance import VectorStoreConformance, cosine_ranking, make_nodes

from ragloom.schema import TextNode
from ragloom.storage.sqlite import SQLiteDatabase
from ragloom.vector_stores import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    SQLiteVectorStore,
    VectorStoreQuery,
)
from ragloom.vector_stores import metadata_index as mi
from ragloom.vector_stores.ann import AnnSearcher

DIM = 8
KEYS = ["a", "b", "c", "flag", "x.y"]
LONG = "w" * (mi.MAX_TEXT_CHARS + 1)
SCALARS = [0, 1, 2, -3, 7, 1.0, 2.5, -0.5, True, False, "", "x", "y", "X", "[1]", '["x"]', LONG,
           "z" * mi.MAX_TEXT_CHARS]
VALUES = st.one_of(st.none(), st.sampled_from(SCALARS), st.integers(-4, 4), st.floats(-4, 4, allow_nan=False),
                   st.lists(st.sampled_from([1, "x", True]), max_size=2),
                   st.dictionaries(st.sampled_from(["p", "q"]), st.integers(0, 2), max_size=1))
METADATA = st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=4)


@contextlib.contextmanager
def always_driven() -> Iterator[None]:
    """Drive every filter the index can answer through it, whatever it matches."""
    with mock.patch.object(mi, "DRIVE_FRACTION", 1.0):
        yield


def _leaf() -> Any:
    def build(key: str, op: str, data: Any) -> MetadataFilter:
        if op in ("in", "nin", "any", "all"):
            return MetadataFilter(key, data, op)
        if op == "text_match":
            return MetadataFilter(key, "x" if not isinstance(data[0], str) else data[0], op)
        return MetadataFilter(key, data[0], op)

    return st.builds(build, st.sampled_from(KEYS), st.sampled_from([op.value for op in FilterOperator]),
                     st.lists(st.sampled_from(SCALARS), min_size=1, max_size=3))


FILTERS = st.recursive(
    st.builds(lambda leaves, cond: MetadataFilters(leaves, condition=cond), st.lists(_leaf(), min_size=1, max_size=3),
              st.sampled_from([FilterCondition.AND, FilterCondition.OR])),
    lambda inner: st.builds(lambda kids, cond: MetadataFilters(kids, condition=cond),
                            st.lists(st.one_of(inner, _leaf()), min_size=1, max_size=3),
                            st.sampled_from([FilterCondition.AND, FilterCondition.OR])),
    max_leaves=6,
)


def _nodes(metas: List[dict], seed: int = 0, prefix: str = "n") -> List[TextNode]:
    rng = np.random.default_rng(seed)
    return [TextNode(id_=f"{prefix}{i}", text=f"text {i}", metadata=m, embedding=rng.standard_normal(DIM).tolist())
            for i, m in enumerate(metas)]


def _ids(store: SQLiteVectorStore, sql: str, params: List[Any]) -> List[int]:
    return sorted(r[0] for r in store.client.execute(sql, params).fetchall())


def _unindexed(store: SQLiteVectorStore) -> SQLiteVectorStore:
    """Another store object on the same database that does not see the metadata index."""
    other = SQLiteVectorStore(store.database, ann=store.ann, memory_search=store.memory_search)
    other._meta_index = "vs_no_such_table"
    return other


def _expected_index(store: SQLiteVectorStore) -> List[tuple]:
    rows = store.client.execute(
        f'SELECT j.key, j.value, n.id FROM "{store._nodes}" AS n, json_each(n.metadata) AS j '
        f"WHERE {mi._INDEXED} ORDER BY 1, 2, 3").fetchall()
    for key, value, rowid in rows:  # what json_extract reads, value and type
        got = store.client.execute(f'SELECT json_extract(metadata, ?), typeof(json_extract(metadata, ?)), typeof(?) '
                                   f'FROM "{store._nodes}" WHERE id = ?',
                                   (f'$."{key}"', f'$."{key}"', value, rowid)).fetchall()[0]
        assert got[0] == value and got[1] == got[2]
    return [tuple(r) for r in rows]


def _index(store: SQLiteVectorStore) -> List[tuple]:
    return [tuple(r) for r in store.client.execute(f'SELECT key, value, node_rowid FROM "{store._meta_index}" '
                                                   "ORDER BY 1, 2, 3").fetchall()]


# -- the table --------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(first=st.lists(METADATA, min_size=1, max_size=12),
       ops=st.lists(st.tuples(st.sampled_from(["add", "replace", "delete", "delete_filter", "clear"]),
                              st.lists(METADATA, min_size=1, max_size=4)), max_size=5))
def test_the_index_holds_what_json_extract_reads_after_any_writes(first, ops):
    store = SQLiteVectorStore()
    store.add(_nodes(first))
    assert _index(store) == _expected_index(store)
    for step, (op, metas) in enumerate(ops):
        live = [n.node_id for n in store.get_nodes()]
        if op == "add":
            store.add(_nodes(metas, seed=step, prefix=f"s{step}-"))
        elif op == "replace" and live:
            store.add([TextNode(id_=i, text="again", metadata=m, embedding=[1.0] * DIM)
                       for i, m in zip(live, metas, strict=False)])
        elif op == "delete" and live:
            store.delete_nodes(node_ids=live[: len(metas)])
        elif op == "delete_filter":
            with always_driven():
                store.delete_nodes(filters=MetadataFilters([MetadataFilter("a", [0, 1, "x"], "in")]))
        elif op == "clear":
            store.clear()
        assert _index(store) == _expected_index(store), op


# -- filters through the index = filters row by row ------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(metas=st.lists(METADATA, min_size=1, max_size=40), filters=FILTERS)
def test_indexed_filters_select_exactly_what_per_row_filters_select(metas, filters):
    store = SQLiteVectorStore()
    store.add(_nodes(metas))
    plain = _unindexed(store)
    try:
        base = plain._restrict(filters=filters)
    except ValueError:  # a value the compiler refuses: refused through the index too
        with always_driven(), pytest.raises(ValueError):
            store._restrict(filters=filters)
        return
    want = _ids(store, f'SELECT n.id FROM "{store._nodes}" AS n WHERE {base.where}', base.params)
    assert base.rows is None and _ids(store, base.ids_sql, base.ids_params) == want
    with always_driven():
        plan = store._restrict(filters=filters)
    assert _ids(store, f'SELECT n.id FROM "{store._nodes}" AS n WHERE {plan.set_where}', plan.set_params) == want
    assert _ids(store, plan.ids_sql, plan.ids_params) == want
    if plan.rows is not None:  # driven: the count is an upper bound of the matches
        assert plan.rows >= len(want)
    # and through the public API: dense (exact) and keyword queries, get_nodes
    q = VectorStoreQuery(query_embedding=[0.3] * DIM, similarity_top_k=50, filters=filters)
    with always_driven():
        got, nodes = store.query(q), store.get_nodes(filters=filters)
    assert got.ids == plain.query(q).ids
    assert sorted(n.node_id for n in nodes) == sorted(n.node_id for n in plain.get_nodes(filters=filters))
    kq = VectorStoreQuery(query_str="text", similarity_top_k=50, filters=filters, mode="text_search")
    with always_driven():
        assert store.query(kq).ids == plain.query(kq).ids


class TestConformanceAlwaysDriven(VectorStoreConformance):
    """Every filter the index can answer goes through it (on a file, with the ANN tier on)."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> Any:
        db = SQLiteDatabase(tmp_path / "ragloom.sqlite")
        with always_driven():
            yield SQLiteVectorStore(db, ann_threshold=0, memory_search=True)
        db.close()


def test_what_is_driven(tmp_path):
    store = SQLiteVectorStore()
    store.add(_nodes([{"g": i % 100, "h": i % 10, "s": f"s{i % 100}", "long": LONG} for i in range(2000)]))
    F, FS = MetadataFilter, MetadataFilters

    def plan(filters, **kw):
        return store._restrict(filters=filters, **kw)

    assert plan(FS([F("g", 7)])).rows == 20  # 1%: driven, counted exactly
    assert plan(FS([F("g", [7, 8], "in")])).rows == 40
    assert plan(FS([F("g", 3, "<")])).rows == 60
    assert plan(FS([F("g", 97, ">=")])).rows == 60
    assert plan(FS([F("s", "s7")])).rows == 20
    assert plan(FS([F("h", 1)])).rows is None  # 10%: a scan is cheaper
    assert plan(FS([F("g", 50, "<")])).rows is None
    for op in ("!=", "nin", "contains", "text_match"):
        assert plan(FS([F("s", ["s7"] if op == "nin" else "s7", op)])).rows is None
    assert plan(FS([F("s", "s", ">")])).rows is None  # a string range could reach long strings
    assert plan(FS([F("long", LONG)])).rows is None  # too long to be indexed
    # AND: the fewest rows drive, the rest is checked per row; OR: all or nothing
    p = plan(FS([F("h", 1), F("g", 7, "<"), F("g", 11)]))
    assert p.rows == 20 and p.ids_sql.startswith("SELECT n.id") and p.where != p.set_where
    p = plan(FS([F("g", 7), F("g", 8)], condition="or"))
    assert p.rows == 40 and " UNION " in p.ids_sql
    assert plan(FS([F("g", 7), F("h", 1)], condition="or")).rows is None
    # with ids or documents the per-row form is kept (they are small sets with their own indexes)
    assert plan(FS([F("g", 7)]), node_ids=["n7"]).rows is None
    assert plan(FS([F("g", 7)]), doc_ids=["d"]).rows is None


# -- the ANN tier scores a selective filter's rows exactly -----------------------------------------
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(st.sampled_from(["add", "delete", "replace"]), st.integers(1, 12)), max_size=4),
       seed=st.integers(0, 2**16))
def test_a_selective_filter_on_the_ann_tier_is_exact(tmp_path_factory, ops, seed):
    """At most 48 of 1,000 rows change: the generation stays usable, so the ANN tier answers."""
    rng = np.random.default_rng(seed + 2**20)  # not the stream of the first nodes' vectors
    db = SQLiteDatabase(tmp_path_factory.mktemp("sel") / "ragloom.sqlite")
    ann = SQLiteVectorStore(db, ann_threshold=0, memory_search=True)
    exact = SQLiteVectorStore(db, ann=False)
    ann.add(_nodes([{"g": i % 100, "t": f"t{i % 100}"} for i in range(1000)], seed=seed))
    ann.optimize()
    counter = 0
    scored: List[int] = []
    original = AnnSearcher._exact

    def spy(self: AnnSearcher, *args: Any, **kwargs: Any) -> Any:
        scored.append(1)
        return original(self, *args, **kwargs)

    flts = [MetadataFilters([MetadataFilter("g", 7)]),  # 1%: driven by the index
            MetadataFilters([MetadataFilter("t", "T37", "text_match")]),  # 1%, row by row (sampled)
            MetadataFilters([MetadataFilter("g", [1, 2], "in"), MetadataFilter("t", "t1", "!=")])]
    for op, m in [("none", 0), *ops]:
        live = sorted(n.node_id for n in exact.get_nodes(filters=MetadataFilters([MetadataFilter("g", 10, "<")])))
        if op == "add":
            ann.add(_nodes([{"g": int(g), "t": f"t{g}"} for g in rng.integers(0, 10, m)], seed=counter,
                           prefix=f"a{counter}-"))
            counter += 1
        elif op == "delete" and live:
            ann.delete_nodes(node_ids=live[:m])
        elif op == "replace" and live:
            ann.add([TextNode(id_=i, text="new", metadata={"g": int(g), "t": f"t{g}"},
                              embedding=rng.standard_normal(DIM).tolist())
                     for i, g in zip(live[:m], rng.integers(0, 10, m), strict=False)])
        for flt in flts:
            q = rng.standard_normal(DIM).tolist()
            before = len(scored)
            with mock.patch.object(AnnSearcher, "_exact", spy):
                a = ann.query(VectorStoreQuery(query_embedding=q, similarity_top_k=5, filters=flt))
            assert len(scored) == before + 1  # every matching row scored from the generation
            e = exact.query(VectorStoreQuery(query_embedding=q, similarity_top_k=5, filters=flt))
            assert len(a.ids) == len(e.ids)
            np.testing.assert_allclose(a.similarities, e.similarities, atol=1e-5)
            if e.ids:  # the same rows, but for ties with the last one
                last = e.similarities[-1] + 1e-5
                assert {i for i, x in zip(a.ids, a.similarities, strict=True) if x > last} == \
                    {i for i, x in zip(e.ids, e.similarities, strict=True) if x > last}
    db.close()


# -- databases written before the index existed ----------------------------------------------------
def _drop_index(db: SQLiteDatabase, collection: str = "default") -> None:
    table = mi.table_name(collection)
    with db.transaction():
        for event in ("insert", "delete", "update"):
            db.connection.execute(f'DROP TRIGGER "{table}_{event}"')
        db.connection.execute(f'DROP TABLE "{table}"')


def test_an_older_database_answers_and_optimize_indexes_it(tmp_path):
    path = tmp_path / "ragloom.sqlite"
    db = SQLiteDatabase(path)
    nodes = make_nodes()
    SQLiteVectorStore(db).add(nodes)
    _drop_index(db)  # as a database written before the metadata index existed
    db.close()

    db = SQLiteDatabase(path)
    store = SQLiteVectorStore(db)  # opening it does not index it (a reader may open it)
    assert store.index_stats()["metadata_index"] is False
    flt = MetadataFilters([MetadataFilter("i", [3, 5, 8], "in")])
    q = np.random.default_rng(1).standard_normal(16).tolist()
    want = cosine_ranking([n for n in nodes if n.metadata["i"] in (3, 5, 8)], q)
    assert store.query(VectorStoreQuery(query_embedding=q, similarity_top_k=10, filters=flt)).ids == \
        [i for i, _ in want]
    out = store.optimize()
    assert out["metadata_index"]["rows"] == len(_expected_index(store)) > 0
    assert store.index_stats()["metadata_index"] is True and "metadata_index" not in store.optimize()
    assert _index(store) == _expected_index(store)
    plan = store._restrict(filters=flt)
    assert plan.rows == 3 and "metadata_index" in plan.ids_sql
    assert store.query(VectorStoreQuery(query_embedding=q, similarity_top_k=10, filters=flt)).ids == \
        [i for i, _ in want]
    store.add([TextNode(id_="late", text="late", metadata={"i": 5}, embedding=q)])  # kept by the triggers
    got = store.query(VectorStoreQuery(query_embedding=q, similarity_top_k=10, filters=flt))
    assert got.ids[0] == "late" and _index(store) == _expected_index(store)
    db.close()
