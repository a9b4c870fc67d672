"""HyDE (``HyDEQueryTransform``) and ``TransformQueryEngine`` over a real index (bundled embedding
model, SQLite on disk); the hypothetical passages come from the recording HTTP server."""

import asyncio
import logging
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from llm_server import OpenAICompatibleServer  # noqa: E402
from routing_helpers import EXAMPLES, TEA_FILE, TIRE_FILE, kind, llm_for, source_files  # noqa: E402

from ragloom import SimpleDirectoryReader, StorageContext, VectorStoreIndex  # noqa: E402
from ragloom.indices.query.query_transform import HyDEQueryTransform  # noqa: E402
from ragloom.query_engine import TransformQueryEngine  # noqa: E402
from ragloom.schema import QueryBundle  # noqa: E402

QUESTION = "What should I do first?"
TIRE_PASSAGE = (
    "Remove the wheel, lever the tire off the rim, pull out the punctured inner tube and feel inside "
    "the tire for the thorn before fitting a new tube."
)
TEA_PASSAGE = "Let boiled water cool to about 80 degrees, then steep a teaspoon of green tea leaves for two minutes."


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    docs = SimpleDirectoryReader(input_files=[str(EXAMPLES / TEA_FILE), str(EXAMPLES / TIRE_FILE)]).load_data()
    storage = StorageContext.from_defaults(persist_dir=tmp_path_factory.mktemp("hyde"), create_if_missing=True)
    return VectorStoreIndex.from_documents(docs, storage_context=storage)


def _unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def test_hyde_bundle_embeds_the_mean_of_passage_and_question(index):
    with OpenAICompatibleServer(answer=TIRE_PASSAGE) as srv:
        hyde = HyDEQueryTransform(llm=llm_for(srv))
        bundle = hyde.run(QUESTION)
        assert len(srv.prompts) == 1 and kind(srv.prompts[0]) == "hyde" and QUESTION in srv.prompts[0]
    assert bundle.query_str == QUESTION
    assert bundle.custom_embedding_strs == [TIRE_PASSAGE, QUESTION]
    assert bundle.embedding_strs == [TIRE_PASSAGE, QUESTION]

    retriever = index.as_retriever(vector_store_query_mode="default", similarity_top_k=3)
    nodes = retriever.retrieve(bundle)
    embed = index.embed_model
    expected = np.mean([embed.get_query_embedding(TIRE_PASSAGE), embed.get_query_embedding(QUESTION)], axis=0)
    # the vector searched with is the mean of the two query embeddings (LlamaIndex's aggregation)
    np.testing.assert_allclose(bundle.embedding, expected, rtol=1e-5, atol=1e-6)
    # and the scores are cosine similarities to that mean
    stored = {n.node_id: n.embedding for n in index.vector_store.get_nodes(node_ids=[n.node.node_id for n in nodes])}
    for n in nodes:
        assert n.score == pytest.approx(float(_unit(expected) @ _unit(stored[n.node.node_id])), abs=1e-4)
    assert source_files(nodes[:1]) == {TIRE_FILE}


@pytest.mark.parametrize("passage, expected_file", [(TIRE_PASSAGE, TIRE_FILE), (TEA_PASSAGE, TEA_FILE)])
def test_the_hypothetical_passage_steers_retrieval(index, passage, expected_file):
    """One vague question, two different passages: the top node follows the passage."""
    with OpenAICompatibleServer(answer=passage) as srv:
        hyde = HyDEQueryTransform(llm=llm_for(srv), include_original=False)
        bundle = hyde(QueryBundle(query_str=QUESTION))
    assert bundle.custom_embedding_strs == [passage]
    top = index.as_retriever(vector_store_query_mode="default", similarity_top_k=1).retrieve(bundle)
    assert source_files(top) == {expected_file}


def test_transform_query_engine_answers_the_original_question_from_hyde_retrieval(index):
    def answer(prompt):
        return TIRE_PASSAGE if kind(prompt) == "hyde" else "Take the wheel off."

    with OpenAICompatibleServer(answer=answer) as srv:
        llm = llm_for(srv)
        inner = index.as_query_engine(llm=llm, vector_store_query_mode="default", similarity_top_k=1)
        engine = TransformQueryEngine(inner, HyDEQueryTransform(llm=llm))
        response = engine.query(QUESTION)
        prompts = srv.prompts
        assert [kind(p) for p in prompts] == ["hyde", "qa"]
        assert QUESTION in prompts[1] and TIRE_PASSAGE not in prompts[1]  # the answer prompt asks the question
        assert "tire levers" in prompts[1]  # and holds the document HyDE found
        assert response.response == "Take the wheel off." and source_files(response) == {TIRE_FILE}

        response = asyncio.run(engine.aquery(QUESTION))
        assert source_files(response) == {TIRE_FILE} and len(srv.prompts) == 4
        assert source_files(engine.retrieve(QUESTION)) == {TIRE_FILE}
        keys = engine.get_prompts()
        assert "query_transform:hyde_prompt" in keys and "query_engine:response_synthesizer:text_qa_template" in keys


def test_empty_passage_falls_back_to_the_question(caplog):
    with OpenAICompatibleServer(answer="   ") as srv:
        with caplog.at_level(logging.WARNING):
            bundle = HyDEQueryTransform(llm=llm_for(srv), include_original=False).run(QUESTION)
    assert bundle.custom_embedding_strs == [QUESTION]
    assert "empty passage" in caplog.text


def test_custom_prompts_and_errors(index):
    with OpenAICompatibleServer(answer="passage") as srv:
        hyde = HyDEQueryTransform(llm=llm_for(srv), hyde_prompt="Imagine the answer to: {query_str}")
        assert hyde.run("why?").custom_embedding_strs == ["passage", "why?"]
        assert srv.prompts[0] == "Imagine the answer to: why?"
        with pytest.raises(ValueError, match="context_str"):
            HyDEQueryTransform(llm=llm_for(srv), hyde_prompt="no variables")
        with pytest.raises(ValueError, match="query_engine must be"):
            TransformQueryEngine(object(), hyde)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="query_transform must be"):
            TransformQueryEngine(index.as_query_engine(llm=llm_for(srv)), "not a transform")
