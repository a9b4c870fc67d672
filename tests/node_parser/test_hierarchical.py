"""``HierarchicalNodeParser`` and the tree helpers."""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from invariants import assert_invariants

from ragloom.node_parser import (
    HierarchicalNodeParser,
    SentenceSplitter,
    TokenTextSplitter,
    get_child_nodes,
    get_deeper_nodes,
    get_leaf_nodes,
    get_root_nodes,
)
from ragloom.schema import Document, NodeRelationship

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
XIYOUJI = SHARED_DATA / "zh_classics" / "西游记.utf8.txt"

EN = (
    "The quick brown fox jumps over the lazy dog. Dr. Smith arrived at 5 p.m. and left early. "
    "Retrieval works best when chunks are small, but answers need context.\n\n"
)


class LevelView:
    """One level of a hierarchical parse, as a parser for ``assert_invariants`` (whose
    determinism check re-parses: one second run is shared by all levels)."""

    def __init__(self, parser, depth, rerun):
        self.parser, self.depth, self.rerun = parser, depth, rerun

    def get_nodes_from_documents(self, docs):
        if not self.rerun:
            self.rerun.append(self.parser.get_nodes_from_documents(docs))
        return get_deeper_nodes(self.rerun[0], self.depth)


def check_tree(parser, doc, tokenizer, sizes):
    nodes = parser.get_nodes_from_documents([doc])
    by_id = {n.node_id: n for n in nodes}
    rerun = []
    assert len(by_id) == len(nodes), "ids are unique"
    for depth, size in enumerate(sizes):
        level = get_deeper_nodes(nodes, depth)
        if doc.text.strip():
            assert level, f"level {depth} is empty"
        # A level lists each parent's children in turn; with overlap, the next parent can start
        # before the previous parent's last child, so start offsets are ordered within a parent
        # only (checked below), not across the whole level.
        assert_invariants(LevelView(parser, depth, rerun), doc, tokenizer=tokenizer, chunk_size=size, nodes=level,
                          ordered=depth == 0)
        for parent_id in {n.parent_node.node_id for n in level if n.parent_node is not None}:
            starts = [
                n.start_char_idx for n in level if n.parent_node is not None and n.parent_node.node_id == parent_id
            ]
            assert starts == sorted(starts), "children of one parent are in document order"
        for n in level:
            assert n.relationships[NodeRelationship.SOURCE].node_id == doc.id_
            if depth == 0:
                assert n.parent_node is None
                continue
            parent = by_id[n.parent_node.node_id]
            assert parent.start_char_idx <= n.start_char_idx <= n.end_char_idx <= parent.end_char_idx
            assert n.node_id in [c.node_id for c in parent.child_nodes]
        # each parent is covered exactly by its children
        if depth + 1 < len(sizes):
            for p in level:
                kids = get_child_nodes([p], nodes)
                assert [k.node_id for k in kids] == [c.node_id for c in p.child_nodes]
                covered = set()
                for k in kids:
                    covered.update(range(k.start_char_idx, k.end_char_idx))
                missing = [
                    i for i in range(p.start_char_idx, p.end_char_idx) if not doc.text[i].isspace() and i not in covered
                ]
                assert not missing
    leaves = get_leaf_nodes(nodes)
    assert leaves == get_deeper_nodes(nodes, len(sizes) - 1)
    assert all(n.child_nodes is None for n in leaves)
    return nodes


def test_llamaindex_script_chunk_sizes_1024_100_50(hf_tok):
    doc = Document(text=EN * 40, id_="doc", metadata={"title": "Foxes"})
    parser = HierarchicalNodeParser.from_defaults(chunk_sizes=[1024, 100, 50])
    nodes = check_tree(parser, doc, hf_tok, [1024, 100, 50])
    assert len(get_root_nodes(nodes)) >= 2
    assert len(get_deeper_nodes(nodes, 2)) > len(get_deeper_nodes(nodes, 1)) > len(get_root_nodes(nodes))
    assert parser.node_parser_ids == ["chunk_size_1024", "chunk_size_100", "chunk_size_50"]


@pytest.mark.slow
def test_defaults_on_a_long_chinese_document(hf_tok):
    if not XIYOUJI.exists():
        pytest.skip("shared data is not present")
    text = XIYOUJI.read_text(encoding="utf-8")[:100_000]
    doc = Document(text=text, id_="xiyouji", metadata={"file_name": "西游记.utf8.txt"})
    parser = HierarchicalNodeParser.from_defaults()
    nodes = check_tree(parser, doc, hf_tok, [2048, 512, 128])
    assert len(get_leaf_nodes(nodes)) > 100


def test_overlap_larger_than_a_small_level_is_scaled():
    parser = HierarchicalNodeParser.from_defaults(chunk_sizes=[64, 16, 4], chunk_overlap=200, tokenizer="cl100k_base")
    overlaps = [parser.node_parser_map[p].chunk_overlap for p in parser.node_parser_ids]
    assert overlaps == [32, 8, 2]
    nodes = parser([Document(text=EN * 3, id_="d")])
    assert get_leaf_nodes(nodes)


def test_node_parser_ids_and_map():
    tok = "cl100k_base"
    parser = HierarchicalNodeParser.from_defaults(
        node_parser_ids=["big", "small"],
        node_parser_map={"big": SentenceSplitter(chunk_size=80, chunk_overlap=0, tokenizer=tok),
                         "small": TokenTextSplitter(chunk_size=20, chunk_overlap=5, tokenizer=tok)},
    )
    doc = Document(text=EN * 5, id_="d")
    check_tree(parser, doc, parser.node_parser_map["big"].tokenizer, [80, 20])


@pytest.mark.parametrize("kwargs", [{"chunk_sizes": []}, {"chunk_sizes": [100, 0]}, {"chunk_overlap": -1},
                                    {"node_parser_ids": ["a"], "node_parser_map": {}}])
def test_validation(kwargs):
    with pytest.raises(ValueError):
        HierarchicalNodeParser(**kwargs)


def test_get_deeper_nodes_negative_depth():
    with pytest.raises(ValueError):
        get_deeper_nodes([], -1)


def test_blank_document():
    assert HierarchicalNodeParser.from_defaults()([Document(text="  \n", id_="d")]) == []


ZH = ["张三说", "今天下雨了", "孙悟空", "龍", "。", "，", "\n\n", " "]
EN_W = ["The", "quick", "fox", "Dr.", "Smith", ".", ",", " ", "\n", "😀"]
text_st = st.one_of(
    st.lists(st.sampled_from(ZH + EN_W), max_size=200).map("".join),
    st.lists(st.sampled_from(EN_W), max_size=150).map(" ".join),
    st.text(max_size=100),
)


@given(text=text_st, sizes=st.sampled_from([[60, 30, 12], [40, 20], [100, 25, 8]]), overlap=st.integers(0, 30),
       meta=st.sampled_from([{}, {"t": "x"}]))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_invariants_per_level(hf_tok, text, sizes, overlap, meta):
    parser = HierarchicalNodeParser.from_defaults(chunk_sizes=sizes, chunk_overlap=overlap, tokenizer=hf_tok)
    check_tree(parser, Document(text=text, id_="doc-1", metadata=meta), hf_tok, sizes)
