"""ChromaVectorStore against real Chroma: a local PersistentClient directory and a ``chroma run``
server (started by ``conftest.py``), through the conformance suite plus Chroma's own guarantees."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any, Dict, List

import chromadb  # required, not skipped: pip install 'ragloom[chroma]'
import numpy as np
import pytest
from chromadb.config import Settings as ChromaSettings
from vector_store_conformance import (
    DIM,
    FILTER_CASES,
    VectorStoreConformance,
    bulk_add_check,
    make_nodes,
)

from ragloom.schema import Document, NodeRelationship, RelatedNodeInfo, TextNode
from ragloom.vector_stores import MetadataFilter, MetadataFilters, VectorStoreQuery
from ragloom.vector_stores.chroma import (
    CHROMA_LOCK_NAME,
    ChromaVectorStore,
    where_from_filters,
)
from ragloom.vector_stores.utils import UnsupportedFilterError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "data"


def no_telemetry() -> Any:
    """Fresh settings per client: chromadb's client constructors mutate the object they are given."""
    return ChromaSettings(anonymized_telemetry=False)

#: operators Chroma cannot evaluate: the conformance case must raise UnsupportedFilterError
CHROMA_UNSUPPORTED = {
    "gt_str": "Chroma orders numbers only ($gt on a string)",
    "text_match": "Chroma has no case-insensitive substring test on metadata",
    "nested_or_of_and": "contains a text_match filter",
    "is_empty": "Chroma stores no null and no empty list",
    "is_empty_missing_key": "Chroma stores no null and no empty list",
}


def _sub_env() -> Dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "ANONYMIZED_TELEMETRY": "False"}


def filter_params() -> List[Any]:
    out = []
    for case in FILTER_CASES:
        reason = CHROMA_UNSUPPORTED.get(case[0])
        marks = (
            [pytest.mark.xfail(raises=UnsupportedFilterError, strict=True, reason=f"documented limitation: {reason}")]
            if reason
            else []
        )
        out.append(pytest.param(case, marks=marks, id=case[0]))
    return out


def persistent_collection(path: Path, name: str = "conformance", space: str = "cosine") -> Any:
    client = chromadb.PersistentClient(path=str(path), settings=no_telemetry())
    return client.get_or_create_collection(name, metadata={"hnsw:space": space})


class ChromaLimitations:
    @pytest.mark.parametrize("case", filter_params())
    def test_metadata_filters(self, store: Any, case: Any) -> None:
        VectorStoreConformance.test_metadata_filters(self, store, case)  # type: ignore[arg-type]


class TestChromaPersistentClient(ChromaLimitations, VectorStoreConformance):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Any:
        store = ChromaVectorStore(chroma_collection=persistent_collection(tmp_path / "chroma"))
        yield store
        store.close()

    def persist_writer_code(self, path: Path) -> str:
        return f"""
            import chromadb
            from chromadb.config import Settings
            from ragloom.schema import node_from_json
            from ragloom.vector_stores.chroma import ChromaVectorStore
            client = chromadb.PersistentClient({str(path)!r}, settings=Settings(anonymized_telemetry=False))
            coll = client.get_or_create_collection("conformance", metadata={{"hnsw:space": "cosine"}})
            with open("nodes.json", encoding="utf-8") as f:
                ChromaVectorStore(chroma_collection=coll).add([node_from_json(line) for line in f])
        """

    def open_persisted(self, path: Path) -> Any:
        return ChromaVectorStore(chroma_collection=persistent_collection(path))


