"""BaseIndex: the ledger of docstore-backed indexes, incremental writes through the one ingestion
engine, persistence and reloading, and several index kinds in one storage context."""

import logging

import msgspec
import pytest

from ragloom import Document, VectorStoreIndex
from ragloom.data_structs import IndexDict, IndexList, IndexStruct, KeywordTable, register_index_struct
from ragloom.indices.keyword_table import SimpleKeywordTableIndex
from ragloom.indices.list import SummaryIndex
from ragloom.indices.loading import index_class_for, load_index_from_storage, load_indices_from_storage
from ragloom.node_parser import SentenceSplitter
from ragloom.storage import StorageContext

TEXTS = {
    "a": "Apples grow on trees in orchards. Farmers pick apples in autumn. " * 6,
    "b": "Rivers flow to the sea. Salmon swim up rivers to spawn. " * 6,
    "c": "Volcanoes erupt lava and ash. Magma rises from deep below. " * 6,
}


def docs(**changed):
    texts = {**TEXTS, **changed}
    return [Document(text=t, id_=k, metadata={"name": k}) for k, t in texts.items()]


def small():
    return SentenceSplitter(chunk_size=40, chunk_overlap=0)


def big():
    return SentenceSplitter(chunk_size=200, chunk_overlap=0)


@pytest.fixture
def sc(tmp_path):
    return StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)


def reopen(sc):
    path = sc.persist_dir
    sc.persist()
    return StorageContext.from_defaults(persist_dir=path)


def texts_of(index):
    return [n.node.get_content() for n in index.as_retriever(retriever_mode="default").retrieve("q")]


def test_unchanged_refresh_does_no_work_and_writes_nothing(sc):
    index = SummaryIndex.from_documents(docs(), storage_context=sc, transformations=[small()])
    nodes = index.index_struct.nodes
    assert len(nodes) > 3
    token = sc.database.change_token()
    assert index.refresh_ref_docs(docs()) == [False, False, False]
    assert sc.database.change_token() == token  # not one transaction committed
    assert index.index_struct.nodes == nodes


def test_changed_document_replaces_its_nodes_only(sc):
    index = SummaryIndex.from_documents(docs(), storage_context=sc, transformations=[small()])
    before = index.ref_doc_info
    assert index.refresh_ref_docs(docs(b="Deserts are dry. Cacti store water.")) == [False, True, False]
    after = index.ref_doc_info
    assert after["a"].node_ids == before["a"].node_ids and after["c"].node_ids == before["c"].node_ids
    assert len(after["b"].node_ids) == 1
    for old in before["b"].node_ids:  # the old nodes left the index and the docstore
        assert sc.docstore.get_node(old, raise_error=False) is None
    assert "Deserts are dry. Cacti store water." in texts_of(index)
    assert not any("Salmon" in t for t in texts_of(index))
    assert after["b"].metadata == {"name": "b"}


def test_delete_ref_doc_keeps_or_deletes_docstore_nodes(sc):
    index = SummaryIndex.from_documents(docs(), storage_context=sc, transformations=[small()])
    a_nodes = index.ref_doc_info["a"].node_ids
    index.delete_ref_doc("a")  # LlamaIndex default: the nodes stay in the docstore
    assert "a" not in index.ref_doc_info
    assert all(sc.docstore.get_node(n, raise_error=False) is not None for n in a_nodes)
    c_nodes = index.ref_doc_info["c"].node_ids
    index.delete_ref_doc("c", delete_from_docstore=True)
    assert all(sc.docstore.get_node(n, raise_error=False) is None for n in c_nodes)
    index.delete_ref_doc("never-there")  # nothing to do
    # the fingerprint went too: a refresh adds them back
    assert index.refresh_ref_docs(docs()) == [True, False, True]


def test_persist_reload_and_refresh_after_reload(sc):
    index = SummaryIndex.from_documents(docs(), storage_context=sc, transformations=[small()])
    index.set_index_id("summary")
    nodes = index.index_struct.nodes
    sc2 = reopen(sc)
    loaded = load_index_from_storage(sc2, index_id="summary")
    assert type(loaded) is SummaryIndex and loaded.index_id == "summary"
    assert loaded.index_struct.nodes == nodes
    # the recorded splitter is rebuilt: nothing is re-chunked
    assert loaded.refresh_ref_docs(docs()) == [False, False, False]
    assert loaded.refresh_ref_docs(docs(c="Glaciers carve valleys.")) == [False, False, True]


