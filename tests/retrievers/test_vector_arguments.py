"""``VectorIndexRetriever`` (and ``as_retriever`` / ``as_query_engine`` / ``as_chat_engine`` of a
``VectorStoreIndex``) refuses keyword arguments it does not know, and takes LlamaIndex's."""

import pytest
from retrieval_helpers import make_nodes

from ragloom import StorageContext, VectorStoreIndex
from ragloom.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from ragloom.llms.openai_like import OpenAILike
from ragloom.retrievers import VectorIndexRetriever

QUERY = "how hot should the water be for green tea"


@pytest.fixture(scope="module")
def index(tmp_path_factory, embed_model):
    storage = StorageContext.from_defaults(persist_dir=tmp_path_factory.mktemp("vec"), create_if_missing=True)
    return VectorStoreIndex(make_nodes(), storage_context=storage, embed_model=embed_model)


def _llm():  # never called: the engines fail before any request
    return OpenAILike(model="m", api_base="http://127.0.0.1:9/v1", api_key="unused", context_window=3900)


def test_a_misspelled_argument_raises_naming_it_and_the_right_one(index):
    with pytest.raises(TypeError, match=r"'simlarity_top_k' \(did you mean 'similarity_top_k'\?\)"):
        index.as_retriever(simlarity_top_k=7)
    with pytest.raises(TypeError, match="'foo'"):
        VectorIndexRetriever(index, foo=1)
    assert len(index.as_retriever(similarity_top_k=7).retrieve(QUERY)) == 7


def test_engines_pass_unknown_arguments_on_to_the_retriever_which_refuses_them(index):
    with pytest.raises(TypeError, match="'foo'"):
        index.as_query_engine(llm=_llm(), foo=1)
    for mode in ("context", "condense_plus_context", "condense_question", "best"):
        with pytest.raises(TypeError, match="'foo'"):
            index.as_chat_engine(chat_mode=mode, llm=_llm(), foo=1)
    # the split still works: synthesizer arguments to the synthesizer, the rest to the retriever
    engine = index.as_query_engine(llm=_llm(), similarity_top_k=5, vector_store_query_mode="default",
                                   text_qa_template="{context_str}\n{query_str}", verbose=True)
    assert len(engine.retrieve(QUERY)) == 5


def test_llamaindex_arguments_are_accepted(index, embed_model):
    debug = LlamaDebugHandler(print_trace_on_end=False)
    retriever = VectorIndexRetriever(
        index, similarity_top_k=3, vector_store_query_mode="default", filters=None, alpha=None, node_ids=None,
        doc_ids=["tea", "bike"], sparse_top_k=None, hybrid_top_k=None, callback_manager=CallbackManager([debug]),
        object_map={}, objects=None, embed_model=embed_model, verbose=True, vector_store_kwargs={},
    )
    nodes = retriever.retrieve(QUERY)
    assert [n.node.node_id for n in nodes][0] == "tea-1" and {n.node.ref_doc_id for n in nodes} <= {"tea", "bike"}
    assert len(debug.get_event_pairs(CBEventType.RETRIEVE)) == 1


def test_an_embed_model_other_than_the_index_one_is_refused(index):
    with pytest.raises(ValueError, match="this index was built with embed model"):
        index.as_retriever(embed_model="ollama:nomic-embed-text@http://127.0.0.1:9")
