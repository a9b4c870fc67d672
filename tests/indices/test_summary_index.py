"""SummaryIndex (ListIndex): its three retrievers, the LLM choice prompt against a recording
OpenAI-compatible server, query engines, persistence."""

import re
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from llm_server import OpenAICompatibleServer  # noqa: E402

from ragloom import Document  # noqa: E402
from ragloom.indices.list import (  # noqa: E402
    ListIndex,
    SummaryIndex,
    SummaryIndexEmbeddingRetriever,
    SummaryIndexLLMRetriever,
    SummaryIndexRetriever,
)
from ragloom.indices.list.retrievers import default_parse_choice_select_answer_fn  # noqa: E402
from ragloom.indices.loading import load_index_from_storage  # noqa: E402
from ragloom.llms.openai_like import OpenAILike  # noqa: E402
from ragloom.node_parser import SentenceSplitter  # noqa: E402
from ragloom.storage import StorageContext  # noqa: E402

FACTS = [
    "The capital of France is Paris.",
    "Photosynthesis turns sunlight into chemical energy in plants.",
    "长城是中国古代修建的军事防御工程。",
    "The Pacific is the largest ocean on Earth.",
    "Honeybees communicate with a waggle dance.",
]


def build(tmp_path=None, **kw):
    sc = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True) if tmp_path else None
    docs = [Document(text=t, id_=f"d{i}") for i, t in enumerate(FACTS)]
    return SummaryIndex.from_documents(docs, storage_context=sc,
                                       transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0)], **kw)


def llm_for(srv):
    return OpenAILike(model="m", api_base=srv.url, max_retries=0)


def test_default_retriever_returns_every_node_in_order_and_survives_reload(tmp_path):
    index = build(tmp_path)
    got = index.as_retriever().retrieve("anything")
    assert [n.node.get_content() for n in got] == FACTS
    assert all(n.score is None for n in got)
    assert isinstance(index.as_retriever(), SummaryIndexRetriever)
    sc = index.storage_context
    sc.persist()
    loaded = load_index_from_storage(StorageContext.from_defaults(persist_dir=tmp_path))
    assert isinstance(loaded, SummaryIndex) and ListIndex is SummaryIndex
    assert [n.node.get_content() for n in loaded.as_retriever().retrieve("x")] == FACTS


def test_embedding_retriever_ranks_by_similarity_and_caches_vectors():
    index = build()
    retriever = index.as_retriever(retriever_mode="embedding", similarity_top_k=2)
    assert isinstance(retriever, SummaryIndexEmbeddingRetriever)
    got = retriever.retrieve("Which ocean is the biggest?")
    assert len(got) == 2 and got[0].node.get_content() == FACTS[3]
    assert got[0].score >= got[1].score
    cached = index._node_embeddings.keys()
    assert len(cached) == len(index._node_embeddings) == len(FACTS)
    retriever.retrieve("How do bees talk to each other?")
    assert index._node_embeddings.keys() == cached  # no node embedded twice
    assert index.as_retriever(retriever_mode="embedding").retrieve("bees dance")[0].node.get_content() == FACTS[4]


def _choice_answer(prompt):
    docs = dict(re.findall(r"Document (\d+):\n(.*)", prompt))
    picks = [n for n, text in docs.items() if "Paris" in text or "ocean" in text]
    # noisy but readable: bullets, a Chinese line, explanations
    return "\n".join(f"- Doc: {n}, Relevance: {9 if 'Paris' in docs[n] else 6} (mentions it)" for n in picks)


