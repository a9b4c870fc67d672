"""Regression tests of issue 10 ("one ingestion engine"), one per defect of the old ingestion paths.

Each test is named after the defect it guards against and asserts the *right* behaviour with real
components: the bundled embedding model, SentenceSplitter / SentenceWindowNodeParser measured in
its tokenizer, and the SQLite ``StorageContext`` (docstore and vector store in one database).
The stores are compared with a *clean build* (the same transformations over the final documents
into empty storage): ids are deterministic, so "exactly the new chunks" is a set equality.
"""

from __future__ import annotations

import logging

import pytest

from ragloom.embeddings import HuggingFaceEmbedding
from ragloom.embeddings.cache import EmbeddingCache
from ragloom.errors import IngestionError
from ragloom.indices.loading import load_index_from_storage
from ragloom.indices.vector_store import VectorStoreIndex
from ragloom.ingestion import DocstoreStrategy, IngestionPipeline
from ragloom.ingestion.engine import DocumentFailure
from ragloom.node_parser import SentenceSplitter, SentenceWindowNodeParser
from ragloom.schema import Document, MetadataMode
from ragloom.storage import StorageContext

LONG_A = (
    "Alpha cats sleep all day. They purr softly on the sofa. Cats like warm places. "
    "Kittens chase balls of yarn. Old cats watch the birds outside. A cat drinks milk slowly. "
    "Cats groom their fur often. They hide in boxes. At night the cats wake up and play."
)
TEXTS = {
    "a": LONG_A,
    "b": "Beta dogs run in the park. They fetch sticks and balls. Dogs love long walks.",
    "c": "Gamma birds sing at dawn. They build nests in tall trees. Birds migrate south.",
}
EDITED_A = LONG_A.replace("Kittens chase balls of yarn.", "Kittens chase red balls of wool and string.")


@pytest.fixture(scope="module")
def embed():
    # the real model; its in-memory vector cache makes the clean builds the tests compare with cheap
    model = HuggingFaceEmbedding(embed_cache=EmbeddingCache())
    model.get_text_embedding("warm up")
    return model


def docs(texts=TEXTS, **extra):
    return [Document(id_=k, text=v, **extra) for k, v in texts.items()]


def sentence(embed, size, overlap=0):
    return SentenceSplitter(chunk_size=size, chunk_overlap=overlap, tokenizer=embed.get_tokenizer())


def window(embed, size=60):
    return SentenceWindowNodeParser(window_size=1, chunk_size=size, tokenizer=embed.get_tokenizer())


def pipeline(sc, transformations, strategy=DocstoreStrategy.UPSERTS):
    return IngestionPipeline(
        transformations=list(transformations), docstore=sc.docstore, vector_store=sc.vector_store,
        docstore_strategy=strategy,
    )


def stored(sc):
    """``{node id: (ref_doc_id, text)}`` of the vector store, checking every node has a vector."""
    nodes = sc.vector_store.get_nodes()  # joined with the vectors: a node without one is left out
    assert len(nodes) == sc.vector_store.count()
    assert all(n.embedding is not None for n in nodes)
    return {n.node_id: (n.ref_doc_id, n.text) for n in nodes}


def clean_build(transformations, documents=None, nodes=None):
    sc = StorageContext.from_defaults()
    pipeline(sc, transformations).run(documents=documents, nodes=nodes)
    return stored(sc)


def docstore_links(sc):
    """``{ref_doc_id: set(node ids)}`` the docstore links to each source document."""
    return {ref: set(info.node_ids) for ref, info in sc.docstore.get_all_ref_doc_info().items()}


def links_of(state):
    out = {}
    for node_id, (ref, _) in state.items():
        out.setdefault(ref, set()).add(node_id)
    return out


def chains(embed):
    return {
        "splitter+splitter": [sentence(embed, 60), sentence(embed, 30)],
        "splitter+window": [sentence(embed, 60), window(embed)],
    }


