"""PropertyGraphIndex (ragloom's offline subset) against the prompt-recording LLM server: extraction
through SimpleLLMPathExtractor, entity vectors from the bundled model in the SQLite property graph
store, LLM-synonym and vector retrieval with and without source text, Chinese, incremental refresh,
deletion and reload."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from llm_server import OpenAICompatibleServer  # noqa: E402

from ragloom import Document  # noqa: E402
from ragloom.graph_stores import EntityNode, Relation, SimplePropertyGraphStore  # noqa: E402
from ragloom.indices.loading import load_index_from_storage  # noqa: E402
from ragloom.indices.property_graph import (  # noqa: E402
    LLMSynonymRetriever,
    PGRetriever,
    PropertyGraphIndex,
    SimpleLLMPathExtractor,
    VectorContextRetriever,
)
from ragloom.llms.openai_like import OpenAILike  # noqa: E402
from ragloom.node_parser import SentenceSplitter  # noqa: E402
from ragloom.storage import StorageContext  # noqa: E402
from ragloom.vector_stores.types import VectorStoreQuery  # noqa: E402

SPLITTER = SentenceSplitter(chunk_size=256, chunk_overlap=0)
FACTS = {
    "lighthouse": "(Lighthouse keeper, watches, Harbour)\n(Harbour, protects, Fishing boats)",
    "bread": "(Baker, bakes, Bread)\n(Bread, needs, Oven)",
    "萧炎": "（萧炎，妹妹，萧薰儿）",
}
DOCS = {
    "sea": "The lighthouse keeper watches the harbour, which protects the fishing boats.",
    "bake": "The baker bakes bread every morning; bread needs a hot oven.",
    "xiao": "萧炎的妹妹是萧薰儿。",
}
#: synonyms the scripted model gives for a question containing the key
SYNONYMS = {"keeper": "lighthouse keeper^Keepers", "萧薰儿": "萧薰儿^薰儿", "oven": "ovens^Oven"}


def answer(prompt):
    if "Triplets:" in prompt:
        text = prompt.split("====================")[1]
        return "\n".join(v for k, v in FACTS.items() if k in text) or "none"
    question = prompt.split("====================")[1]
    return "^".join(v for k, v in SYNONYMS.items() if k in question) or "nothing"


def docs(**overrides):
    return [Document(text=t, id_=k) for k, t in {**DOCS, **overrides}.items()]


@pytest.fixture()
def server():
    with OpenAICompatibleServer(answer=answer) as srv:
        yield srv


def build(srv, storage=None):
    llm = OpenAILike(model="m", api_base=srv.url, max_retries=0)
    index = PropertyGraphIndex.from_documents(
        docs(), llm=llm, kg_extractors=[SimpleLLMPathExtractor(llm=llm)], embed_model="default",
        transformations=[SPLITTER], storage_context=storage)
    return index, llm


def test_extraction_and_synonym_retrieval_with_text(server):
    index, _ = build(server)
    prompts = [r["prompt"] for r in server.requests]
    assert len(prompts) == 3 and all("Extract up to 10 facts" in p for p in prompts)
    store = index.property_graph_store
    names = {e.name for e in store.get()}
    assert names == {"Lighthouse keeper", "Harbour", "Fishing boats", "Baker", "Bread", "Oven", "萧炎", "萧薰儿"}
    assert all(e.properties["triplet_source_id"] for e in store.get())
    assert store.entities_without_embedding() == []  # embed_kg_nodes: every entity has a vector

    n = len(server.requests)
    retriever = index.as_retriever(sub_retrievers=[LLMSynonymRetriever(store, llm=index._llm_arg)])
    got = retriever.retrieve("What does the keeper watch?")
    assert len(server.requests) == n + 1 and "What does the keeper watch?" in server.requests[-1]["prompt"]
    assert len(got) == 1  # one chunk, with its facts in front
    text = got[0].node.get_content()
    assert text.startswith("Facts from the knowledge graph") and "Lighthouse keeper -> watches -> Harbour" in text
    assert text.endswith(DOCS["sea"])
    bare = index.as_retriever(include_text=False, sub_retrievers=None).retrieve("What does the keeper watch?")
    assert "Lighthouse keeper -> watches -> Harbour" in [r.node.get_content() for r in bare]


def test_vector_context_retriever_uses_entity_vectors(server):
    index, _ = build(server)
    n = len(server.requests)
    retriever = VectorContextRetriever(index.property_graph_store, embed_model=index.embed_model,
                                       include_text=False, similarity_top_k=2)
    got = retriever.retrieve("an oven for baking")
    assert len(server.requests) == n  # no LLM
    assert got[0].node.get_content() == "Bread -> needs -> Oven" and 0 < got[0].score <= 1
    assert got[0].node.ref_doc_id == index._node_ids("bake")[0]
    entities, scores = index.property_graph_store.vector_query(
        VectorStoreQuery(query_embedding=index.embed_model.get_query_embedding("oven"), similarity_top_k=1))
    assert [e.name for e in entities] == ["Oven"] and scores[0] > 0.5


def test_chinese_and_pg_retriever_dedup(server):
    index, _ = build(server)
    got = index.as_retriever().retrieve("萧薰儿是谁的妹妹？")
    contents = [r.node.get_content() for r in got]
    assert any("萧炎 -> 妹妹 -> 萧薰儿" in c and c.endswith(DOCS["xiao"]) for c in contents)
    assert len(contents) == len(set(contents))  # the two sub-retrievers found the same chunk: once
    assert isinstance(index.as_retriever(), PGRetriever)


def test_refresh_reload_change_and_delete(server, tmp_path):
    storage = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    index, llm = build(server, storage)
    storage.persist()
    n = len(server.requests)
    again = load_index_from_storage(StorageContext.from_defaults(persist_dir=tmp_path), llm=llm,
                                    kg_extractors=[SimpleLLMPathExtractor(llm=llm)])
    assert isinstance(again, PropertyGraphIndex) and again.embed_kg_nodes
    assert again.refresh_ref_docs(docs()) == [False, False, False]
    assert len(server.requests) == n
    changed = docs(bake="The baker bakes bread every morning.")
    FACTS_BEFORE = dict(FACTS)
    try:
        FACTS["bread"] = "(Baker, bakes, Bread)"
        assert again.refresh_ref_docs(changed) == [False, True, False]
    finally:
        FACTS.clear()
        FACTS.update(FACTS_BEFORE)
    assert len(server.requests) == n + 1
    store = again.property_graph_store
    assert [str(t[1]) for t in store.get_triplets(entity_names=["bread"])] == ["bakes"]
    assert "Oven" not in {e.name for e in store.get()}  # nothing else uses it: gone with its relation
    again.delete_ref_doc("sea")
    assert store.get_triplets(entity_names=["Harbour"]) == []
    got = again.as_retriever(include_text=False).retrieve("萧薰儿")
    assert "萧炎 -> 妹妹 -> 萧薰儿" in [r.node.get_content() for r in got]


def test_store_api_and_bad_arguments(server):
    store = SimplePropertyGraphStore()
    store.upsert_nodes([EntityNode(name="Alice", properties={"age": 30}),
                        EntityNode(name="alice", properties={"x": 1})])
    assert [(e.name, e.properties) for e in store.get()] == [("Alice", {"age": 30, "x": 1})]
    store.upsert_relations([Relation(label="knows", source_id="Alice", target_id="Bob"),
                            Relation(label="knows", source_id="Bob", target_id="Carol")])
    assert [str(t[2]) for t in store.get_rel_map(store.get(ids=["ALICE"]), depth=2)] == ["Bob", "Carol"]
    assert len(store.get_rel_map(store.get(ids=["Alice"]), depth=1)) == 1
    assert store.get_triplets() == []
    store.delete(entity_names=["bob"])
    assert store.get_triplets(relation_names=["knows"]) == []
    with pytest.raises(ValueError, match="vector_store"):
        PropertyGraphIndex(vector_store=object(), kg_extractors=[])
    with pytest.raises(ValueError, match="max_paths_per_chunk"):
        SimpleLLMPathExtractor(max_paths_per_chunk=0)
    plain = PropertyGraphIndex(kg_extractors=[], embed_kg_nodes=False)
    with pytest.raises(ValueError, match="unexpected"):
        plain.as_retriever(bogus=1)
    assert [type(r).__name__ for r in plain.as_retriever().sub_retrievers] == ["LLMSynonymRetriever"]
    own = SimplePropertyGraphStore()
    index = PropertyGraphIndex(kg_extractors=[], property_graph_store=own)
    assert index.property_graph_store is own and index.storage_context.property_graph_store is own