class TestChromaServer(ChromaLimitations, VectorStoreConformance):
    """The same suite through ``chromadb.HttpClient`` against a real ``chroma run`` server."""

    @pytest.fixture
    def store(self, chroma_server: Any) -> Any:
        host, port = chroma_server
        client = chromadb.HttpClient(host=host, port=port, settings=no_telemetry())
        coll = client.create_collection(f"c{uuid.uuid4().hex}", metadata={"hnsw:space": "cosine"})
        store = ChromaVectorStore(chroma_collection=coll)
        assert store.persist_dir is None and store.lock_path is None  # the server serialises writes
        return store

    @pytest.fixture(autouse=True)
    def _server(self, chroma_server: Any) -> None:
        self._host, self._port = chroma_server

    def persist_writer_code(self, path: Path) -> str:
        return f"""
            import chromadb
            from chromadb.config import Settings
            from ragloom.schema import node_from_json
            from ragloom.vector_stores.chroma import ChromaVectorStore
            settings = Settings(anonymized_telemetry=False)
            client = chromadb.HttpClient(host={self._host!r}, port={self._port}, settings=settings)
            name = {"p" + uuid.uuid5(uuid.NAMESPACE_URL, str(path)).hex!r}
            coll = client.create_collection(name, metadata={{"hnsw:space": "cosine"}})
            with open("nodes.json", encoding="utf-8") as f:
                ChromaVectorStore(chroma_collection=coll).add([node_from_json(line) for line in f])
        """

    def open_persisted(self, path: Path) -> Any:
        client = chromadb.HttpClient(host=self._host, port=self._port, settings=no_telemetry())
        return ChromaVectorStore(
            chroma_collection=client.get_collection("p" + uuid.uuid5(uuid.NAMESPACE_URL, str(path)).hex)
        )


# ------------------------------------------------------------------------------ Chroma specifics
@pytest.fixture
def local_store(tmp_path: Path) -> Any:
    store = ChromaVectorStore(chroma_collection=persistent_collection(tmp_path / "chroma"))
    yield store
    store.close()


def test_protocol_flags_and_lock_file(local_store: Any, tmp_path: Path) -> None:
    assert local_store.stores_text and local_store.flat_metadata and not local_store.supports_hybrid
    assert local_store.persist_dir == (tmp_path / "chroma").resolve()
    assert local_store.batch_size == 5461  # asked from the client
    local_store.add(make_nodes(3))
    assert (tmp_path / "chroma" / CHROMA_LOCK_NAME).is_file()


def test_bad_arguments(tmp_path: Path) -> None:
    coll = persistent_collection(tmp_path / "c")
    for bad in (0, 5462, 1.5, True):
        with pytest.raises(ValueError, match="batch_size"):
            ChromaVectorStore(chroma_collection=coll, batch_size=bad)
    with pytest.raises(ValueError, match="lock_timeout"):
        ChromaVectorStore(chroma_collection=coll, lock_timeout=0)
    with pytest.raises(ValueError, match="collection_name"):
        ChromaVectorStore()
    store = ChromaVectorStore.from_params(
        "made_here", persist_dir=str(tmp_path / "c2"), collection_kwargs={"metadata": {"hnsw:space": "cosine"}}
    )
    store.add(make_nodes(2))
    assert store.count() == 2 and store.space == "cosine"


def test_unsupported_filters_raise_clear_errors(local_store: Any) -> None:
    local_store.add(make_nodes(8))
    with pytest.raises(UnsupportedFilterError, match="text_match"):
        local_store.get_nodes(filters=MetadataFilters([MetadataFilter("title", "long", "text_match")]))
    with pytest.raises(UnsupportedFilterError, match="numbers only"):
        local_store.query(
            VectorStoreQuery(query_embedding=[0.1] * DIM, filters=MetadataFilters([MetadataFilter("color", "b", ">")]))
        )
    with pytest.raises(ValueError, match="default"):
        local_store.query(VectorStoreQuery(query_embedding=[0.1] * DIM, mode="hybrid", query_str="x"))
    with pytest.raises(ValueError):
        local_store.query(VectorStoreQuery(query_embedding=None))


def test_where_clauses() -> None:
    F, FS = MetadataFilter, MetadataFilters
    assert where_from_filters(None) == (None, False)
    assert where_from_filters(FS([])) == (None, False)
    assert where_from_filters(FS([F("a", [], "in")])) == (None, True)
    assert where_from_filters(doc_ids=[]) == (None, True)
    assert where_from_filters(FS([F("a", 1)])) == ({"a": {"$eq": 1}}, False)
    # != requires the key to exist; mixed-type in-lists are split by type
    assert where_from_filters(FS([F("a", 1, "!=")]))[0] == {
        "$and": [{"_ragloom_keys": {"$contains": "a"}}, {"a": {"$ne": 1}}]
    }
    assert where_from_filters(FS([F("a", ["x", 2, 2.5], "in")]))[0] == {
        "$or": [{"a": {"$in": ["x"]}}, {"a": {"$in": [2.0, 2.5]}}]
    }


