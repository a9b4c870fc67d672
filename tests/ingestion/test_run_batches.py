"""IngestionPipeline.run_batches with real components: the bundled model, SentenceSplitter, the SQLite stores."""

from __future__ import annotations

import pytest

from ragloom.embeddings import HuggingFaceEmbedding
from ragloom.embeddings.cache import EmbeddingCache
from ragloom.ingestion import DocstoreStrategy, IngestionPipeline, IngestionStats
from ragloom.node_parser import SentenceSplitter
from ragloom.schema import Document
from ragloom.storage import StorageContext

TEXTS = {
    "a": "Alpha cats sleep all day. They purr softly on the sofa. Cats like warm places.",
    "b": "Beta dogs run in the park. They fetch sticks and balls. Dogs love long walks.",
    "c": "Gamma birds sing at dawn. They build nests in tall trees. Birds migrate south.",
    "d": "大熊猫生活在中国西南的山林里。它们每天要吃很多竹子。",
}


def docs(texts=TEXTS, meta=None):
    return [Document(id_=k, text=v, metadata=dict(meta or {"name": k})) for k, v in texts.items()]


def pipeline(embed, sc, size=16, strategy=DocstoreStrategy.UPSERTS_AND_DELETE):
    splitter = SentenceSplitter(chunk_size=size, chunk_overlap=0, tokenizer=embed.get_tokenizer())
    return IngestionPipeline(transformations=[splitter, embed], docstore=sc.docstore, vector_store=sc.vector_store,
                             docstore_strategy=strategy, disable_cache=True)


def batches_of(items, size):
    return [items[i : i + size] for i in range(0, len(items), size)]


def test_counts_events_and_one_commit_per_batch(embed):
    sc = StorageContext.from_defaults()
    events = []
    stats = pipeline(embed, sc).run_batches(batches_of(docs(), 2), progress_callback=lambda e, p: events.append((e, p)))
    assert isinstance(stats, IngestionStats)
    assert (stats.documents, stats.added, stats.updated, stats.unchanged, stats.deleted) == (4, 4, 0, 0, 0)
    assert stats.batches == 2 and stats.documents_in_docstore == 4
    assert stats.nodes_written == sc.vector_store.count() > 4
    assert stats.nodes_embedded == stats.nodes_written and stats.nodes_reused == 0
    committed = [p for e, p in events if e == "committed"]
    assert len(committed) == 2 and sum(len(c) for c in committed) == stats.nodes_written
    planned = sum(p for e, p in events if e == "embedding")
    done = sum(p for e, p in events if e == "embedded")
    assert planned == done == stats.nodes_written
    # the docstore holds every node's link to its document; the vector store holds the same nodes
    infos = sc.docstore.get_all_ref_doc_info()
    assert sorted(infos) == ["a", "b", "c", "d"]
    stored = sc.vector_store.get_nodes(node_ids=[n for i in infos.values() for n in i.node_ids])
    assert len(stored) == stats.nodes_written


def test_unchanged_changed_force_and_scoped_deletes(embed):
    sc = StorageContext.from_defaults()
    p = pipeline(embed, sc)
    p.run_batches([docs()])
    count = sc.vector_store.count()
    again = p.run_batches([docs()])
    assert again.unchanged == 4 and again.nodes_written == 0 and again.batches == 0
    edited = dict(TEXTS, b="Beta dogs run in the big park. Dogs love long walks.")
    s = p.run_batches(batches_of(docs(edited), 3))
    assert (s.added, s.updated, s.unchanged) == (0, 1, 3)
    b_ids = sc.docstore.get_ref_doc_info("b").node_ids
    assert [n.ref_doc_id for n in sc.vector_store.get_nodes(node_ids=b_ids)] == ["b"] * len(b_ids)
    assert any("big park" in n.text for n in sc.vector_store.get_nodes(node_ids=b_ids))
    forced = p.run_batches([docs(edited)], force=True)
    assert forced.updated == 4 and sc.vector_store.count() == forced.nodes_written
    # "c" and "d" are absent; only ids the scope accepts are deleted
    kept = [d for d in docs(edited) if d.id_ in ("a", "b")]
    s = p.run_batches([kept], delete_scope=lambda doc_id: doc_id == "c")
    assert s.deleted == 1 and s.documents_in_docstore == 3
    assert sc.docstore.get_ref_doc_info("c") is None and sc.docstore.get_document_hash("c") is None
    assert sc.docstore.get_ref_doc_info("d") is not None
    assert count > 0