# -- 1 -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("chain", ["splitter+splitter", "splitter+window"])
def test_chained_parsers_keep_source_document(embed, chain):
    parsers = chains(embed)[chain]
    steps = parsers + [embed]
    # through IngestionPipeline (UPSERTS) with a docstore and a vector store
    sc = StorageContext.from_defaults()
    p = pipeline(sc, steps)
    p.run(documents=docs())
    state = stored(sc)
    assert {ref for ref, _ in state.values()} == {"a", "b", "c"}
    assert len(links_of(state)["a"]) >= 3  # the chain really re-splits a's chunks
    assert state == clean_build(steps, docs())
    assert docstore_links(sc) == links_of(state)
    assert set(sc.docstore.get_source_document_hashes()) == {"a", "b", "c"}

    # editing "a" and re-running leaves exactly the new nodes (no 3 -> 6 growth)
    edited = dict(TEXTS, a=EDITED_A)
    p.run(documents=docs(edited))
    assert p.last_stats.updated == 1 and p.last_stats.unchanged == 2
    state = stored(sc)
    assert state == clean_build(steps, docs(edited))
    assert docstore_links(sc) == links_of(state)

    # delete_ref_doc removes every node of the document, the others stay
    others = {k: v for k, v in state.items() if v[0] != "a"}
    index = VectorStoreIndex(storage_context=sc, embed_model=embed)
    index.delete_ref_doc("a")
    assert sc.vector_store.count() == len(others)
    assert stored(sc) == others
    assert set(docstore_links(sc)) == {"b", "c"}
    assert set(sc.docstore.get_source_document_hashes()) == {"b", "c"}

    # through VectorStoreIndex.from_documents(transformations=...) + refresh_ref_docs
    sc2 = StorageContext.from_defaults()
    index = VectorStoreIndex.from_documents(docs(), storage_context=sc2, embed_model=embed,
                                            transformations=chains(embed)[chain])
    state = stored(sc2)
    assert {ref for ref, _ in state.values()} == {"a", "b", "c"}
    assert state == clean_build(steps, docs())
    assert index.refresh_ref_docs(docs(edited)) == [True, False, False]
    state = stored(sc2)
    assert state == clean_build(steps, docs(edited))
    assert set(index.ref_doc_info) == {"a", "b", "c"}
    index.delete_ref_doc("a")
    assert stored(sc2) == {k: v for k, v in state.items() if v[0] != "a"}
    assert index.refresh_ref_docs(docs(edited)) == [True, False, False]  # "a" is re-inserted
    assert stored(sc2) == state


# -- 2 -----------------------------------------------------------------------------------------
def presplit(embed, texts=TEXTS, size=16):
    return sentence(embed, size)(docs(texts))


def test_presplit_nodes_unchanged_rerun_with_upserts_and_delete_deletes_nothing(embed):
    sc = StorageContext.from_defaults()
    p = pipeline(sc, [embed], DocstoreStrategy.UPSERTS_AND_DELETE)
    nodes = presplit(embed)
    assert {n.ref_doc_id for n in nodes} == {"a", "b", "c"}
    p.run(nodes=nodes)
    first = stored(sc)
    assert set(first) == {n.node_id for n in nodes}
    assert set(sc.docstore.get_source_document_hashes()) == {"a", "b", "c"}
    assert p.run(nodes=presplit(embed)) == []
    s = p.last_stats
    assert (s.deleted, s.unchanged, s.added, s.updated, s.nodes_written) == (0, 3, 0, 0, 0)
    assert stored(sc) == first
    assert docstore_links(sc) == links_of(first)


def test_presplit_nodes_run_batches_keeps_them_on_the_first_run(embed):
    sc = StorageContext.from_defaults()
    p = pipeline(sc, [embed], DocstoreStrategy.UPSERTS_AND_DELETE)
    nodes = presplit(embed)
    by_doc = [[n for n in nodes if n.ref_doc_id == d] for d in ("a", "b", "c")]
    s = p.run_batches([by_doc[0], by_doc[1] + by_doc[2]])
    assert (s.documents, s.added, s.deleted) == (3, 3, 0) and not s.failed
    assert stored(sc) == clean_build([embed], nodes=presplit(embed))
    again = p.run_batches([by_doc[0], by_doc[1] + by_doc[2]])
    assert (again.unchanged, again.deleted, again.nodes_written) == (3, 0, 0)
    assert stored(sc) == clean_build([embed], nodes=presplit(embed))