def test_set_index_id_moves_records(sc):
    index = SummaryIndex.from_documents(docs(), storage_context=sc, transformations=[small()])
    old = index.index_id
    nodes = index.index_struct.nodes
    index.set_index_id("renamed")
    assert sc.index_store.get_index_struct(old) is None
    assert sc.index_store.get_index_node_ids(old) == []
    assert index.index_struct.nodes == nodes
    assert index.refresh_ref_docs(docs()) == [False, False, False]
    other = SummaryIndex(storage_context=sc)
    with pytest.raises(ValueError, match="already used"):
        other.set_index_id("renamed")


def test_two_index_kinds_over_the_same_documents_do_not_clash(sc):
    """Fingerprints are per index: different transformations never make the other index's
    documents look changed, and replacing a document in one never deletes the other's nodes."""
    summary = SummaryIndex.from_documents(docs(), storage_context=sc, transformations=[small()])
    keywords = SimpleKeywordTableIndex.from_documents(docs(), storage_context=sc, transformations=[big()])
    s_nodes, k_nodes = summary.index_struct.nodes, keywords.ref_doc_info
    assert set(s_nodes).isdisjoint({n for i in k_nodes.values() for n in i.node_ids})
    token = sc.database.change_token()
    assert summary.refresh_ref_docs(docs()) == [False, False, False]
    assert keywords.refresh_ref_docs(docs()) == [False, False, False]
    assert sc.database.change_token() == token
    new = docs(a="Pears ripen in late summer. Pear trees blossom white.")
    assert summary.refresh_ref_docs(new) == [True, False, False]
    # the keyword index still reads its own (old) nodes of "a", untouched
    old_a = k_nodes["a"].node_ids
    assert [n.node_id for n in keywords._get_nodes(old_a)] == old_a
    assert keywords.as_retriever().retrieve("apples orchards")[0].node.ref_doc_id == "a"
    assert keywords.refresh_ref_docs(new) == [True, False, False]
    assert keywords.as_retriever().retrieve("pears blossom")[0].node.ref_doc_id == "a"
    assert keywords.as_retriever().retrieve("apples orchards") == []
    assert summary.refresh_ref_docs(new) == [False, False, False]


def test_shared_nodes_routing_example(sc):
    """LlamaIndex's router example: one set of nodes, three indexes, one storage context."""
    nodes = big().get_nodes_from_documents(docs())
    sc.docstore.add_documents(nodes)
    summary = SummaryIndex(nodes, storage_context=sc)
    vector = VectorStoreIndex(nodes, storage_context=sc)
    keyword = SimpleKeywordTableIndex(nodes, storage_context=sc)
    summary.set_index_id("summary")
    vector.set_index_id("vector")
    keyword.set_index_id("keyword")
    sc2 = reopen(sc)
    loaded = {i.index_id: i for i in load_indices_from_storage(sc2)}
    assert {k: type(v) for k, v in loaded.items()} == {
        "summary": SummaryIndex, "vector": VectorStoreIndex, "keyword": SimpleKeywordTableIndex}
    ids = [n.node_id for n in nodes]
    assert loaded["summary"].index_struct.nodes == ids
    assert loaded["vector"].as_retriever(similarity_top_k=1).retrieve("salmon rivers")[0].node.ref_doc_id == "b"
    assert loaded["keyword"].as_retriever().retrieve("volcanoes magma")[0].node.ref_doc_id == "c"
    # releasing nodes from one index keeps those another index holds
    loaded["summary"].delete_ref_doc("b", delete_from_docstore=True)
    b_ids = [n.node_id for n in nodes if n.ref_doc_id == "b"]
    assert all(sc2.docstore.get_node(n, raise_error=False) is not None for n in b_ids)
    assert loaded["keyword"].as_retriever().retrieve("salmon")[0].node.ref_doc_id == "b"


