"""Importing a LlamaIndex ``./storage`` folder: ``StorageContext.from_llamaindex`` and
``ragloom.storage.llamaindex_import``, on a folder written by real LlamaIndex 0.14.25 with real
all-MiniLM-L6-v2 vectors (``tests/data/llamaindex_storage``, made by
``tests/data/make_llamaindex_fixtures.py``; ``expected.json`` holds the node and score LlamaIndex's
own retriever gave for three queries)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ragloom import StorageContext, load_index_from_storage
from ragloom.embeddings import resolve_embed_model
from ragloom.storage.llamaindex_import import (
    import_llamaindex,
    read_llamaindex_storage,
    verify_embed_model,
)

STORAGE = Path(__file__).resolve().parents[1] / "data" / "llamaindex_storage"
EXPECTED = json.loads((STORAGE / "expected.json").read_text(encoding="utf-8"))["top_node"]
VECTORS = json.loads((STORAGE / "default__vector_store.json").read_text(encoding="utf-8"))["embedding_dict"]


@pytest.fixture(scope="module")
def fp32():
    return resolve_embed_model("fp32")


def copy_storage(tmp_path: Path) -> Path:
    dst = tmp_path / "storage"
    shutil.copytree(STORAGE, dst)
    return dst


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def test_from_llamaindex_keeps_the_vectors_and_answers_as_llamaindex_did(fp32):
    sc = StorageContext.from_llamaindex(STORAGE, embed_model=fp32)
    index = load_index_from_storage(sc)
    assert index.vector_store.count() == len(VECTORS) == 14
    # nothing was re-embedded: the stored vectors are LlamaIndex's own
    for node in index.vector_store.get_nodes():
        assert np.allclose(node.embedding, VECTORS[node.node_id], atol=1e-6)
    assert index.embed_model.identity() == fp32.identity()
    retriever = index.as_retriever(similarity_top_k=2, vector_store_query_mode="default")
    for query, (node_id, score) in EXPECTED.items():
        hit = retriever.retrieve(query)[0]
        assert hit.node.node_id == node_id
        assert hit.score == pytest.approx(score, abs=1e-4)
    # the default (hybrid) retriever finds the same top node for the English queries
    assert index.as_retriever(similarity_top_k=1).retrieve("How hot should the water be for green tea?")[
        0].node.node_id == EXPECTED["How hot should the water be for green tea?"][0]


def test_import_records_sources_so_a_second_import_changes_nothing(fp32):
    index, first = import_llamaindex(STORAGE, embed_model=fp32)
    li_id = json.loads((STORAGE / "index_store.json").read_text())["index_store/data"]
    assert index.index_id == first.index_id == next(iter(li_id))  # LlamaIndex's index id kept
    assert first.nodes_read == first.nodes_written == 14 and first.dimension == 384
    assert first.documents == {"read": 4, "added": 4, "updated": 0, "unchanged": 0}
    assert first.verified["sample"] == 3 and first.verified["min_cosine"] > 0.999
    assert first.failed == [] and first.index_dir is None
    _, again = import_llamaindex(STORAGE, index.storage_context, embed_model=fp32)
    assert again.documents["unchanged"] == 4 and again.nodes_written == 0
    assert index.vector_store.count() == 14
    docs = index.docstore.get_all_ref_doc_info()
    assert len(docs) == 4 and all(info.metadata["file_path"].startswith("/tmp/llamaindex_fixture/")
                                  for info in docs.values())


def test_import_into_an_index_dir_persists(tmp_path, fp32):
    sc = StorageContext.from_llamaindex(STORAGE, embed_model=fp32, index_dir=tmp_path / "idx")
    assert (tmp_path / "idx" / "ragloom.sqlite").is_file()
    sc.close()
    index = load_index_from_storage(StorageContext.from_defaults(persist_dir=tmp_path / "idx"))
    assert index.vector_store.count() == 14 and index.embed_model.model_name.endswith("all-MiniLM-L6-v2")


def test_default_model_is_the_bundled_fp32_model_for_384_dims():
    index, summary = import_llamaindex(STORAGE)
    assert index.embed_model.to_config().get("quantize") is None and summary.verified["min_cosine"] > 0.999


def test_the_int8_variant_passes_the_check_within_its_tolerance():
    _, summary = import_llamaindex(STORAGE, embed_model="fast")
    assert 0.9 <= summary.verified["min_cosine"] < 0.9999


def test_vectors_of_another_model_are_refused(tmp_path, fp32):
    storage = copy_storage(tmp_path)
    # the same nodes with other vectors of the same dimension (rolled: another "space")
    edit_json(storage / "default__vector_store.json",
              lambda d: d["embedding_dict"].update({k: list(np.roll(v, 7)) for k, v in d["embedding_dict"].items()}))
    with pytest.raises(ValueError, match=r"does not reproduce the stored vectors.*all-minilm-l6-v2"):
        import_llamaindex(storage, embed_model=fp32)
    # the check can be skipped by someone who knows better (the dimension still has to match)
    _, summary = import_llamaindex(storage, embed_model=fp32, verify=False)
    assert summary.verified is None and summary.nodes_written == 14


def test_a_dimension_mismatch_names_models_of_that_size(tmp_path, fp32):
    storage = copy_storage(tmp_path)
    edit_json(storage / "default__vector_store.json",
              lambda d: d["embedding_dict"].update({k: v + v for k, v in d["embedding_dict"].items()}))
    with pytest.raises(ValueError, match=r"768 dimensions.*nomic-embed-text"):
        import_llamaindex(storage)  # nothing stated: the bundled model does not fit
    with pytest.raises(ValueError, match="makes 384"):
        import_llamaindex(storage, embed_model=fp32, verify=False)
    with pytest.raises(ValueError, match="makes 384"):
        verify_embed_model(read_llamaindex_storage(storage).nodes, fp32, 768)


def test_existing_index_with_another_model_is_refused(tmp_path, fp32):
    sc = StorageContext.from_defaults(persist_dir=tmp_path / "idx", create_if_missing=True)
    from ragloom import Document, VectorStoreIndex

    VectorStoreIndex.from_documents([Document(text="hello", id_="h")], storage_context=sc, embed_model="fast")
    with pytest.raises(ValueError, match="this index was built with"):
        import_llamaindex(STORAGE, sc, embed_model=fp32)


def test_missing_files_are_named(tmp_path):
    storage = copy_storage(tmp_path)
    (storage / "default__vector_store.json").unlink()
    (storage / "docstore.json").unlink()
    with pytest.raises(FileNotFoundError, match="missing docstore.json, default__vector_store.json"):
        read_llamaindex_storage(storage)
    with pytest.raises(FileNotFoundError, match="not a folder"):
        read_llamaindex_storage(tmp_path / "nowhere")


def test_unsupported_index_types_and_choices(tmp_path):
    storage = copy_storage(tmp_path)
    path = storage / "index_store.json"
    (vid, entry), = json.loads(path.read_text())["index_store/data"].items()

    edit_json(path, lambda d: d["index_store/data"][vid].update({"__type__": "list"}))
    with pytest.raises(ValueError, match="holds no VectorStoreIndex \\(it holds SummaryIndex\\)"):
        read_llamaindex_storage(storage)
    with pytest.raises(ValueError, match="is a SummaryIndex"):
        read_llamaindex_storage(storage, index_id=vid)

    edit_json(path, lambda d: d["index_store/data"].update({vid: entry, "second": entry}))
    with pytest.raises(ValueError, match="2 VectorStoreIndex structs.*index_id"):
        read_llamaindex_storage(storage)
    assert read_llamaindex_storage(storage, index_id="second").index_id == "second"
    with pytest.raises(ValueError, match="no index with index_id 'third'"):
        read_llamaindex_storage(storage, index_id="third")


def test_an_index_on_an_external_vector_store_is_explained(tmp_path):
    storage = copy_storage(tmp_path)
    path = storage / "index_store.json"

    def empty(d):
        for entry in d["index_store/data"].values():
            data = json.loads(entry["__data__"])
            data["nodes_dict"] = {}
            entry["__data__"] = json.dumps(data)

    edit_json(path, empty)
    with pytest.raises(ValueError, match="lists no nodes.*ChromaVectorStore"):
        read_llamaindex_storage(storage)


def test_missing_vectors_and_bad_vectors(tmp_path):
    storage = copy_storage(tmp_path)
    first = next(iter(VECTORS))
    edit_json(storage / "default__vector_store.json", lambda d: d["embedding_dict"].pop(first))
    with pytest.raises(ValueError, match="1 have no vector"):
        read_llamaindex_storage(storage)
    storage = copy_storage(tmp_path / "b")
    edit_json(storage / "default__vector_store.json", lambda d: d["embedding_dict"][first].pop())
    with pytest.raises(ValueError, match="383 dimensions, the others 384|384 dimensions, the others 383"):
        read_llamaindex_storage(storage)


def test_old_spelling_and_unsupported_node_types(tmp_path, fp32):
    storage = copy_storage(tmp_path)
    first = next(iter(VECTORS))

    def change(d):
        for entry in d["docstore/data"].values():
            data = entry["__data__"]
            data["metadata_seperator"] = data.pop("metadata_separator")
        d["docstore/data"][first]["__data__"]["class_name"] = "ImageNode"

    edit_json(storage / "docstore.json", change)
    got = read_llamaindex_storage(storage)
    assert len(got.nodes) == 13 and got.failed[0]["id"] == first and "ImageNode" in got.failed[0]["reason"]
    _, summary = import_llamaindex(storage, embed_model=fp32)
    assert summary.nodes_written == 13 and summary.failed[0]["id"] == first
