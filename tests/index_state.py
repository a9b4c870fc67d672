"""What an index directory holds, read straight from its database, and the comparison with a clean
build: shared by the crash tests (``tests/cli/test_crash_safety.py``) and the server's fault tests
(``tests/server/test_load_and_faults.py``).

:func:`read_state` checks the consistency every state must pass (no duplicate node ids, one vector
and one keyword row per node, docstore links and hashes agree with the vector store) and returns
``{"nodes", "vectors", "hashes", "keyword"}`` (the metadata index, where there is one, must hold exactly
the nodes' metadata); :func:`assert_same` asserts two states are the same index (same node ids and
content, same document hashes, vectors within 1e-4, same keyword-search results).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

KEYWORD_QUERIES = ["cookie", "middleware status code", "部署", "测试 事件", "environment variable"]

#: English and Chinese FastAPI pages of ../shared/data/markdown_fastapi/docs used by the crash and load tests
FASTAPI_FILES = [
    "en/docs/environment-variables.md",
    "en/docs/how-to/index.md",
    "en/docs/reference/middleware.md",
    "en/docs/reference/status.md",
    "en/docs/tutorial/encoder.md",
    "en/docs/tutorial/cookie-params.md",
    "zh/docs/advanced/wsgi.md",
    "zh/docs/deployment/index.md",
    "zh/docs/advanced/testing-events.md",
    "zh/docs/deployment/cloud.md",
    "zh/docs/advanced/response-change-status-code.md",
    "zh/docs/advanced/response-cookies.md",
]


def read_state(index_dir):
    """Everything the index holds, read from its database, with the consistency checks every state must pass."""
    from ragloom.schema import MetadataMode, node_from_json
    from ragloom.storage.sqlite import SQLiteDatabase
    from ragloom.vector_stores.sqlite import SQLiteVectorStore
    from ragloom.vector_stores.types import VectorStoreQuery

    db = SQLiteDatabase(Path(index_dir) / "ragloom.sqlite", create=False)
    try:
        assert db.execute("PRAGMA integrity_check") == [("ok",)]
        store = SQLiteVectorStore(db)
        rows = db.execute("SELECT id, node_id, ref_doc_id, node FROM vs_default_nodes")
        rowid_of = {node_id: rid for rid, node_id, _, _ in rows}
        assert len(rowid_of) == len(rows)  # no duplicate node ids
        nodes = {}
        for _, node_id, ref, data in rows:
            node = node_from_json(data)
            nodes[node_id] = (ref, node.text, node.get_content(MetadataMode.EMBED), node.start_char_idx,
                              node.end_char_idx)
        has_vectors = bool(db.execute("SELECT 1 FROM sqlite_master WHERE name = 'vs_default_vectors'"))
        vec_rows = db.execute("SELECT rowid, embedding FROM vs_default_vectors") if has_vectors else []
        vectors = {rid: np.frombuffer(blob, dtype=np.float32) for rid, blob in vec_rows}
        assert set(vectors) == set(rowid_of.values()), "a node without its vector, or a vector without its node"
        fts = {r[0] for r in db.execute("SELECT rowid FROM vs_default_fts")}
        assert fts == set(rowid_of.values()), "keyword (FTS) rows disagree with the nodes"
        db.execute("INSERT INTO vs_default_fts(vs_default_fts) VALUES('integrity-check')")
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'vs_default_metadata_index'"):
            from ragloom.vector_stores import metadata_index

            assert metadata_index.consistent(db.connection, "vs_default_nodes", "vs_default_metadata_index"), \
                "the metadata index disagrees with the nodes' metadata"
        links = {
            (d, r) for d, r in db.execute("SELECT doc_id, ref_doc_id FROM docstore_meta WHERE ref_doc_id IS NOT NULL")
        }
        assert links == {(n, v[0]) for n, v in nodes.items()}, "docstore node links disagree with the vector store"
        hashes = dict(
            db.execute("SELECT doc_id, doc_hash FROM docstore_meta WHERE ref_doc_id IS NULL AND doc_hash IS NOT NULL")
        )
        assert {v[0] for v in nodes.values()} <= set(hashes), "nodes of a document whose hash is not recorded"
        keyword = {}
        for q in KEYWORD_QUERIES:
            res = store.query(VectorStoreQuery(query_str=q, mode="text_search", similarity_top_k=1000))
            keyword[q] = sorted(res.ids or [])
        return {
            "nodes": nodes,
            "vectors": {n: vectors[rowid_of[n]] for n in nodes},
            "hashes": hashes,
            "keyword": keyword,
        }
    finally:
        db.close()


def per_doc(state):
    """``{ref_doc_id: {node ids}}`` of a state."""
    out = {}
    for node_id, v in state["nodes"].items():
        out.setdefault(v[0], set()).add(node_id)
    return out


def assert_same(state, clean):
    """``state`` is the index ``clean`` is (vectors within 1e-4)."""
    assert state["hashes"] == clean["hashes"]
    assert set(state["nodes"]) == set(clean["nodes"]) and len(state["nodes"]) == len(clean["nodes"])
    assert state["nodes"] == clean["nodes"]
    for node_id, vec in clean["vectors"].items():
        np.testing.assert_allclose(state["vectors"][node_id], vec, atol=1e-4)
    assert state["keyword"] == clean["keyword"]


def assert_partial_is_a_prefix_of(state, clean):
    """Every document whose hash is recorded holds exactly its clean-build nodes."""
    clean_docs, docs = per_doc(clean), per_doc(state)
    for doc_id, h in state["hashes"].items():
        assert clean["hashes"].get(doc_id) == h
        assert docs.get(doc_id, set()) == clean_docs.get(doc_id, set()), doc_id
        for node_id in docs.get(doc_id, ()):
            assert state["nodes"][node_id] == clean["nodes"][node_id]