def test_vector_index_rechunking_shared_documents_keeps_summary_nodes(sc):
    """A VectorStoreIndex deletes the docstore rows of a source it (re-)ingests; the node guard keeps
    the ones a docstore-backed index holds, so the summary index loses nothing and stays unchanged."""
    summary = SummaryIndex.from_documents(docs(), storage_context=sc, transformations=[small()])
    nodes = summary.index_struct.nodes
    vector = VectorStoreIndex.from_documents(docs(), storage_context=sc, transformations=[big()])
    rechunk = VectorStoreIndex(storage_context=sc, index_struct=vector.index_struct,
                               transformations=[SentenceSplitter(chunk_size=100, chunk_overlap=0)])
    assert rechunk.refresh_ref_docs(docs()) == [True, True, True]  # re-chunked: deleted its old rows
    assert [n.node_id for n in summary._get_nodes(nodes)] == nodes
    assert summary.refresh_ref_docs(docs()) == [False, False, False]
    rechunk.delete_ref_doc("a")
    assert [n.node_id for n in summary._get_nodes(nodes)] == nodes
    assert rechunk.as_retriever(similarity_top_k=5).retrieve("apples orchards")[0].node.ref_doc_id != "a"


def test_nodes_deleted_behind_the_index_are_skipped_then_rebuilt(sc, caplog):
    summary = SummaryIndex.from_documents(docs(), storage_context=sc, transformations=[small()])
    lost = summary.ref_doc_info["b"].node_ids[0]
    sc.docstore.delete_document(lost)
    with caplog.at_level(logging.WARNING, logger="ragloom.indices.base"):
        texts = texts_of(summary)
    assert len(texts) == len(summary.index_struct.nodes) - 1
    assert "no longer in the docstore" in caplog.text
    assert summary.refresh_ref_docs(docs()) == [False, True, False]
    assert len(texts_of(summary)) == len(summary.index_struct.nodes)
    assert summary.refresh_ref_docs(docs()) == [False, False, False]


def test_index_struct_registry_and_loading_registry():
    for struct in (IndexList(), KeywordTable(extractor="rake"), IndexDict()):
        assert IndexStruct.from_json(struct.to_json()) == struct
    assert index_class_for(KeywordTable(extractor="rake")).__name__ == "RAKEKeywordTableIndex"
    assert index_class_for(KeywordTable()).__name__ == "KeywordTableIndex"
    assert index_class_for(IndexList()) is SummaryIndex

    class Odd(IndexStruct, kw_only=True, tag="list"):
        pass

    with pytest.raises(ValueError, match="already used"):
        register_index_struct(Odd)
    with pytest.raises(msgspec.ValidationError):
        IndexStruct.from_json('{"type": "no_such_kind"}')


def test_bad_arguments(sc):
    with pytest.raises(ValueError, match="unexpected argument"):
        SummaryIndex(storage_context=sc, similarity_cutoff=3)
    with pytest.raises(ValueError, match="insert_batch_size"):
        SummaryIndex(storage_context=sc, insert_batch_size=0)
    with pytest.raises(ValueError, match=r"nodes\[0\]"):
        SummaryIndex(["not a node"], storage_context=sc)
    with pytest.raises(ValueError, match="IndexList"):
        SummaryIndex(storage_context=sc, index_struct=KeywordTable())


def test_insert_nodes_in_batches_and_insert(sc):
    nodes = small().get_nodes_from_documents(docs())
    index = SummaryIndex(nodes, storage_context=sc, insert_batch_size=2)
    assert index.index_struct.nodes == [n.node_id for n in nodes]
    index.insert(Document(text="Owls hunt at night.", id_="d"))
    assert index.index_struct.nodes[-1] in index.ref_doc_info["d"].node_ids
    index.update_ref_doc(Document(text="Owls hunt mice at night.", id_="d"))
    assert [n.node.get_content() for n in index.as_retriever().retrieve("q")][-1] == "Owls hunt mice at night."
    index.delete_nodes(index.ref_doc_info["d"].node_ids)
    assert "d" not in index.ref_doc_info


# -- crash safety: a write killed before its commit, then re-run, equals a run never killed ------------
class Killed(Exception):
    pass


