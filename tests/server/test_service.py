"""``ragloom.service.IndexService`` called directly (what every ``ragloom serve`` endpoint calls):
the v1 → v2 schema migration of an index database (``indexed_at``), and argument checks.

Real index (``built_index``: ``ragloom index`` over the conftest corpus, the bundled embed model, the
SQLite store); no mocks.
"""

from __future__ import annotations

import shutil
from typing import Any, Dict, List

import pytest

pytestmark = pytest.mark.requires_extra("server")


def _columns(db: Any, table: str) -> List[str]:
    return [row[1] for row in db.connection.execute(f"PRAGMA table_info({table})").fetchall()]


def _version(db: Any) -> int:
    return int(db.connection.execute("SELECT version FROM schema_version").fetchall()[0][0])


@pytest.fixture(scope="module")
def v1_index(built_index, tmp_path_factory) -> Dict[str, Any]:
    """A copy of ``built_index`` turned into a schema-1 database (``docstore_ref_docs`` without
    ``indexed_at``), with what it held before."""
    from ragloom.ingestion.paths import INDEX_DB_NAME
    from ragloom.storage.sqlite import SQLiteDatabase

    index_dir = tmp_path_factory.mktemp("v1") / "idx"
    shutil.copytree(built_index, index_dir)
    db = SQLiteDatabase(index_dir / INDEX_DB_NAME, create=False)
    try:
        assert _version(db) == 2 and "indexed_at" in _columns(db, "docstore_ref_docs")
        before = db.connection.execute(
            "SELECT ref_doc_id, metadata FROM docstore_ref_docs ORDER BY ref_doc_id").fetchall()
        with db.transaction():
            db.connection.execute("ALTER TABLE docstore_ref_docs DROP COLUMN indexed_at")
            db.connection.execute("UPDATE schema_version SET version = 1")
        assert _version(db) == 1 and "indexed_at" not in _columns(db, "docstore_ref_docs")
    finally:
        db.close()
    return {"index_dir": index_dir, "db": index_dir / INDEX_DB_NAME, "ref_docs": before}


@pytest.fixture(scope="module")
def service(v1_index):
    """An :class:`IndexService` opened on the schema-1 copy (it migrates it)."""
    from ragloom.service import IndexService

    return IndexService(v1_index["index_dir"], llm="mock")


def test_v1_database_is_migrated_to_v2(v1_index, service):
    from ragloom.storage.sqlite import SQLiteDatabase

    db = SQLiteDatabase(v1_index["db"], create=False)
    try:
        assert _version(db) == 2
        assert "indexed_at" in _columns(db, "docstore_ref_docs")
        after = db.connection.execute(
            "SELECT ref_doc_id, metadata, indexed_at FROM docstore_ref_docs ORDER BY ref_doc_id").fetchall()
    finally:
        db.close()
    assert [(r[0], r[1]) for r in after] == [tuple(r) for r in v1_index["ref_docs"]]  # nothing lost
    assert all(r[2] is None for r in after)  # not known for documents indexed before schema 2


def test_documents_and_search_after_the_migration(service, corpus_dir):
    listing = service.documents()
    assert listing["total"] == 6 and len(listing["documents"]) == 6
    for d in listing["documents"]:
        assert d["indexed_at"] is None
        assert d["file_path"].startswith(str(corpus_dir.resolve())) and d["nodes"] >= 1 and d["hash"]
    assert service.documents(offset=4, limit=10)["documents"] == listing["documents"][4:]
    assert service.documents(path="西游记")["total"] == 1
    hits = service.query("孙悟空", top_k=3)["results"]
    assert hits and hits[0]["file_path"].endswith("西游记.txt")
    view = service.chunks(hits[0]["ref_doc_id"])
    assert view["text"][hits[0]["start_char_idx"]:hits[0]["end_char_idx"]] == hits[0]["text"]
    stats = service.stats()
    assert stats["documents"] == 6 and stats["nodes"] == sum(d["nodes"] for d in listing["documents"])


def test_a_document_written_after_the_migration_has_indexed_at(service, tmp_path):
    new = tmp_path / "new"
    new.mkdir()
    (new / "heron.md").write_text("# Herons\n\nHerons wade in shallow water to catch fish.\n", encoding="utf-8")
    summary = service.ingest([new]).to_dict()
    assert summary["documents"]["added"] == 1 and summary["nodes_embedded"] >= 1
    listing = service.documents(path="heron.md")
    assert listing["total"] == 1
    stamp = listing["documents"][0]["indexed_at"]
    assert stamp and stamp.endswith("Z") and stamp[:2] == "20"
    assert all(d["indexed_at"] is None for d in service.documents()["documents"] if "heron" not in d["file_path"])
    hits = service.query("herons catch fish", top_k=1)["results"]
    assert hits[0]["file_path"] == str((new / "heron.md").resolve())
    # the same file again: unchanged, nothing embedded
    again = service.ingest([new]).to_dict()
    assert again["documents"]["unchanged"] == 1 and again["nodes_embedded"] == 0


