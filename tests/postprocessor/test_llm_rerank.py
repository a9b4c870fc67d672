"""``LLMRerank``: answer parsing (unit + property tests), batching and ordering against the
recording HTTP server, and inside a query engine over a real index."""

import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "query_engine"))
from llm_server import OpenAICompatibleServer  # noqa: E402
from routing_helpers import EXAMPLES, TEA_FILE, kind, llm_for  # noqa: E402

from ragloom import SimpleDirectoryReader, StorageContext, VectorStoreIndex  # noqa: E402
from ragloom.node_parser import SentenceSplitter  # noqa: E402

from ragloom.postprocessor import LLMRerank  # noqa: E402
from ragloom.postprocessor.llm_rerank import default_parse_choice_select_answer_fn  # noqa: E402
from ragloom.schema import NodeWithScore, QueryBundle, TextNode  # noqa: E402

_DOC_BLOCK = re.compile(r"Document (\d+):\n[^\n]*?rating (\d+)")


def rate_by_marker(prompt):
    """Rate each document of the prompt by the ``rating K`` marker in its text (0: leave it out)."""
    lines = [f"Doc: {n}, Relevance: {r}" for n, r in _DOC_BLOCK.findall(prompt) if r != "0"]
    return "\n".join(lines)


def nodes_rated(ratings):
    return [NodeWithScore(node=TextNode(text=f"passage {i} rating {r}", id_=f"n{i}"), score=0.5)
            for i, r in enumerate(ratings)]


# -- parsing ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "answer, expected",
    [
        ("Doc: 2, Relevance: 9\nDoc: 1, Relevance: 4", ([2, 1], [9.0, 4.0])),
        ("- **Doc 3**: relevance 7.5\n* Document #1 - Relevance = 2", ([3, 1], [7.5, 2.0])),
        ("Doc: 1, Relevance: 8\nDoc: 1, Relevance: 3", ([1], [8.0])),  # first line wins
        ("Doc: 9, Relevance: 10\nDoc: 2, Relevance: 5", ([2], [5.0])),  # 9 is out of range
        ("Doc: 2\nDoc: 3", ([2, 3], [1.0, 1.0])),  # no ratings at all: 1.0 each (as LlamaIndex)
        ("Doc: 2, Relevance: 6\nDoc: 3", ([2], [6.0])),  # unrated lines drop when others are rated
        ("None of these documents help.", ([], [])),
        ("", ([], [])),
    ],
)
def test_parse_choice_select_answer(answer, expected):
    assert default_parse_choice_select_answer_fn(answer, 3) == expected


@settings(max_examples=200, deadline=None)
@given(
    rated=st.lists(st.tuples(st.integers(0, 12), st.integers(1, 10)), max_size=10),
    style=st.sampled_from(["Doc: {n}, Relevance: {r}", "Document {n} - relevance: {r}", "- **Doc {n}** Relevance={r}"]),
    num_choices=st.integers(1, 10),
)
def test_parse_choice_select_answer_property(rated, style, num_choices):
    answer = "\n".join(style.format(n=n, r=r) for n, r in rated)
    numbers, relevances = default_parse_choice_select_answer_fn(answer, num_choices)
    expected = {}
    for n, r in rated:
        if 1 <= n <= num_choices:
            expected.setdefault(n, float(r))
    assert numbers == list(expected) and relevances == list(expected.values())


# -- against the server ---------------------------------------------------------------------------
def test_rerank_batches_orders_and_cuts():
    ratings = [3, 9, 0, 7, 9, 1, 5]
    with OpenAICompatibleServer(answer=rate_by_marker) as srv:
        rerank = LLMRerank(llm=llm_for(srv), choice_batch_size=3, top_n=4)
        out = rerank.postprocess_nodes(nodes_rated(ratings), query_str="which passage is best?")
        prompts = srv.prompts
    assert len(prompts) == 3  # 7 nodes in batches of 3
    assert all(kind(p) == "rerank" and "which passage is best?" in p for p in prompts)
    # documents are numbered from 1 within each batch
    assert "Document 1:\npassage 3 rating 7" in prompts[1] and "Document 1:\npassage 6 rating 5" in prompts[2]
    assert [n.node.node_id for n in out] == ["n1", "n4", "n3", "n6"]  # ties keep retrieval order
    assert [n.score for n in out] == [9.0, 9.0, 7.0, 5.0]


def test_rerank_default_top_n_drops_unrated_and_handles_empty_input():
    with OpenAICompatibleServer(answer=rate_by_marker) as srv:
        rerank = LLMRerank(llm=llm_for(srv))
        out = rerank.postprocess_nodes(nodes_rated([2, 0, 6]), query_bundle=QueryBundle(query_str="q"))
        assert [n.node.node_id for n in out] == ["n2", "n0"]  # "n1" was left out by the LLM
        assert rerank.postprocess_nodes([], query_str="q") == [] and len(srv.requests) == 1
        with pytest.raises(ValueError, match="needs the query"):
            rerank.postprocess_nodes(nodes_rated([1]))


def test_rerank_arguments_and_prompts():
    with OpenAICompatibleServer(answer="Doc: 1, Relevance: 4") as srv:
        with pytest.raises(ValueError, match="top_n"):
            LLMRerank(llm=llm_for(srv), top_n=0)
        with pytest.raises(ValueError, match="choice_batch_size"):
            LLMRerank(llm=llm_for(srv), choice_batch_size=0)
        with pytest.raises(ValueError, match="context_str"):
            LLMRerank(llm=llm_for(srv), choice_select_prompt="{query_str} only")
        rerank = LLMRerank(llm=llm_for(srv), choice_select_prompt="Q={query_str}\n{context_str}\nRate:")
        out = rerank.postprocess_nodes(nodes_rated([1, 1]), query_str="x")
        assert srv.prompts[0].startswith("Q=x\nDocument 1:\npassage 0 rating 1\n\nDocument 2:")
        assert [(n.node.node_id, n.score) for n in out] == [("n0", 4.0)]
        assert list(rerank.get_prompts()) == ["choice_select_prompt"]