def _db_state(sc):
    """Everything the docstore-backed indexes and the docstore hold (index ids left out: each run
    makes its own)."""
    db = sc.database
    ids = {r[0]: i for i, r in enumerate(db.execute("SELECT index_id FROM index_structs ORDER BY rowid"))}
    return {
        "sources": sorted((ids[i], d, f) for i, d, f in db.execute("SELECT * FROM index_sources")),
        "nodes": sorted((ids[i], n, d) for i, n, d in db.execute("SELECT * FROM index_nodes")),
        "order": [(ids[i], n) for i, n in db.execute("SELECT index_id, node_id FROM index_nodes ORDER BY rowid")],
        "postings": sorted((ids[i], k, n) for i, k, n in db.execute("SELECT * FROM index_postings")),
        "docstore": sorted(db.execute("SELECT node_id, data FROM docstore_nodes")),
        "meta": sorted(db.execute("SELECT doc_id, doc_hash, ref_doc_id FROM docstore_meta")),
        "vectors": sorted(db.execute("SELECT node_id, ref_doc_id FROM vs_default_nodes")),
    }


V2 = {"b": "Deserts are dry. Cacti store water. Camels cross dunes.", "d": "Owls hunt mice at night. " * 4}


def _refresh_all(path, kinds, texts, kill_at=None):
    """Reopen the persisted storage, load every index, refresh each (one document per transaction);
    with ``kill_at``, the ``kill_at``-th commit of this run raises before it commits."""
    from ragloom.ingestion import engine

    sc = StorageContext.from_defaults(persist_dir=path)
    indexes = [load_index_from_storage(sc, index_id=i) for i in kinds]
    seen = []

    def hook(event):
        if event == "before_commit":
            seen.append(event)
            if len(seen) == kill_at:
                raise Killed()

    engine.set_commit_hook(hook)
    try:
        for index in indexes:
            index.refresh_ref_docs([Document(text=t, id_=k, metadata={"name": k}) for k, t in texts.items()])
    finally:
        engine.set_commit_hook(None)
        sc.persist()
    return sc, indexes


def _build_v1(path):
    sc = StorageContext.from_defaults(persist_dir=path, create_if_missing=True)
    s = SummaryIndex.from_documents(docs(), storage_context=sc, transformations=[small()])
    k = SimpleKeywordTableIndex.from_documents(docs(), storage_context=sc, transformations=[small()])
    r = VectorStoreIndex.from_documents(docs(), storage_context=sc, transformations=[small()])
    s.set_index_id("summary")
    k.set_index_id("keyword")
    r.set_index_id("vector")
    sc.persist()
    sc.close()


def test_refresh_killed_before_commit_then_rerun_equals_clean_run(tmp_path, monkeypatch):
    """A SummaryIndex, a SimpleKeywordTableIndex and a VectorStoreIndex share one persisted storage
    context (same splitter: they share node ids); the refresh of a changed and a new document is
    killed before each of its commits in turn, then re-run from the file: the database and every
    retrieval equal a run never killed, and the records equal a build from scratch."""
    import ragloom.indices.base as base

    monkeypatch.setattr(base, "DOCUMENTS_PER_BATCH", 1)  # one transaction per document
    texts = {**TEXTS, **V2}
    kinds = ["summary", "keyword", "vector"]
    _build_v1(tmp_path / "clean")
    clean_sc, clean = _refresh_all(tmp_path / "clean", kinds, texts)
    want = _db_state(clean_sc)
    want_texts = texts_of(clean[0])
    want_kw = [(n.node.node_id, n.score) for n in clean[1].as_retriever().retrieve("camels deserts owls apples")]
    want_vec = [n.node.node_id for n in clean[2].as_retriever(similarity_top_k=3).retrieve("camels")]
    assert want_kw and len(want_texts) > 4
    commits = 5  # summary, keyword: b, d; vector: b and d in one batch (a and c unchanged: no transaction)
    for kill_at in range(1, commits + 1):
        path = tmp_path / f"kill{kill_at}"
        _build_v1(path)
        with pytest.raises(Killed):
            _refresh_all(path, kinds, texts, kill_at=kill_at)
        sc, again = _refresh_all(path, kinds, texts)
        assert _db_state(sc) == want, kill_at
        assert texts_of(again[0]) == want_texts
        assert [n.node.node_id for n in again[2].as_retriever(similarity_top_k=3).retrieve("camels")] == want_vec
        assert [(n.node.node_id, n.score) for n in again[1].as_retriever().retrieve(
            "camels deserts owls apples")] == want_kw
        assert [i.refresh_ref_docs(docs(**V2)[:1]) for i in again] == [[False], [False], [False]]
        sc.close()
    # against a build from scratch of the final documents: the same nodes, postings and fingerprints
    fresh = tmp_path / "fresh"
    sc = StorageContext.from_defaults(persist_dir=fresh, create_if_missing=True)
    docs2 = [Document(text=t, id_=k, metadata={"name": k}) for k, t in texts.items()]
    SummaryIndex.from_documents(docs2, storage_context=sc, transformations=[small()]).set_index_id("summary")
    SimpleKeywordTableIndex.from_documents(docs2, storage_context=sc, transformations=[small()]).set_index_id(
        "keyword")
    got = _db_state(sc)
    for key in ("sources", "nodes", "postings"):
        assert got[key] == want[key], key


