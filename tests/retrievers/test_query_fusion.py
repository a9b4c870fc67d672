"""QueryFusionRetriever over real retrievers (bundled model, SQLite store, BM25)."""

import asyncio

import pytest
from retrieval_helpers import make_nodes

from ragloom import Settings, VectorStoreIndex
from ragloom.fusion import RRF_K
from ragloom.retrievers import BM25Retriever, QueryFusionRetriever
from ragloom.retrievers.fusion_retriever import parse_generated_queries
from ragloom.storage import SQLiteDocumentStore

ENGLISH_QUERIES = [
    "how hot should the water be for green tea",
    "repair a punctured bicycle inner tube",
    "steeping black tea for four minutes",
    "what should I pack for an autumn hike",
]


@pytest.fixture(scope="module")
def index(embed_model):
    return VectorStoreIndex(make_nodes(), embed_model=embed_model)


def _ranked(results):
    return [(r.node.node_id, r.score) for r in results]


def _assert_same_ranking(got, expected):
    assert [i for i, _ in got] == [i for i, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], abs=1e-9)


@pytest.mark.parametrize("k", [2, 5])
def test_dense_plus_bm25_dist_based_equals_the_stores_hybrid_mode(index, k):
    pool = max(4 * k, 50)  # the store's hybrid candidate pool per side
    docstore = SQLiteDocumentStore()
    docstore.add_documents(make_nodes())
    for bm25 in (
        BM25Retriever.from_defaults(index=index, similarity_top_k=pool),
        BM25Retriever.from_defaults(docstore=docstore, similarity_top_k=pool),
    ):
        fusion = QueryFusionRetriever(
            [index.as_retriever(vector_store_query_mode="default", similarity_top_k=pool), bm25],
            mode="dist_based_score",
            similarity_top_k=k,
        )
        hybrid = index.as_retriever(similarity_top_k=k)  # default: hybrid, alpha 0.5
        for query in ENGLISH_QUERIES:
            _assert_same_ranking(_ranked(fusion.retrieve(query)), _ranked(hybrid.retrieve(query)))


def test_keyword_only_weights_equal_the_stores_cjk_mode(index):
    # for a Chinese query and an English-only model the store's hybrid uses alpha = 0 (keyword only)
    fusion = QueryFusionRetriever(
        [
            index.as_retriever(vector_store_query_mode="default", similarity_top_k=50),
            BM25Retriever.from_defaults(index=index, similarity_top_k=50),
        ],
        mode="dist_based_score",
        similarity_top_k=3,
        retriever_weights=[0.0, 1.0],
    )
    for query in ["大熊猫吃什么", "秋天登山要带什么"]:
        _assert_same_ranking(
            _ranked(fusion.retrieve(query)), _ranked(index.as_retriever(similarity_top_k=3).retrieve(query))
        )


def test_reciprocal_rerank_follows_the_formula_on_real_rankings(index):
    dense = index.as_retriever(vector_store_query_mode="default", similarity_top_k=6)
    bm25 = BM25Retriever.from_defaults(index=index, similarity_top_k=6)
    fusion = QueryFusionRetriever([dense, bm25], mode="reciprocal_rerank", similarity_top_k=4)
    query = "green tea water temperature"
    expected = {}
    for ranking in (dense.retrieve(query), bm25.retrieve(query)):
        for rank, r in enumerate(ranking, 1):
            expected[r.node.node_id] = expected.get(r.node.node_id, 0.0) + 1.0 / (RRF_K + rank)
    best = sorted(expected.items(), key=lambda kv: (-kv[1], kv[0]))[:4]
    _assert_same_ranking(_ranked(fusion.retrieve(query)), best)


def test_relative_score_and_simple_modes(index):
    dense = index.as_retriever(vector_store_query_mode="default", similarity_top_k=5)
    bm25 = BM25Retriever.from_defaults(index=index, similarity_top_k=5)
    query = "flat tire tube"
    d, b = dense.retrieve(query), bm25.retrieve(query)
    rel = QueryFusionRetriever([dense, bm25], mode="relative_score", similarity_top_k=10, retriever_weights=[3, 1])
    got = dict(_ranked(rel.retrieve(query)))
    expected = {}
    for w, ranking in ((0.75, d), (0.25, b)):
        scores = [r.score for r in ranking]
        lo, hi = min(scores), max(scores)
        for r in ranking:
            expected[r.node.node_id] = expected.get(r.node.node_id, 0.0) + w * (r.score - lo) / (hi - lo)
    assert got == pytest.approx(expected)
    simple = QueryFusionRetriever([dense, bm25], similarity_top_k=10)  # LlamaIndex's default mode
    best = {}
    for r in d + b:
        best[r.node.node_id] = max(best.get(r.node.node_id, float("-inf")), r.score)
    assert dict(_ranked(simple.retrieve(query))) == pytest.approx(best)
    assert len(simple.retrieve(query)) <= 10 and len(QueryFusionRetriever([dense, bm25]).retrieve(query)) == 2


