"""Chroma collections shared with LlamaIndex.

``tests/data/llamaindex_chroma_records.json`` holds every record real LlamaIndex (0.14.25, its
``ChromaVectorStore``) wrote for ``examples/data`` with real all-MiniLM-L6-v2 vectors, and the node
its own retriever ranked first for three queries (see ``tests/data/make_llamaindex_fixtures.py``).
The records are added to a fresh local collection with the plain ``chromadb`` client, exactly as
LlamaIndex left them; ragloom must read, query and delete them.  The other way round, the records
ragloom writes must have LlamaIndex's layout (checked here key by key; reading them with LlamaIndex
itself was checked by hand, see the fixture script)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Dict

import chromadb  # required, not skipped: pip install 'ragloom[chroma]'
import pytest
from chromadb.config import Settings as ChromaSettings

from ragloom import Document, VectorStoreIndex
from ragloom.schema import NodeRelationship, RelatedNodeInfo, TextNode
from ragloom.storage import StorageContext
from ragloom.vector_stores.chroma import ChromaVectorStore
from ragloom.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict

DATA = Path(__file__).resolve().parents[1] / "data"
RECORDS: Dict[str, Any] = json.loads((DATA / "llamaindex_chroma_records.json").read_text(encoding="utf-8"))


def llamaindex_collection(path: Path, name: str = "llamaindex") -> Any:
    client = chromadb.PersistentClient(path=str(path), settings=ChromaSettings(anonymized_telemetry=False))
    coll = client.get_or_create_collection(name, metadata=RECORDS["collection_metadata"])
    coll.add(ids=RECORDS["ids"], embeddings=RECORDS["embeddings"], metadatas=RECORDS["metadatas"],
             documents=RECORDS["documents"])
    return coll


@pytest.fixture(scope="module")
def fp32():
    from ragloom.embeddings import resolve_embed_model

    return resolve_embed_model("fp32")  # the model LlamaIndex embedded the records with


def test_collection_written_by_llamaindex_opens_and_answers_as_llamaindex_did(tmp_path, fp32):
    store = ChromaVectorStore(chroma_collection=llamaindex_collection(tmp_path / "chroma"))
    index = VectorStoreIndex.from_vector_store(store, embed_model=fp32)
    retriever = index.as_retriever(similarity_top_k=3)
    for query, (node_id, li_score) in RECORDS["top_node"].items():
        hits = retriever.retrieve(query)
        assert hits[0].node.node_id == node_id, query
        # LlamaIndex reports exp(-cosine distance); ragloom the cosine similarity itself
        assert hits[0].score == pytest.approx(1 + math.log(li_score), abs=1e-4)
        assert hits[0].score >= hits[1].score >= hits[2].score
    store.close()


def test_llamaindex_records_decode_to_full_nodes(tmp_path):
    store = ChromaVectorStore(chroma_collection=llamaindex_collection(tmp_path / "chroma"))
    nodes = store.get_nodes()
    assert len(nodes) == len(RECORDS["ids"]) == store.count()
    by_id = {n.node_id: n for n in nodes}
    for i, node_id in enumerate(RECORDS["ids"]):
        node, meta = by_id[node_id], RECORDS["metadatas"][i]
        assert isinstance(node, TextNode) and node.text == RECORDS["documents"][i] and node.text
        assert node.ref_doc_id == meta["ref_doc_id"] == meta["document_id"] == meta["doc_id"]
        assert node.metadata["file_name"] == meta["file_name"]
        assert "file_name" in node.excluded_embed_metadata_keys  # LlamaIndex's reader hides it
        assert node.embedding == pytest.approx(RECORDS["embeddings"][i], abs=1e-6)
        assert node.start_char_idx is not None and node.end_char_idx > node.start_char_idx
    store.close()


def test_ragloom_deletes_documents_llamaindex_wrote(tmp_path):
    store = ChromaVectorStore(chroma_collection=llamaindex_collection(tmp_path / "chroma"))
    ref = RECORDS["metadatas"][0]["ref_doc_id"]
    mine = sum(1 for m in RECORDS["metadatas"] if m["ref_doc_id"] == ref)
    store.delete(ref)
    assert store.count() == len(RECORDS["ids"]) - mine
    assert all(n.ref_doc_id != ref for n in store.get_nodes())
    store.close()


def test_records_written_by_ragloom_have_llamaindex_layout(tmp_path, fp32):
    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"),
                                       settings=ChromaSettings(anonymized_telemetry=False))
    coll = client.get_or_create_collection("ragloom-written", metadata={"hnsw:space": "cosine"})
    store = ChromaVectorStore(chroma_collection=coll)
    docs = [Document(text="Green tea likes water at 80 degrees. Steep it two minutes.", id_="tea.md",
                     metadata={"file_name": "tea.md"})]
    VectorStoreIndex.from_documents(docs, storage_context=StorageContext.from_defaults(vector_store=store),
                                    embed_model=fp32)
    got = coll.get(include=["metadatas", "documents"])
    ours = got["metadatas"][0]
    theirs = RECORDS["metadatas"][0]
    # the three source-document keys, as LlamaIndex's node_to_metadata_dict writes them
    assert ours["document_id"] == ours["doc_id"] == ours["ref_doc_id"] == "tea.md"
    assert ours["_node_type"] == theirs["_node_type"] == "TextNode"
    mine, li = json.loads(ours["_node_content"]), json.loads(theirs["_node_content"])
    assert set(mine) == set(li)  # the same node fields, so LlamaIndex's TextNode.from_json reads it
    assert mine["text"] == li["text"] == "" and mine["embedding"] is None and mine["class_name"] == "TextNode"
    assert mine["relationships"]["1"]["node_id"] == "tea.md" and mine["relationships"]["1"]["node_type"] == "4"
    assert got["documents"][0].startswith("Green tea")
    store.close()


def test_document_id_metadata_is_reserved_for_the_source_id():
    node = TextNode(id_="n", text="x", metadata={"doc_id": "something-else"},
                    relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id="d")})
    with pytest.raises(ValueError, match="'doc_id'.*source document's id"):
        node_to_metadata_dict(node)
    node.metadata["doc_id"] = "d"  # equal to the source: fine (as LlamaIndex would write it)
    assert node_to_metadata_dict(node)["doc_id"] == "d"
    orphan = node_to_metadata_dict(TextNode(id_="o", text="x"))
    assert not {"doc_id", "document_id", "ref_doc_id"} & set(orphan)


def test_old_llamaindex_spelling_metadata_seperator_is_read():
    content = json.loads(RECORDS["metadatas"][0]["_node_content"])
    content["metadata_seperator"] = " | "
    content.pop("metadata_separator")
    node = metadata_dict_to_node({"_node_content": json.dumps(content)}, text="body")
    assert node.metadata_separator == " | " and node.get_content() == "body"