def test_presplit_nodes_of_one_document_across_batches_are_all_kept(embed):
    """A document's pre-split nodes split over two batches of one run_batches call: the second
    batch must not delete what the first one wrote for the same document."""
    nodes = presplit(embed)
    a_nodes = [n for n in nodes if n.ref_doc_id == "a"]
    assert len(a_nodes) >= 2
    for strategy in (DocstoreStrategy.UPSERTS, DocstoreStrategy.UPSERTS_AND_DELETE):
        sc = StorageContext.from_defaults()
        s = pipeline(sc, [embed], strategy).run_batches([nodes[:1], nodes[1:]])
        assert not s.failed and s.deleted == 0
        assert stored(sc) == clean_build([embed], nodes=presplit(embed)), strategy


def test_presplit_nodes_resplit_into_fewer_chunks_replaces_all_old_ones_with_upserts(embed):
    texts4 = dict(TEXTS, a=LONG_A)
    shorter = LONG_A.rsplit(". ", 2)[0] + "."  # the last two sentences dropped
    texts3 = dict(TEXTS, a=shorter)
    old = presplit(embed, texts4)
    new = presplit(embed, texts3)
    old_a = [n.node_id for n in old if n.ref_doc_id == "a"]
    new_a = [n.node_id for n in new if n.ref_doc_id == "a"]
    assert len(new_a) == len(old_a) - 1  # N chunks -> N - 1
    gone = old_a[-1]
    assert gone not in new_a

    sc = StorageContext.from_defaults()
    p = pipeline(sc, [embed], DocstoreStrategy.UPSERTS)
    p.run(nodes=old)
    before = stored(sc)
    # plain UPSERTS, only the re-split document is passed
    p.run(nodes=[n for n in new if n.ref_doc_id == "a"])
    assert p.last_stats.updated == 1 and p.last_stats.deleted == 0
    state = stored(sc)
    assert gone not in state
    assert sc.docstore.get_document(gone, raise_error=False) is None
    assert sc.docstore.get_document_hash(gone) is None
    assert {k for k, v in state.items() if v[0] == "a"} == set(new_a)
    assert docstore_links(sc)["a"] == set(new_a)
    # the other documents are untouched
    assert {k: v for k, v in state.items() if v[0] != "a"} == {k: v for k, v in before.items() if v[0] != "a"}
    assert state == clean_build([embed], nodes=presplit(embed, texts3))
    assert docstore_links(sc) == links_of(state)


# -- 3 -----------------------------------------------------------------------------------------
class Custom:
    """A metadata value that is not JSON."""


def mixed_docs():
    good = docs()
    too_long = Document(id_="long", text="Some text about nothing.", metadata={"title": "very long metadata " * 20})
    unserialisable = Document(id_="obj", text="Other text about nothing.", metadata={"thing": Custom()})
    return [good[0], too_long, good[1], unserialisable, good[2]]


def assert_failures(failed):
    by_id = {f.doc_id: f for f in failed}
    assert set(by_id) == {"long", "obj"}
    assert all(isinstance(f, DocumentFailure) for f in failed)
    assert by_id["long"].keys == ("title",) and "metadata" in by_id["long"].message
    assert by_id["obj"].keys == ("thing",) and "Custom" in by_id["obj"].message


def assert_good_docs_stored(sc):
    state = stored(sc)
    assert {ref for ref, _ in state.values()} == {"a", "b", "c"}
    assert set(sc.docstore.get_source_document_hashes()) == {"a", "b", "c"}
    assert set(docstore_links(sc)) == {"a", "b", "c"}