def test_async_and_threaded_runs_match_the_sequential_one(index):
    retrievers = [
        index.as_retriever(vector_store_query_mode="default", similarity_top_k=5),
        BM25Retriever.from_defaults(index=index, similarity_top_k=5),
    ]
    seq = QueryFusionRetriever(retrievers, mode="reciprocal_rerank", similarity_top_k=4)
    par = QueryFusionRetriever(retrievers, mode="reciprocal_rerank", similarity_top_k=4, use_async=True)
    for query in ENGLISH_QUERIES:
        expected = _ranked(seq.retrieve(query))
        assert _ranked(par.retrieve(query)) == expected
        assert _ranked(asyncio.run(par.aretrieve(query))) == expected


class RewriteLLM:
    """A tiny deterministic LLM for the query-generation path: answers with fixed rewrites."""

    def __init__(self, answer):
        self.answer = answer
        self.prompts = []

    def complete(self, prompt, **kwargs):
        from ragloom.llms.types import CompletionResponse

        self.prompts.append(prompt)
        return CompletionResponse(text=self.answer)


def test_generated_queries_are_retrieved_and_fused(index):
    pytest.importorskip("ragloom.llms.types")
    llm = RewriteLLM("```\n1. 大熊猫吃竹子\n2. Zorblax quux\n3. 秋天登山\n```")
    bm25 = BM25Retriever.from_defaults(index=index, similarity_top_k=3)
    fusion = QueryFusionRetriever([bm25], llm=llm, num_queries=3, mode="relative_score", similarity_top_k=5)
    results = fusion.retrieve("Zorblax quux")  # the original query matches nothing
    assert len(llm.prompts) == 1 and "Zorblax quux" in llm.prompts[0] and "2" in llm.prompts[0]
    # num_queries=3: the original plus the first 2 rewrites; "Zorblax quux" repeats the original and is dropped
    ids = {r.node.node_id for r in results}
    assert ids and all(i.startswith("panda") or i.startswith("hike") for i in ids)
    assert any(i.startswith("hike") for i in ids)
    # relative_score divides each list's weight by the number of queries run (3): a list's best node gets 1/3
    assert all(0.0 <= r.score <= 2 / 3 + 1e-9 for r in results)
    assert results[0].score == pytest.approx(1 / 3)
    assert _ranked(asyncio.run(fusion.aretrieve("Zorblax quux"))) == _ranked(results)


def test_settings_llm_is_the_default(index):
    pytest.importorskip("ragloom.llms.types")
    Settings.llm = RewriteLLM("熊猫")
    fusion = QueryFusionRetriever([BM25Retriever.from_defaults(index=index)], num_queries=2)
    assert fusion.retrieve("nothing matches this")[0].node.node_id.startswith("panda")


def test_parse_generated_queries():
    text = "Here you go:\n1) first query\n- second query\n\n* First Query\n`third`"
    assert parse_generated_queries(text, "orig", 5) == ["Here you go:", "first query", "second query", "third"]
    assert parse_generated_queries("orig\nnew one\nanother", "ORIG", 1) == ["new one"]


def test_bad_arguments(index):
    bm25 = BM25Retriever.from_defaults(index=index)
    with pytest.raises(ValueError, match="retrievers"):
        QueryFusionRetriever([])
    with pytest.raises(ValueError, match="mode"):
        QueryFusionRetriever([bm25], mode="borda")
    with pytest.raises(ValueError, match="num_queries"):
        QueryFusionRetriever([bm25], num_queries=4)  # no LLM
    with pytest.raises(ValueError, match="num_queries"):
        QueryFusionRetriever([bm25], num_queries=0)
    with pytest.raises(ValueError, match="similarity_top_k"):
        QueryFusionRetriever([bm25], similarity_top_k=0)
    with pytest.raises(ValueError, match="retriever_weights"):
        QueryFusionRetriever([bm25], retriever_weights=[1, 2])
    with pytest.raises(ValueError, match="retriever_weights"):
        QueryFusionRetriever([bm25, bm25], retriever_weights=[0, 0])
    with pytest.raises(ValueError, match="query_gen_prompt"):
        QueryFusionRetriever([bm25], query_gen_prompt="no placeholders")
    assert QueryFusionRetriever([bm25, bm25], retriever_weights=[1, 3]).retriever_weights == [0.25, 0.75]
