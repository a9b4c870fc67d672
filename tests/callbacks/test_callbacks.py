"""Callbacks end to end: a real index (bundled embedding model, SQLite store on disk) queried through
the real ``OpenAILike`` client against the prompt-recording server (``tests/llm_server.py``).

Checks that every step reports paired start/end events with the right payloads, to the manager
given to the component or to ``Settings.callback_manager``; that parents nest; that the token
counts are the models' own tokenizers' counts of what the server received and sent (or the usage
it reported); that exceptions end events and propagate; that a shared manager keeps concurrent
queries apart; and that nothing runs on the path without handlers.
"""

import asyncio
import json
import pickle
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from llm_server import Fault, OpenAICompatibleServer  # noqa: E402

from ragloom import Settings, SimpleDirectoryReader, VectorStoreIndex  # noqa: E402
from ragloom.callbacks import (  # noqa: E402
    BaseCallbackHandler,
    CallbackManager,
    CBEventType,
    EventPayload,
    LlamaDebugHandler,
    TokenCountingHandler,
)
from ragloom.llms.base import MockLLM  # noqa: E402
from ragloom.llms.openai_like import OpenAILike  # noqa: E402
from ragloom.llms.remote import LLMProviderError  # noqa: E402
from ragloom.node_parser import HierarchicalNodeParser, SentenceSplitter  # noqa: E402
from ragloom.postprocessor import SentenceTransformerRerank  # noqa: E402
from ragloom.retrievers import BaseRetriever  # noqa: E402
from ragloom.schema import Document, MetadataMode, NodeWithScore, TextNode  # noqa: E402
from ragloom.storage import StorageContext  # noqa: E402
from ragloom.tokenizers import get_default_tokenizer  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "data"
QUESTION = "How hot should the water be for green tea?"
ANSWER = "Use water at about 80 degrees, never boiling."
PAIRED = (CBEventType.QUERY, CBEventType.RETRIEVE, CBEventType.EMBEDDING, CBEventType.SYNTHESIZE, CBEventType.LLM)


