"""The approximate-nearest-neighbour tier of ``SQLiteVectorStore``: the conformance suite with it on,
results that never show a deleted or outdated node whatever was changed since the ANN was built, and
fall-backs to exact search for a missing, foreign, damaged or killed-while-building ANN."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from vector_store_conformance import VectorStoreConformance

from ragloom.schema import TextNode
from ragloom.storage.sqlite import SQLiteDatabase
from ragloom.vector_stores import MetadataFilter, MetadataFilters, VectorStoreQuery
from ragloom.vector_stores.ann import ann_dir
from ragloom.vector_stores.sqlite import SQLiteVectorStore

DIM = 16


class _RebuildingStore(SQLiteVectorStore):
    """Builds a new ANN generation after every add (deletes are left to the change log)."""

    def add(self, nodes, **kwargs):
        ids = super().add(nodes, **kwargs)
        self.optimize(force=True)
        return ids


class TestConformanceWithAnn(VectorStoreConformance):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Any:
        db = SQLiteDatabase(tmp_path / "ragloom.sqlite")
        yield _RebuildingStore(db, ann_threshold=0, memory_search=True)
        db.close()


def _nodes(rng, n, prefix="n", group=None):
    return [
        TextNode(id_=f"{prefix}{i}", text=f"text {prefix}{i}",
                 metadata={"g": (i % 10) if group is None else group},
                 embedding=rng.standard_normal(DIM).tolist())
        for i in range(n)
    ]


def _ids(store, q, k, filters=None):
    res = store.query(VectorStoreQuery(query_embedding=list(map(float, q)), similarity_top_k=k, filters=filters))
    return list(res.ids or []), list(res.similarities or [])


def _same(got, want):
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1], atol=1e-5)
    return True


def _recall(ann, exact, seed, queries=20, k=10):
    """Mean top-``k`` overlap of ``ann`` with ``exact`` over random queries; every ANN answer is
    ``k`` long and sorted best first."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(queries):
        q = rng.standard_normal(DIM)
        a, sims = _ids(ann, q, k)
        e, _ = _ids(exact, q, k)
        assert sims == sorted(sims, reverse=True) and len(a) == k
        hits += len(set(a) & set(e))
    return hits / (queries * k)


def _pair(tmp_path, n=400, seed=0):
    db = SQLiteDatabase(tmp_path / "ragloom.sqlite")
    ann = SQLiteVectorStore(db, ann_threshold=0, memory_search=True)
    exact = SQLiteVectorStore(db, ann=False)
    ann.add(_nodes(np.random.default_rng(seed), n))
    return db, ann, exact


def test_the_ann_answers_and_agrees_with_exact_search(tmp_path):
    db, ann, exact = _pair(tmp_path, n=2000)
    built = ann.optimize()
    assert built["ann"] == "built" and built["nodes"] == 2000 and built["nlist"] == 45
    assert _recall(ann, exact, seed=1) >= 0.9  # random 16-d vectors are the hard case; real embeddings cluster
    assert ann._ann._gen is not None  # the answers came from the ANN generation
    assert ann.optimize() == {"ann": "current", "nodes": 2000}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(st.sampled_from(["add", "delete", "replace", "optimize"]), st.integers(1, 30)),
                    min_size=1, max_size=8),
       seed=st.integers(0, 2**16))
def test_changes_after_a_build_are_always_seen(tmp_path_factory, ops, seed):
    """Whatever happens after the ANN was built, a query returns what exact search returns (small
    stores: every inverted list is probed), and never a deleted node or an old vector."""
    tmp = tmp_path_factory.mktemp("ann")
    rng = np.random.default_rng(seed)
    db = SQLiteDatabase(tmp / "ragloom.sqlite")
    ann = SQLiteVectorStore(db, ann_threshold=0, memory_search=True)
    exact = SQLiteVectorStore(db, ann=False)
    ann.add(_nodes(rng, 60))
    ann.optimize(force=True)
    live = {f"n{i}" for i in range(60)}
    counter = 0
    for op, m in ops:
        if op == "add":
            new = _nodes(rng, m, prefix=f"a{counter}-")
            counter += 1
            ann.add(new)
            live |= {n.node_id for n in new}
        elif op == "delete" and live:
            gone = sorted(live)[:m]
            ann.delete_nodes(node_ids=gone)
            live -= set(gone)
        elif op == "replace" and live:
            again = [TextNode(id_=i, text=f"new {i}", embedding=rng.standard_normal(DIM).tolist())
                     for i in sorted(live)[:m]]
            ann.add(again)
        elif op == "optimize":
            ann.optimize(force=True)
        for _ in range(2):
            q = rng.standard_normal(DIM)
            a, sims = _ids(ann, q, 5)
            e, esims = _ids(exact, q, 5)
            assert set(a) <= live
            np.testing.assert_allclose(sims, esims, atol=1e-4)  # same scores: current vectors
    db.close()


