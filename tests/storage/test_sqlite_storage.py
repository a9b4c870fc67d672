"""Docstore, index store, the shared SQLite database and StorageContext (real SQLite files)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import List

import pytest

from ragloom.data_structs import IndexDict, IndexStruct
from ragloom.schema import (
    Document,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
    node_from_json,
)
from ragloom.storage import (
    DEFAULT_DB_NAME,
    RefDocInfo,
    SimpleDocumentStore,
    SimpleIndexStore,
    SQLiteDatabase,
    SQLiteDocumentStore,
    SQLiteIndexStore,
    StorageContext,
)
from ragloom.storage.docstore import BaseDocumentStore
from ragloom.storage.index_store import BaseIndexStore
from ragloom.storage.sqlite import SCHEMA_VERSION
from ragloom.vector_stores import SQLiteVectorStore, VectorStoreQuery


def _src(doc_id: str) -> dict:
    return {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc_id)}


def _nodes(doc_id: str, n: int, dim: int = 4) -> List[TextNode]:
    return [
        TextNode(
            id_=f"{doc_id}-n{i}",
            text=f"{doc_id} chunk {i}",
            metadata={"doc": doc_id, "chunk": i},
            relationships=_src(doc_id),
            embedding=[float(i + 1), 1.0, float(len(doc_id)), 0.5][:dim],
            start_char_idx=i * 10,
            end_char_idx=i * 10 + 9,
        )
        for i in range(n)
    ]


# -- the database ------------------------------------------------------------------------------

def test_schema_and_version(tmp_path: Path) -> None:
    path = tmp_path / DEFAULT_DB_NAME
    db = SQLiteDatabase(path)
    assert db.schema_version == SCHEMA_VERSION
    assert db.execute("PRAGMA journal_mode")[0][0] == "wal"
    db.close()
    # readable by any SQLite (the vec0 table needs the extension, the rest does not)
    with sqlite3.connect(path) as plain:
        tables = {r[0] for r in plain.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"schema_version", "docstore_nodes", "docstore_meta", "docstore_ref_docs", "index_structs"} <= tables


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / DEFAULT_DB_NAME
    SQLiteDatabase(path).close()
    with sqlite3.connect(path) as plain:
        plain.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    with pytest.raises(RuntimeError, match="newer ragloom"):
        SQLiteDatabase(path)


def test_another_programs_sqlite_file_is_refused_and_left_untouched(tmp_path: Path) -> None:
    """A SQLite file holding other tables was taken for an empty index: a query said "No results"
    and an ingestion wrote ragloom's tables into it (after switching it to WAL).  It is refused
    before anything is written; an empty file is still a new database."""
    path = tmp_path / DEFAULT_DB_NAME
    with sqlite3.connect(path) as plain:
        plain.execute("CREATE TABLE t(x)")
    before = path.read_bytes()
    with pytest.raises(ValueError, match=r"ragloom did not create \(it holds the tables t\)"):
        SQLiteDatabase(path)
    with pytest.raises(ValueError, match="did not create"):
        StorageContext.from_defaults(persist_dir=str(tmp_path))
    assert path.read_bytes() == before and not (tmp_path / f"{DEFAULT_DB_NAME}-wal").exists()
    with sqlite3.connect(path) as plain:
        assert plain.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    db = SQLiteDatabase(empty)
    assert db.schema_version == SCHEMA_VERSION
    db.close()


def test_a_foreign_database_of_views_only_or_sqlite_like_names_is_refused(tmp_path: Path) -> None:
    for i, ddl in enumerate(["CREATE VIEW v AS SELECT 1", "CREATE TABLE sqliteish(x)"]):
        path = tmp_path / f"{i}.sqlite"
        with sqlite3.connect(path) as plain:
            plain.execute(ddl)
        with pytest.raises(ValueError, match="did not create"):
            SQLiteDatabase(path)


def test_nested_transactions_roll_back_only_their_level() -> None:
    db = SQLiteDatabase()
    ds = SQLiteDocumentStore(db)
    with db.transaction():
        ds.add_documents([Document(id_="keep", text="a")])
        with pytest.raises(KeyError):
            with db.transaction():
                ds.add_documents([Document(id_="inner", text="b")])
                raise KeyError("inner fails")
        assert ds.document_exists("keep") and not ds.document_exists("inner")
    assert ds.document_exists("keep") and not ds.document_exists("inner")
    assert not db.in_transaction


def test_transaction_rollback_leaves_nothing_behind(tmp_path: Path) -> None:
    ctx = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    doc = Document(id_="doc-a", text="x")
    with pytest.raises(RuntimeError):
        with ctx.transaction():
            ctx.vector_store.add(_nodes("doc-a", 3))
            ctx.docstore.add_documents(_nodes("doc-a", 3))
            ctx.docstore.set_document_hash(doc.id_, doc.hash)
            ctx.index_store.add_index_struct(IndexDict(index_id="idx"))
            raise RuntimeError("crash before commit")
    ctx.close()
    again = StorageContext.from_defaults(persist_dir=tmp_path)
    assert again.docstore.docs == {}
    assert again.docstore.get_all_document_hashes() == {}
    assert again.docstore.get_all_ref_doc_info() == {}
    assert again.index_store.index_structs() == []
    assert again.vector_store.get_nodes() == []
    # and the dimension was not fixed by the rolled-back add
    assert again.vector_store.dimension is None


def test_killed_writer_keeps_committed_and_drops_uncommitted(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import os, signal
        from ragloom.schema import Document
        from ragloom.storage import StorageContext
        ctx = StorageContext.from_defaults(persist_dir={str(tmp_path)!r}, create_if_missing=True)
        with ctx.transaction():
            ctx.docstore.add_documents([Document(id_="committed", text="a")])
        tx = ctx.transaction()
        tx.__enter__()
        ctx.docstore.add_documents([Document(id_="uncommitted", text="b")])
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == -9, proc.stderr
    ctx = StorageContext.from_defaults(persist_dir=tmp_path)
    assert ctx.docstore.document_exists("committed")
    assert not ctx.docstore.document_exists("uncommitted")


def test_threads_share_a_database() -> None:
    ds = SQLiteDocumentStore()
    errors: list = []

    def work(t: int) -> None:
        try:
            for i in range(50):
                with ds.database.transaction():
                    ds.add_documents([Document(id_=f"t{t}-{i}", text="x")])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert len(ds.docs) == 200


# -- docstore ------------------------------------------------------------------------------------

def test_docstore_names() -> None:
    assert SimpleDocumentStore is SQLiteDocumentStore
    assert isinstance(SQLiteDocumentStore(), BaseDocumentStore)


def test_docstore_round_trips_nodes_and_documents() -> None:
    ds = SQLiteDocumentStore()
    doc = Document(id_="doc-1", text="全文 full text", metadata={"file_name": "a.md"}, excluded_llm_metadata_keys=["x"])
    nodes = _nodes("doc-1", 3)
    ds.add_documents([doc, *nodes])
    got_doc = ds.get_document("doc-1")
    assert type(got_doc) is Document and got_doc == doc
    got = ds.get_node("doc-1-n1")
    assert type(got) is TextNode and got == nodes[1]
    assert got.ref_doc_id == "doc-1" and got.start_char_idx == 10
    assert ds.get_nodes(["doc-1-n2", "doc-1-n0"]) == [nodes[2], nodes[0]]
    assert ds.get_node_dict({0: "doc-1-n0", 5: "doc-1-n2"}) == {0: nodes[0], 5: nodes[2]}
    assert set(ds.docs) == {"doc-1", "doc-1-n0", "doc-1-n1", "doc-1-n2"}
    # the stored JSON is the tagged form schema.node_from_json reads
    data = ds.database.execute("SELECT data FROM docstore_nodes WHERE node_id = 'doc-1'")[0][0]
    assert node_from_json(data) == doc


def test_docstore_missing_ids() -> None:
    ds = SQLiteDocumentStore()
    ds.add_documents(_nodes("d", 1))
    with pytest.raises(ValueError, match="nope"):
        ds.get_document("nope")
    assert ds.get_document("nope", raise_error=False) is None
    assert ds.get_node("nope", raise_error=False) is None
    with pytest.raises(ValueError):
        ds.get_nodes(["d-n0", "nope"])
    assert [n.node_id for n in ds.get_nodes(["d-n0", "nope"], raise_error=False)] == ["d-n0"]
    assert not ds.document_exists("nope")
    with pytest.raises(ValueError):
        ds.delete_document("nope")
    ds.delete_document("nope", raise_error=False)
    with pytest.raises(ValueError):
        ds.delete_ref_doc("nope")
    ds.delete_ref_doc("nope", raise_error=False)


def test_docstore_allow_update() -> None:
    ds = SQLiteDocumentStore()
    ds.add_documents([TextNode(id_="a", text="v1")])
    with pytest.raises(ValueError, match="already exists"):
        ds.add_documents([TextNode(id_="b", text="new"), TextNode(id_="a", text="v2")], allow_update=False)
    assert not ds.document_exists("b")  # the whole call was refused
    ds.add_documents([TextNode(id_="a", text="v2")])
    assert ds.get_node("a").get_content() == "v2"


def test_ref_doc_info() -> None:
    ds = SQLiteDocumentStore()
    ds.add_documents(_nodes("doc-1", 3) + _nodes("doc-22", 2))
    info = ds.get_ref_doc_info("doc-1")
    assert info == RefDocInfo(node_ids=["doc-1-n0", "doc-1-n1", "doc-1-n2"], metadata={"doc": "doc-1", "chunk": 0})
    assert info.to_dict()["node_ids"] == info.node_ids
    assert ds.ref_doc_exists("doc-22") and not ds.ref_doc_exists("doc-1-n0")
    assert ds.get_ref_doc_info("none") is None
    all_info = ds.get_all_ref_doc_info()
    assert set(all_info) == {"doc-1", "doc-22"}
    assert all_info["doc-22"].node_ids == ["doc-22-n0", "doc-22-n1"]
    # updating a node keeps its place; deleting removes it; the last one removes the info
    ds.add_documents([_nodes("doc-1", 1)[0]])
    assert ds.get_ref_doc_info("doc-1").node_ids == ["doc-1-n0", "doc-1-n1", "doc-1-n2"]
    ds.delete_document("doc-1-n1")
    assert ds.get_ref_doc_info("doc-1").node_ids == ["doc-1-n0", "doc-1-n2"]
    ds.delete_document("doc-22-n0")
    ds.delete_document("doc-22-n1")
    assert ds.get_ref_doc_info("doc-22") is None
    # a node moving to another document leaves its old one
    moved = TextNode(id_="doc-1-n0", text="moved", relationships=_src("doc-9"))
    ds.add_documents([moved])
    assert ds.get_ref_doc_info("doc-1").node_ids == ["doc-1-n2"]
    assert ds.get_ref_doc_info("doc-9").node_ids == ["doc-1-n0"]


def test_store_text_false_records_only_links_and_hashes() -> None:
    ds = SQLiteDocumentStore()
    nodes = _nodes("doc-1", 2)
    ds.add_documents(nodes, store_text=False)
    assert ds.docs == {}
    assert ds.get_ref_doc_info("doc-1").node_ids == ["doc-1-n0", "doc-1-n1"]
    assert ds.get_document_hash("doc-1-n0") == nodes[0].hash


def test_hashes() -> None:
    ds = SQLiteDocumentStore()
    assert ds.get_document_hash("d") is None
    ds.set_document_hash("d", "h1")
    ds.set_document_hashes({"e": "h2", "f": "h3"})
    ds.set_document_hash("d", "h4")
    assert ds.get_document_hash("d") == "h4"
    assert ds.get_all_document_hashes() == {"h4": "d", "h2": "e", "h3": "f"}
    doc = Document(id_="g", text="text")
    ds.add_documents([doc])
    assert ds.get_document_hash("g") == doc.hash
    ds.delete_document("g")
    assert ds.get_document_hash("g") is None


def test_delete_ref_doc() -> None:
    ds = SQLiteDocumentStore()
    doc = Document(id_="doc-1", text="x")
    ds.add_documents([doc, *_nodes("doc-1", 3), *_nodes("doc-2", 2)])
    ds.set_document_hash("doc-2", "h2")
    ds.delete_ref_doc("doc-1")
    assert set(ds.docs) == {"doc-2-n0", "doc-2-n1"}
    assert ds.get_ref_doc_info("doc-1") is None
    assert ds.get_document_hash("doc-1") is None  # the document's own entry and hash go too
    assert ds.get_document_hash("doc-1-n0") is None
    assert ds.get_document_hash("doc-2") == "h2"
    assert set(ds.get_all_ref_doc_info()) == {"doc-2"}


def test_docstore_async() -> None:
    import asyncio

    ds = SQLiteDocumentStore()

    async def run() -> None:
        await ds.async_add_documents([Document(id_="a", text="x")])
        await ds.aset_document_hash("a", "h")
        assert (await ds.aget_document("a")).node_id == "a"
        assert await ds.aget_document_hash("a") == "h"

    asyncio.run(run())


# -- index store --------------------------------------------------------------------------------

def test_index_store() -> None:
    assert SimpleIndexStore is SQLiteIndexStore
    store = SQLiteIndexStore()
    assert isinstance(store, BaseIndexStore)
    assert store.get_index_struct() is None
    first = IndexDict(index_id="one", summary="s", embed_model={"model_name": "m", "dimension": 384})
    first.add_node("n1")
    store.add_index_struct(first)
    got = store.get_index_struct()
    assert isinstance(got, IndexDict) and got == first
    assert store.get_index_struct("one") == first
    store.add_index_struct(IndexDict(index_id="two"))
    with pytest.raises(ValueError, match="one, two"):
        store.get_index_struct()
    assert [s.index_id for s in store.index_structs()] == ["one", "two"]
    first.add_node("n2")
    store.add_index_struct(first)  # replaces
    assert store.get_index_struct("one").nodes_dict == {"n1": "n1", "n2": "n2"}
    store.delete_index_struct("one")
    assert store.get_index_struct("one") is None
    assert IndexStruct.from_json(store.get_index_struct().to_json()).index_id == "two"


# -- storage context -----------------------------------------------------------------------------

def test_defaults_share_one_in_memory_database() -> None:
    ctx = StorageContext.from_defaults()
    db = ctx.database
    assert db is not None and db.is_memory
    assert ctx.docstore.database is db and ctx.index_store.database is db
    assert ctx.vector_store.database is db
    assert ctx.vector_stores == {"default": ctx.vector_store}
    assert ctx.persist_dir is None


def test_given_sqlite_component_lends_its_database() -> None:
    vs = SQLiteVectorStore()
    ctx = StorageContext.from_defaults(vector_store=vs)
    assert ctx.vector_store is vs and ctx.docstore.database is vs.database


def test_from_defaults_missing_persist_dir(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(FileNotFoundError, match="create_if_missing"):
        StorageContext.from_defaults(persist_dir=missing)
    assert not missing.exists()
    ctx = StorageContext.from_defaults(persist_dir=missing / "deeper", create_if_missing=True)
    assert (missing / "deeper" / DEFAULT_DB_NAME).is_file()
    assert ctx.persist_dir == (missing / "deeper").resolve()


def _fill(ctx: StorageContext, doc_id: str) -> None:
    doc = Document(id_=doc_id, text="text of " + doc_id)
    nodes = _nodes(doc_id, 3)
    with ctx.transaction():
        ctx.vector_store.add(nodes)
        ctx.docstore.add_documents(nodes)
        ctx.docstore.set_document_hash(doc.id_, doc.hash)
        ctx.index_store.add_index_struct(IndexDict(index_id="idx", embed_model={"dimension": 4}))


def _check(ctx: StorageContext, doc_ids: List[str]) -> None:
    assert sorted(ctx.docstore.get_all_ref_doc_info()) == sorted(doc_ids)
    assert len(ctx.docstore.get_all_document_hashes()) == 4 * len(doc_ids)  # 3 nodes + the document
    assert ctx.index_store.get_index_struct().index_id == "idx"
    assert len(ctx.vector_store.get_nodes()) == 3 * len(doc_ids)
    res = ctx.vector_store.query(VectorStoreQuery(query_embedding=[1.0, 1.0, 5.0, 0.5], similarity_top_k=1))
    assert res.ids and res.nodes[0].get_content().startswith(res.ids[0].rsplit("-n", 1)[0])


def test_persist_in_memory_context_and_reopen(tmp_path: Path) -> None:
    ctx = StorageContext.from_defaults()
    _fill(ctx, "doc-a")
    out = tmp_path / "storage"
    ctx.persist(persist_dir=out)
    assert sorted(p.name for p in out.iterdir()) == [DEFAULT_DB_NAME]  # no temp files left
    _check(StorageContext.from_defaults(persist_dir=out), ["doc-a"])
    # persisting again (the target now exists) writes the new state
    _fill(ctx, "doc-bb")
    ctx.persist(persist_dir=out)
    _check(StorageContext.from_defaults(persist_dir=out), ["doc-a", "doc-bb"])


def test_persist_in_memory_context_read_by_another_process(tmp_path: Path) -> None:
    ctx = StorageContext.from_defaults()
    _fill(ctx, "doc-a")
    ctx.persist(persist_dir=tmp_path)
    code = textwrap.dedent(
        f"""
        from ragloom.storage import StorageContext
        ctx = StorageContext.from_defaults(persist_dir={str(tmp_path)!r})
        print(len(ctx.vector_store.get_nodes()), sorted(ctx.docstore.get_all_ref_doc_info()))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "3 ['doc-a']"


def test_file_backed_context_persist_and_copy(tmp_path: Path) -> None:
    ctx = StorageContext.from_defaults(persist_dir=tmp_path / "a", create_if_missing=True)
    _fill(ctx, "doc-a")
    ctx.persist()  # its own directory: a checkpoint
    ctx.persist(persist_dir=tmp_path / "a")
    ctx.persist(persist_dir=tmp_path / "b")  # a copy elsewhere
    _fill(ctx, "doc-bb")
    _check(StorageContext.from_defaults(persist_dir=tmp_path / "a"), ["doc-a", "doc-bb"])
    _check(StorageContext.from_defaults(persist_dir=tmp_path / "b"), ["doc-a"])


def test_load_index_from_storage_is_lazy() -> None:
    import ragloom.storage as storage

    assert "load_index_from_storage" in storage.__all__
    fn = storage.load_index_from_storage
    assert callable(fn) and fn.__module__ == "ragloom.indices.loading"
