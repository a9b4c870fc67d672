"""RecursiveRetriever and IndexNode: references followed through real retrievers, a real
vector index holding IndexNodes, nodes and a query engine."""

import pytest
from retrieval_helpers import make_nodes

from ragloom import VectorStoreIndex
from ragloom.retrievers import BM25Retriever, RecursiveRetriever
from ragloom.schema import IndexNode, NodeWithScore, ObjectType, TextNode, node_from_json
from ragloom.storage import SQLiteDocumentStore

SUMMARIES = {
    "tea": "How to brew green, black and oolong tea: water temperature and steeping time.",
    "bike": "How to repair a bicycle flat tire: find the puncture and patch the inner tube.",
    "panda": "大熊猫的生活：住在哪里、吃什么、熊猫宝宝。",
}


def per_topic_retrievers(k=2):
    nodes = make_nodes()
    return {
        topic: BM25Retriever.from_defaults(nodes=[n for n in nodes if n.ref_doc_id == topic], similarity_top_k=k)
        for topic in SUMMARIES
    }


@pytest.fixture(scope="module")
def summary_index(embed_model):
    index_nodes = [IndexNode(id_=f"summary-{t}", text=s, index_id=t) for t, s in SUMMARIES.items()]
    return VectorStoreIndex(index_nodes, embed_model=embed_model)


def test_index_node_round_trips_through_json_and_the_vector_store(summary_index):
    node = IndexNode(text="see the other index", index_id="other", obj=TextNode(id_="t", text="inner"))
    back = node_from_json(node.to_json())
    assert isinstance(back, IndexNode) and back.index_id == "other"
    assert isinstance(back.obj, TextNode) and back.obj.text == "inner"
    assert back.get_type() == ObjectType.INDEX.value
    stored = summary_index.vector_store.get_nodes(node_ids=["summary-tea"])[0]
    assert isinstance(stored, IndexNode) and stored.index_id == "tea"
    docstore = SQLiteDocumentStore()
    docstore.add_documents([node])
    assert docstore.get_document(node.node_id).obj.text == "inner"
    plain = TextNode(id_="x", text="body", metadata={"a": 1})
    copied = IndexNode.from_text_node(plain, "idx")
    assert (copied.id_, copied.text, copied.metadata, copied.index_id) == ("x", "body", {"a": 1}, "idx")


def test_follows_index_nodes_into_other_retrievers(summary_index):
    sub = per_topic_retrievers()
    root = summary_index.as_retriever(similarity_top_k=1, vector_store_query_mode="default")
    retriever = RecursiveRetriever("root", {"root": root, **sub}, verbose=True)
    for query, topic in [("what temperature for brewing green tea", "tea"), ("patch a bicycle tube", "bike")]:
        results = retriever.retrieve(query)
        expected = [r.node.node_id for r in sub[topic].retrieve(query)]
        assert [r.node.node_id for r in results] == expected
        assert not any(isinstance(r.node, IndexNode) for r in results)


def test_plain_nodes_pass_through_and_duplicates_are_dropped(summary_index):
    tea_node = make_nodes()[0]
    # a root over a mix: index nodes (twice the same index_id) and a plain text node
    mixed = [
        IndexNode(id_="a", text="green tea brewing guide", index_id="tea"),
        IndexNode(id_="b", text="green tea steeping guide", index_id="tea"),
        TextNode(id_="plain", text="green tea is a drink"),
        tea_node,
    ]
    root = BM25Retriever.from_defaults(nodes=mixed, similarity_top_k=4)
    sub = per_topic_retrievers(k=3)
    results = RecursiveRetriever("root", {"root": root, **sub}).retrieve("green tea")
    ids = [r.node.node_id for r in results]
    assert "plain" in ids and len(ids) == len(set(ids))  # tea-1 from both paths comes back once
    assert set(ids) - {"plain"} <= {n.node_id for n in make_nodes() if n.ref_doc_id == "tea"}


def test_node_dict_and_obj_targets_take_the_index_nodes_score():
    target = TextNode(id_="target", text="the real content")
    inline = TextNode(id_="inline", text="carried in obj")
    root = BM25Retriever.from_defaults(
        nodes=[
            IndexNode(id_="ref", text="pointer to the glossary", index_id="glossary"),
            IndexNode(id_="ref2", text="pointer to the appendix", index_id="appendix", obj=inline),
        ],
        similarity_top_k=2,
    )
    hits = {r.node.node_id: r.score for r in root.retrieve("pointer glossary appendix")}
    results = RecursiveRetriever("root", {"root": root}, node_dict={"glossary": target}).retrieve(
        "pointer glossary appendix"
    )
    got = {r.node.node_id: r.score for r in results}
    assert got == {"target": hits["ref"], "inline": hits["ref2"]}


def test_query_engine_targets(summary_index):
    qe_mod = pytest.importorskip("ragloom.query_engine")
    from ragloom.llms.base import MockLLM

    engine = qe_mod.RetrieverQueryEngine.from_args(per_topic_retrievers()["panda"], llm=MockLLM(max_tokens=40))
    root = summary_index.as_retriever(similarity_top_k=1, vector_store_query_mode="text_search")
    retriever = RecursiveRetriever("root", {"root": root}, query_engine_dict={"panda": engine})
    query = "大熊猫吃什么"
    nodes, extra = retriever.retrieve_all(query)
    assert len(nodes) == 1
    assert nodes[0].node.text.startswith(f"Query: {query}\nResponse: ")
    assert extra and all(r.node.ref_doc_id == "panda" for r in extra)
    assert [r.node.text for r in retriever.retrieve(query)] == [nodes[0].node.text]
    assert nodes[0].score == root.retrieve(query)[0].score


class Echo:
    def retrieve(self, bundle):
        return [NodeWithScore(node=IndexNode(text="loop", index_id="root"), score=1.0)]


def test_errors():
    with pytest.raises(ValueError, match="root_id"):
        RecursiveRetriever("missing", {"root": Echo()})
    with pytest.raises(ValueError, match="share"):
        RecursiveRetriever("root", {"root": Echo()}, query_engine_dict={"root": object()})
    with pytest.raises(ValueError, match="cycle"):
        RecursiveRetriever("root", {"root": Echo()}).retrieve("anything")
    dangling = BM25Retriever.from_defaults(nodes=[IndexNode(text="dangling reference", index_id="nowhere")])
    with pytest.raises(ValueError, match="nowhere"):
        RecursiveRetriever("root", {"root": dangling}).retrieve("dangling")
