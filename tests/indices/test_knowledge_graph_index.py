"""KnowledgeGraphIndex and the SQLite graph store against the prompt-recording LLM server: triplet
extraction and parsing, keyword / embedding / hybrid retrieval, Chinese entities found offline through
jieba, incremental refreshes (zero LLM calls when nothing changed, only changed chunks re-extracted),
deletion, persistence and reload."""

import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from llm_server import OpenAICompatibleServer  # noqa: E402

from ragloom import Document  # noqa: E402
from ragloom.graph_stores import SimpleGraphStore, entity_key  # noqa: E402
from ragloom.indices.knowledge_graph import KGTableRetriever, KnowledgeGraphIndex  # noqa: E402
from ragloom.indices.knowledge_graph.utils import parse_triplets  # noqa: E402
from ragloom.indices.loading import load_index_from_storage  # noqa: E402
from ragloom.llms.openai_like import OpenAILike  # noqa: E402
from ragloom.node_parser import SentenceSplitter  # noqa: E402
from ragloom.storage import StorageContext  # noqa: E402
from ragloom.storage.sqlite import SQLiteDatabase  # noqa: E402

SPLITTER = SentenceSplitter(chunk_size=256, chunk_overlap=0)
#: the scripted model's knowledge: a text containing the key yields these lines
FACTS = {
    "Marie Curie was born": "(Marie Curie, born in, Warsaw)\n(Marie Curie, won, Nobel Prize)",
    "Pierre Curie married": "1. (Pierre Curie, married, Marie Curie)\n2. (Pierre Curie, won, Nobel Prize)\n"
                            "3. (Marie Curie, won, Nobel Prize)",
    "capital of Poland": "(Warsaw, capital of, Poland)",
    "Vistula": "(Warsaw, lies on, Vistula)",
    "萧炎的妹妹": "（萧炎，妹妹，萧薰儿）\n（萧炎，师父，药老）",
}
NAMES = ["Marie Curie", "Pierre Curie", "Warsaw", "Poland", "Nobel Prize", "萧炎"]
DOCS = {
    "curie": "Marie Curie was born in Warsaw. She won the Nobel Prize.",
    "pierre": "Pierre Curie married Marie Curie. Pierre Curie married into science and won the Nobel Prize too.",
    "warsaw": "Warsaw is the capital of Poland.",
    "xiao": "萧炎的妹妹是萧薰儿，萧炎的师父是药老。",
}


def section(prompt):
    """The text between the first pair of '=' lines."""
    return prompt.split("====================")[1]


def answer(prompt):
    if "Triplets:" in prompt:
        text = section(prompt)
        return "\n".join(v for k, v in FACTS.items() if k in text) or "no facts here"
    if "KEYWORDS" in prompt:
        question = prompt.split("---------------------")[1]
        return "KEYWORDS: " + ", ".join(n for n in NAMES if n.lower() in question.lower())
    raise AssertionError(f"unexpected prompt {prompt[:80]!r}")


def docs(**overrides):
    texts = {**DOCS, **overrides}
    return [Document(text=t, id_=k) for k, t in texts.items()]


@pytest.fixture()
def server():
    with OpenAICompatibleServer(answer=answer) as srv:
        yield srv


def make_llm(srv, **kw):
    return OpenAILike(model="m", api_base=srv.url, max_retries=0, **kw)


def texts(results):
    return [r.node.get_content() for r in results]


def facts_node(results):
    found = [r.node for r in results if "kg_rel_texts" in r.node.metadata]
    assert len(found) == 1
    return found[0]


# -- building and keyword retrieval ----------------------------------------------------------------
def test_extraction_prompts_graph_and_table(server):
    index = KnowledgeGraphIndex.from_documents(docs(), llm=make_llm(server), transformations=[SPLITTER])
    prompts = [r["prompt"] for r in server.requests]
    assert len(prompts) == 4  # one chunk per document, one call each
    assert all("Extract up to 10 facts" in p for p in prompts)
    assert any("萧炎的妹妹是萧薰儿" in p for p in prompts)
    triplets = index.graph_store.get_all_triplets()
    assert ("Marie Curie", "born in", "Warsaw") in triplets and ("萧炎", "妹妹", "萧薰儿") in triplets
    assert triplets.count(("Marie Curie", "won", "Nobel Prize")) == 1  # stated by two chunks, stored once
    table = index.index_struct.table
    assert set(table) >= {"marie curie", "warsaw", "poland", "萧炎", "萧薰儿", "药老"}
    assert all(not k.startswith("\x1f") for k in table)  # word keys stay internal
    assert len(table["marie curie"]) == 2 and index.index_struct.search_node_by_keyword("MARIE CURIE")