def test_metadata_flattened_for_chroma_and_nodes_round_trip(local_store: Any) -> None:
    meta = {
        "none": None,
        "nested": {"a": [1, {"b": None}], "c": "文"},
        "empty": [],
        "mixed": [1, "x"],
        "ints_floats": [1, 2.5],
        "tags": ["x", "y"],
        "作者": "曹雪芹",
        "n": 2**62,
    }
    node = TextNode(id_="n1", text="红楼梦 text", embedding=[1.0] + [0.0] * (DIM - 1), metadata=meta,
                    relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id="doc-1")})
    local_store.add([node])
    got = local_store.get_nodes(node_ids=["n1"])[0]
    assert got.metadata == meta and got.text == "红楼梦 text" and got.ref_doc_id == "doc-1"
    hit = local_store.query(VectorStoreQuery(query_embedding=node.embedding, similarity_top_k=1)).nodes[0]
    assert hit.metadata == meta and hit.get_content() == "红楼梦 text"
    raw = local_store.client.get(ids=["n1"], include=["metadatas", "documents"])
    stored = raw["metadatas"][0]
    assert "none" not in stored and "empty" not in stored  # None / [] are a missing key for filters
    assert json.loads(stored["nested"]) == meta["nested"] and json.loads(stored["mixed"]) == [1, "x"]
    assert stored["ints_floats"] == [1.0, 2.5] and stored["tags"] == ["x", "y"]
    assert stored["ref_doc_id"] == "doc-1" and raw["documents"][0] == "红楼梦 text"
    # the flattened values filter as Chroma values
    for flt, hits in (
        (MetadataFilter("tags", "y", "contains"), ["n1"]),
        (MetadataFilter("作者", "曹雪芹"), ["n1"]),
        (MetadataFilter("none", 1, "!="), []),
        (MetadataFilter("n", 2**61, ">"), ["n1"]),
    ):
        assert [n.node_id for n in local_store.get_nodes(filters=MetadataFilters([flt]))] == hits, flt


@pytest.mark.parametrize(
    "bad_meta, needle",
    [({"when": object()}, "when"), ({"x": float("nan")}, "NaN"), ({"_node_content": "x"}, "reserved"),
     ({"big": 2**70}, "64-bit"), ({"s": {1, 2}}, "set")],
)
def test_bad_metadata_rejected_by_add_naming_node(local_store: Any, bad_meta: Dict[str, Any], needle: str) -> None:
    nodes = make_nodes(3)
    nodes[1].metadata = bad_meta
    with pytest.raises(ValueError, match=needle) as info:
        local_store.add(nodes)
    assert nodes[1].node_id in str(info.value)
    assert local_store.count() == 0


def test_writes_batched_to_chroma_max_batch_size(tmp_path: Path) -> None:
    """6000 records: one Chroma call would raise (max 5461); the store splits them."""
    coll = persistent_collection(tmp_path / "c")
    n = 6000
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((n, 8)).astype(np.float32).tolist()
    nodes = [TextNode(id_=f"n{i}", text="t", embedding=emb[i], metadata={"i": i}) for i in range(n)]
    # Chroma itself refuses (an InternalError wrapping its ValueError in chromadb 1.5)
    with pytest.raises((ValueError, chromadb.errors.ChromaError), match="max batch size"):
        coll.add(ids=[x.node_id for x in nodes], embeddings=emb)
    store = ChromaVectorStore(chroma_collection=coll)
    store.add(nodes)
    assert store.count() == n
    store.add(nodes[:10])  # replace: no duplicates
    assert store.count() == n
    small = ChromaVectorStore(chroma_collection=coll, batch_size=1000)
    small.delete_nodes(filters=MetadataFilters([MetadataFilter("i", 2500, "<")]))
    assert small.count() == n - 2500
    store.close()
    small.close()


