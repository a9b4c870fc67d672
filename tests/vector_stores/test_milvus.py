"""MilvusVectorStore against a real Milvus 2.3.5 standalone server (started by ``conftest.py``
from the PyPI package ``milvus``): the conformance suite plus Milvus's own guarantees."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pymilvus  # required, not skipped: pip install 'ragloom[milvus]'
import pytest
from vector_store_conformance import (
    DIM,
    FILTER_CASES,
    VectorStoreConformance,
    bulk_add_check,
    make_nodes,
)

from ragloom.schema import NodeRelationship, RelatedNodeInfo, TextNode
from ragloom.vector_stores import MetadataFilter, MetadataFilters, VectorStoreQuery
from ragloom.vector_stores.milvus import (
    MAX_VARCHAR_BYTES,
    MilvusVectorStore,
    expr_from_filters,
)
from ragloom.vector_stores.utils import UnsupportedFilterError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "data"

#: operators Milvus 2.3 cannot evaluate: the conformance case must raise UnsupportedFilterError
MILVUS_UNSUPPORTED = {
    "text_match": "Milvus 2.3 'like' matches prefixes only, case-sensitively",
    "nested_or_of_and": "contains a text_match filter",
    "is_empty": "Milvus 2.3 has no test for a JSON null or an empty list",
    "is_empty_missing_key": "Milvus 2.3 has no test for a JSON null or an empty list",
}


def _sub_env() -> Dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def _name() -> str:
    return "t_" + uuid.uuid4().hex


def filter_params() -> List[Any]:
    out = []
    for case in FILTER_CASES:
        reason = MILVUS_UNSUPPORTED.get(case[0])
        marks = (
            [pytest.mark.xfail(raises=UnsupportedFilterError, strict=True, reason=f"documented limitation: {reason}")]
            if reason
            else []
        )
        out.append(pytest.param(case, marks=marks, id=case[0]))
    return out


class TestMilvusStandalone(VectorStoreConformance):
    @pytest.fixture(autouse=True)
    def _uri(self, milvus_server: str) -> None:
        self.uri = milvus_server

    #: one collection for the class, emptied before each test: creating and loading a Milvus
    #: collection takes ~3 s, and a store over an existing empty collection is a fresh, empty store
    POOL = "t_conformance"

    @pytest.fixture
    def store(self, milvus_server: str) -> Any:
        store = MilvusVectorStore(uri=milvus_server, collection_name=self.POOL)
        if store.dimension is not None:
            store.client.delete(self.POOL, filter='id != ""')
            assert store.count() == 0
        yield store
        store.close()

    @pytest.mark.parametrize("case", filter_params())
    def test_metadata_filters(self, store: Any, case: Any) -> None:
        super().test_metadata_filters(store, case)

    @staticmethod
    def _collection(path: Path) -> str:
        return "p_" + uuid.uuid5(uuid.NAMESPACE_URL, str(path)).hex

    def persist_writer_code(self, path: Path) -> str:
        return f"""
            from ragloom.schema import node_from_json
            from ragloom.vector_stores.milvus import MilvusVectorStore
            store = MilvusVectorStore(uri={self.uri!r}, collection_name={self._collection(path)!r})
            store.add([node_from_json(l) for l in open("nodes.json", encoding="utf-8")])
        """

    def open_persisted(self, path: Path) -> Any:
        return MilvusVectorStore(uri=self.uri, collection_name=self._collection(path))


# ------------------------------------------------------------------------------ Milvus specifics
@pytest.fixture
def store(milvus_server: str) -> Any:
    store = MilvusVectorStore(uri=milvus_server, collection_name=_name(), dim=DIM)
    yield store
    store.client.drop_collection(store.collection_name)
    store.close()


def test_bad_arguments(milvus_server: str) -> None:
    for kwargs, needle in (
        ({"collection_name": "9abc"}, "collection_name"),
        ({"collection_name": "a-b"}, "collection_name"),
        ({"dim": 0}, "dim"),
        ({"similarity_metric": "L2"}, "similarity_metric"),
        ({"consistency_level": "strong"}, "consistency_level"),
        ({"batch_size": 0}, "batch_size"),
        ({"embedding_field": "text"}, "embedding_field"),
        ({"uri": "./milvus_llamaindex.db"}, "Milvus Lite"),
    ):
        with pytest.raises(ValueError, match=needle):
            MilvusVectorStore(**{"uri": milvus_server, **kwargs})


def test_dim_creates_collection_and_is_checked_on_reopen(store: Any, milvus_server: str) -> None:
    assert store.client.has_collection(store.collection_name) and store.dimension == DIM
    assert store.count() == 0
    with pytest.raises(ValueError, match="16-dimensional"):
        MilvusVectorStore(uri=milvus_server, collection_name=store.collection_name, dim=DIM + 1)
    store.add(make_nodes(5))
    again = MilvusVectorStore(uri=milvus_server, collection_name=store.collection_name)
    assert again.dimension == DIM and again.count() == 5
    fresh = MilvusVectorStore(uri=milvus_server, collection_name=store.collection_name, overwrite=True)
    assert fresh.count() == 0 and not fresh.client.has_collection(store.collection_name)


def test_foreign_collection_is_refused(milvus_server: str) -> None:
    client = pymilvus.MilvusClient(uri=milvus_server)
    name = _name()
    client.create_collection(name, dimension=DIM)  # pymilvus quick setup: id + vector (+ dynamic fields)
    try:
        with pytest.raises(ValueError, match="not\\s+created by ragloom"):
            MilvusVectorStore(uri=milvus_server, collection_name=name)
    finally:
        client.drop_collection(name)


def test_unsupported_filters_and_modes_raise(store: Any) -> None:
    store.add(make_nodes(8))
    with pytest.raises(UnsupportedFilterError, match="text_match"):
        store.get_nodes(filters=MetadataFilters([MetadataFilter("title", "long", "text_match")]))
    with pytest.raises(UnsupportedFilterError, match="booleans"):
        store.get_nodes(filters=MetadataFilters([MetadataFilter("flag", True, ">")]))
    with pytest.raises(ValueError, match="default"):
        store.query(VectorStoreQuery(query_embedding=[0.1] * DIM, mode="hybrid", query_str="x"))
    with pytest.raises(ValueError, match="16384"):
        store.query(VectorStoreQuery(query_embedding=[0.1] * DIM, similarity_top_k=20_000))


def test_expressions() -> None:
    F, FS = MetadataFilter, MetadataFilters
    assert expr_from_filters(None) == ""
    assert expr_from_filters(FS([F("a", [], "in")])) is None
    assert expr_from_filters(node_ids=[]) is None
    assert expr_from_filters(FS([F("a", 1, "!=")])) == '((exists metadata["a"]) and metadata["a"] != 1)'
    assert expr_from_filters(FS([F('k"ey', 'v"al')])) == '(metadata["k\\"ey"] == "v\\"al")'
    assert (
        expr_from_filters(FS([F("a", ["x", 1, 2.5], "in")]))
        == '((metadata["a"] in ["x"]) or (metadata["a"] in [1.0, 2.5]))'
    )


def test_quotes_unicode_and_round_trip(store: Any) -> None:
    meta = {'ti"tle': 'say "hi" \\ 你好', "作者": "曹雪芹", "none": None, "nested": {"a": [1, None]}, "list": [1, "x"]}
    nodes = [
        TextNode(id_='id "1"', text="红楼梦", embedding=[1.0] + [0.0] * (DIM - 1), metadata=meta,
                 relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id='doc "q"')}),
        TextNode(id_="id2", text="other", embedding=[0.0, 1.0] + [0.0] * (DIM - 2), metadata={"作者": "x"}),
    ]
    store.add(nodes)
    got = store.get_nodes(node_ids=['id "1"'])[0]
    assert got.metadata == meta and got.text == "红楼梦" and got.ref_doc_id == 'doc "q"'
    for flt, hits in (
        (MetadataFilter('ti"tle', 'say "hi" \\ 你好'), ['id "1"']),
        (MetadataFilter("作者", "曹雪芹"), ['id "1"']),
        (MetadataFilter("none", 1, "!="), []),
        (MetadataFilter("list", "x", "contains"), ['id "1"']),
    ):
        assert [n.node_id for n in store.get_nodes(filters=MetadataFilters([flt]))] == hits, flt
    res = store.query(VectorStoreQuery(query_embedding=nodes[0].embedding, similarity_top_k=2, doc_ids=['doc "q"']))
    assert res.ids == ['id "1"'] and res.similarities[0] == pytest.approx(1.0, abs=1e-5)
    store.delete('doc "q"')
    assert [n.node_id for n in store.get_nodes()] == ["id2"]


def test_oversized_node_rejected_before_embedding(milvus_server: str) -> None:
    from ragloom import StorageContext, VectorStoreIndex
    from ragloom.embeddings import HuggingFaceEmbedding

    class Counting(HuggingFaceEmbedding):
        texts_embedded = 0

        def _get_text_embeddings(self, texts: List[str]) -> Any:
            type(self).texts_embedded += len(texts)
            return super()._get_text_embeddings(texts)

    vs = MilvusVectorStore(uri=milvus_server, collection_name=_name())
    index = VectorStoreIndex(storage_context=StorageContext.from_defaults(vector_store=vs), embed_model=Counting())
    big = TextNode(id_="big", text="字" * (MAX_VARCHAR_BYTES // 3 + 1))  # 65,538 UTF-8 bytes
    with pytest.raises(ValueError, match="node big: its text is 65538 UTF-8 bytes"):
        index.insert_nodes([TextNode(id_="ok", text="fine"), big])
    with pytest.raises(ValueError, match="node bad: metadata\\['when'\\]"):
        index.insert_nodes([TextNode(id_="bad", text="x", metadata={"when": object()})])
    assert Counting.texts_embedded == 0 and vs.count() == 0
    index.insert_nodes([TextNode(id_="ok", text="fine", metadata={"when": "2024"})])
    assert Counting.texts_embedded == 1 and vs.count() == 1
    vs.clear()


def test_index_end_to_end_and_reopen_in_another_process(milvus_server: str) -> None:
    from ragloom import SimpleDirectoryReader, StorageContext, VectorStoreIndex

    name = _name()
    documents = SimpleDirectoryReader(str(EXAMPLES)).load_data()
    vector_store = MilvusVectorStore(uri=milvus_server, collection_name=name, dim=384, overwrite=True)
    storage_context = StorageContext.from_defaults(vector_store=vector_store)
    index = VectorStoreIndex.from_documents(documents, storage_context=storage_context, embed_model="default")
    results = index.as_retriever(similarity_top_k=2).retrieve("How hot should the water be for green tea?")
    assert results[0].node.metadata["file_name"] == "brewing_green_tea.md"
    assert results[0].score >= results[1].score
    flt = MetadataFilters([MetadataFilter("file_name", "大熊猫.md")])
    only = index.as_retriever(similarity_top_k=3, filters=flt).retrieve("green tea")
    assert only and {r.node.metadata["file_name"] for r in only} == {"大熊猫.md"}
    code = textwrap.dedent(
        f"""
        from ragloom import VectorStoreIndex
        from ragloom.vector_stores.milvus import MilvusVectorStore
        vs = MilvusVectorStore(uri={milvus_server!r}, collection_name={name!r})
        r = VectorStoreIndex.from_vector_store(vs, embed_model="default").as_retriever(similarity_top_k=1).retrieve(
            "how to patch a bicycle tube")
        print(r[0].node.metadata["file_name"], len(r[0].node.text) > 100)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], env=_sub_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "fixing_a_flat_tire.md True"
    index.delete_ref_doc(results[0].node.ref_doc_id)
    again = index.as_retriever(similarity_top_k=5).retrieve("How hot should the water be for green tea?")
    assert all(r.node.metadata["file_name"] != "brewing_green_tea.md" for r in again)
    vector_store.client.drop_collection(name)


