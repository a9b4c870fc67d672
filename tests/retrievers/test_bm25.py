"""BM25Retriever: rankings against an independent BM25 computation, persistence, incremental
updates, and the index-backed mode that searches the SQLite store's own keyword table."""

import subprocess
import sys

import pytest
from retrieval_helpers import CORPUS, QUERIES, assert_matches_brute_force, brute_force_bm25, make_nodes

from ragloom import Document, StorageContext, VectorStoreIndex
from ragloom.retrievers import BM25Retriever
from ragloom.retrievers.bm25 import BM25Retriever as BM25FromModule
from ragloom.schema import TextNode
from ragloom.storage import SQLiteDocumentStore
from ragloom.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

DOCS = {nid: text for nid, _, text in CORPUS}


@pytest.mark.parametrize("query", QUERIES)
def test_ranking_equals_brute_force_bm25(query):
    retriever = BM25Retriever.from_defaults(nodes=make_nodes(), similarity_top_k=5)
    results = retriever.retrieve(query)
    assert results, query
    assert_matches_brute_force(results, query, DOCS, 5)


def test_known_answers_english_and_chinese():
    retriever = BM25Retriever.from_defaults(nodes=make_nodes(), similarity_top_k=1)
    assert retriever.retrieve("water temperature for green tea")[0].node.node_id == "tea-1"
    assert retriever.retrieve("熊猫宝宝出生多重")[0].node.node_id == "panda-3"
    assert retriever.retrieve("下雨天的山路")[0].node.node_id == "hike-2"
    assert BM25FromModule is BM25Retriever


def test_default_top_k_is_two_and_only_matching_nodes_come_back():
    retriever = BM25Retriever.from_defaults(nodes=make_nodes())
    assert len(retriever.retrieve("tea")) == 2
    assert len(retriever.retrieve("asyncio")) == 1
    assert retriever.retrieve("the of and") == []  # stopwords only: no token, no result


def test_embed_visible_metadata_is_searchable_and_excluded_keys_are_not():
    visible = TextNode(id_="v", text="plain words", metadata={"author": "Zhuangzi"})
    hidden = TextNode(
        id_="h", text="other words", metadata={"author": "Zhuangzi"}, excluded_embed_metadata_keys=["author"]
    )
    retriever = BM25Retriever.from_defaults(nodes=[visible, hidden], similarity_top_k=5)
    assert [r.node.node_id for r in retriever.retrieve("zhuangzi")] == ["v"]


def test_filters_restrict_the_search():
    filters = MetadataFilters(filters=[MetadataFilter(key="topic", value="bike", operator=FilterOperator.EQ)])
    retriever = BM25Retriever.from_defaults(nodes=make_nodes(), similarity_top_k=5, filters=filters)
    ids = [r.node.node_id for r in retriever.retrieve("tea tire tube")]
    assert ids and all(i.startswith("bike") for i in ids)


def test_incremental_insert_and_delete_keep_exact_bm25_statistics():
    retriever = BM25Retriever.from_defaults(nodes=make_nodes(), similarity_top_k=6)
    docs = dict(DOCS)
    retriever.delete_ref_doc("tea")
    for nid in ("tea-1", "tea-2", "tea-3"):
        docs.pop(nid)
    retriever.delete_nodes(["panda-3", "no-such-node"])
    docs.pop("panda-3")
    extra = TextNode(id_="tea-9", text="White tea is the least processed tea of all.")
    replaced = TextNode(id_="bike-2", text="Listen for air escaping from the tube; a tea towel helps dry it.")
    retriever.insert_nodes([extra, replaced])
    docs["tea-9"], docs["bike-2"] = extra.text, replaced.text
    assert retriever.keyword_index.count() == len(docs)
    for query in ["tea", "熊猫宝宝", "tube air", "竹子"]:
        assert_matches_brute_force(retriever.retrieve(query), query, docs, 6)