def test_a_document_that_cannot_be_split_is_reported_and_the_rest_is_written(embed):
    sc = StorageContext.from_defaults()
    p = pipeline(embed, sc, size=24)
    batch = docs()
    batch[1] = Document(id_="b", text=TEXTS["b"], metadata={"name": "very long metadata " * 20})
    s = p.run_batches([batch])
    assert [f.doc_id for f in s.failed] == ["b"] and "metadata" in s.failed[0].message
    assert s.added == 3 and sc.docstore.get_document_hash("b") is None
    assert sc.docstore.get_ref_doc_info("b") is None
    assert sorted(sc.docstore.get_all_ref_doc_info()) == ["a", "c", "d"]


def test_embed_cache_makes_a_rebuild_reuse_vectors(embed, tmp_path):
    cached = HuggingFaceEmbedding(embed_cache=EmbeddingCache(tmp_path / "e.sqlite"))
    sc = StorageContext.from_defaults()
    p = pipeline(cached, sc)
    first = p.run_batches([docs()])
    assert first.nodes_embedded == first.nodes_written and first.nodes_reused == 0
    # a new, empty index over the same cache: every vector comes from the cache
    sc2 = StorageContext.from_defaults()
    second = pipeline(cached, sc2).run_batches([docs()])
    assert second.nodes_written == first.nodes_written
    assert second.nodes_embedded == 0 and second.nodes_reused == first.nodes_written


def test_store_doc_text_false_keeps_links_but_not_text(embed):
    sc = StorageContext.from_defaults()
    pipeline(embed, sc).run_batches([docs()], store_doc_text=False)
    info = sc.docstore.get_ref_doc_info("a")
    assert info is not None and info.node_ids
    assert not sc.docstore.database.execute("SELECT 1 FROM docstore_nodes")  # no node text in its own table
    stored = sc.vector_store.get_nodes(node_ids=info.node_ids)[0]
    assert stored.text
    # the docstore reads a node it records by link from the vector store (docstore.set_node_source)
    assert sc.docstore.get_document(info.node_ids[0]).text == stored.text
    assert sc.docstore.docs[info.node_ids[0]].text == stored.text
    sc.docstore.set_node_source(None)
    assert sc.docstore.get_document(info.node_ids[0], raise_error=False) is None
    assert not sc.docstore.docs


def test_generator_is_consumed_lazily(embed):
    sc = StorageContext.from_defaults()
    seen_counts = []

    def gen():
        for batch in batches_of(docs(), 1):
            seen_counts.append(sc.vector_store.count())  # what was committed before this batch was produced
            yield batch

    pipeline(embed, sc).run_batches(gen())
    assert seen_counts[0] == 0 and seen_counts == sorted(seen_counts) and seen_counts[-1] > 0


def test_bad_num_workers(embed):
    with pytest.raises(ValueError, match="num_workers"):
        pipeline(embed, StorageContext.from_defaults()).run_batches([docs()], num_workers=0)