def test_one_bad_document_does_not_abort_the_others_in_pipeline_run(embed):
    sc = StorageContext.from_defaults()
    p = pipeline(sc, [sentence(embed, 24), embed])
    out = p.run(documents=mixed_docs())
    assert {n.ref_doc_id for n in out} == {"a", "b", "c"}
    assert_failures(p.last_stats.failed)
    assert p.last_stats.added == 3
    assert_good_docs_stored(sc)

    sc = StorageContext.from_defaults()
    p = pipeline(sc, [sentence(embed, 24), embed])
    with pytest.raises(IngestionError) as info:
        p.run(documents=mixed_docs(), raise_on_error=True)
    assert_failures(info.value.failures)
    assert_good_docs_stored(sc)


def test_one_bad_document_does_not_abort_the_others_in_run_batches(embed):
    sc = StorageContext.from_defaults()
    p = pipeline(sc, [sentence(embed, 24), embed], DocstoreStrategy.UPSERTS_AND_DELETE)
    batch = mixed_docs()
    stats = p.run_batches([batch[:2], batch[2:]])
    assert stats is p.last_stats
    assert_failures(stats.failed)
    assert stats.added == 3
    assert_good_docs_stored(sc)

    sc = StorageContext.from_defaults()
    p = pipeline(sc, [sentence(embed, 24), embed], DocstoreStrategy.UPSERTS_AND_DELETE)
    with pytest.raises(IngestionError) as info:
        p.run_batches([batch[:2], batch[2:]], raise_on_error=True)
    assert_failures(info.value.failures)
    assert_good_docs_stored(sc)


def test_one_bad_document_does_not_abort_the_others_in_from_documents(embed, caplog):
    sc = StorageContext.from_defaults()
    with caplog.at_level(logging.WARNING, logger="ragloom"):
        index = VectorStoreIndex.from_documents(mixed_docs(), storage_context=sc, embed_model=embed,
                                                transformations=[sentence(embed, 24)])
    assert_good_docs_stored(sc)
    assert set(index.ref_doc_info) == {"a", "b", "c"}
    assert "long not ingested" in caplog.text and "obj not ingested" in caplog.text

    sc = StorageContext.from_defaults()
    with pytest.raises(IngestionError) as info:
        VectorStoreIndex.from_documents(mixed_docs(), storage_context=sc, embed_model=embed,
                                        transformations=[sentence(embed, 24)], raise_on_error=True)
    assert_failures(info.value.failures)
    assert_good_docs_stored(sc)


def _budget_warnings(caplog):
    return [r for r in caplog.records if r.levelno == logging.WARNING and "metadata keys" in r.getMessage()
            and "take" in r.getMessage() and "not ingested" not in r.getMessage()]


def heavy_doc(embed, size):
    """A document whose embedded metadata takes between half and all of ``size`` tokens."""
    title = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    doc = Document(id_="heavy", text=LONG_A, metadata={"title": title})
    used = embed.get_tokenizer().count(doc.get_metadata_str(MetadataMode.EMBED) + "\n\n")
    assert size / 2 <= used < size
    return doc


def test_one_bad_document_does_not_abort_the_others_and_heavy_metadata_warns_once(embed, caplog):
    sc = StorageContext.from_defaults()
    with caplog.at_level(logging.WARNING, logger="ragloom"):
        pipeline(sc, [sentence(embed, 24), embed]).run(documents=[heavy_doc(embed, 24)])
    warnings = _budget_warnings(caplog)
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "'title'" in warnings[0].getMessage() and "heavy" in warnings[0].getMessage()


def test_one_bad_document_does_not_abort_the_others_and_heavy_metadata_warns_once_in_a_failing_batch(
    embed, caplog
):
    """The heavy document shares a batch with one a transformation rejects: the engine retries the
    batch document by document, and the warning must still be logged once."""
    sc = StorageContext.from_defaults()
    too_long = Document(id_="long", text="Some text.", metadata={"title": "very long metadata " * 20})
    with caplog.at_level(logging.WARNING, logger="ragloom"):
        p = pipeline(sc, [sentence(embed, 24), embed])
        p.run(documents=[heavy_doc(embed, 24), too_long])
    assert [f.doc_id for f in p.last_stats.failed] == ["long"]
    warnings = _budget_warnings(caplog)
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "'title'" in warnings[0].getMessage()