@pytest.mark.slow
def test_bulk_add_100k_384d(milvus_server: str) -> None:
    """100k × 384-d nodes in one add (upserts of 1000 rows)."""
    store = MilvusVectorStore(uri=milvus_server, collection_name=_name())
    try:
        bulk_add_check(store)
    finally:
        store.client.drop_collection(store.collection_name)


def test_get_nodes_pages_through_every_row(milvus_server: str) -> None:
    """More rows than one page (1000) and ids in random order: every row comes back once."""
    rng = np.random.default_rng(5)
    emb = rng.standard_normal((2500, 8)).astype(np.float32).tolist()
    ids = [uuid.UUID(bytes=rng.bytes(16)).hex + ('"' if i % 7 == 0 else "") for i in range(2500)]
    nodes = [TextNode(id_=ids[i], text="t", embedding=emb[i], metadata={"even": i % 2 == 0}) for i in range(2500)]
    store = MilvusVectorStore(uri=milvus_server, collection_name=_name(), batch_size=700)
    try:
        store.add(nodes)
        assert store.count() == 2500
        got = [n.node_id for n in store.get_nodes()]
        assert len(got) == 2500 and set(got) == set(ids)
        even = [n.node_id for n in store.get_nodes(filters=MetadataFilters([MetadataFilter("even", True)]))]
        assert sorted(even) == sorted(ids[::2])
    finally:
        store.client.drop_collection(store.collection_name)


def test_hnsw_index_config_and_large_top_k(milvus_server: str) -> None:
    store = MilvusVectorStore(uri=milvus_server, collection_name=_name(), dim=DIM,
                              index_config={"index_type": "HNSW", "params": {"M": 8, "efConstruction": 64}},
                              search_config={"ef": 16}, similarity_metric="IP")
    try:
        idx = store.client.describe_index(store.collection_name, store.embedding_field)
        assert idx["index_type"] == "HNSW" and idx["metric_type"] == "IP"
        nodes = make_nodes(60)
        store.add(nodes)
        res = store.query(VectorStoreQuery(query_embedding=nodes[3].embedding, similarity_top_k=40))  # ef raised to 40
        assert len(res.ids) == 40 and res.ids[0] == nodes[3].node_id
        assert res.similarities[0] == pytest.approx(float(np.dot(nodes[3].embedding, nodes[3].embedding)), rel=1e-4)
    finally:
        store.client.drop_collection(store.collection_name)