def test_nodes_the_vector_store_rejects_fail_their_document_before_embedding(embed):
    from ragloom.vector_stores.sqlite import SQLiteVectorStore

    class NoSecrets(SQLiteVectorStore):
        """A store with a backend rule (as Chroma/Milvus have): no metadata key "secret"."""

        def validate_nodes(self, nodes):
            for n in nodes:
                if "secret" in n.metadata:
                    raise ValueError(f"node {n.node_id}: metadata key 'secret' is not allowed")

    sc = StorageContext.from_defaults()
    store = NoSecrets(sc.database)
    batch = docs()
    batch[2] = Document(id_="c", text=TEXTS["c"], metadata={"secret": "x"})
    p = IngestionPipeline(
        transformations=[SentenceSplitter(chunk_size=16, chunk_overlap=0, tokenizer=embed.get_tokenizer()), embed],
        docstore=sc.docstore, vector_store=store, docstore_strategy="upserts_and_delete", disable_cache=True,
    )
    s = p.run_batches([batch])
    assert [f.doc_id for f in s.failed] == ["c"] and "secret" in s.failed[0].message
    assert s.nodes_embedded == s.nodes_written == store.count()  # c's nodes were never embedded
    assert sorted(sc.docstore.get_all_ref_doc_info()) == ["a", "b", "d"]
    with pytest.raises(ValueError, match="secret"):
        p.run(documents=[Document(id_="e", text="Some text.", metadata={"secret": "y"})], raise_on_error=True)


def test_one_split_pool_serves_every_batch_of_a_run_with_the_nodes_of_one_process(embed, caplog):
    """``SplitPool``: started once, on the first batch that needs it, and kept for the run; the nodes
    (ids, text, order, links) equal a single-process run's."""
    import os

    from ragloom.ingestion.transform import SplitPool

    texts = {f"doc{i:02d}": f"Section {i} of the report. " + " ".join(
        f"Sentence {j} of part {i} talks about tea, rivers and {['cats', '熊猫', 'dogs'][j % 3]}。"
        for j in range(20 + i)) for i in range(12)}
    one_sc, pool_sc = StorageContext.from_defaults(), StorageContext.from_defaults()
    one_nodes: list = []
    pipeline(embed, one_sc).run_batches(batches_of(docs(texts), 4), collect=one_nodes)
    pool = SplitPool(2, min_chars=0)
    pool_nodes: list = []
    with caplog.at_level("DEBUG", logger="ragloom.ingestion.transform"):
        try:
            pipeline(embed, pool_sc).run_batches(batches_of(docs(texts), 4), collect=pool_nodes, pool=pool)
            executor = pool._executor
            assert executor is not None  # started, and still the same after three batches
            pids = {fut.result() for fut in [executor.submit(os.getpid) for _ in range(8)]}
            assert pids and os.getpid() not in pids
        finally:
            pool.close()
    assert caplog.text.count("on 2 worker processes") == 3  # each batch went to the workers
    assert [(n.id_, n.get_content(), n.ref_doc_id) for n in pool_nodes] == \
        [(n.id_, n.get_content(), n.ref_doc_id) for n in one_nodes]
    assert sorted(pool_sc.docstore.get_all_ref_doc_info()) == sorted(texts)


def test_a_split_pool_leaves_small_batches_in_the_calling_process(embed, caplog):
    from ragloom.ingestion.transform import SplitPool

    pool = SplitPool(2)  # default threshold: POOL_MIN_CHARS of text to split
    with caplog.at_level("DEBUG", logger="ragloom.ingestion.transform"):
        pipeline(embed, StorageContext.from_defaults()).run_batches(batches_of(docs(), 2), pool=pool)
    assert pool._executor is None and "worker processes" not in caplog.text  # never started
    with pytest.raises(ValueError, match="num_workers must be an integer >= 2"):
        SplitPool(1)


