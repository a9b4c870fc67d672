"""``docstore.docs`` is every stored node by id (LlamaIndex's semantics), with the nodes the default
SQLite vector store keeps read through the docstore's node source, as ``get_node`` reads them."""

from __future__ import annotations

from pathlib import Path


from ragloom import SummaryIndex, VectorStoreIndex, load_index_from_storage
from ragloom.node_parser import SentenceSplitter
from ragloom.schema import Document, NodeRelationship, RelatedNodeInfo, TextNode
from ragloom.storage import SQLiteDocumentStore, StorageContext

TEXTS = {
    "cats": "Cats sleep all day. They purr softly on the sofa. Cats like warm places in winter.",
    "dogs": "Dogs run in the park. They fetch sticks and balls. Dogs love long walks by the river.",
}


def documents():
    return [Document(id_=k, text=v) for k, v in TEXTS.items()]


def every_node_id(docstore):
    return [n for info in docstore.get_all_ref_doc_info().values() for n in info.node_ids]


def test_docs_after_from_documents_holds_every_node(embed, tmp_path: Path):
    sc = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    splitter = SentenceSplitter(chunk_size=16, chunk_overlap=0, tokenizer=embed.get_tokenizer())
    index = VectorStoreIndex.from_documents(documents(), storage_context=sc, embed_model=embed,
                                            transformations=[splitter])
    ids = every_node_id(index.docstore)
    assert len(ids) > len(TEXTS)  # several chunks per document
    docs = index.docstore.docs
    assert sorted(docs) == sorted(ids)
    for node_id, node in docs.items():
        assert node.node_id == node_id
        assert node.text == index.docstore.get_node(node_id).text
        assert node.ref_doc_id in TEXTS
    assert "".join(docs[i].text for i in index.docstore.get_ref_doc_info("cats").node_ids).replace(" ", "") \
        == TEXTS["cats"].replace(" ", "")
    # the same from the reopened folder
    sc.close()
    again = load_index_from_storage(StorageContext.from_defaults(persist_dir=tmp_path), embed_model=embed)
    assert sorted(again.docstore.docs) == sorted(ids)


def test_docs_of_a_docstore_that_keeps_text_and_of_a_bare_one(embed):
    summary = SummaryIndex.from_documents(documents())  # a docstore-backed index keeps node text itself
    ids = every_node_id(summary.docstore)
    assert ids and sorted(summary.docstore.docs) == sorted(ids)
    # a docstore on its own (no vector store behind it): a node recorded by link only is not there,
    # as get_node says
    ds = SQLiteDocumentStore()
    source = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id="d")}
    kept = TextNode(id_="kept", text="with text", relationships=dict(source))
    linked = TextNode(id_="linked", text="link only", relationships=dict(source))
    ds.add_documents([kept])
    ds.add_documents([linked], store_text=False)
    assert list(ds.docs) == ["kept"] and ds.get_node("linked", raise_error=False) is None
    ds.set_node_source(lambda node_ids: [linked] if "linked" in node_ids else [])
    assert sorted(ds.docs) == ["kept", "linked"] and ds.docs["linked"].text == "link only"
