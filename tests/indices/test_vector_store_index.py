"""VectorStoreIndex end to end with the real bundled model and the real SQLite store."""

import os
import subprocess
import sys

import pytest

from ragloom import (
    Document,
    NodeWithScore,
    SimpleDirectoryReader,
    StorageContext,
    VectorStoreIndex,
)

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "data")


@pytest.fixture(scope="module")
def example_docs():
    return SimpleDirectoryReader(input_dir=EXAMPLES).load_data()


def _sources(results):
    return [os.path.basename(r.node.metadata["file_path"]) for r in results]


def test_from_documents_retrieve_english_and_chinese(example_docs):
    index = VectorStoreIndex.from_documents(example_docs)
    results = index.as_retriever(similarity_top_k=2).retrieve("How hot should the water be for green tea?")
    assert all(isinstance(r, NodeWithScore) for r in results)
    assert _sources(results)[0] == "brewing_green_tea.md"
    assert results[0].score >= results[1].score
    node = results[0].node
    doc = next(d for d in example_docs if d.id_ == node.ref_doc_id)
    assert doc.text[node.start_char_idx : node.end_char_idx] == node.text


def test_persist_and_load_in_another_process(tmp_path, example_docs):
    index = VectorStoreIndex.from_documents(example_docs)
    index.storage_context.persist(str(tmp_path / "storage"))
    code = (
        "from ragloom import StorageContext, load_index_from_storage\n"
        f"sc = StorageContext.from_defaults(persist_dir={str(tmp_path / 'storage')!r})\n"
        "idx = load_index_from_storage(sc)\n"
        "r = idx.as_retriever(similarity_top_k=3).retrieve('how to patch a bicycle tube')\n"
        "print(r[0].node.metadata['file_name'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "fixing_a_flat_tire.md"


def test_load_from_missing_dir_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        StorageContext.from_defaults(persist_dir=str(tmp_path / "nope"))


def test_insert_delete_and_refresh(tmp_path):
    sc = StorageContext.from_defaults(persist_dir=str(tmp_path / "idx"), create_if_missing=True)
    a = Document(text="Alpacas are kept for their soft wool in the Andes.", id_="a")
    b = Document(text="Sourdough bread rises with wild yeast and lactic bacteria.", id_="b")
    index = VectorStoreIndex.from_documents([a], storage_context=sc)
    index.insert(b)
    top = index.as_retriever(similarity_top_k=1).retrieve("baking bread with wild yeast")
    assert top[0].node.ref_doc_id == "b"

    index.delete_ref_doc("b", delete_from_docstore=True)
    top = index.as_retriever(similarity_top_k=5).retrieve("baking bread with wild yeast")
    assert {r.node.ref_doc_id for r in top} == {"a"}

    b2 = Document(text="Rye bread is dense and sour.", id_="b")
    a_same = Document(text=a.text, id_="a")
    assert index.refresh_ref_docs([a_same, b2]) == [False, True]
    assert index.refresh_ref_docs([a_same, b2]) == [False, False]
    texts = {r.node.text for r in index.as_retriever(similarity_top_k=10).retrieve("bread")}
    assert texts == {a.text, b2.text}


def test_reindexing_same_documents_adds_no_duplicates(example_docs):
    sc = StorageContext.from_defaults()
    index = VectorStoreIndex.from_documents(example_docs, storage_context=sc)
    first = {r.node.node_id for r in index.as_retriever(similarity_top_k=50).retrieve("tea")}
    index.insert_nodes(index.transformations[0](example_docs))
    second = [r.node.node_id for r in index.as_retriever(similarity_top_k=50).retrieve("tea")]
    assert len(second) == len(set(second)) == len(first)


def test_bad_arguments():
    index = VectorStoreIndex(nodes=[])
    with pytest.raises(ValueError, match="similarity_top_k"):
        index.as_retriever(similarity_top_k=0)
    with pytest.raises(ValueError, match="insert_batch_size"):
        VectorStoreIndex(nodes=[], insert_batch_size=0)


def test_default_retrieval_is_hybrid_and_finds_chinese(example_docs):
    index = VectorStoreIndex.from_documents(example_docs)
    retriever = index.as_retriever(similarity_top_k=1)
    assert retriever.vector_store_query_mode.value == "hybrid"
    assert _sources(retriever.retrieve("大熊猫每天吃多少竹子")) == ["大熊猫.md"]
    assert _sources(retriever.retrieve("登山要带什么装备")) == ["秋天的登山计划.txt"]
    dense = index.as_retriever(similarity_top_k=1, vector_store_query_mode="default")
    assert _sources(dense.retrieve("How do I repair a punctured tube?")) == ["fixing_a_flat_tire.md"]
    keyword = index.as_retriever(similarity_top_k=1, vector_store_query_mode="text_search")
    assert _sources(keyword.retrieve("gyokuro")) == ["brewing_green_tea.md"]
    with pytest.raises(ValueError, match="vector_store_query_mode"):
        index.as_retriever(vector_store_query_mode="nonsense")


def test_chinese_query_with_english_only_model_skips_the_dense_side(example_docs):
    index = VectorStoreIndex.from_documents(example_docs)
    calls = []
    original = index.embed_model.get_query_embedding
    index.embed_model.get_query_embedding = lambda q: calls.append(q) or original(q)
    try:
        top = index.as_retriever(similarity_top_k=1).retrieve("大熊猫每天吃多少竹子")
        assert _sources(top) == ["大熊猫.md"] and calls == []
        index.as_retriever(similarity_top_k=1).retrieve("green tea")
        assert calls == ["green tea"]
    finally:
        del index.embed_model.get_query_embedding


def test_ref_doc_info_lists_documents_kept_only_in_the_vector_store(tmp_path):
    # the default store keeps the node text, so the docstore holds no nodes; ref_doc_info must
    # still list every document and its nodes (LlamaIndex raises NotImplementedError here)
    sc = StorageContext.from_defaults(persist_dir=str(tmp_path / "idx"), create_if_missing=True)
    a = Document(text="Alpacas are kept for their soft wool in the Andes.", id_="a", metadata={"kind": "animal"})
    b = Document(text="Sourdough bread rises with wild yeast. " * 60, id_="b", metadata={"kind": "food"})
    index = VectorStoreIndex.from_documents([a, b], storage_context=sc)
    info = index.ref_doc_info
    assert set(info) == {"a", "b"}
    assert info["a"].metadata["kind"] == "animal" and len(info["a"].node_ids) == 1
    stored = {n.node_id for n in index.vector_store.get_nodes() if n.ref_doc_id == "b"}
    assert set(info["b"].node_ids) == stored and len(stored) >= 2
    index.delete_ref_doc("a")
    assert set(index.ref_doc_info) == {"b"}


@pytest.mark.parametrize("store_nodes_override", [False, True])
def test_delete_nodes_removes_nodes_inserted_without_a_document(tmp_path, store_nodes_override):
    """LlamaIndex's ``VectorStoreIndex.delete_nodes``: a node added with ``insert_nodes`` has no
    document to delete it by (``index.delete_nodes`` raised AttributeError)."""
    from ragloom import load_index_from_storage
    from ragloom.schema import TextNode

    sc = StorageContext.from_defaults(persist_dir=str(tmp_path), create_if_missing=True)
    index = VectorStoreIndex.from_documents(
        [Document(text="Narwhals have one long tusk.", id_="whales")], storage_context=sc,
        store_nodes_override=store_nodes_override)
    index.insert_nodes([TextNode(text="Capybaras are the largest rodents.", id_="n-go"),
                        TextNode(text="Tapirs browse leaves at night.", id_="n-stay")])

    def texts(idx, query):
        return [r.node.get_content() for r in idx.as_retriever(similarity_top_k=5).retrieve(query)]

    assert "Capybaras are the largest rodents." in texts(index, "capybara rodents")
    index.delete_nodes(["n-go", "no-such-node"], delete_from_docstore=True)
    found = texts(index, "capybara rodents")
    assert "Capybaras are the largest rodents." not in found
    assert {"Tapirs browse leaves at night.", "Narwhals have one long tusk."} <= set(found)
    assert "n-go" not in index.index_struct.nodes_dict.values()
    index.storage_context.persist()
    reloaded = load_index_from_storage(StorageContext.from_defaults(persist_dir=str(tmp_path)))
    again = texts(reloaded, "capybara rodents")
    assert "Capybaras are the largest rodents." not in again and "Tapirs browse leaves at night." in again


def test_llamaindex_names_mock_embedding_and_simple_node_parser(tmp_path):
    """Names LlamaIndex scripts import: ``MockEmbedding(embed_dim=...)`` (a constant vector of 0.5s,
    rebuilt from the index's record on load) and ``SimpleNodeParser`` (the older name of
    ``SentenceSplitter``)."""
    import numpy as np

    from ragloom import load_index_from_storage
    from ragloom.embeddings import MockEmbedding
    from ragloom.node_parser import SentenceSplitter, SimpleNodeParser

    assert SimpleNodeParser is SentenceSplitter
    parser = SimpleNodeParser.from_defaults(chunk_size=64, chunk_overlap=0)
    model = MockEmbedding(embed_dim=8)
    assert np.allclose(model.get_text_embedding("anything"), [0.5] * 8)
    assert np.allclose(model.get_query_embedding("else"), [0.5] * 8)
    with pytest.raises(ValueError, match="embed_dim"):
        MockEmbedding(embed_dim=0)
    sc = StorageContext.from_defaults(persist_dir=str(tmp_path), create_if_missing=True)
    docs = [Document(text="Narwhals have one long tusk.", id_="n"), Document(text="Capybaras are rodents.", id_="c")]
    index = VectorStoreIndex.from_documents(docs, embed_model=model, storage_context=sc, transformations=[parser])
    top = index.as_retriever(similarity_top_k=1).retrieve("capybaras")  # hybrid: the keywords decide
    assert top[0].node.ref_doc_id == "c"
    sc.persist()
    again = load_index_from_storage(StorageContext.from_defaults(persist_dir=str(tmp_path)))
    assert isinstance(again.embed_model, MockEmbedding) and again.embed_model.embed_dim == 8
    assert again.as_retriever(similarity_top_k=1).retrieve("narwhals")[0].node.ref_doc_id == "n"