def test_keyword_retrieval_with_llm_keywords_and_depth(server):
    index = KnowledgeGraphIndex.from_documents(docs(), llm=make_llm(server), transformations=[SPLITTER])
    n = len(server.requests)
    got = index.as_retriever().retrieve("Where was Marie Curie born?")
    assert len(server.requests) == n + 1
    assert "Where was Marie Curie born?" in server.requests[-1]["prompt"]
    assert "up to 10 keywords" in server.requests[-1]["prompt"]
    facts = facts_node(got).get_content()
    assert "Marie Curie -[born in]-> Warsaw" in facts and "Warsaw -[capital of]-> Poland" in facts
    chunks = [t for t in texts(got) if "Knowledge graph facts" not in t]
    assert DOCS["curie"] in chunks and DOCS["warsaw"] in chunks
    assert all(r.score == 1000.0 for r in got)
    assert facts_node(got).get_content(metadata_mode="llm") == facts  # kg_rel_* hidden from the LLM view

    shallow = index.as_retriever(graph_store_query_depth=1, include_text=False).retrieve("Where was Marie Curie born?")
    assert len(shallow) == 1 and "Poland" not in facts_node(shallow).get_content()
    assert index.as_retriever().retrieve("What about Atlantis?") == []


def test_chinese_entities_found_offline_with_jieba(server):
    index = KnowledgeGraphIndex.from_documents(docs(), llm=make_llm(server), transformations=[SPLITTER])
    n = len(server.requests)
    got = index.as_retriever(keyword_mode="simple").retrieve("萧炎的妹妹是谁？")
    assert len(server.requests) == n  # offline keywords: no LLM call
    assert "萧炎 -[妹妹]-> 萧薰儿" in facts_node(got).get_content()
    assert DOCS["xiao"] in texts(got)
    # a word of an entity's name finds the entity ("Curie" -> "Marie Curie", "Pierre Curie")
    curie = facts_node(index.as_retriever(keyword_mode="simple").retrieve("Whom did Curie marry?")).get_content()
    assert "Pierre Curie -[married]-> Marie Curie" in curie


def test_prompt_fits_a_small_window(server):
    long = "Marie Curie was born in Warsaw. " + " ".join(f"filler{k}" for k in range(400))
    llm = make_llm(server, context_window=300, max_tokens=50)
    index = KnowledgeGraphIndex.from_documents([Document(text=long, id_="long")], llm=llm,
                                               transformations=[SentenceSplitter(chunk_size=2048, chunk_overlap=0)])
    assert len(server.requests) == 1
    assert llm.count_tokens(server.requests[0]["prompt"]) + 50 <= 300
    assert ("Marie Curie", "born in", "Warsaw") in index.graph_store.get_all_triplets()


# -- incremental, deletion, persistence -------------------------------------------------------------
def test_refresh_reload_change_and_delete(server, tmp_path):
    llm = make_llm(server)
    storage = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    index = KnowledgeGraphIndex.from_documents(docs(), llm=llm, transformations=[SPLITTER], storage_context=storage)
    storage.persist()
    n = len(server.requests)
    again = load_index_from_storage(StorageContext.from_defaults(persist_dir=tmp_path), llm=llm)
    assert isinstance(again, KnowledgeGraphIndex)
    assert again.refresh_ref_docs(docs()) == [False] * 4
    assert len(server.requests) == n  # unchanged: no extraction
    assert set(again.graph_store.get_all_triplets()) == set(index.graph_store.get_all_triplets())

    changed = docs(warsaw="Warsaw is the capital of Poland. It lies on the Vistula.")
    assert again.refresh_ref_docs(changed) == [False, False, True, False]
    assert len(server.requests) == n + 1 and "Vistula" in server.requests[-1]["prompt"]
    assert ("Warsaw", "lies on", "Vistula") in again.graph_store.get_all_triplets()

    again.delete_ref_doc("curie")
    left = again.graph_store.get_all_triplets()
    assert ("Marie Curie", "born in", "Warsaw") not in left
    assert ("Marie Curie", "won", "Nobel Prize") in left  # the other chunk still states it
    assert "marie curie" in again.index_struct.table  # keyed by the pierre chunk
    assert again.storage_context.docstore.get_node(again.index_struct.table["warsaw"].pop())
    got = again.as_retriever(include_text=True).retrieve("Where was Marie Curie born?")
    assert DOCS["curie"] not in texts(got)


