"""AutoMergingRetriever on a real HierarchicalNodeParser tree: leaves embedded with the bundled
model in the SQLite store, every level in the docstore."""

from pathlib import Path

import pytest

from ragloom import StorageContext, VectorStoreIndex
from ragloom.node_parser import HierarchicalNodeParser, get_deeper_nodes, get_leaf_nodes
from ragloom.retrievers import AutoMergingRetriever
from ragloom.schema import Document

TEXT = (Path(__file__).parent / "lighthouse_and_bread.txt").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def tree(embed_model):
    parser = HierarchicalNodeParser.from_defaults(chunk_sizes=[256, 64, 24], chunk_overlap=0)
    nodes = parser.get_nodes_from_documents([Document(id_="essay", text=TEXT)])
    storage = StorageContext.from_defaults()
    storage.docstore.add_documents(nodes)
    index = VectorStoreIndex(get_leaf_nodes(nodes), storage_context=storage, embed_model=embed_model)
    by_id = {n.node_id: n for n in nodes}
    return index, storage, by_id, nodes


def children(node, by_id):
    return [by_id[c.node_id] for c in node.child_nodes]


def restricted(index, leaves):
    """A real dense retriever that can only return ``leaves`` (with their real cosine scores)."""
    ids = [n.node_id for n in leaves]
    return index.as_retriever(similarity_top_k=len(ids), node_ids=ids, vector_store_query_mode="default")


def mid_with(nodes, by_id, n_children):
    return next(m for m in get_deeper_nodes(nodes, 1) if len(m.child_nodes) == n_children)


QUERY = "How did the keeper light the lamp?"


@pytest.mark.parametrize(
    "retrieved, thresh, merges", [(2, 0.5, False), (3, 0.5, True), (3, 0.75, False), (3, 0.74, True)]
)
def test_merges_exactly_when_the_ratio_is_exceeded(tree, retrieved, thresh, merges):
    index, storage, by_id, nodes = tree
    mid = mid_with(nodes, by_id, 4)
    kids = children(mid, by_id)[:retrieved]  # a contiguous run: nothing to fill in
    base = restricted(index, kids)
    leaves = base.retrieve(QUERY)
    out = AutoMergingRetriever(base, storage, simple_ratio_thresh=thresh).retrieve(QUERY)
    if merges:
        assert [n.node.node_id for n in out] == [mid.node_id]
        assert out[0].score == pytest.approx(sum(n.score for n in leaves) / len(leaves))
        assert out[0].node.text == mid.text
    else:
        assert [(n.node.node_id, n.score) for n in out] == [(n.node.node_id, n.score) for n in leaves]


def test_merging_goes_up_level_by_level(tree):
    index, storage, by_id, nodes = tree
    root = next(r for r in get_deeper_nodes(nodes, 0) if len(r.child_nodes) >= 3)
    mids = children(root, by_id)
    leaves = [leaf for m in mids for leaf in children(m, by_id)]
    base = restricted(index, leaves)
    scores = {n.node.node_id: n.score for n in base.retrieve(QUERY)}
    out = AutoMergingRetriever(base, storage).retrieve(QUERY)
    assert [n.node.node_id for n in out] == [root.node_id]
    mid_scores = [sum(scores[k.node_id] for k in children(m, by_id)) / len(m.child_nodes) for m in mids]
    assert out[0].score == pytest.approx(sum(mid_scores) / len(mid_scores))


def test_threshold_zero_lifts_a_single_leaf_to_its_root(tree):
    index, storage, by_id, nodes = tree
    leaf = get_leaf_nodes(nodes)[5]
    base = restricted(index, [leaf])
    hit = base.retrieve(QUERY)[0]
    out = AutoMergingRetriever(base, storage, simple_ratio_thresh=0.0).retrieve(QUERY)
    root = by_id[by_id[leaf.parent_node.node_id].parent_node.node_id]
    assert [(n.node.node_id, n.score) for n in out] == [(root.node_id, hit.score)]


def test_a_gap_of_one_node_is_filled_in_then_merged(tree):
    index, storage, by_id, nodes = tree
    mid = mid_with(nodes, by_id, 4)
    c0, c1, c2, _ = children(mid, by_id)
    base = restricted(index, [c0, c2])
    query = c0.text  # makes c0 the best hit, so the list reads c0, c2 in document order
    hits = base.retrieve(query)
    assert [h.node.node_id for h in hits] == [c0.node_id, c2.node_id]
    filled = AutoMergingRetriever(base, storage, simple_ratio_thresh=1.0).retrieve(query)
    assert {n.node.node_id for n in filled} == {c0.node_id, c1.node_id, c2.node_id}
    middle = next(n for n in filled if n.node.node_id == c1.node_id)
    assert middle.score == pytest.approx((hits[0].score + hits[1].score) / 2)
    assert [n.score for n in filled] == sorted((n.score for n in filled), reverse=True)
    merged = AutoMergingRetriever(base, storage, simple_ratio_thresh=0.5).retrieve(query)
    assert [n.node.node_id for n in merged] == [mid.node_id]  # 3 of 4 after filling in
    assert merged[0].score == pytest.approx((hits[0].score + hits[1].score + middle.score) / 3)


def test_leaves_inside_a_merged_ancestor_are_dropped(tree):
    index, storage, by_id, nodes = tree
    root = next(r for r in get_deeper_nodes(nodes, 0) if len(r.child_nodes) == 4)
    mids = children(root, by_id)
    picked = []
    for m in mids[:3]:  # more than half of the children of three mids: each merges, then the root
        kids = children(m, by_id)
        picked += kids[: len(kids) // 2 + 1]
    picked.append(children(mids[3], by_id)[0])  # one leaf of the fourth mid: does not merge by itself
    out = AutoMergingRetriever(restricted(index, picked), storage).retrieve(QUERY)
    assert [n.node.node_id for n in out] == [root.node_id]


def test_end_to_end_results_are_consistent(tree):
    index, storage, by_id, nodes = tree
    base = index.as_retriever(similarity_top_k=12)
    out = AutoMergingRetriever(base, storage, verbose=True).retrieve(
        "What happened during the great gale and the rescue?"
    )
    ids = [n.node.node_id for n in out]
    assert len(ids) == len(set(ids)) and len(out) <= 12
    assert [n.score for n in out] == sorted((n.score for n in out), reverse=True)
    returned = set(ids)
    for n in out:  # no node comes back together with one of its ancestors
        parent = n.node.parent_node
        while parent is not None:
            assert parent.node_id not in returned
            parent = by_id[parent.node_id].parent_node
    assert any("gale" in n.node.text for n in out[:2])
    assert any(n.node.child_nodes for n in out)  # something was merged


def test_parent_missing_from_the_docstore_is_a_clear_error(tree):
    index, _, by_id, nodes = tree
    mid = mid_with(nodes, by_id, 4)
    empty = StorageContext.from_defaults()
    retriever = AutoMergingRetriever(restricted(index, children(mid, by_id)), empty)
    with pytest.raises(ValueError, match="docstore"):
        retriever.retrieve(QUERY)


def test_bad_arguments(tree):
    index, storage, _, _ = tree
    with pytest.raises(ValueError, match="simple_ratio_thresh"):
        AutoMergingRetriever(index.as_retriever(), storage, simple_ratio_thresh=1.5)
    with pytest.raises(ValueError, match="retrieve"):
        AutoMergingRetriever(object(), storage)