def test_new_nodes_are_found_and_deleted_ones_never_returned_before_a_rebuild(tmp_path):
    db, ann, exact = _pair(tmp_path, n=3000)
    ann.optimize()
    rng = np.random.default_rng(5)
    ann.delete_nodes(node_ids=[f"n{i}" for i in range(100)])
    new = _nodes(rng, 50, prefix="m")
    ann.add(new)
    for node in new[:20]:
        a, sims = _ids(ann, node.embedding, 10)
        assert a[0] == node.node_id and abs(sims[0] - 1.0) < 1e-5
        assert not {f"n{i}" for i in range(100)} & set(a)
    assert ann._ann._gen is not None  # 150 changes of 3,000: still the ANN, changed rows exact


def test_filters_broad_use_the_ann_selective_go_exact(tmp_path):
    db, ann, exact = _pair(tmp_path, n=3000)
    ann.optimize()
    rng = np.random.default_rng(9)
    broad = MetadataFilters(filters=[MetadataFilter(key="g", value=5, operator="<")])  # half the rows
    one = MetadataFilters(filters=[MetadataFilter(key="g", value=3)])  # a tenth
    ann.add(_nodes(rng, 5, prefix="rare", group=99))
    rare = MetadataFilters(filters=[MetadataFilter(key="g", value=99)])  # 5 rows: exact pre-filter
    for flt, need in ((broad, 0.85), (one, 0.85), (rare, 1.0)):
        hits = 0
        for _ in range(10):
            q = rng.standard_normal(DIM)
            a, _ = _ids(ann, q, 5, flt)
            e, _ = _ids(exact, q, 5, flt)
            assert len(a) == len(e)
            hits += len(set(a) & set(e))
        assert hits / (10 * len(e)) >= need


def test_missing_foreign_damaged_or_future_generations_fall_back_to_exact(tmp_path):
    db, ann, exact = _pair(tmp_path, n=500)
    ann.optimize(force=True)
    root = ann_dir(db.path)
    (gen,) = [p for p in root.iterdir() if not p.name.startswith(".")]
    q = np.random.default_rng(3).standard_normal(DIM)
    want = _ids(exact, q, 5)

    damaged = SQLiteVectorStore(SQLiteDatabase(db.path), ann_threshold=0, memory_search=True)
    (gen / "broken").write_bytes(b"not a faiss index")
    os.replace(gen / "broken", gen / "index.faiss")  # a new file: mappings of the old one stay valid
    assert _same(_ids(damaged, q, 5), want) and damaged._ann._gen is None

    ann.add(_nodes(np.random.default_rng(4), 1, prefix="x"))
    ann.optimize(force=True)
    want = _ids(exact, q, 5)
    (new_gen,) = [p for p in root.iterdir() if not p.name.startswith(".")]
    foreign_root = tmp_path / "other"
    foreign_root.mkdir()
    other = SQLiteDatabase(foreign_root / "ragloom.sqlite")
    other_store = SQLiteVectorStore(other, ann_threshold=0, memory_search=True)
    other_store.add(_nodes(np.random.default_rng(8), 50, prefix="o"))
    other_store.optimize(force=True)
    shutil.copytree(new_gen, ann_dir(other.path) / new_gen.name)  # another database's generation
    a, _ = _ids(other_store, q, 5)
    assert all(i.startswith("o") for i in a)

    future = new_gen.with_name(new_gen.name[:-15] + f"{10**14:015d}")
    os.rename(new_gen, future)  # claims changes this database never had: ignored
    fresh = SQLiteVectorStore(SQLiteDatabase(db.path), ann_threshold=0, memory_search=True)
    assert _same(_ids(fresh, q, 5), want) and fresh._ann._gen is None

    shutil.rmtree(root)
    fresh = SQLiteVectorStore(SQLiteDatabase(db.path), ann_threshold=0, memory_search=True)
    assert _same(_ids(fresh, q, 5), want)
    assert fresh.optimize()["ann"] == "built"  # no usable generation: the next optimize builds