def test_unchanged_chunks_of_a_changed_document_are_not_extracted_again(server):
    one_sentence = SentenceSplitter(chunk_size=12, chunk_overlap=0)
    text = "Marie Curie was born in Warsaw. Warsaw is the capital of Poland."
    index = KnowledgeGraphIndex.from_documents([Document(text=text, id_="d")], llm=make_llm(server),
                                               transformations=[one_sentence])
    assert len(server.requests) == 2
    index.refresh_ref_docs([Document(text=text + " It lies on the Vistula.", id_="d")])
    extra = [r["prompt"] for r in server.requests[2:]]
    assert len(extra) == 1 and "Vistula" in section(extra[0]) and "born" not in section(extra[0])
    assert ("Marie Curie", "born in", "Warsaw") in index.graph_store.get_all_triplets()


def test_embeddings_hybrid_and_reload(server, tmp_path):
    llm = make_llm(server)
    storage = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    index = KnowledgeGraphIndex.from_documents(docs(), llm=llm, transformations=[SPLITTER], storage_context=storage,
                                               include_embeddings=True, embed_model="default")
    storage.persist()
    n = len(server.requests)
    retriever = index.as_retriever(retriever_mode="embedding", similarity_top_k=1, include_text=False)
    got = retriever.retrieve("Which country's capital is Warsaw?")
    assert len(server.requests) == n
    assert facts_node(got).metadata["kg_rel_texts"] == ["(Warsaw, capital of, Poland)"]
    assert index.as_retriever()._retriever_mode.value == "hybrid"

    again = load_index_from_storage(StorageContext.from_defaults(persist_dir=tmp_path), llm=llm)
    assert again.include_embeddings and again.embed_model.model_name == index.embed_model.model_name
    space = again._vector_space()
    assert again.graph_store.missing_embeddings(space) == []  # vectors persisted with the graph
    hybrid = again.as_retriever(similarity_top_k=1).retrieve("Which country's capital is Warsaw?")
    assert "(Warsaw, capital of, Poland)" in facts_node(hybrid).metadata["kg_rel_texts"]


def test_extract_fn_and_manual_api(server):
    def extract(text):
        return [("ragloom", "stores", "triplets")] if "ragloom" in text else []

    index = KnowledgeGraphIndex.from_documents([Document(text="ragloom keeps graphs in SQLite.", id_="r")],
                                               kg_triplet_extract_fn=extract, transformations=[SPLITTER])
    assert index.graph_store.get_all_triplets() == [("ragloom", "stores", "triplets")]
    assert server.requests == []
    from ragloom.schema import TextNode

    index.upsert_triplet_and_node(("SQLite", "is", "embedded"), TextNode(text="SQLite is embedded.", id_="n1"))
    index.add_node(["apsw"], TextNode(text="apsw wraps SQLite.", id_="n2"))
    index.upsert_triplet(("WAL", "lets", "readers in"))
    table = index.index_struct.table
    assert table["sqlite"] == {"n1"} and table["apsw"] == {"n2"}
    assert ("WAL", "lets", "readers in") in index.graph_store.get_all_triplets()
    index.delete_nodes(["n1"])
    assert ("SQLite", "is", "embedded") not in index.graph_store.get_all_triplets()
    assert server.requests == []


def test_bad_arguments():
    with pytest.raises(ValueError, match="max_triplets_per_chunk"):
        KnowledgeGraphIndex(max_triplets_per_chunk=0)
    with pytest.raises(ValueError, match="kg_triplet_extract_fn"):
        KnowledgeGraphIndex(kg_triplet_extract_fn="nope")
    index = KnowledgeGraphIndex(kg_triplet_extract_fn=lambda t: [])
    with pytest.raises(ValueError, match="retriever_mode must be one of"):
        index.as_retriever(retriever_mode="cypher")
    with pytest.raises(ValueError, match="keyword_mode"):
        KGTableRetriever(index, keyword_mode="rake")
    with pytest.raises(ValueError, match="graph_store_query_depth"):
        index.as_retriever(graph_store_query_depth=0)


# -- parsing -------------------------------------------------------------------------------------------
def test_parse_triplets_tolerates_what_models_write():
    answer_text = (
        "Triplets:\n1. (Alice, is mother of, Bob)\n"
        "- (Philz, founded in, Berkeley, California) (Philz, is, coffee shop)\n"
        "（萧炎，妹妹，萧薰儿）\n(\"Smith, John\", born in, London)\n**(alice, IS MOTHER OF, bob)**\n(too, short)\n"
        "Carol -> knows -> Dave\n(" + "x" * 200 + ", is, long)\n(, empty, part)"
    )
    assert parse_triplets(answer_text) == [
        ("Alice", "is mother of", "Bob"), ("Philz", "founded in", "Berkeley, California"),
        ("Philz", "is", "coffee shop"), ("萧炎", "妹妹", "萧薰儿"), ("Smith, John", "born in", "London"),
        ("Carol", "knows", "Dave"),
    ]
    assert parse_triplets(answer_text, max_triplets=2) == [("Alice", "is mother of", "Bob"),
                                                           ("Philz", "founded in", "Berkeley, California")]
    assert parse_triplets("(" + "字" * 42 + ", 是, 长)") != [] and parse_triplets("(" + "字" * 43 + ", 是, 长)") == []
    with pytest.raises(ValueError, match="max_length"):
        parse_triplets("", max_length=0)


