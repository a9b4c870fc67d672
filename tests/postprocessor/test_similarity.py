"""SimilarityPostprocessor on real retrieval results."""

import pytest

from ragloom import VectorStoreIndex
from ragloom.postprocessor import SimilarityPostprocessor
from ragloom.schema import NodeWithScore, TextNode

TEXTS = [
    "Green tea is brewed with water at about eighty degrees.",
    "Black tea takes boiling water and four minutes.",
    "A flat bicycle tire is fixed by patching the inner tube.",
    "Sourdough bread rises slowly with a wild yeast starter.",
]


def test_cutoff_keeps_exactly_the_nodes_at_or_above_it():
    nodes = [NodeWithScore(node=TextNode(id_=str(i), text=str(i)), score=s) for i, s in enumerate([0.9, 0.5, 0.5, 0.1])]
    nodes.append(NodeWithScore(node=TextNode(id_="none", text="unscored"), score=None))
    out = SimilarityPostprocessor(similarity_cutoff=0.5).postprocess_nodes(nodes)
    assert [n.node.node_id for n in out] == ["0", "1", "2"]
    assert out[0] is nodes[0]  # objects and order are kept
    assert len(SimilarityPostprocessor(similarity_cutoff=None).postprocess_nodes(nodes)) == 5
    default_cutoff = SimilarityPostprocessor().postprocess_nodes(nodes)  # cutoff 0.0
    assert [n.node.node_id for n in default_cutoff] == ["0", "1", "2", "3"]


def test_cutoff_on_real_dense_scores():
    index = VectorStoreIndex([TextNode(id_=str(i), text=t) for i, t in enumerate(TEXTS)])
    results = index.as_retriever(similarity_top_k=4, vector_store_query_mode="default").retrieve(
        "what temperature should tea water be"
    )
    cutoff = (results[1].score + results[2].score) / 2
    kept = SimilarityPostprocessor(similarity_cutoff=cutoff).postprocess_nodes(results, query_str="ignored")
    assert [n.node.node_id for n in kept] == [r.node.node_id for r in results[:2]]
    assert {n.node.node_id for n in kept} == {"0", "1"}


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "0.5", True])
def test_bad_cutoff(bad):
    with pytest.raises(ValueError, match="similarity_cutoff"):
        SimilarityPostprocessor(similarity_cutoff=bad)