def test_rerank_in_a_query_engine_over_a_real_index(tmp_path):
    docs = SimpleDirectoryReader(input_files=[str(EXAMPLES / TEA_FILE)]).load_data()
    storage = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    index = VectorStoreIndex.from_documents(
        docs, storage_context=storage, transformations=[SentenceSplitter(chunk_size=48, chunk_overlap=0)]
    )
    retrieved = index.as_retriever(similarity_top_k=3).retrieve("How should I store tea?")
    assert len(retrieved) >= 2
    last = retrieved[-1].node.node_id

    def answer(prompt):
        if kind(prompt) == "rerank":
            n = len(re.findall(r"^Document \d+:", prompt, flags=re.M))
            return f"Doc: {n}, Relevance: 10\nDoc: 1, Relevance: 2"  # the last retrieved is best
        return "Keep it in an airtight tin."

    with OpenAICompatibleServer(answer=answer) as srv:
        llm = llm_for(srv)
        engine = index.as_query_engine(llm=llm, similarity_top_k=3, node_postprocessors=[LLMRerank(llm=llm, top_n=1)])
        response = engine.query("How should I store tea?")
        assert [kind(p) for p in srv.prompts] == ["rerank", "qa"]
    assert [n.node.node_id for n in response.source_nodes] == [last]
    assert response.source_nodes[0].score == 10.0


def test_rerank_reports_a_reranking_event():
    from ragloom.callbacks import CallbackManager, CBEventType, EventPayload, LlamaDebugHandler

    debug = LlamaDebugHandler(print_trace_on_end=False)
    with OpenAICompatibleServer(answer=rate_by_marker) as srv:
        rerank = LLMRerank(llm=llm_for(srv), top_n=1)
        rerank.callback_manager = CallbackManager([debug])
        out = rerank.postprocess_nodes(nodes_rated([2, 8]), query_str="q")
    (start, end), = debug.get_event_pairs(CBEventType.RERANKING)
    assert start.payload[EventPayload.TOP_K] == 1 and start.payload[EventPayload.MODEL_NAME] == "m"
    assert start.payload[EventPayload.QUERY_STR] == "q"
    assert end.payload[EventPayload.NODES] == out and [n.node.node_id for n in out] == ["n1"]


# -- an answer that rates nothing -------------------------------------------------------------------
def test_rerank_keeps_a_batch_whose_answer_rates_nothing(caplog):
    """A batch whose answer names no document is kept (retrieval order and scores, after the rated
    nodes, with a warning); a readable answer that leaves nodes out still drops them."""

    def answer(prompt):
        if "passage 3 rating" in prompt:  # the second batch: prose, no 'Doc: N, Relevance: S' line
            return "Both passages look useful to me."
        return rate_by_marker(prompt)

    nodes = nodes_rated([4, 0, 2, 8, 1])
    for i, n in enumerate(nodes):
        n.score = 1.0 - i / 10
    with OpenAICompatibleServer(answer=answer) as srv:
        rerank = LLMRerank(llm=llm_for(srv), choice_batch_size=2, top_n=10)
        with caplog.at_level("WARNING", logger="ragloom.postprocessor.llm_rerank"):
            out = rerank.postprocess_nodes(nodes, query_str="q")
        assert len(srv.requests) == 3
    # batch 1 rated n0 (4) and left n1 out; batch 2 (n2, n3) unreadable; batch 3 rated n4 (1)
    assert [(n.node.node_id, n.score) for n in out] == [("n0", 4.0), ("n4", 1.0), ("n2", 0.8), ("n3", 0.7)]
    assert any("nodes 3..4 rates none of them" in r.getMessage() for r in caplog.records)
    assert [n.score for n in nodes] == [1.0, 0.9, 0.8, 0.7, 0.6]  # the input is not changed
    with OpenAICompatibleServer(answer="Doc: 7, Relevance: 9") as srv:  # names only a document it was not shown
        out = LLMRerank(llm=llm_for(srv), top_n=2).postprocess_nodes(nodes, query_str="q")
    assert [n.node.node_id for n in out] == ["n0", "n1"]


def test_rerank_with_unreadable_answers_still_answers_the_query(tmp_path):
    """Before: every node dropped, the engine answered "Empty Response" without asking the LLM."""
    docs = SimpleDirectoryReader(input_files=[str(EXAMPLES / TEA_FILE)]).load_data()
    storage = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    index = VectorStoreIndex.from_documents(
        docs, storage_context=storage, transformations=[SentenceSplitter(chunk_size=48, chunk_overlap=0)]
    )
    retrieved = index.as_retriever(similarity_top_k=3).retrieve("How should I store tea?")

    def answer(prompt):
        return "I cannot rate these." if kind(prompt) == "rerank" else "Keep it in an airtight tin."

    with OpenAICompatibleServer(answer=answer) as srv:
        llm = llm_for(srv)
        engine = index.as_query_engine(llm=llm, similarity_top_k=3, node_postprocessors=[LLMRerank(llm=llm, top_n=2)])
        response = engine.query("How should I store tea?")
        prompts = srv.prompts
    assert [kind(p) for p in prompts] == ["rerank", "qa"]
    assert str(response) == "Keep it in an airtight tin."
    assert [n.node.node_id for n in response.source_nodes] == [n.node.node_id for n in retrieved[:2]]
    assert all(n.node.get_content().strip()[:30] in prompts[1] for n in retrieved[:2])