class Recorder(BaseCallbackHandler):
    """Every start and end as ``(kind, event_type, event_id, parent_id, payload)``, thread-safe."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.lock = threading.Lock()
        self.starts = []
        self.ends = []
        self.traces = []

    def on_event_start(self, event_type, payload=None, event_id="", parent_id="", **kwargs):
        with self.lock:
            self.starts.append((event_type, event_id, parent_id, payload))
        return event_id

    def on_event_end(self, event_type, payload=None, event_id="", **kwargs):
        with self.lock:
            self.ends.append((event_type, event_id, payload))

    def start_trace(self, trace_id=None):
        self.traces.append(("start", trace_id))

    def end_trace(self, trace_id=None, trace_map=None):
        self.traces.append(("end", trace_id, dict(trace_map or {})))

    def of(self, event_type):
        return [s for s in self.starts if s[0] == event_type]

    def end_of(self, event_id):
        (end,) = [e for e in self.ends if e[1] == event_id]
        return end[2]


@pytest.fixture(scope="module")
def docs():
    return SimpleDirectoryReader(
        input_files=[str(EXAMPLES / "brewing_green_tea.md"), str(EXAMPLES / "fixing_a_flat_tire.md")]
    ).load_data()


@pytest.fixture
def server():
    with OpenAICompatibleServer(answer=ANSWER) as srv:
        yield srv


def _llm(srv, **kwargs):
    return OpenAILike(model="test-model", api_base=srv.url, api_key="unused", max_tokens=64, **kwargs)


def _storage(tmp_path):
    return StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)


def _pairs_ok(debug, event_type):
    pairs = debug.get_event_pairs(event_type)
    assert pairs, f"no {event_type.value} events"
    for pair in pairs:
        assert len(pair) == 2 and pair[0].id_ == pair[1].id_, f"unpaired {event_type.value} event"
    return pairs


# -- the whole pipeline ------------------------------------------------------------------------------
def test_ingestion_reports_chunking_parsing_and_embedding(docs, tmp_path):
    debug = LlamaDebugHandler(print_trace_on_end=False)
    cm = CallbackManager([debug])
    index = VectorStoreIndex.from_documents(docs, storage_context=_storage(tmp_path), callback_manager=cm)
    tree = dict(cm.trace_map)  # of the index_construction trace

    (parse,) = _pairs_ok(debug, CBEventType.NODE_PARSING)
    assert [d.id_ for d in parse[0].payload[EventPayload.DOCUMENTS]] == [d.id_ for d in docs]
    nodes = parse[1].payload[EventPayload.NODES]
    # the nodes reported are what the index's parser gives (called here outside any event: no report)
    (parser,) = index.transformations
    before = len(debug.get_events())
    expected = parser.get_nodes_from_documents(docs)
    assert len(debug.get_events()) == before
    assert [(n.node_id, n.text) for n in nodes] == [(n.node_id, n.text) for n in expected]
    chunking = _pairs_ok(debug, CBEventType.CHUNKING)
    assert len(chunking) == len(docs)
    for (start, end), doc in zip(chunking, docs, strict=True):
        assert start.payload[EventPayload.CHUNKS] == [doc.get_content(MetadataMode.NONE)]
        assert end.payload[EventPayload.CHUNKS] == [
            n.get_content(MetadataMode.NONE) for n in nodes if n.ref_doc_id == doc.id_
        ]
    embedded = [t for _, end in _pairs_ok(debug, CBEventType.EMBEDDING) for t in end.payload[EventPayload.CHUNKS]]
    assert sorted(embedded) == sorted(n.get_content(MetadataMode.EMBED) for n in nodes)
    # parents: the parse and the embedding batches hang under the index_construction trace's root,
    # the chunking events under the parse
    parse_id = parse[0].id_
    assert parse_id in tree["root"]
    assert {p[0].id_ for p in chunking} == set(tree[parse_id])
    # and they are the nodes stored; the retriever the index makes reports to the index's manager
    stored = index.as_retriever(similarity_top_k=100, vector_store_query_mode="default").retrieve("tea tire")
    assert sorted(n.node.node_id for n in stored) == sorted(n.node_id for n in nodes)
    (retrieve,) = _pairs_ok(debug, CBEventType.RETRIEVE)
    assert retrieve[1].payload[EventPayload.NODES] == stored


def test_query_with_explicit_manager_reports_every_step(docs, server, tmp_path):
    debug = LlamaDebugHandler(print_trace_on_end=False)
    cm = CallbackManager([debug])
    index = VectorStoreIndex.from_documents(docs, storage_context=_storage(tmp_path))
    assert debug.get_events() == []  # the index has no manager and Settings' has no handler
    llm = _llm(server)
    engine = index.as_query_engine(llm=llm, callback_manager=cm, similarity_top_k=2)
    response = engine.query(QUESTION)
    assert response.response == ANSWER
    # the shared LLM and embed model objects were not reassigned
    assert llm._callback_manager is None and index.embed_model._callback_manager is None

    for event_type in PAIRED:
        _pairs_ok(debug, event_type)
    (query,) = debug.get_event_pairs(CBEventType.QUERY)
    assert query[0].payload[EventPayload.QUERY_STR] == QUESTION
    assert query[1].payload[EventPayload.RESPONSE] is response
    (retrieve,) = debug.get_event_pairs(CBEventType.RETRIEVE)
    assert retrieve[0].payload[EventPayload.QUERY_STR] == QUESTION
    assert [n.node.node_id for n in retrieve[1].payload[EventPayload.NODES]] == [
        n.node.node_id for n in response.source_nodes
    ]
    (embedding,) = debug.get_event_pairs(CBEventType.EMBEDDING)
    assert embedding[1].payload[EventPayload.CHUNKS] == [QUESTION]
    assert len(embedding[1].payload[EventPayload.EMBEDDINGS][0]) == index.embed_model.dimension
    (synth,) = debug.get_event_pairs(CBEventType.SYNTHESIZE)
    assert synth[0].payload[EventPayload.QUERY_STR] == QUESTION
    assert synth[1].payload[EventPayload.RESPONSE] is response

    # the LLM input is exactly what the server received, the output what it answered
    (llm_pair,) = debug.get_llm_inputs_outputs()
    messages = llm_pair[0].payload[EventPayload.MESSAGES]
    assert messages[-1].content == server.requests[-1]["prompt"]
    assert [{"role": m.role.value, "content": m.content} for m in messages] == server.requests[-1]["messages"]
    assert llm_pair[1].payload[EventPayload.RESPONSE].message.content == ANSWER
    assert llm_pair[0].payload[EventPayload.MODEL_NAME] == "test-model"
    (templating,) = debug.get_event_pairs(CBEventType.TEMPLATING)
    assert templating[0].payload[EventPayload.TEMPLATE_VARS]["query_str"] == QUESTION

    # nesting: QUERY under root; RETRIEVE and SYNTHESIZE under QUERY; EMBEDDING under RETRIEVE;
    # TEMPLATING and LLM under SYNTHESIZE
    tree = cm.trace_map
    assert tree["root"] == [query[0].id_]
    assert tree[query[0].id_] == [retrieve[0].id_, synth[0].id_]
    assert tree[retrieve[0].id_] == [embedding[0].id_]
    # (compact mode repacks the node texts to the prompt first: CHUNKING events of its splitter)
    repacked = [p[0].id_ for p in debug.get_event_pairs(CBEventType.CHUNKING)]
    assert tree[synth[0].id_] == repacked + [templating[0].id_, llm_pair[0].id_]
    info = debug.get_event_time_info(CBEventType.LLM)
    assert info.total_count == 1 and info.total_secs >= 0.0


def test_settings_manager_reports_everything_and_is_read_at_call_time(docs, server, tmp_path):
    index = VectorStoreIndex.from_documents(docs, storage_context=_storage(tmp_path))
    engine = index.as_query_engine(llm=_llm(server), similarity_top_k=2)
    debug = LlamaDebugHandler(print_trace_on_end=False)
    Settings.callback_manager = CallbackManager([debug])  # set after the engine was built
    engine.query(QUESTION)
    for event_type in PAIRED:
        _pairs_ok(debug, event_type)
    debug.flush_event_logs()
    VectorStoreIndex.from_documents(docs, storage_context=_storage(tmp_path / "again"))
    for event_type in (CBEventType.NODE_PARSING, CBEventType.CHUNKING, CBEventType.EMBEDDING):
        _pairs_ok(debug, event_type)
    Settings.callback_manager = None
    debug.flush_event_logs()
    engine.query(QUESTION)
    assert debug.get_events() == []


def test_trace_printing_and_async_query(docs, server, tmp_path, capsys):
    debug = LlamaDebugHandler(print_trace_on_end=True)
    index = VectorStoreIndex.from_documents(docs, storage_context=_storage(tmp_path))
    engine = index.as_query_engine(llm=_llm(server), callback_manager=CallbackManager([debug]), similarity_top_k=1)
    response = asyncio.run(engine.aquery(QUESTION))
    assert response.response == ANSWER
    for event_type in PAIRED:
        _pairs_ok(debug, event_type)
    out = capsys.readouterr().out
    assert "Trace: query" in out
    lines = [line for line in out.splitlines() if "|_" in line]
    assert lines[0].startswith("  |_query -> ") and any(line.startswith("    |_retrieve") for line in lines)
    assert any(line.startswith("      |_llm") for line in lines)


# -- token counting -----------------------------------------------------------------------------------
def test_token_counts_are_the_models_own_tokenizer_counts(docs, server, tmp_path):
    counter = TokenCountingHandler()
    debug = LlamaDebugHandler(print_trace_on_end=False)
    cm = CallbackManager([counter, debug])
    index = VectorStoreIndex.from_documents(docs, storage_context=_storage(tmp_path), callback_manager=cm)
    embed_tok = index.embed_model.get_tokenizer()
    assert counter.embedding_token_counts
    for event in counter.embedding_token_counts:
        assert event.prompt_token_count == embed_tok.count(event.prompt) > 0
    texts = sorted(e.prompt for e in counter.embedding_token_counts)
    (parse,) = debug.get_event_pairs(CBEventType.NODE_PARSING)
    assert texts == sorted(n.get_content(MetadataMode.EMBED) for n in parse[1].payload[EventPayload.NODES])
    assert counter.total_embedding_token_count == sum(embed_tok.count(t) for t in texts)
    counter.reset_counts()

    # a streamed answer carries no usage: counted in the LLM's tokenizer (cl100k_base here)
    llm = _llm(server)
    engine = index.as_query_engine(llm=llm, callback_manager=cm, streaming=True, similarity_top_k=2)
    assert "".join(engine.query(QUESTION).response_gen) == ANSWER
    (event,) = counter.llm_token_counts
    tok = llm.get_tokenizer()
    assert event.prompt_token_count == tok.count(server.requests[-1]["prompt"])
    assert event.completion_token_count == tok.count(ANSWER)
    assert counter.prompt_llm_token_count == event.prompt_token_count
    assert counter.completion_llm_token_count == event.completion_token_count
    assert counter.total_llm_token_count == event.prompt_token_count + event.completion_token_count
    assert counter.total_embedding_token_count == embed_tok.count(QUESTION)  # the query vector


def test_provider_usage_wins_then_the_given_tokenizer(docs, tmp_path):
    with OpenAICompatibleServer(answer=ANSWER, prompt_tokens=lambda s: 1000 + len(s)) as srv:
        index = VectorStoreIndex.from_documents(docs, storage_context=_storage(tmp_path))
        counter = TokenCountingHandler()
        engine = index.as_query_engine(llm=_llm(srv), callback_manager=CallbackManager([counter]))
        engine.query(QUESTION)
        (event,) = counter.llm_token_counts
        body = srv.requests[-1]["body"]
        assert event.prompt_token_count == 1000 + len(json.dumps(body["messages"]))  # the server's usage
        assert event.completion_token_count == 1000 + len(ANSWER)

        wordpiece = get_default_tokenizer()
        counter = TokenCountingHandler(tokenizer=wordpiece)
        engine = index.as_query_engine(llm=_llm(srv), callback_manager=CallbackManager([counter]), streaming=True)
        "".join(engine.query(QUESTION).response_gen)
        (event,) = counter.llm_token_counts
        assert event.prompt_token_count == wordpiece.count(srv.requests[-1]["prompt"])
        assert event.completion_token_count == wordpiece.count(ANSWER)
        # and not the LLM's own tokenizer, which counts this prompt differently
        assert event.prompt_token_count != _llm(srv).get_tokenizer().count(srv.requests[-1]["prompt"])


def test_ignored_event_types(docs, server, tmp_path):
    debug = LlamaDebugHandler(event_starts_to_ignore=[CBEventType.LLM], print_trace_on_end=False)
    counter = TokenCountingHandler(event_ends_to_ignore=[CBEventType.LLM])
    index = VectorStoreIndex.from_documents(docs, storage_context=_storage(tmp_path))
    engine = index.as_query_engine(llm=_llm(server), callback_manager=CallbackManager([debug, counter]))
    engine.query(QUESTION)
    llm_events = debug.get_events(CBEventType.LLM)
    assert len(llm_events) == 1 and EventPayload.RESPONSE in llm_events[0].payload  # the end only
    _pairs_ok(debug, CBEventType.QUERY)
    assert counter.llm_token_counts == [] and counter.embedding_token_counts  # embeddings still counted
    with pytest.raises(ValueError, match="event_starts_to_ignore"):
        LlamaDebugHandler(event_starts_to_ignore=["not-an-event"])


# -- exceptions, nesting, threads ----------------------------------------------------------------------
def test_exception_ends_every_open_event_and_propagates(docs, tmp_path):
    recorder = Recorder()
    cm = CallbackManager([recorder])
    index = VectorStoreIndex.from_documents(docs, storage_context=_storage(tmp_path))
    with OpenAICompatibleServer(answer=ANSWER, faults=[Fault("401")]) as srv:
        engine = index.as_query_engine(llm=_llm(srv, max_retries=0), callback_manager=cm)
        with pytest.raises(LLMProviderError) as err:
            engine.query(QUESTION)
    for event_type in (CBEventType.LLM, CBEventType.SYNTHESIZE, CBEventType.QUERY):
        (start,) = recorder.of(event_type)
        assert recorder.end_of(start[1]) == {EventPayload.EXCEPTION: err.value}
    (retrieve,) = recorder.of(CBEventType.RETRIEVE)
    assert EventPayload.NODES in recorder.end_of(retrieve[1])  # finished before the failure
    assert recorder.of(CBEventType.EXCEPTION) == []  # already recorded by the events it ended
    assert [t[0] for t in recorder.traces] == ["start", "end"]  # the trace was closed

    class Failing(BaseRetriever):
        def _retrieve(self, query_bundle):
            raise KeyError("boom")

    with pytest.raises(KeyError):
        Failing(callback_manager=cm).retrieve("anything")
    (start,) = recorder.of(CBEventType.RETRIEVE)[1:]
    assert isinstance(recorder.end_of(start[1])[EventPayload.EXCEPTION], KeyError)

    with pytest.raises(RuntimeError), cm.as_trace("custom"):
        raise RuntimeError("outside any event")
    (exc,) = recorder.of(CBEventType.EXCEPTION)
    assert isinstance(exc[3][EventPayload.EXCEPTION], RuntimeError) and exc[2] == "root"


def test_shared_manager_keeps_concurrent_queries_apart(docs, tmp_path):
    recorder = Recorder()
    cm = CallbackManager([recorder, TokenCountingHandler()])
    index = VectorStoreIndex.from_documents(docs, storage_context=_storage(tmp_path))
    questions = [f"{QUESTION} (variant {i})" for i in range(6)]
    with OpenAICompatibleServer(answer=lambda p: ANSWER, stream_delay=0.0) as srv:
        engine = index.as_query_engine(llm=_llm(srv), callback_manager=cm, similarity_top_k=1)
        errors = []

        def ask(q):
            try:
                engine.query(q)
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=ask, args=(q,)) for q in questions]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    queries = {s[1]: s[3][EventPayload.QUERY_STR] for s in recorder.of(CBEventType.QUERY)}
    assert sorted(queries.values()) == sorted(questions)
    by_id = {s[1]: s for s in recorder.starts}
    for event_type in (CBEventType.RETRIEVE, CBEventType.SYNTHESIZE):
        starts = recorder.of(event_type)
        assert sorted(queries[s[2]] for s in starts) == sorted(questions)  # one per query, under it
        for s in starts:
            assert s[3][EventPayload.QUERY_STR] == queries[s[2]]
    for s in recorder.of(CBEventType.LLM):
        synth = by_id[s[2]]
        assert synth[0] == CBEventType.SYNTHESIZE
        assert queries[synth[2]] in s[3][EventPayload.MESSAGES][-1].content  # its own question
    assert len(recorder.ends) == len(recorder.starts)
    counter = cm.handlers[1]
    assert len(counter.llm_token_counts) == len(questions)


# -- the path without handlers -------------------------------------------------------------------------
def test_no_handler_path_builds_no_event(docs, server, tmp_path, monkeypatch):
    index = VectorStoreIndex.from_documents(docs, storage_context=_storage(tmp_path))
    engine = index.as_query_engine(llm=_llm(server), callback_manager=CallbackManager(), similarity_top_k=1)

    def refuse(*args, **kwargs):
        raise AssertionError("event work on the path without handlers")

    import ragloom.callbacks.base as cb_base

    monkeypatch.setattr(cb_base, "uuid", SimpleNamespace(uuid4=refuse))
    monkeypatch.setattr(cb_base.EventContext, "__init__", refuse)
    monkeypatch.setattr(cb_base.CallbackManager, "on_event_start", refuse)
    assert engine.query(QUESTION).response == ANSWER
    assert "".join(index.as_query_engine(llm=_llm(server), streaming=True).query(QUESTION).response_gen) == ANSWER
    VectorStoreIndex.from_documents(docs, storage_context=_storage(tmp_path / "b"))


# -- components on their own ----------------------------------------------------------------------------
def test_one_llm_event_per_public_call():
    recorder = Recorder()
    llm = MockLLM(callback_manager=CallbackManager([recorder]))
    llm.chat([])  # CustomLLM.chat calls self.complete: one event
    assert [s[0] for s in recorder.starts] == [CBEventType.LLM]
    assert EventPayload.MESSAGES in recorder.starts[0][3]
    assert "".join(llm.stream("abc def")) == "abc def"  # LLM.stream_complete's default calls complete
    assert len(recorder.starts) == 2 and recorder.starts[1][3][EventPayload.PROMPT] == "abc def"
    assert recorder.end_of(recorder.starts[1][1])[EventPayload.COMPLETION].text == "abc def"
    assert asyncio.run(llm.acomplete("xyz")).text == "xyz"
    assert len(recorder.starts) == 3 and len(recorder.ends) == 3
    stream = llm.stream_complete("never read")
    del stream  # a stream never iterated reports nothing
    assert len(recorder.starts) == 3


def test_remote_chat_model_complete_is_one_event(server):
    recorder = Recorder()
    llm = _llm(server, callback_manager=CallbackManager([recorder]))
    assert llm.complete("Say something").text == ANSWER  # runs self.chat inside
    (start,) = recorder.starts
    assert start[3][EventPayload.PROMPT] == "Say something"
    assert recorder.end_of(start[1])[EventPayload.COMPLETION].text == ANSWER


def test_reranking_event():
    class Overlap:
        """Scores a (query, text) pair by the words they share."""

        def predict(self, pairs):
            return [len(set(q.lower().split()) & set(t.lower().split())) for q, t in pairs]

    recorder = Recorder()
    rerank = SentenceTransformerRerank(top_n=1, model=Overlap())
    rerank.callback_manager = CallbackManager([recorder])
    nodes = [NodeWithScore(node=TextNode(text=t), score=0.5) for t in ("tires and tubes", "green tea water")]
    out = rerank.postprocess_nodes(nodes, query_str="green tea")
    assert [n.node.text for n in out] == ["green tea water"]
    (start,) = recorder.of(CBEventType.RERANKING)
    assert start[3][EventPayload.TOP_K] == 1 and start[3][EventPayload.QUERY_STR] == "green tea"
    assert start[3][EventPayload.MODEL_NAME] == "Overlap"
    assert recorder.end_of(start[1])[EventPayload.NODES] == out


def test_nested_parsers_report_each_document_once():
    recorder = Recorder()
    parser = HierarchicalNodeParser.from_defaults(chunk_sizes=[64, 16], chunk_overlap=0)
    parser.callback_manager = CallbackManager([recorder])
    doc = Document(text=" ".join(f"Sentence number {i} is here." for i in range(40)), id_="doc-1")
    nodes = parser.get_nodes_from_documents([doc])
    parses = recorder.of(CBEventType.NODE_PARSING)
    outer = parses[0]
    assert outer[2] == "root" and all(p[2] == outer[1] for p in parses[1:])  # inner parses nested
    chunk_docs = [s[3][EventPayload.CHUNKS][0] for s in recorder.of(CBEventType.CHUNKING)]
    assert len(chunk_docs) == len(set(chunk_docs))  # no document reported twice
    assert recorder.end_of(outer[1])[EventPayload.NODES] == nodes
    # a direct split_text call is one CHUNKING event
    splitter = SentenceSplitter(chunk_size=16, chunk_overlap=0, callback_manager=CallbackManager([recorder]))
    before = len(recorder.starts)
    chunks = splitter.split_text(doc.text)
    (start,) = recorder.starts[before:]
    assert start[0] == CBEventType.CHUNKING and recorder.end_of(start[1])[EventPayload.CHUNKS] == chunks


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(alphabet="abc .\n", min_size=0, max_size=300), min_size=1, max_size=4))
def test_instrumented_parse_equals_plain_parse(texts):
    splitter = SentenceSplitter(chunk_size=24, chunk_overlap=4)
    docs = [Document(text=t, id_=f"d{i}") for i, t in enumerate(texts)]
    plain = splitter(docs)
    recorder = Recorder()
    splitter.callback_manager = CallbackManager([recorder])
    traced = splitter(docs)
    assert [(n.node_id, n.text) for n in traced] == [(n.node_id, n.text) for n in plain]
    chunking = recorder.of(CBEventType.CHUNKING)
    assert [s[3][EventPayload.CHUNKS] for s in chunking] == [[d.text] for d in docs]
    reported = [c for s in chunking for c in recorder.end_of(s[1])[EventPayload.CHUNKS]]
    assert reported == [n.text for n in plain]


# -- the manager ---------------------------------------------------------------------------------------
def test_manager_api_and_validation():
    a, b = Recorder(), Recorder()
    cm = CallbackManager([a])
    cm.add_handler(b)
    assert cm.handlers == [a, b]
    cm.remove_handler(a)
    assert cm.handlers == [b]
    cm.set_handlers([a])
    assert cm.handlers == [a]
    with pytest.raises(ValueError, match="not registered"):
        cm.remove_handler(b)
    with pytest.raises(ValueError, match="BaseCallbackHandler"):
        CallbackManager([object()])
    with pytest.raises(ValueError, match="callback_manager"):
        Settings.callback_manager = "handlers"
    with pytest.raises(ValueError, match="callback_manager"):
        MockLLM().callback_manager = [a]
    with cm.event(CBEventType.TREE, payload={"level": 1}) as ev:
        inner = cm.on_event_start(CBEventType.SUB_QUESTION)
        cm.on_event_end(CBEventType.SUB_QUESTION, event_id=inner)
    assert a.starts[1][2] == ev.event_id  # explicit start/end nest under the open event
    assert a.ends[-1] == (CBEventType.TREE, ev.event_id, None)
    copy = pickle.loads(pickle.dumps(cm))  # worker processes get a silent manager
    assert isinstance(copy, CallbackManager) and copy.handlers == []
