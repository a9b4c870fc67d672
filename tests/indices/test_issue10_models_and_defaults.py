"""Issue 10, items 6 and 7: an index restores the embed model it was built with, and every entry point
chunks with the same defaults.  Real bundled model and tokenizer, real SQLite store, real CLI code."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from ragloom import Document, StorageContext, VectorStoreIndex, load_index_from_storage
from ragloom.embeddings import BaseEmbedding, HuggingFaceEmbedding, resolve_embed_model
from ragloom.node_parser import SentenceSplitter, TokenTextSplitter
from ragloom.settings import Settings, default_chunk_overlap, default_chunk_size, default_node_parser
from ragloom.tokenizers import get_default_tokenizer


class WordHashEmbedding(BaseEmbedding):
    """A model that cannot be rebuilt from an index record (not one of ragloom's local models)."""

    def __init__(self) -> None:
        super().__init__(model_name="word-hash-16", embed_batch_size=64)

    @property
    def dimension(self) -> int:
        return 16

    def get_tokenizer(self):
        return get_default_tokenizer()

    def _get_text_embeddings(self, texts):
        out = np.zeros((len(texts), 16), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i, 0] = 1.0
            for word in text.split():
                out[i, zlib.crc32(word.encode()) % 16] += 1.0
        return out


DOCS = [Document(id_=f"d{i}", text=f"Document {i} is about tea and bicycles. " * 20) for i in range(3)]


@pytest.fixture(autouse=True)
def _fresh_settings():
    Settings.reset()
    yield
    Settings.reset()


def test_load_index_from_storage_restores_the_recorded_embed_model(tmp_path):
    built = HuggingFaceEmbedding(query_instruction="query: ")  # the identity holds more than the name
    VectorStoreIndex.from_documents(DOCS, embed_model=built).storage_context.persist(str(tmp_path / "s"))
    Settings.embed_model = WordHashEmbedding()  # a different process-wide model must not leak in
    index = load_index_from_storage(StorageContext.from_defaults(persist_dir=str(tmp_path / "s")))
    assert isinstance(index.embed_model, HuggingFaceEmbedding)
    assert index.embed_model.query_instruction == "query: "
    assert index.as_retriever(similarity_top_k=1).retrieve("tea")[0].node.ref_doc_id in {"d0", "d1", "d2"}


def test_load_index_from_storage_refuses_another_embed_model(tmp_path):
    VectorStoreIndex.from_documents(DOCS).storage_context.persist(str(tmp_path / "s"))
    sc = StorageContext.from_defaults(persist_dir=str(tmp_path / "s"))
    with pytest.raises(ValueError, match="word-hash-16"):
        load_index_from_storage(sc, embed_model=WordHashEmbedding())


def test_an_index_of_a_model_that_cannot_be_rebuilt_asks_for_it(tmp_path):
    VectorStoreIndex.from_documents(DOCS, embed_model=WordHashEmbedding()).storage_context.persist(str(tmp_path / "s"))
    sc = StorageContext.from_defaults(persist_dir=str(tmp_path / "s"))
    with pytest.raises(ValueError, match="pass embed_model="):
        load_index_from_storage(sc)
    index = load_index_from_storage(sc, embed_model=WordHashEmbedding())
    assert index.vector_store.count() > 0


def test_defaults_are_the_same_at_every_entry_point(tmp_path):
    model = resolve_embed_model("default")
    limit = model.max_text_tokens
    size, overlap = default_chunk_size(limit), default_chunk_overlap(default_chunk_size(limit))
    assert (size, overlap) == (min(1024, limit), min(1024, limit) // 8)
    Settings.embed_model = model
    parsers = {
        "SentenceSplitter()": SentenceSplitter(),
        "Settings.node_parser": Settings.node_parser,
        "index default": VectorStoreIndex(embed_model=model).transformations[0],
        "default_node_parser": default_node_parser(model),
    }
    for name, p in parsers.items():
        assert (p.chunk_size, p.chunk_overlap) == (size, overlap), name
        assert p.tokenizer.name == model.get_tokenizer().name, name
    assert TokenTextSplitter().chunk_size == size
    doc = Document(id_="same", text="Tea is brewed with hot water. " * 200)
    ids = {name: [n.id_ for n in p([doc])] for name, p in parsers.items()}
    assert len({tuple(v) for v in ids.values()}) == 1, ids

    # the CLI's index_paths uses the same parser: same node ids in the store
    from ragloom.ingestion.paths import index_paths
    from ragloom.readers import SimpleDirectoryReader

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "tea.txt").write_text("Tea is brewed with hot water. " * 200, encoding="utf-8")
    summary = index_paths([folder], tmp_path / "idx", show_progress=False)
    assert (summary.chunk_size, summary.chunk_overlap) == (size, overlap)
    file_docs = SimpleDirectoryReader(input_dir=str(folder)).load_data()
    expected = sorted(n.id_ for n in SentenceSplitter()(file_docs))
    stored_index = load_index_from_storage(StorageContext.from_defaults(persist_dir=str(tmp_path / "idx")))
    stored = sorted(stored_index.vector_store.ref_doc_nodes()[file_docs[0].id_][0])
    assert stored == expected


def test_reloaded_index_refreshes_without_rechunking(tmp_path):
    """The index records its parsers; load_index_from_storage rebuilds them, so refreshing unchanged
    documents re-chunks nothing — for a Python-built index and for a `ragloom index` one."""
    from ragloom.ingestion.paths import index_paths
    from ragloom.readers import SimpleDirectoryReader

    docs = [Document(id_=f"d{i}", text=f"Sentence {i} about tea and bicycles. " * 40) for i in range(3)]
    built = VectorStoreIndex.from_documents(docs, transformations=[SentenceSplitter(chunk_size=96, chunk_overlap=8)])
    count = built.vector_store.count()
    built.storage_context.persist(str(tmp_path / "py"))
    index = load_index_from_storage(StorageContext.from_defaults(persist_dir=str(tmp_path / "py")))
    assert index.transformations[0].chunk_size == 96
    assert index.refresh_ref_docs(docs) == [False, False, False] and index.vector_store.count() == count

    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "a.md").write_text("# Tea\n\n" + "Green tea is brewed at 80 degrees. " * 30, encoding="utf-8")
    (folder / "b.txt").write_text("Bicycles need air in their tyres. " * 30, encoding="utf-8")
    index_paths([folder], tmp_path / "cli", show_progress=False)
    cli_index = load_index_from_storage(StorageContext.from_defaults(persist_dir=str(tmp_path / "cli")))
    file_docs = SimpleDirectoryReader(input_dir=str(folder)).load_data()
    assert cli_index.refresh_ref_docs(file_docs) == [False, False]
    assert index_paths([folder], tmp_path / "cli", show_progress=False).documents["unchanged"] == 2