def test_llm_retriever_batches_prompts_and_parses_choices():
    with OpenAICompatibleServer(answer=_choice_answer) as srv:
        index = build(llm=llm_for(srv))
        retriever = index.as_retriever(retriever_mode="llm", choice_batch_size=2)
        assert isinstance(retriever, SummaryIndexLLMRetriever)
        got = retriever.retrieve("Tell me about Paris and oceans")
        prompts = [r["prompt"] for r in srv.requests]
    assert len(prompts) == 3  # 5 nodes, 2 per call
    assert "Document 1:\nThe capital of France is Paris." in prompts[0]
    assert "Document 2:\nPhotosynthesis" in prompts[0] and "长城" in prompts[1]
    assert all("Question: Tell me about Paris and oceans" in p for p in prompts)
    assert [(n.node.get_content(), n.score) for n in got] == [(FACTS[0], 9.0), (FACTS[3], 6.0)]


def test_llm_retriever_custom_prompt_and_errors():
    with OpenAICompatibleServer(answer="Doc: 1, Relevance: 3") as srv:
        index = build()
        retriever = index.as_retriever(retriever_mode="llm", llm=llm_for(srv), choice_batch_size=10,
                                       choice_select_prompt="Q={query_str}\nDOCS:\n{context_str}")
        got = retriever.retrieve("which?")
        assert srv.requests[0]["prompt"].startswith("Q=which?\nDOCS:\nDocument 1:")
    assert [n.node.get_content() for n in got] == [FACTS[0]]
    assert "choice_select_prompt" in retriever.get_prompts()
    with pytest.raises(ValueError, match="choice_batch_size"):
        index.as_retriever(retriever_mode="llm", choice_batch_size=0)
    with pytest.raises(ValueError, match="context_str"):
        index.as_retriever(retriever_mode="llm", choice_select_prompt="{query_str}")
    with pytest.raises(ValueError, match="retriever_mode must be one of default, embedding, llm"):
        index.as_retriever(retriever_mode="fancy")
    with pytest.raises(ValueError, match="similarity_top_k"):
        index.as_retriever(retriever_mode="embedding", similarity_top_k=0)


def test_parse_choice_answers():
    assert default_parse_choice_select_answer_fn("Doc: 2, Relevance: 7\nDoc: 5, Relevance: 3", 4) == ([2], [7.0])
    assert default_parse_choice_select_answer_fn("**Document 3** relevance=8.5\n文档 1，相关性：4\nDoc 3", 3) == (
        [3, 1], [8.5, 4.0])
    assert default_parse_choice_select_answer_fn("none of them help", 3) == ([], [])
    assert default_parse_choice_select_answer_fn("Doc: 1", 1) == ([1], [1.0])
    with pytest.raises(ValueError, match="outside"):
        default_parse_choice_select_answer_fn("Doc: 9, Relevance: 2", 3, raise_error=True)


@given(st.text(max_size=200), st.integers(min_value=1, max_value=20))
def test_parse_choice_answers_never_fails(answer, n):
    nums, rels = default_parse_choice_select_answer_fn(answer, n)
    assert len(nums) == len(rels) == len(set(nums))
    assert all(1 <= k <= n for k in nums)


def test_query_engine_defaults_to_tree_summarize_over_all_nodes():
    with OpenAICompatibleServer(answer="SUMMARY") as srv:
        index = build(llm=llm_for(srv))
        engine = index.as_query_engine()
        assert type(engine.response_synthesizer).__name__ == "TreeSummarize"
        response = engine.query("Summarize everything")
        prompt = srv.requests[-1]["prompt"]
    assert str(response) == "SUMMARY"
    assert all(fact in prompt for fact in FACTS) and "Summarize everything" in prompt
    assert len(response.source_nodes) == len(FACTS)


def test_query_engine_llm_mode_uses_the_same_llm_for_choosing():
    def answer(prompt):
        return "Doc: 3, Relevance: 10" if "Document 1:" in prompt else "ANSWER"

    with OpenAICompatibleServer(answer=answer) as srv:
        index = build()
        engine = index.as_query_engine(llm=llm_for(srv), retriever_mode="llm", response_mode="compact")
        response = engine.query("What did ancient China build?")
        assert len(srv.requests) == 2
    assert str(response) == "ANSWER"
    assert [n.node.get_content() for n in response.source_nodes] == [FACTS[2]]
