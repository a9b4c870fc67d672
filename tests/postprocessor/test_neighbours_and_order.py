"""LongContextReorder, KeywordNodePostprocessor, PrevNext / AutoPrevNext on real indexes and a real LLM server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from llm_server import OpenAICompatibleServer  # noqa: E402

from ragloom import Document, VectorStoreIndex  # noqa: E402
from ragloom.llms.openai_like import OpenAILike  # noqa: E402
from ragloom.node_parser import SentenceSplitter  # noqa: E402
from ragloom.postprocessor import (  # noqa: E402
    AutoPrevNextNodePostprocessor,
    KeywordNodePostprocessor,
    LongContextReorder,
    PrevNextNodePostprocessor,
)
from ragloom.schema import NodeWithScore, TextNode  # noqa: E402
from ragloom.storage import StorageContext  # noqa: E402


def _scored(scores):
    return [NodeWithScore(node=TextNode(id_=f"n{i}", text=f"t{i}"), score=s) for i, s in enumerate(scores)]


@given(st.lists(st.one_of(st.none(), st.floats(-1, 1, allow_nan=False)), max_size=12))
def test_long_context_reorder_keeps_every_node_and_puts_the_best_at_both_ends(scores):
    nodes = _scored(scores)
    out = LongContextReorder().postprocess_nodes(nodes)
    assert sorted(n.node.node_id for n in out) == sorted(n.node.node_id for n in nodes)
    ranked = sorted(nodes, key=lambda n: (n.score is None, -(n.score or 0.0)))
    if len(nodes) >= 1:
        assert out[0].score == ranked[0].score
    if len(nodes) >= 2:
        assert out[-1].score == ranked[1].score
    # the scores fall towards the middle from both ends
    for side in (out[: (len(out) + 1) // 2], out[(len(out) + 1) // 2:][::-1]):
        keys = [(n.score is None, -(n.score or 0.0)) for n in side]
        assert keys == sorted(keys)


def test_long_context_reorder_example():
    out = LongContextReorder().postprocess_nodes(_scored([0.9, 0.8, 0.7, 0.6, 0.5]))
    assert [n.score for n in out] == [0.9, 0.7, 0.5, 0.6, 0.8]


def test_keyword_postprocessor_matches_chinese_substrings_and_english_words():
    nodes = [
        NodeWithScore(node=TextNode(id_="a", text="我喜欢苹果手机，也喜欢香蕉。"), score=0.9),
        NodeWithScore(node=TextNode(id_="b", text="The cat sat on the mat."), score=0.8),
        NodeWithScore(node=TextNode(id_="c", text="Concatenate the strings; the CAT is here."), score=0.7),
        NodeWithScore(node=TextNode(id_="d", text="ｃａｔ in full width, no fruit."), score=0.6),
    ]
    ids = lambda out: [n.node.node_id for n in out]  # noqa: E731
    assert ids(KeywordNodePostprocessor(required_keywords=["苹果"]).postprocess_nodes(nodes)) == ["a"]
    assert ids(KeywordNodePostprocessor(required_keywords=["cat"]).postprocess_nodes(nodes)) == ["b", "c", "d"]
    assert ids(KeywordNodePostprocessor(exclude_keywords=["香蕉", "mat"]).postprocess_nodes(nodes)) == ["c", "d"]
    assert ids(KeywordNodePostprocessor(required_keywords=["sat  on"]).postprocess_nodes(nodes)) == ["b"]
    # "concat" is not the word "cat"; a keyword inside a Chinese run still matches
    assert ids(KeywordNodePostprocessor(required_keywords=["concat"]).postprocess_nodes(nodes)) == []
    with pytest.raises(ValueError, match="keywords"):
        KeywordNodePostprocessor(required_keywords=["  "])
    # a bare string is one keyword, not its characters
    one = [NodeWithScore(node=TextNode(id_="x", text="孙大圣来了，悟空不在。"), score=1.0)]
    assert KeywordNodePostprocessor(required_keywords="孙悟空").postprocess_nodes(one) == []
    assert len(KeywordNodePostprocessor(exclude_keywords="孙悟空").postprocess_nodes(one)) == 1


def _chain_index(tmp_path):
    sentences = [f"Sentence number {i} talks about topic {i} in detail." for i in range(12)]
    doc = Document(text=" ".join(sentences), id_="chain")
    storage = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    index = VectorStoreIndex.from_documents(
        [doc], storage_context=storage, transformations=[SentenceSplitter(chunk_size=24, chunk_overlap=0)]
    )
    ordered = index.ref_doc_info["chain"].node_ids
    return index, ordered


def test_prev_next_reads_neighbours_through_the_default_docstore(tmp_path):
    index, ordered = _chain_index(tmp_path)
    assert len(ordered) >= 5
    middle = index.docstore.get_node(ordered[2])  # the docstore holds links; the text comes from the store
    assert middle.text and middle.next_node.node_id == ordered[3]
    hit = [NodeWithScore(node=middle, score=0.5)]
    after = PrevNextNodePostprocessor(docstore=index.docstore, num_nodes=2, mode="next").postprocess_nodes(hit)
    assert [n.node.node_id for n in after] == ordered[2:5]
    both = PrevNextNodePostprocessor(docstore=index.docstore, num_nodes=1, mode="both").postprocess_nodes(hit)
    assert [n.node.node_id for n in both] == ordered[1:4]
    assert all(n.score == 0.5 for n in both)
    first = [NodeWithScore(node=index.docstore.get_node(ordered[0]), score=1.0)]
    before = PrevNextNodePostprocessor(docstore=index.docstore, num_nodes=3, mode="previous").postprocess_nodes(first)
    assert [n.node.node_id for n in before] == ordered[:1]  # nothing before the first node
    # two hits whose neighbourhoods overlap: no node twice
    two = [NodeWithScore(node=middle, score=0.5), NodeWithScore(node=index.docstore.get_node(ordered[3]), score=0.4)]
    out = PrevNextNodePostprocessor(docstore=index.docstore, num_nodes=1, mode="both").postprocess_nodes(two)
    assert [n.node.node_id for n in out] == [ordered[1], ordered[2], ordered[3], ordered[4]]
    with pytest.raises(ValueError, match="mode"):
        PrevNextNodePostprocessor(docstore=index.docstore, mode="sideways")
    with pytest.raises(ValueError, match="num_nodes"):
        PrevNextNodePostprocessor(docstore=index.docstore, num_nodes=0)


def test_auto_prev_next_asks_the_llm_once_and_follows_its_answer(tmp_path):
    index, ordered = _chain_index(tmp_path)
    hit = [NodeWithScore(node=index.docstore.get_node(ordered[4]), score=0.7)]
    answers = iter(["PREVIOUS", "Next.", "none", "I am not sure"])
    with OpenAICompatibleServer(answer=lambda prompt: next(answers)) as srv:
        llm = OpenAILike(model="m", api_base=srv.url, api_key="x", is_chat_model=True)
        post = AutoPrevNextNodePostprocessor(docstore=index.docstore, llm=llm, num_nodes=1)
        got = [post.postprocess_nodes(hit, query_str="What came before topic 4?") for _ in range(4)]
        assert len(srv.requests) == 4
        assert "What came before topic 4?" in srv.requests[0]["prompt"]
        assert hit[0].node.text in srv.requests[0]["prompt"]
    assert [n.node.node_id for n in got[0]] == [ordered[3], ordered[4]]
    assert [n.node.node_id for n in got[1]] == [ordered[4], ordered[5]]
    assert [n.node.node_id for n in got[2]] == [ordered[4]]
    assert [n.node.node_id for n in got[3]] == [ordered[4]]  # an unclear answer adds nothing