def test_a_build_killed_at_any_moment_leaves_queries_correct(tmp_path):
    db, ann, exact = _pair(tmp_path, n=20000)
    script = textwrap.dedent(f"""
        from ragloom.storage.sqlite import SQLiteDatabase
        from ragloom.vector_stores.sqlite import SQLiteVectorStore
        store = SQLiteVectorStore(SQLiteDatabase({str(db.path)!r}), ann_threshold=0)
        print("ready", flush=True)
        store.optimize(force=True)
        print("done", flush=True)
    """)
    rng = np.random.default_rng(11)
    for delay in (0.0, 0.15, 0.4, 0.8):
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        reader = SQLiteVectorStore(SQLiteDatabase(db.path), ann_threshold=0, memory_search=True)
        for _ in range(3):
            q = rng.standard_normal(DIM)
            a, sims = _ids(reader, q, 5)
            e, esims = _ids(exact, q, 5)
            assert len(a) == 5 and sims == sorted(sims, reverse=True)
            if reader._ann._gen is None:  # killed before the rename: exact search
                np.testing.assert_allclose(sims, esims, atol=1e-4)
    assert ann.optimize(force=True)["ann"] == "built"  # a later build works over any leftovers


def test_a_one_shot_reader_searches_a_small_generation_exactly(tmp_path):
    db, ann, exact = _pair(tmp_path, n=500)
    ann.optimize(force=True)
    cold = SQLiteVectorStore(SQLiteDatabase(db.path), ann_threshold=0)  # no memory_search: ragloom query
    q = np.random.default_rng(2).standard_normal(DIM)
    assert _same(_ids(cold, q, 5), _ids(exact, q, 5)) and cold._ann._gen is None
    assert _ids(ann, q, 5)[0] and ann._ann._gen is not None


def test_in_memory_and_disabled_stores_stay_exact_and_bad_threshold_is_refused(tmp_path):
    mem = SQLiteVectorStore(ann_threshold=0)
    mem.add(_nodes(np.random.default_rng(0), 10))
    assert mem.optimize() == {"ann": "in-memory database"}
    db = SQLiteDatabase(tmp_path / "ragloom.sqlite")
    off = SQLiteVectorStore(db, ann=False)
    assert off.optimize() == {"ann": "off"}
    assert SQLiteVectorStore(db).optimize() == {"ann": "empty"}
    with pytest.raises(ValueError, match="ann_threshold"):
        SQLiteVectorStore(db, ann_threshold=-1)