def test_one_bad_document_does_not_abort_the_others_and_heavy_metadata_warns_once_with_chained_parsers(
    embed, caplog
):
    """With two splitters in a chain, the second sees the heavy document's chunks (same metadata):
    one warning, naming the source document, not one per chunk."""
    sc = StorageContext.from_defaults()
    with caplog.at_level(logging.WARNING, logger="ragloom"):
        p = pipeline(sc, [sentence(embed, 24), sentence(embed, 22), embed])
        out = p.run(documents=[heavy_doc(embed, 22)])
    assert len(out) > 2
    warnings = _budget_warnings(caplog)
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "'heavy'" in warnings[0].getMessage()


# -- 4 -----------------------------------------------------------------------------------------
def test_llm_only_metadata_does_not_count_against_embed_budget(embed):
    size = 24
    summary = " ".join(["This summary is only for the language model and is rather long indeed."] * 4)
    assert embed.get_tokenizer().count(summary) > size
    plain = Document(id_="a", text=LONG_A)
    with_summary = Document(id_="a", text=LONG_A, metadata={"summary": summary},
                            excluded_embed_metadata_keys=["summary"])
    splitter = sentence(embed, size)
    base = splitter([plain])
    nodes = splitter([with_summary])  # does not raise MetadataTooLongError
    assert len(base) > 1
    assert [(n.start_char_idx, n.end_char_idx) for n in nodes] == [(n.start_char_idx, n.end_char_idx) for n in base]
    assert all(summary in n.get_content(MetadataMode.LLM) for n in nodes)
    assert all(summary not in n.get_content(MetadataMode.EMBED) for n in nodes)

    sc = StorageContext.from_defaults()
    p = pipeline(sc, [sentence(embed, size), embed])
    out = p.run(documents=[with_summary], raise_on_error=True)
    assert not p.last_stats.failed
    assert [n.text for n in out] == [n.text for n in base]
    index = VectorStoreIndex.from_documents([with_summary], storage_context=StorageContext.from_defaults(),
                                            embed_model=embed, transformations=[sentence(embed, size)],
                                            raise_on_error=True)
    assert index.vector_store.count() == len(base)


# -- 9 -----------------------------------------------------------------------------------------
def test_changed_splitter_rechunks_through_pipeline(embed):
    a, b = sentence(embed, 40), sentence(embed, 20)
    sc = StorageContext.from_defaults()
    pipeline(sc, [a, embed]).run(documents=docs())
    first = stored(sc)
    assert first == clean_build([a, embed], docs())
    p = pipeline(sc, [sentence(embed, 20), embed])
    p.run(documents=docs())
    assert p.last_stats.updated == 3
    state = stored(sc)
    assert state == clean_build([b, embed], docs())
    assert state != first
    assert docstore_links(sc) == links_of(state)
    # and back: the first configuration again re-chunks too
    pipeline(sc, [sentence(embed, 40), embed]).run(documents=docs())
    assert stored(sc) == first


def test_changed_splitter_rechunks_through_refresh_ref_docs(embed):
    a, b = sentence(embed, 40), sentence(embed, 20)
    sc = StorageContext.from_defaults()
    index = VectorStoreIndex.from_documents(docs(), storage_context=sc, embed_model=embed, transformations=[a])
    first = stored(sc)
    assert first == clean_build([a, embed], docs())
    assert index.refresh_ref_docs(docs()) == [False, False, False]
    reopened = load_index_from_storage(sc, embed_model=embed, transformations=[b])
    assert reopened.refresh_ref_docs(docs()) == [True, True, True]
    state = stored(sc)
    assert state == clean_build([b, embed], docs())
    assert set(reopened.ref_doc_info) == {"a", "b", "c"}
    assert reopened.refresh_ref_docs(docs()) == [False, False, False]