@pytest.mark.requires_extra("remote")
def test_llm_keyword_refresh_killed_before_commit_reruns_only_the_lost_document(tmp_path, monkeypatch):
    """KeywordTableIndex: the LLM's keywords of a killed batch are not kept; the re-run asks again only
    for the documents whose commit was lost, and the table equals an unkilled build's."""
    import ragloom.indices.base as base
    from ragloom.indices.keyword_table import KeywordTableIndex
    from ragloom.ingestion import engine
    from ragloom.llms.openai_like import OpenAILike

    sys_path_llm_server()
    from llm_server import OpenAICompatibleServer

    monkeypatch.setattr(base, "DOCUMENTS_PER_BATCH", 1)

    def answer(prompt):
        import re

        body = re.search(r"-{5,}\n(.*?)\n-{5,}", prompt, re.S).group(1)
        words = sorted({w.strip(".,").lower() for w in body.split() if len(w) > 4})
        return "KEYWORDS: " + ", ".join(words[:6])

    def hook(event):
        if event == "before_commit":
            raise Killed()

    with OpenAICompatibleServer(answer=answer) as srv:
        llm = OpenAILike(model="m", api_base=srv.url, max_retries=0)
        sc = StorageContext.from_defaults(persist_dir=tmp_path / "a", create_if_missing=True)
        index = KeywordTableIndex.from_documents(docs(), storage_context=sc, llm=llm, transformations=[big()])
        clean = StorageContext.from_defaults(persist_dir=tmp_path / "b", create_if_missing=True)
        KeywordTableIndex.from_documents(docs(), storage_context=clean, llm=llm,
                                         transformations=[big()]).refresh_ref_docs(docs(b=V2["b"]))
        want = _db_state(clean)
        assert want["postings"] and want["nodes"]
        engine.set_commit_hook(hook)
        try:
            with pytest.raises(Killed):
                index.refresh_ref_docs(docs(b=V2["b"]))
        finally:
            engine.set_commit_hook(None)
        assert index._prepared == {}
        sc2 = StorageContext.from_defaults(persist_dir=tmp_path / "a")
        reopened = load_index_from_storage(sc2, llm=llm)
        n = len(srv.requests)
        assert reopened.refresh_ref_docs(docs(b=V2["b"])) == [False, True, False]
        assert len(srv.requests) == n + 1 and "Cacti" in srv.requests[-1]["prompt"]
        assert _db_state(sc2) == want
        scratch = StorageContext.from_defaults(persist_dir=tmp_path / "c", create_if_missing=True)
        KeywordTableIndex.from_documents(docs(b=V2["b"]), storage_context=scratch, llm=llm, transformations=[big()])
        assert {k: v for k, v in _db_state(scratch).items() if k != "order"} == {
            k: v for k, v in want.items() if k != "order"}


def sys_path_llm_server():
    import sys
    from pathlib import Path

    here = str(Path(__file__).resolve().parents[1])
    if here not in sys.path:
        sys.path.insert(0, here)