def test_delete_document(service, tmp_path):
    folder = tmp_path / "del"
    folder.mkdir()
    (folder / "egret.md").write_text("# Egrets\n\nEgrets are white herons.\n", encoding="utf-8")
    service.ingest([folder])
    doc_id = str((folder / "egret.md").resolve())
    before = service.stats()
    nodes = len(service.chunks(doc_id)["chunks"])
    assert service.delete_document(doc_id) == {"deleted": doc_id, "nodes": nodes, "file_removed": False}
    after = service.stats()
    assert (after["documents"], after["nodes"]) == (before["documents"] - 1, before["nodes"] - nodes)
    with pytest.raises(KeyError):
        service.delete_document(doc_id)
    with pytest.raises(KeyError):
        service.chunks(doc_id)


@pytest.mark.parametrize("call,message", [
    (lambda s: s.query("   "), "empty"),
    (lambda s: s.query("x", top_k=0), "top_k"),
    (lambda s: s.query("x", top_k=True), "top_k"),
    (lambda s: s.query("x", mode="fuzzy"), "mode"),
    (lambda s: s.query("x", filters={"filters": [{"key": "a", "operator": "~~", "value": 1}]}), "operator"),
    (lambda s: s.documents(offset=-1), "offset"),
    (lambda s: s.documents(limit=0), "limit"),
    (lambda s: s.documents(limit=True), "limit"),
    (lambda s: s.preview_chunks(), "doc_id"),
    (lambda s: s.preview_chunks(doc_id="a", text="b"), "doc_id"),
    (lambda s: s.preview_chunks(text="hello", parser="nope"), "parser"),
])
def test_bad_arguments_raise_value_error(service, call, message):
    with pytest.raises(ValueError, match=message):
        call(service)


def test_unknown_document(service):
    for call in (lambda: service.chunks("no-such-doc"), lambda: service.preview_chunks(doc_id="no-such-doc"),
                 lambda: service.delete_document("no-such-doc")):
        with pytest.raises(KeyError):
            call()


def test_preview_of_text(service):
    text = "First sentence about herons. " * 60
    view = service.preview_chunks(text=text, file_name="a.txt", parser="sentence", chunk_size=64, chunk_overlap=8)
    assert view["text"] == text and view["text_source"] == "given" and view["format"] == "text"
    assert len(view["chunks"]) > 1
    for ch in view["chunks"]:
        assert text[ch["start"]:ch["end"]] == ch["text"] and ch["tokens"] <= 64



def test_preview_with_the_index_configuration_reproduces_the_stored_chunks(service):
    """The inspector's preview splits exactly as ingestion did: same document (metadata exclusions
    included), same parser, so the same spans and token counts; another size changes them."""
    stats = service.stats()
    docs = service.documents(limit=100)["documents"]
    assert docs
    for doc in docs:
        stored = service.chunks(doc["id"])
        preview = service.preview_chunks(doc_id=doc["id"], parser=stats["parser"], chunk_size=stats["chunk_size"],
                                         chunk_overlap=stats["chunk_overlap"])
        assert [(c["start"], c["end"], c["tokens"]) for c in preview["chunks"]] == \
            [(c["start"], c["end"], c["tokens"]) for c in stored["chunks"]], doc["source"]
    smaller = service.preview_chunks(doc_id=docs[0]["id"], parser="sentence", chunk_size=64, chunk_overlap=8)
    assert len(smaller["chunks"]) > len(service.chunks(docs[0]["id"])["chunks"])
    assert max(c["tokens"] for c in smaller["chunks"]) <= 64


def test_stats_report_the_ann_generation_and_the_metadata_index(service, tmp_path):
    """``stats()`` carries the store's ``index_stats()``: no generation for this small index, then one
    forced by optimize (what ``ragloom optimize`` does), then the rows written after it."""
    stats = service.stats()
    assert stats["metadata_index"] is True  # ragloom index created the store with it
    assert stats["ann"]["kind"] is None and stats["ann"]["used_for_queries"] is False
    assert stats["ann"]["threshold"] == 100_000 and stats["ann"]["enabled"] is True
    service.index.vector_store.optimize(force=True)
    stats = service.stats()
    ann = stats["ann"]
    assert ann["kind"] == "sq8" and ann["nodes_covered"] == stats["nodes"] and ann["changed_since"] == 0
    assert ann["built_at"].endswith("Z") and ann["built_at"][:2] == "20" and ann["stale"] is False
    doc = next(d for d in service.documents(limit=100)["documents"] if d["source"].endswith("stack.py"))
    deleted = service.delete_document(doc["id"])["nodes"]  # a write without an optimize after it
    ann = service.stats()["ann"]
    assert deleted >= 1 and ann["changed_since"] == deleted and ann["kind"] == "sq8"


def test_each_ingest_reports_its_own_embedding_cache_counts(tmp_path):
    """A server runs every ingest job on one embed model and cache: the second job's summary
    counted the first job's misses too (118 = 103 + its own 15)."""
    from ragloom.service import IndexService

    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "tea.txt").write_text("Green tea is brewed at eighty degrees for three minutes.", encoding="utf-8")
    (b / "kayak.txt").write_text("Kayaking in the fjords is calm in early summer.", encoding="utf-8")
    service = IndexService(tmp_path / "idx", create=True)
    first = service.ingest([a])
    second = service.ingest([b])
    assert first.embed_cache["misses"] == first.nodes_embedded >= 1
    assert second.embed_cache["misses"] == second.nodes_embedded >= 1, second.embed_cache
    assert service.ingest([a, b]).embed_cache == {"hits": 0, "misses": 0, "writes": 0}  # unchanged: nothing