def test_a_document_a_split_pool_worker_rejects_fails_alone(embed, caplog):
    """A ``DocumentError`` (here: metadata that leaves no room) raised in a worker process did not
    unpickle in the parent (its constructor takes the document, the reason and the keys), so the
    pool broke and the run stopped; the document now fails alone and the others are written."""
    import pickle

    from ragloom.errors import DocumentError, MetadataTooLongError
    from ragloom.ingestion.transform import SplitPool

    err = pickle.loads(pickle.dumps(MetadataTooLongError("d1", "too long", ("title",))))
    assert type(err) is MetadataTooLongError and (err.doc_id, err.reason, err.keys) == ("d1", "too long", ("title",))
    assert str(err) == str(DocumentError("d1", "too long"))

    batch = docs()
    heavy = Document(id_="heavy", text="Tea is brewed. " * 20, metadata={"title": "a very long title " * 40})
    pool = SplitPool(2, min_chars=0)
    sc = StorageContext.from_defaults()
    p = pipeline(embed, sc)
    try:
        with caplog.at_level("DEBUG", logger="ragloom.ingestion.transform"):
            p.run_batches([[*batch, heavy]], pool=pool)
    finally:
        pool.close()
    assert "on 2 worker processes" in caplog.text
    assert [f.doc_id for f in p.last_stats.failed] == ["heavy"]
    assert {n.ref_doc_id for n in sc.vector_store.get_nodes(None)} == {d.id_ for d in batch}


def test_split_pool_workers_warn_about_heavy_metadata_once_in_the_parent(embed, caplog):
    """Each worker process opened its own warn-once block and logged the heavy-metadata warning
    itself (on its own stderr, once per part: several times per run, and never in the parent's
    log); workers now hand the warnings back and the parent logs each set of keys once per run."""
    from ragloom.ingestion.transform import SplitPool

    title = "tea " * 6  # half of chunk_size=16 or more: heavy, but text still fits
    batch = [Document(id_=f"h{i}", text=f"Tea number {i} is brewed hot. " * 8, metadata={"title": title})
             for i in range(8)]
    pool = SplitPool(2, min_chars=0)
    sc = StorageContext.from_defaults()
    try:
        with caplog.at_level("DEBUG"):
            pipeline(embed, sc).run_batches([batch[:4], batch[4:]], pool=pool)
    finally:
        pool.close()
    assert caplog.text.count("on 2 worker processes") == 2
    heavy = [r for r in caplog.records if "metadata keys ['title'] take" in r.getMessage()]
    assert len(heavy) == 1 and heavy[0].levelname == "WARNING", caplog.text
    assert sorted(sc.docstore.get_all_ref_doc_info()) == sorted(d.id_ for d in batch)


def test_split_pool_workers_log_through_the_parent_once_per_message(embed, caplog):
    """A worker's warnings went to the worker's own stderr (no handler configured there), never to the
    parent's log, and a parser's once-per-run warning came once per worker; workers hand their records
    back and the parent logs each distinct one once per run."""
    from ragloom.ingestion.transform import SplitPool
    from ragloom.node_parser import JSONNodeParser

    batch = [Document(id_=f"j{i}", text=f'{{"tea": "oolong {i}", broken', metadata={"file_name": f"j{i}.json"})
             for i in range(6)]
    parser = JSONNodeParser(chunk_size=64, tokenizer=embed.get_tokenizer())
    pool = SplitPool(2, min_chars=0)
    sc = StorageContext.from_defaults()
    p = IngestionPipeline(transformations=[parser, embed], docstore=sc.docstore, vector_store=sc.vector_store,
                          disable_cache=True)
    try:
        with caplog.at_level("DEBUG"):
            p.run_batches([batch], pool=pool)
            pool._log([("ragloom.test", 30, "once"), ("ragloom.test", 30, "once")])
    finally:
        pool.close()
    assert "on 2 worker processes" in caplog.text
    fallbacks = [r.getMessage() for r in caplog.records if "cannot parse document" in r.getMessage()]
    assert sorted(fallbacks) == sorted(set(fallbacks)) and len(fallbacks) == 6, caplog.text
    assert all(r.name == "ragloom.node_parser.file.base" for r in caplog.records if "cannot parse" in r.getMessage())
    assert [r.getMessage() for r in caplog.records if r.name == "ragloom.test"] == ["once"]
    assert sorted(sc.docstore.get_all_ref_doc_info()) == sorted(d.id_ for d in batch)