def _write_script(path: Path, worker: int, batches: int, per: int) -> str:
    return textwrap.dedent(
        f"""
        import numpy as np, chromadb
        from chromadb.config import Settings
        from ragloom.schema import TextNode
        from ragloom.vector_stores import VectorStoreQuery
        from ragloom.vector_stores.chroma import ChromaVectorStore
        client = chromadb.PersistentClient({str(path)!r}, settings=Settings(anonymized_telemetry=False))
        coll = client.get_collection("conc")
        store = ChromaVectorStore(chroma_collection=coll)
        rng = np.random.default_rng({worker})
        # load the collection's index before any write: the case where a lock alone loses data
        assert store.query(VectorStoreQuery(query_embedding=rng.standard_normal(16).tolist(), similarity_top_k=1)).ids
        if {worker} == 2:  # the second writer goes through VectorStoreIndex (nodes come pre-embedded)
            from ragloom import StorageContext, VectorStoreIndex
            from ragloom.embeddings import BaseEmbedding

            class Unused(BaseEmbedding):
                def _get_text_embeddings(self, texts):
                    raise AssertionError("nodes are pre-embedded")

            storage_context = StorageContext.from_defaults(vector_store=store)
            index = VectorStoreIndex(storage_context=storage_context, embed_model=Unused())
            write = index.insert_nodes
        else:
            write = store.add
        for b in range({batches}):
            emb = rng.standard_normal(({per}, 16)).tolist()
            write([TextNode(id_=f"w{worker}-{{b}}-{{i}}", text="t", embedding=emb[i]) for i in range({per})])
        """
    )