# -- insert / update_ref_doc -------------------------------------------------------------------
def test_update_ref_doc_and_insert_use_engine(embed):
    steps = [sentence(embed, 20), embed]
    sc = StorageContext.from_defaults()
    index = VectorStoreIndex.from_documents(docs(), storage_context=sc, embed_model=embed,
                                            transformations=[sentence(embed, 20)])
    assert stored(sc) == clean_build(steps, docs())
    index.insert(Document(id_="a", text=TEXTS["a"]))  # unchanged: nothing duplicated
    assert stored(sc) == clean_build(steps, docs())
    index.insert(Document(id_="a", text=EDITED_A))  # changed: a's nodes replaced
    edited = dict(TEXTS, a=EDITED_A)
    assert stored(sc) == clean_build(steps, docs(edited))
    index.insert(Document(id_="d", text="Delta fish swim in the sea."))
    with_d = dict(edited, d="Delta fish swim in the sea.")
    assert stored(sc) == clean_build(steps, docs(with_d))
    update = "Beta dogs sleep at home. They dream of bones."
    index.update_ref_doc(Document(id_="b", text=update))
    final = dict(with_d, b=update)
    state = stored(sc)
    assert state == clean_build(steps, docs(final))
    assert set(sc.docstore.get_source_document_hashes()) == {"a", "b", "c", "d"}
    assert set(index.ref_doc_info) == {"a", "b", "c", "d"}
    # update_ref_doc of an unchanged document rebuilds it, still without duplicates
    index.update_ref_doc(Document(id_="b", text=update))
    assert stored(sc) == state


# -- found while writing these tests -------------------------------------------------------------
def test_cached_rerun_keeps_a_chained_window_parsers_own_window(embed):
    """[window parser, window parser]: the second parser writes its own (hidden) window over the
    first one's.  When a document is edited after its first sentence, the first sentence's node
    keeps its id and hash (the window is hidden from both views), so the second parser's output is
    a cache hit: it must keep the second parser's window, not get the first parser's copied over it."""
    steps = [window(embed), window(embed), embed]
    sc = StorageContext.from_defaults()
    p = pipeline(sc, steps)
    p.run(documents=[Document(id_="a", text="Cats sleep all day.")])
    edited = [Document(id_="a", text="Cats sleep all day. Dogs bark at night.")]
    p.run(documents=edited)

    def full(sc):
        return {n.node_id: (n.text, n.metadata) for n in sc.vector_store.get_nodes()}

    clean = StorageContext.from_defaults()
    pipeline(clean, steps).run(documents=[Document(id_="a", text="Cats sleep all day. Dogs bark at night.")])
    got, want = full(sc), full(clean)
    assert got == want
    assert all(meta["window"] == text for text, meta in got.values())  # one-sentence inputs


# -- found by the new-user review of the engine -----------------------------------------------------
@pytest.mark.parametrize("second", ["window", "sentence"])
def test_chained_parsers_keep_offsets_into_the_document(embed, second):
    text = " ".join(f"Sentence number {i} says something about tea." for i in range(40))
    doc = Document(id_="a", text=text)
    chain = [sentence(embed, 60), window(embed) if second == "window" else sentence(embed, 20)]
    sc = StorageContext.from_defaults()
    out = pipeline(sc, [*chain, embed]).run(documents=[doc])
    assert out and all(text[n.start_char_idx : n.end_char_idx] == n.text for n in out)
    direct = chain[1](chain[0]([doc]))
    assert [(n.start_char_idx, n.end_char_idx) for n in direct] == [(n.start_char_idx, n.end_char_idx) for n in out]


def test_lone_surrogates_do_not_abort_the_run(embed):
    good = Document(id_="good", text="Green tea is brewed at 80 degrees.")
    bad = Document(id_="bad", text="Black tea \ud800 is brewed hotter.")
    index = VectorStoreIndex.from_documents([good, bad], embed_model=embed, transformations=[sentence(embed, 64)])
    texts = {n.ref_doc_id: n.text for n in index.vector_store.get_nodes(None)}
    assert set(texts) == {"good", "bad"} and texts["bad"] == "Black tea \ufffd is brewed hotter."


