"""Property: incremental ingestion ends where a clean build of the final corpus does.

Hypothesis draws a pipeline (a chain of 1-3 node parsers with small chunk sizes, each with two
configurations so the corpus can be *re-split*), an input form (documents, or nodes pre-split by
the chain's first parser), a :class:`DocstoreStrategy`, an entry point and a sequence of
operations over a small corpus of short texts: add, edit, delete, re-split (switch every parser
to its other configuration), re-run.  After every operation the corpus is synced through the
entry point; then the storage must equal a CLEAN BUILD of the current corpus (the same entry
point and final configuration into empty storage):

* the same node ids, each with the same source document, text, metadata and vector (a vector
  for every node);
* no orphans: no node whose source is not in the corpus, fingerprints recorded only for the
  corpus's documents, and the same docstore rows (node links and fingerprints) as the clean build;
* the run reports exactly the documents that changed as added / updated / deleted.

Entry points: ``IngestionPipeline.run``, ``IngestionPipeline.run_batches`` (random batch sizes,
whole documents per batch: a document's pre-split nodes spread over two batches is the subject of
``test_issue10_regressions.py::test_presplit_nodes_of_one_document_across_batches_are_all_kept``)
and ``VectorStoreIndex`` (``from_documents``, then ``refresh_ref_docs`` and ``delete_ref_doc``;
documents only, as its API takes).  The pipeline keeps one ``IngestionCache`` across all its runs
and re-splits, so cached transformation outputs are exercised too.

What a *sync* is under each strategy (see ``DocstoreStrategy``):

* ``UPSERTS``: a run adds new documents and replaces changed ones; it deletes nothing, so a
  deleted document is removed with ``VectorStoreIndex.delete_ref_doc`` (its nodes, links and
  fingerprint).  A sync passes the documents that changed plus a random subset of the unchanged
  ones (unchanged ones must be skipped); after a re-split it passes every document, since
  UPSERTS re-chunks only what it is given.
* ``UPSERTS_AND_DELETE``: a full sync; every run passes the whole corpus, and a document left
  out is deleted.
* ``DUPLICATES_ONLY``: a document whose fingerprint is recorded is skipped, and nothing is ever
  deleted, so an edited (or re-split) document would keep its old nodes *by design*; only add
  and re-run sequences are compared with a clean build there.

The embed model is a cheap deterministic hash of the words (no neural model).
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragloom.embeddings import BaseEmbedding
from ragloom.indices.loading import load_index_from_storage
from ragloom.indices.vector_store import VectorStoreIndex
from ragloom.ingestion import DocstoreStrategy, IngestionCache, IngestionPipeline
from ragloom.node_parser import SentenceSplitter, SentenceWindowNodeParser, TokenTextSplitter
from ragloom.schema import Document
from ragloom.storage import StorageContext
from ragloom.tokenizers import get_default_tokenizer

UPSERTS, UPSERTS_AND_DELETE, DUPLICATES_ONLY = (
    DocstoreStrategy.UPSERTS, DocstoreStrategy.UPSERTS_AND_DELETE, DocstoreStrategy.DUPLICATES_ONLY,
)

SENTENCES = [
    "Cats sleep all day.",
    "Dogs run in the park and fetch sticks.",
    "Birds sing at dawn.",
    "Fish swim in the cold sea.",
    "The sun is warm and bright today.",
    "Rain falls on the roof.",
    "Trees grow tall in the quiet forest.",
    "We read old books at night.",
    "Bees make honey.",
    "The river flows to the sea slowly.",
]
DOC_IDS = ["d0", "d1", "d2", "d3", "d4"]


class HashEmbedding(BaseEmbedding):
    """Deterministic bag-of-words vectors (crc32 of each word): cheap, and equal texts give equal vectors."""

    def __init__(self, dim: int = 16) -> None:
        super().__init__(model_name="hash-words-test", embed_batch_size=64)
        self.dim = dim

    @property
    def dimension(self):
        return self.dim

    def get_tokenizer(self):
        return get_default_tokenizer()

    def _get_text_embeddings(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i, 0] = 1.0
            for word in text.split():
                out[i, zlib.crc32(word.encode("utf-8")) % self.dim] += 1.0
        return out


EMBED = HashEmbedding()


# -- pipelines -----------------------------------------------------------------------------------
def make_parser(spec, variant):
    kind, sizes, overlap = spec
    tok = get_default_tokenizer()
    size = sizes[variant]
    if kind == "sentence":
        return SentenceSplitter(chunk_size=size, chunk_overlap=overlap, tokenizer=tok)
    if kind == "token":
        return TokenTextSplitter(chunk_size=size, chunk_overlap=overlap, tokenizer=tok)
    return SentenceWindowNodeParser(window_size=1, chunk_size=size, tokenizer=tok)


parser_specs = st.tuples(
    st.sampled_from(["sentence", "token", "window"]),
    st.tuples(st.sampled_from([12, 20, 32]), st.sampled_from([12, 16, 48])),
    st.sampled_from([0, 3]),
)
texts = st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=5).map(" ".join)
operations = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(DOC_IDS), texts),
    st.tuples(st.just("edit"), st.integers(0, 4), texts),
    st.tuples(st.just("delete"), st.integers(0, 4)),
    st.tuples(st.just("resplit")),
    st.tuples(st.just("rerun")),
)


class Scenario:
    """One drawn pipeline over one storage context, synced through one entry point."""

    def __init__(self, entry, strategy, inputs, chain, data):
        self.entry, self.strategy, self.inputs, self.chain, self.data = entry, strategy, inputs, chain, data
        self.variant = 0
        self.sc = StorageContext.from_defaults()
        self.cache = IngestionCache()  # shared across runs and re-splits, as a long-lived pipeline's
        self.index = None  # VectorStoreIndex over self.sc (entry "index", or deletes under UPSERTS)

    # -- the pipeline of the current configuration
    def parsers(self):
        return [make_parser(spec, self.variant) for spec in self.chain]

    def transformations(self):
        """Steps run by the entry point: the chain (minus the pre-splitter for node inputs) + the embed model."""
        parsers = self.parsers()
        return (parsers[1:] if self.inputs == "nodes" else parsers) + [EMBED]

    def inputs_of(self, corpus, ids):
        docs = [Document(id_=i, text=corpus[i]) for i in ids]
        if self.inputs == "nodes":
            return self.parsers()[0](docs)
        return docs

    def pipeline(self, sc, cache):
        return IngestionPipeline(transformations=self.transformations(), docstore=sc.docstore,
                                 vector_store=sc.vector_store, docstore_strategy=self.strategy, cache=cache)

    # -- syncing
    def build(self, corpus):
        if self.entry == "index":
            self.index = VectorStoreIndex.from_documents(
                self.inputs_of(corpus, list(corpus)), storage_context=self.sc, embed_model=EMBED,
                transformations=self.parsers(),
            )
            return
        self.sync(corpus, set(corpus), set(), set(corpus))

    def sync(self, corpus, passed, deleted, dirty):
        """Bring the storage to ``corpus``: ``passed`` ids are given to the entry point, ``deleted``
        ones were removed from the corpus, ``dirty`` ones were added or changed (or re-split)."""
        ids = [i for i in corpus if i in passed]
        if self.entry == "index":
            for doc_id in sorted(deleted):
                self.index.delete_ref_doc(doc_id)
            done = self.index.refresh_ref_docs(self.inputs_of(corpus, ids))
            assert done == [i in dirty for i in ids]
            return
        if self.strategy == UPSERTS:
            if deleted and self.index is None:
                self.index = VectorStoreIndex(storage_context=self.sc, embed_model=EMBED)
            for doc_id in sorted(deleted):
                self.index.delete_ref_doc(doc_id)
        p = self.pipeline(self.sc, self.cache)
        if self.entry == "run":
            p.run(**{self.inputs: self.inputs_of(corpus, ids)})
            stats = p.last_stats
        else:
            stats = p.run_batches(self.batches(corpus, ids))
        assert not stats.failed
        if self.strategy != DUPLICATES_ONLY:
            assert stats.added + stats.updated == len(dirty & set(ids)), stats
            assert stats.unchanged == len(set(ids) - dirty), stats
        if self.strategy == UPSERTS_AND_DELETE:
            assert stats.deleted == len(deleted), stats

    def batches(self, corpus, ids):
        """Random batches of whole documents (a document's pre-split nodes stay together)."""
        out, i = [], 0
        while i < len(ids):
            size = self.data.draw(st.integers(1, 3), label="batch size")
            out.append([n for doc_id in ids[i : i + size] for n in self.inputs_of(corpus, [doc_id])])
            i += size
        return out

    def clean_build(self, corpus):
        sc = StorageContext.from_defaults()
        if self.entry == "index":
            VectorStoreIndex.from_documents(self.inputs_of(corpus, list(corpus)), storage_context=sc,
                                            embed_model=EMBED, transformations=self.parsers())
        else:
            self.pipeline(sc, None).run(**{self.inputs: self.inputs_of(corpus, list(corpus))})
        return sc


# -- what is compared ----------------------------------------------------------------------------
def vector_state(sc):
    nodes = sc.vector_store.get_nodes()  # joined with the vectors: a node without one is left out
    assert len(nodes) == sc.vector_store.count(), "a node without a vector"
    return {n.node_id: (n.ref_doc_id, n.text, n.metadata, tuple(n.embedding)) for n in nodes}


def docstore_state(sc):
    ds = sc.docstore
    rows = ds.database.execute("SELECT doc_id, doc_hash, ref_doc_id FROM docstore_meta")
    return {
        "meta": sorted(rows),
        "nodes": sorted(ds.docs),
        "sources": ds.get_source_document_hashes(),
        "links": {ref: sorted(info.node_ids) for ref, info in ds.get_all_ref_doc_info().items()},
    }


def assert_equals_clean_build(scenario, corpus):
    got, want_sc = vector_state(scenario.sc), scenario.clean_build(corpus)
    want = vector_state(want_sc)
    assert sorted(got) == sorted(want)
    assert got == want
    assert scenario.sc.vector_store.count() == want_sc.vector_store.count()
    # no orphans
    assert {ref for ref, *_ in got.values()} <= set(corpus)
    state = docstore_state(scenario.sc)
    assert set(state["sources"]) <= set(corpus)
    assert set(state["links"]) <= set(corpus)
    assert state == docstore_state(want_sc)


# -- the property ----------------------------------------------------------------------------------
def check_sequence(entry, strategy, inputs, data):
    chain = data.draw(st.lists(parser_specs, min_size=1, max_size=3), label="chain")
    allowed = ["add", "rerun"] if strategy == DUPLICATES_ONLY else ["add", "edit", "delete", "resplit", "rerun"]
    ops = data.draw(st.lists(operations.filter(lambda op: op[0] in allowed), max_size=6), label="operations")
    initial = data.draw(st.dictionaries(st.sampled_from(DOC_IDS), texts, min_size=1, max_size=3), label="corpus")
    scenario = Scenario(entry, strategy, inputs, chain, data)
    corpus = dict(initial)
    scenario.build(corpus)
    assert_equals_clean_build(scenario, corpus)
    for op in ops:
        before = dict(corpus)
        resplit = False
        if strategy == DUPLICATES_ONLY and op[0] == "add" and op[1] in corpus:
            op = ("rerun",)  # that would be an edit
        if op[0] == "add" and op[1] not in corpus or op[0] == "edit" and not corpus:
            doc_id = op[1] if op[0] == "add" else next(i for i in DOC_IDS if i not in corpus)
            corpus[doc_id] = op[2]
        elif op[0] == "add" or op[0] == "edit":
            doc_id = op[1] if op[0] == "add" else sorted(corpus)[op[1] % len(corpus)]
            corpus[doc_id] = op[2]
        elif op[0] == "delete" and corpus:
            del corpus[sorted(corpus)[op[1] % len(corpus)]]
        elif op[0] == "resplit":
            configs = [t.to_config() for t in scenario.parsers()]
            scenario.variant = 1 - scenario.variant
            resplit = configs != [t.to_config() for t in scenario.parsers()]  # (12, 12): nothing changes
            if entry == "index":  # the stored index reopened with the other transformations
                scenario.index = load_index_from_storage(
                    scenario.sc, index_id=scenario.index.index_id, embed_model=EMBED,
                    transformations=scenario.parsers(),
                )
        deleted = set(before) - set(corpus)
        dirty = set(corpus) if resplit else {i for i in corpus if before.get(i) != corpus[i]}
        if strategy == UPSERTS and not resplit:
            extra = data.draw(st.sets(st.sampled_from(sorted(corpus))) if corpus else st.just(set()),
                              label="unchanged documents passed too")
            passed = dirty | extra
        else:
            passed = set(corpus)
        scenario.sync(corpus, passed, deleted, dirty)
        assert_equals_clean_build(scenario, corpus)


COMBINATIONS = [
    (entry, strategy, inputs)
    for entry in ("run", "run_batches")
    for strategy in (UPSERTS, UPSERTS_AND_DELETE, DUPLICATES_ONLY)
    for inputs in ("documents", "nodes")
] + [("index", UPSERTS, "documents")]
IDS = [f"{e}-{s.value}-{i}" for e, s, i in COMBINATIONS]
HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


@pytest.mark.parametrize(("entry", "strategy", "inputs"), COMBINATIONS, ids=IDS)
@settings(max_examples=20, deadline=None, suppress_health_check=HEALTH)
@given(data=st.data())
def test_incremental_ingestion_equals_clean_build(entry, strategy, inputs, data):
    check_sequence(entry, strategy, inputs, data)


@pytest.mark.slow
@pytest.mark.parametrize(("entry", "strategy", "inputs"), COMBINATIONS, ids=IDS)
@settings(max_examples=100, deadline=None, suppress_health_check=HEALTH)
@given(data=st.data())
def test_incremental_ingestion_equals_clean_build_many_examples(entry, strategy, inputs, data):
    check_sequence(entry, strategy, inputs, data)