# names may hold an apostrophe (Bob's) but not start with one: "'X, X'" is a quoted part with a comma
NAME = st.text(alphabet=st.sampled_from(list("abcXYZ 萧炎药老-'")), min_size=1, max_size=12).filter(
    lambda s: s.strip(" '") != "" and not s.strip().startswith("'"))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(NAME, NAME, NAME), max_size=6), st.sampled_from(["ascii", "cjk", "numbered", "one line"]))
def test_parse_triplets_round_trip(triplets, style):
    def show(t):
        if style == "cjk":
            return "（" + "，".join(t) + "）"
        return "(" + ", ".join(t) + ")"

    lines = [show(t) for t in triplets]
    if style == "numbered":
        lines = [f"{i}. {line}" for i, line in enumerate(lines, 1)]
    response = " ".join(lines) if style == "one line" else "\n".join(lines)
    want, seen = [], set()
    for t in triplets:
        parts = tuple(p.strip(" '") for p in t)
        key = tuple(map(entity_key, parts))
        if key not in seen:
            seen.add(key)
            want.append(parts)
    assert parse_triplets(response) == want


# -- the graph store -------------------------------------------------------------------------------------
def test_simple_graph_store_api(tmp_path):
    store = SimpleGraphStore()
    store.upsert_triplet("Alice", "mother of", "Bob")
    store.upsert_triplet("alice", "MOTHER OF", "bob")  # same keys: kept once, first spelling
    store.upsert_triplets([("Bob", "likes", "Carol"), ("Carol", "knows", "Alice")], source_id="n1")
    assert store.get("ALICE") == [["mother of", "Bob"]]
    assert store.get_rel_map(["alice"], depth=1) == {"alice": [["Alice", "mother of", "Bob"]]}
    assert store.get_rel_map(["Alice"], depth=5)["Alice"] == [
        ["Alice", "mother of", "Bob"], ["Bob", "likes", "Carol"], ["Carol", "knows", "Alice"]]  # the cycle ends
    assert sum(len(v) for v in store.get_rel_map(limit=2).values()) == 2
    assert store.get_rel_map(["Nobody"]) == {"Nobody": []}
    with pytest.raises(ValueError, match="depth"):
        store.get_rel_map(["Alice"], depth=-1)
    with pytest.raises(ValueError, match="subject"):
        store.upsert_triplet(" ", "r", "o")
    store.delete_sources(["n1"])
    assert store.get_all_triplets() == [("Alice", "mother of", "Bob")]
    store.delete("ALICE", "mother of", "BOB")
    assert store.get_all_triplets() == []

    store = SimpleGraphStore.from_dict({"graph_dict": {"萧炎": [["妹妹", "萧薰儿"]]}})
    path = tmp_path / "graph_store.json"
    store.persist(str(path))
    assert SimpleGraphStore.from_persist_path(path).to_dict() == {"graph_dict": {"萧炎": [["妹妹", "萧薰儿"]]}}


def test_graph_store_shares_the_storage_transaction_and_file(tmp_path):
    storage = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    graph = storage.graph_store
    assert graph.database is storage.database
    graph.upsert_triplet("kept", "is", "committed")
    with pytest.raises(RuntimeError):
        with storage.transaction():
            graph.upsert_triplet("lost", "is", "rolled back")
            storage.docstore.set_document_hash("x", "y")
            raise RuntimeError("crash")
    assert graph.get_all_triplets() == [("kept", "is", "committed")]
    assert storage.docstore.get_document_hash("x") is None
    storage.persist()
    reopened = StorageContext.from_defaults(persist_dir=tmp_path)
    assert reopened.graph_store.get_all_triplets() == [("kept", "is", "committed")]
    assert reopened.property_graph_store.get() == []  # another namespace of the same file
    given = SimpleGraphStore()
    assert StorageContext.from_defaults(graph_store=given).graph_store is given
    db = SQLiteDatabase(tmp_path / "other.sqlite")
    a, b = SimpleGraphStore(database=db, namespace="a"), SimpleGraphStore(database=db, namespace="b")
    a.upsert_triplet("x", "y", "z")
    assert b.get_all_triplets() == [] and a.get_all_triplets() == [("x", "y", "z")]


def test_answer_script_sanity():
    # the scripted model must not answer a triplet prompt with text the parser could misread
    assert all(re.search(r"\(|（", v) for v in FACTS.values())