def test_lone_surrogates_in_metadata_are_replaced_and_the_document_ingested(embed, caplog):
    """A file name decoded with ``surrogateescape`` puts lone surrogates in metadata; the document
    was refused ("cannot be stored as JSON (file_name: str)").  Now, with a warning, each byte's
    surrogate U+DCNN becomes U+10FENN, as in the readers' file paths (two such keys stay two keys,
    and an excluded key stays excluded), any other surrogate U+FFFD, and the document is ingested
    beside the others."""
    good = Document(id_="good", text="Green tea is brewed at 80 degrees.", metadata={"file_name": "ok.txt"})
    bad = Document(
        id_="bad",
        text="Black tea is brewed hotter.",
        metadata={"file_name": "b\udc80d.txt", "tags": ["x\ud800"], "k" + chr(0xDC80): 1, "k" + chr(0xDC81): 2},
        excluded_embed_metadata_keys=["k\udc80"],
    )
    with caplog.at_level(logging.WARNING, logger="ragloom.ingestion.engine"):
        index = VectorStoreIndex.from_documents([good, bad], embed_model=embed, transformations=[sentence(embed, 64)])
    stored = {n.ref_doc_id: n for n in index.vector_store.get_nodes(None)}
    assert stored["bad"].metadata == {
        "file_name": "b\U0010fe80d.txt", "tags": ["x\ufffd"], "k\U0010fe80": 1, "k\U0010fe81": 2
    }
    assert "k\U0010fe80" not in stored["bad"].get_content(MetadataMode.EMBED)
    assert "k\U0010fe81: 2" in stored["bad"].get_content(MetadataMode.EMBED)
    assert stored["good"].metadata == {"file_name": "ok.txt"}
    assert "lone surrogate characters in its metadata" in caplog.text


def test_nodes_split_from_a_document_with_surrogate_metadata_are_stored_with_the_others(embed):
    """The splitter copies a document's metadata into each node's SOURCE relationship; those copies
    held the surrogates too, and storing such nodes raised for the whole batch."""
    good = Document(id_="good", text="Green tea is brewed at 80 degrees.", metadata={"file_name": "ok.txt"})
    bad = Document(id_="bad", text="Black tea is brewed hotter.", metadata={"file_name": "b\udc80d.txt"})
    nodes = sentence(embed, 64).get_nodes_from_documents([bad, good])
    info = nodes[0].source_node
    index = VectorStoreIndex(nodes=nodes, embed_model=embed)
    stored = {n.ref_doc_id: n for n in index.vector_store.get_nodes(None)}
    assert set(stored) == {"good", "bad"}
    assert stored["bad"].source_node.metadata == {"file_name": "b\U0010fe80d.txt"}
    # the node is repaired in place, with a new SOURCE link; the link object the caller holds is as it was
    assert nodes[0].source_node.metadata == {"file_name": "b\U0010fe80d.txt"}
    assert info.metadata == {"file_name": "b\udc80d.txt"}


def test_links_between_split_nodes_carry_the_repaired_neighbours_hash(embed):
    """Nodes split before ingestion from a document with a surrogate in its text and metadata: the
    splitter's PREVIOUS/NEXT links held the neighbours' hashes before the engine repaired them, so
    the stored links no longer matched the stored neighbours.  They are updated with the repair."""
    from ragloom.schema import NodeRelationship

    text = " ".join(f"Sentence {i} about black tea \ud800 brewed hot." for i in range(12))
    bad = Document(id_="bad", text=text, metadata={"file_name": "b\udc80d.txt"})
    nodes = sentence(embed, 32).get_nodes_from_documents([bad])
    assert len(nodes) >= 3
    assert nodes[0].relationships[NodeRelationship.NEXT].hash == nodes[1].hash  # (before the repair)
    held = nodes[0].relationships[NodeRelationship.NEXT]
    index = VectorStoreIndex(nodes=nodes, embed_model=embed)
    stored = {n.id_: n for n in index.vector_store.get_nodes(None)}
    assert len(stored) == len(nodes) and all("\ufffd" in n.text for n in stored.values())
    for node in stored.values():
        for rel in (NodeRelationship.PREVIOUS, NodeRelationship.NEXT):
            info = node.relationships.get(rel)
            if info is not None:
                assert info.hash == stored[info.node_id].hash
    assert held.hash != nodes[1].hash  # the caller's link object is as it was


