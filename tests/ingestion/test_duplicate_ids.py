"""Documents that share an id in one call: the last one is kept (as in LlamaIndex), and one warning
names the shared ids, through every entry point (real model, SentenceSplitter, SQLite stores)."""

from __future__ import annotations

import logging


from ragloom import VectorStoreIndex
from ragloom.ingestion import DocstoreStrategy, IngestionPipeline
from ragloom.node_parser import SentenceSplitter
from ragloom.schema import Document, NodeRelationship, RelatedNodeInfo, TextNode
from ragloom.storage import StorageContext

LOGGER = "ragloom.ingestion.engine"


def dup_docs():
    return [
        Document(text="Dup one.", id_="dup"),
        Document(text="Unique words about harbours.", id_="other"),
        Document(text="Dup two, different text.", id_="dup"),
    ]


def warnings_about_ids(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == LOGGER and r.levelno == logging.WARNING and "share the id" in r.getMessage()]


def pipeline(embed, sc):
    splitter = SentenceSplitter(chunk_size=32, chunk_overlap=0, tokenizer=embed.get_tokenizer())
    return IngestionPipeline(transformations=[splitter, embed], docstore=sc.docstore, vector_store=sc.vector_store,
                             docstore_strategy=DocstoreStrategy.UPSERTS, disable_cache=True)


def stored_texts(sc, doc_id):
    info = sc.docstore.get_ref_doc_info(doc_id)
    return [n.text for n in sc.vector_store.get_nodes(node_ids=info.node_ids)]


def test_from_documents_keeps_the_last_and_warns_once(embed, caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        index = VectorStoreIndex.from_documents(dup_docs(), embed_model=embed)
    sc = index.storage_context
    assert stored_texts(sc, "dup") == ["Dup two, different text."]
    assert stored_texts(sc, "other") == ["Unique words about harbours."]
    assert warnings_about_ids(caplog) == ["2 documents share the id 'dup'; the last of each is kept"]


def test_pipeline_run_keeps_the_last_and_warns_once(embed, caplog):
    sc = StorageContext.from_defaults()
    p = pipeline(embed, sc)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        nodes = p.run(documents=dup_docs())
    assert sorted(n.text for n in nodes) == ["Dup two, different text.", "Unique words about harbours."]
    assert p.last_stats.failed == []
    assert warnings_about_ids(caplog) == ["2 documents share the id 'dup'; the last of each is kept"]
    # without any store the engine groups (and warns) the same way
    bare = IngestionPipeline(transformations=[SentenceSplitter(chunk_size=32, chunk_overlap=0)])
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        out = bare.run(documents=dup_docs())
    assert sorted(n.text for n in out) == ["Dup two, different text.", "Unique words about harbours."]
    assert len(warnings_about_ids(caplog)) == 1


def test_run_batches_warns_once_per_call_across_batches(embed, caplog):
    sc = StorageContext.from_defaults()
    batches = [
        [Document(text="First x.", id_="x"), Document(text="Second x.", id_="x"), Document(text="A y.", id_="y")],
        [Document(text="Third x.", id_="x"), Document(text="B y.", id_="y")],
        [Document(text=f"Some {i}.", id_=f"z{i}") for i in range(3)]
        + [Document(text=f"More {i}.", id_=f"z{i}") for i in range(3)],
    ]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        stats = pipeline(embed, sc).run_batches(batches)
    assert stats.failed == []
    assert stored_texts(sc, "x") == ["Third x."] and stored_texts(sc, "y") == ["B y."]
    assert [stored_texts(sc, f"z{i}") for i in range(3)] == [[f"More {i}."] for i in range(3)]
    assert warnings_about_ids(caplog) == [
        "3 documents share the id 'x', 2 documents share the id 'y', 2 documents share the id 'z0' "
        "(and 2 more ids are shared); the last of each is kept"
    ]


def test_no_warning_for_distinct_ids_or_pre_split_sources_over_batches(embed, caplog):
    sc = StorageContext.from_defaults()
    doc = Document(text="Parent.", id_="parent")
    parts = [TextNode(text=f"Part {i}.", id_=f"part-{i}", embedding=embed.get_text_embedding(f"Part {i}."),
                      relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc.id_)})
             for i in range(2)]
    p = IngestionPipeline(transformations=[], docstore=sc.docstore, vector_store=sc.vector_store, disable_cache=True)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        # one source document's nodes in two batches continue it: not a repeated id
        p.run_batches([[parts[0]], [parts[1]]])
        pipeline(embed, sc).run_batches([[Document(text="One.", id_="a")], [Document(text="Two.", id_="b")]])
    assert warnings_about_ids(caplog) == []
    assert sorted(sc.docstore.get_ref_doc_info("parent").node_ids) == ["part-0", "part-1"]


def test_refresh_ref_docs_answers_true_only_for_the_copy_it_kept(embed, caplog):
    index = VectorStoreIndex.from_documents([], embed_model=embed)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert index.refresh_ref_docs(dup_docs()) == [False, True, True]
    assert warnings_about_ids(caplog) == ["2 documents share the id 'dup'; the last of each is kept"]
    assert stored_texts(index.storage_context, "dup") == ["Dup two, different text."]
    # the same call again: nothing changed, every answer is False
    assert index.refresh_ref_docs(dup_docs()) == [False, False, False]