def test_two_processes_write_one_persistent_collection_none_lost(tmp_path: Path) -> None:
    path = tmp_path / "chroma"
    coll = persistent_collection(path, "conc")
    seed = np.random.default_rng(99).standard_normal((3000, 16)).astype(np.float32)
    coll.add(ids=[f"seed{i}" for i in range(3000)], embeddings=seed)  # past Chroma's 1000-row sync threshold
    del coll
    batches, per = 12, 100
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _write_script(path, w, batches, per)], env=_sub_env(), stderr=subprocess.PIPE
        )
        for w in (1, 2)
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    # check from a fresh process: every record is in the ANN index and finds itself.  Among its 50
    # nearest, not as the first: Chroma's HNSW searches with ef = max(10, n_results), and at ef 10 a
    # record present in the index was once not its own first hit (CI, 1 of 5,400); a record the
    # index lost is never returned at all
    check = textwrap.dedent(
        f"""
        import chromadb, json
        from chromadb.config import Settings
        client = chromadb.PersistentClient({str(path)!r}, settings=Settings(anonymized_telemetry=False))
        coll = client.get_collection("conc")
        got = coll.get(include=["embeddings"])
        missing = [i for i, e in zip(got["ids"], got["embeddings"])
                   if i not in coll.query(query_embeddings=[e], n_results=50)["ids"][0]]
        n = len(got["ids"])
        print(json.dumps({{"count": coll.count(), "ids": n, "missing": missing[:20], "n_missing": len(missing)}}))
        """
    )
    out = subprocess.run([sys.executable, "-c", check], env=_sub_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    expected = 3000 + 2 * batches * per
    assert report == {"count": expected, "ids": expected, "missing": [], "n_missing": 0}


def test_lock_timeout_names_the_holder(tmp_path: Path) -> None:
    from ragloom.errors import IndexLockedError
    from ragloom.vector_stores.chroma import _DirLock

    store = ChromaVectorStore(chroma_collection=persistent_collection(tmp_path / "chroma"), lock_timeout=0.3)
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from pathlib import Path
            from ragloom.vector_stores.chroma import _DirLock
            lock = _DirLock(Path({str(store.persist_dir)!r})); lock.acquire()
            print("locked", flush=True); time.sleep(30)
        """)],
        env=_sub_env(), stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        t0 = time.monotonic()
        with pytest.raises(IndexLockedError, match=f"pid {holder.pid}"):
            store.add(make_nodes(2))
        # waited lock_timeout (0.3 s), then gave up long before the holder lets go (30 s)
        assert 0.3 <= time.monotonic() - t0 < 20
    finally:
        holder.kill()
        holder.wait()
    store.add(make_nodes(2))  # free again
    assert store.count() == 2
    assert _DirLock  # imported for the subprocess's sake


# ------------------------------------------------------------------------------ through VectorStoreIndex
class CountingEmbedding:
    """The real bundled model, counting the texts it embeds."""

    @staticmethod
    def make() -> Any:
        from ragloom.embeddings import HuggingFaceEmbedding

        class _Counting(HuggingFaceEmbedding):
            texts_embedded = 0

            def _get_text_embeddings(self, texts: List[str]) -> Any:
                type(self).texts_embedded += len(texts)
                return super()._get_text_embeddings(texts)

        return _Counting()


def test_bad_metadata_raises_before_any_embedding(tmp_path: Path) -> None:
    from ragloom import StorageContext, VectorStoreIndex

    embed = CountingEmbedding.make()
    store = ChromaVectorStore(chroma_collection=persistent_collection(tmp_path / "chroma"))
    ctx = StorageContext.from_defaults(vector_store=store)
    docs = [Document(text=f"document number {i} about tea", id_=f"d{i}", metadata={"i": i}) for i in range(5)]
    docs[4].metadata["opened"] = datetime.date(2024, 1, 1)  # JSON-encodable for the hash, not storable in Chroma
    # the bad document is rejected before it is embedded; the four good ones are stored (issue 10:
    # one bad document never aborts the others), and raise_on_error reports it after that
    with pytest.raises(ValueError, match="opened"):
        VectorStoreIndex.from_documents(docs, storage_context=ctx, embed_model=embed, raise_on_error=True)
    assert type(embed).texts_embedded == 4 and store.count() == 4
    index = VectorStoreIndex(storage_context=ctx, embed_model=embed)
    with pytest.raises(ValueError, match="reserved"):
        index.insert_nodes([TextNode(id_="x", text="hello", metadata={"_node_type": "x"})])
    assert type(embed).texts_embedded == 4 and store.count() == 4
    docs[4].metadata["opened"] = "2024-01-01"
    VectorStoreIndex.from_documents(docs, storage_context=ctx, embed_model=embed)
    assert type(embed).texts_embedded == 5 and store.count() == 5


def test_llamaindex_quickstart_script_and_reopen(tmp_path: Path) -> None:
    """LlamaIndex's Chroma example with the imports changed; then a new process reopens the
    collection with from_vector_store (text comes from Chroma) and gets the same answer."""
    from ragloom import SimpleDirectoryReader, StorageContext, VectorStoreIndex
    from ragloom.embeddings import HuggingFaceEmbedding

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        documents = SimpleDirectoryReader(str(EXAMPLES)).load_data()
        chroma_client = chromadb.PersistentClient("./chroma_db", settings=no_telemetry())
        chroma_collection = chroma_client.get_or_create_collection("quickstart")  # Chroma's default l2 space
        vector_store = ChromaVectorStore(chroma_collection=chroma_collection)
        storage_context = StorageContext.from_defaults(vector_store=vector_store)
        embed_model = HuggingFaceEmbedding()
        index = VectorStoreIndex.from_documents(documents, storage_context=storage_context, embed_model=embed_model)
        results = index.as_retriever(similarity_top_k=2).retrieve("How hot should the water be for green tea?")
    finally:
        os.chdir(cwd)
    assert vector_store.space == "l2"
    assert [r.node.metadata["file_name"] for r in results][0] == "brewing_green_tea.md"
    # the score is the cosine similarity (unit vectors: 1 - l2² / 2)
    q = np.asarray(embed_model.get_query_embedding("How hot should the water be for green tea?"))
    got = vector_store.get_nodes(node_ids=[results[0].node.node_id])[0]
    assert results[0].score == pytest.approx(float(q @ np.asarray(got.embedding)), abs=1e-4)
    assert results[0].score >= results[1].score
    code = textwrap.dedent(
        f"""
        import chromadb
        from chromadb.config import Settings
        from ragloom import VectorStoreIndex
        from ragloom.vector_stores.chroma import ChromaVectorStore
        db = chromadb.PersistentClient({str(tmp_path / "chroma_db")!r}, settings=Settings(anonymized_telemetry=False))
        vector_store = ChromaVectorStore(chroma_collection=db.get_or_create_collection("quickstart"))
        index = VectorStoreIndex.from_vector_store(vector_store, embed_model="default")
        r = index.as_retriever(similarity_top_k=1).retrieve("how to patch a bicycle tube")
        print(r[0].node.metadata["file_name"], len(r[0].node.text) > 100)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], env=_sub_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "fixing_a_flat_tire.md True"


@pytest.mark.slow
def test_bulk_add_100k_384d(tmp_path: Path) -> None:
    """100k × 384-d nodes in one add (19 Chroma batches)."""
    store = ChromaVectorStore(chroma_collection=persistent_collection(tmp_path / "chroma"))
    bulk_add_check(store)
    store.close()