def test_a_document_id_with_a_lone_surrogate_fails_alone(embed):
    """An id built from an undecodable file name holds a lone surrogate, which no store can keep;
    the docstore lookup raised ``UnicodeEncodeError`` for the whole call.  Ids are not rewritten
    (callers look documents up by them): that document fails, named, and the others are stored."""
    good = Document(id_="ok", text="Green tea is brewed at 80 degrees.")
    bad = Document(id_="i\udc80d", text="Black tea is brewed hotter.")
    index = VectorStoreIndex.from_documents([good, bad], embed_model=embed, transformations=[sentence(embed, 64)])
    assert {n.ref_doc_id for n in index.vector_store.get_nodes(None)} == {"ok"}
    sc = StorageContext.from_defaults()
    p = pipeline(sc, [sentence(embed, 64), embed])
    p.run(documents=[good, bad])
    [failure] = p.last_stats.failed
    assert failure.doc_id == "i\udc80d"
    assert "lone surrogate" in failure.message and "valid-Unicode id" in failure.message
    assert {n.ref_doc_id for n in sc.vector_store.get_nodes(None)} == {"ok"}


def test_a_surrogate_beside_a_value_with_no_json_form_names_only_that_value(embed):
    class Opaque:
        pass

    sc = StorageContext.from_defaults()
    batch = docs()
    batch[1] = Document(id_=batch[1].id_, text=batch[1].text, metadata={"a": Opaque(), "b": "x\udc80"})
    p = pipeline(sc, [sentence(embed, 64), embed])
    p.run(documents=batch)
    assert [f.doc_id for f in p.last_stats.failed] == [batch[1].id_] and p.last_stats.failed[0].keys == ("a",)


def test_changed_custom_transformation_reruns(embed):
    from ragloom.schema import TransformComponent

    class Tagger(TransformComponent):
        tag: str = "tea"

        def __call__(self, nodes, **kwargs):
            for n in nodes:
                n.metadata["tag"] = self.tag
            return nodes

    sc = StorageContext.from_defaults()
    pipeline(sc, [sentence(embed, 64), Tagger(), embed]).run(documents=docs())
    pipeline(sc, [sentence(embed, 64), Tagger(tag="coffee"), embed]).run(documents=docs())
    assert {n.metadata["tag"] for n in sc.vector_store.get_nodes(None)} == {"coffee"}
    with pytest.raises(TypeError, match="no field"):
        Tagger(colour="green")


def test_non_string_metadata_key_is_reported_not_fatal(embed):
    sc = StorageContext.from_defaults()
    batch = docs()
    batch[1] = Document(id_=batch[1].id_, text=batch[1].text, metadata={1: "one"})
    p = pipeline(sc, [sentence(embed, 64), embed])
    p.run(documents=batch)
    assert [f.doc_id for f in p.last_stats.failed] == [batch[1].id_] and p.last_stats.failed[0].keys == ("1",)
    assert {n.ref_doc_id for n in sc.vector_store.get_nodes(None)} == {d.id_ for d in batch} - {batch[1].id_}


@pytest.mark.parametrize("bad", ["100", 2.5, True])
def test_chunk_size_must_be_an_integer(bad):
    with pytest.raises(ValueError, match="chunk_size must be an integer"):
        SentenceSplitter(chunk_size=bad, chunk_overlap=0)


def test_auto_parser_does_not_send_extracted_html_text_to_the_html_parser(tmp_path, caplog):
    from ragloom.embeddings import resolve_embed_model
    from ragloom.readers import SimpleDirectoryReader
    from ragloom.settings import default_node_parser

    (tmp_path / "page.html").write_text("<html><body><h1>Tea</h1><p>Green tea is brewed at 80 degrees.</p>"
                                        "<p>Black tea is brewed hotter.</p></body></html>", encoding="utf-8")
    docs_ = SimpleDirectoryReader(input_dir=str(tmp_path)).load_data()
    with caplog.at_level(logging.WARNING):
        nodes = default_node_parser(resolve_embed_model("default"), parser="auto")(docs_)
    assert nodes and "falling back" not in caplog.text and "cannot parse" not in caplog.text