def test_persist_and_reopen_in_another_process(tmp_path):
    retriever = BM25Retriever.from_defaults(nodes=make_nodes(), similarity_top_k=3)
    retriever.persist(tmp_path / "bm25")
    expected = [(r.node.node_id, r.score) for r in retriever.retrieve("大熊猫吃竹子")]
    code = (
        "from ragloom.retrievers.bm25 import BM25Retriever\n"
        f"r = BM25Retriever.from_persist_dir({str(tmp_path / 'bm25')!r})\n"
        "print(r.similarity_top_k)\n"
        "for n in r.retrieve('大熊猫吃竹子'): print(n.node.node_id, repr(n.score))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "3"
    assert [(line.split()[0], float(line.split()[1])) for line in lines[1:]] == expected


def test_reopened_index_is_updated_in_place(tmp_path):
    BM25Retriever.from_defaults(nodes=make_nodes(), similarity_top_k=2).persist(tmp_path)
    loaded = BM25Retriever.from_persist_dir(tmp_path, similarity_top_k=4)
    assert loaded.similarity_top_k == 4
    loaded.insert_nodes([TextNode(id_="new", text="Zucchini bread needs grated zucchini.")])
    loaded.keyword_index.database.close()
    again = BM25Retriever.from_persist_dir(tmp_path)
    assert again.similarity_top_k == 2
    assert [r.node.node_id for r in again.retrieve("zucchini")] == ["new"]
    with pytest.raises(FileNotFoundError):
        BM25Retriever.from_persist_dir(tmp_path / "missing")


def test_docstore_source_is_a_snapshot_of_its_nodes():
    docstore = SQLiteDocumentStore()
    docstore.add_documents(make_nodes())
    retriever = BM25Retriever.from_defaults(docstore=docstore, similarity_top_k=4)
    assert_matches_brute_force(retriever.retrieve("登山 天气"), "登山 天气", DOCS, 4)


@pytest.fixture(scope="module")
def index(embed_model):
    return VectorStoreIndex(make_nodes(), embed_model=embed_model)


def test_index_source_searches_the_stores_keyword_table(index):
    retriever = BM25Retriever.from_defaults(index=index, similarity_top_k=5)
    assert retriever.keyword_index is None and retriever.index is index
    standalone = BM25Retriever.from_defaults(nodes=make_nodes(), similarity_top_k=5)
    for query in QUERIES:
        a = [(r.node.node_id, r.score) for r in retriever.retrieve(query)]
        b = [(r.node.node_id, r.score) for r in standalone.retrieve(query)]
        assert [x[0] for x in a] == [x[0] for x in b]
        assert [x[1] for x in a] == pytest.approx([x[1] for x in b], rel=1e-12)
    with pytest.raises(RuntimeError, match="index"):
        retriever.insert_nodes([TextNode(text="x")])


def test_index_source_follows_inserts_and_deletes(embed_model, tmp_path):
    storage = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    index = VectorStoreIndex(make_nodes(), storage_context=storage, embed_model=embed_model)
    retriever = BM25Retriever.from_defaults(index=index, similarity_top_k=3)
    assert retriever.retrieve("sourdough") == []
    index.insert(Document(id_="bread", text="Sourdough bread rises slowly with a wild yeast starter."))
    assert retriever.retrieve("sourdough")[0].node.ref_doc_id == "bread"
    index.delete_ref_doc("bike")
    docs = {nid: text for nid, doc, text in CORPUS if doc != "bike"}
    docs.update({n.node_id: n.text for n in index.vector_store.get_nodes() if n.ref_doc_id == "bread"})
    assert_matches_brute_force(retriever.retrieve("tire tube bread"), "tire tube bread", docs, 3)
    # persisting an index-backed retriever writes a standalone copy
    retriever.persist(tmp_path / "copy")
    copy = BM25Retriever.from_persist_dir(tmp_path / "copy")
    assert [r.node.node_id for r in copy.retrieve("sourdough")] == [
        r.node.node_id for r in retriever.retrieve("sourdough")
    ]


def test_bad_arguments():
    nodes = make_nodes()
    with pytest.raises(ValueError, match="exactly one"):
        BM25Retriever.from_defaults()
    with pytest.raises(ValueError, match="exactly one"):
        BM25Retriever.from_defaults(nodes=nodes, docstore=SQLiteDocumentStore())
    with pytest.raises(ValueError, match="similarity_top_k"):
        BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=0)
    with pytest.raises(ValueError, match="stemmer"):
        BM25Retriever.from_defaults(nodes=nodes, stemmer=object())
    with pytest.raises(ValueError, match="skip_stemming"):
        BM25Retriever.from_defaults(nodes=nodes, skip_stemming=True)
    with pytest.raises(ValueError, match="language"):
        BM25Retriever.from_defaults(nodes=nodes, language="klingon")
    assert brute_force_bm25("tea", DOCS)  # the reference itself finds something


def test_docstore_of_an_index_works_and_an_empty_docstore_raises_naming_index():
    """The default SQLite store keeps node text with the vectors; index.docstore.docs reads it from
    there (as get_node does), so docstore=index.docstore finds the nodes, as in LlamaIndex.  A docstore
    that really holds nothing raises instead of giving a retriever that silently finds nothing."""
    from ragloom import Document, VectorStoreIndex

    index = VectorStoreIndex.from_documents([Document(text="harbour cranes lift containers")])
    hits = BM25Retriever.from_defaults(docstore=index.docstore).retrieve("cranes")
    assert hits and "cranes" in hits[0].node.text
    with pytest.raises(ValueError, match="pass index="):
        BM25Retriever.from_defaults(docstore=SQLiteDocumentStore())
    hits = BM25Retriever.from_defaults(index=index).retrieve("cranes")
    assert hits and "cranes" in hits[0].node.text