def test_ragloom_optimize_builds_and_queries_use_it(tmp_path):
    import json

    from click.testing import CliRunner

    from ragloom.cli import cli

    docs = tmp_path / "docs"
    docs.mkdir()
    for i, topic in enumerate(["green tea at eighty degrees", "pandas eat bamboo", "kayaks in fjords"]):
        (docs / f"{i}.txt").write_text(f"This note is about {topic}.", encoding="utf-8")
    runner = CliRunner()
    res = runner.invoke(cli, ["index", str(docs), "--index-dir", str(tmp_path / "idx"), "--json"])
    assert res.exit_code == 0, res.output
    assert "ann" not in json.loads(res.stdout) or json.loads(res.stdout)["ann"]["ann"] != "built"  # 3 nodes
    res = runner.invoke(cli, ["optimize", "--index-dir", str(tmp_path / "idx"), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["ann"] == "built" and out["nodes"] == 3
    res = runner.invoke(cli, ["query", "what do pandas eat", "--index-dir", str(tmp_path / "idx"), "--mode", "dense",
                              "--json"])
    assert res.exit_code == 0 and "bamboo" in json.loads(res.stdout)["results"][0]["text"]
    res = runner.invoke(cli, ["optimize", "--index-dir", str(tmp_path / "nothing")])
    assert res.exit_code == 1 and "no index" in res.output


def test_an_emptied_store_and_a_small_stale_generation(tmp_path):
    db, ann, exact = _pair(tmp_path, n=200)
    assert ann.optimize(force=True)["ann"] == "built"  # below the threshold, on request
    ann.delete_nodes(node_ids=[f"n{i}" for i in range(20)])  # 10% changed: stale
    store = SQLiteVectorStore(db, ann_threshold=100_000)
    assert store.optimize()["ann"] == "built"  # a generation exists, so it is kept fresh
    ann.clear()
    assert ann.optimize() == {"ann": "empty"} and ann.optimize(force=True) == {"ann": "empty"}
    with pytest.raises(ValueError, match="ann_threshold"):
        SQLiteVectorStore(db, ann_threshold=True)


def test_large_stores_use_pq_fast_scan_and_still_agree_with_exact_search(tmp_path, monkeypatch):
    from ragloom.vector_stores import ann as ann_module

    monkeypatch.setattr(ann_module, "PQ_MIN_NODES", 10_000)  # the real threshold needs 250,000 nodes
    db, ann, exact = _pair(tmp_path, n=12000)
    built = ann.optimize()
    assert built["ann"] == "built" and built["kind"] == "pq"
    assert _recall(ann, exact, seed=21) >= 0.9
    assert ann._ann._gen is not None and ann._ann._gen.kind == "pq"


def test_index_stats_report_the_generation_and_what_changed_since(tmp_path):
    db, ann, exact = _pair(tmp_path, n=300)
    stats = ann.index_stats()
    assert stats["metadata_index"] is True
    assert stats["ann"] == {"enabled": True, "threshold": 0, "kind": None, "nodes_covered": 0, "seq": None,
                            "changed_since": 0, "built_at": None, "stale": False, "used_for_queries": False}
    before = time.time()
    built = ann.optimize()
    got = ann.index_stats()["ann"]
    assert got["kind"] == built["kind"] == "sq8" and got["nodes_covered"] == 300
    assert got["seq"] == built["seq"] == 0  # the first build: nothing was logged before it
    assert got["changed_since"] == 0 and not got["stale"] and got["used_for_queries"] is True
    assert before - 1 <= got["built_at"] <= time.time() + 1
    # writes after the build: distinct rows logged since its seq
    ann.add(_nodes(np.random.default_rng(1), 5, prefix="late"))
    ann.delete_nodes(node_ids=["n0", "n1"])
    ann.add(_nodes(np.random.default_rng(2), 1, prefix="late"))  # late0 again: the same row
    got = ann.index_stats()["ann"]
    assert got["changed_since"] == 7 and got["seq"] == built["seq"] and not got["stale"]
    ann.delete_nodes(node_ids=[f"n{i}" for i in range(2, 20)])  # 25 of 300 rows: over 5%
    assert ann.index_stats()["ann"]["stale"] is True and ann.index_stats()["ann"]["used_for_queries"] is False
    # readers that would not use it: a one-shot reader of a small generation, a store with ann off
    assert ann.optimize()["ann"] == "built"
    cold = SQLiteVectorStore(SQLiteDatabase(db.path))
    assert cold.index_stats()["ann"]["kind"] == "sq8" and cold.index_stats()["ann"]["used_for_queries"] is False
    assert exact.index_stats()["ann"]["enabled"] is False and exact.index_stats()["ann"]["used_for_queries"] is False
    assert SQLiteVectorStore().index_stats()["ann"]["kind"] is None  # in memory: never one


def test_stores_without_derived_indexes_report_none():
    from ragloom.vector_stores.types import BasePydanticVectorStore

    class Bare(BasePydanticVectorStore):
        client = None

        def add(self, nodes, **kw):
            return []

        def delete(self, ref_doc_id, **kw):
            return None

        def query(self, query, **kw):
            return None

    assert Bare().index_stats() is None
