"""Metadata extractors in an IngestionPipeline against the prompt-recording LLM server: prompts,
metadata keys, call counts (concurrency, zero calls on re-runs, neighbours re-extracted), failure
isolation per document, offline Chinese keywords."""

from __future__ import annotations

import asyncio
import logging
import re
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import local_http_server  # noqa: E402
from llm_server import OpenAICompatibleServer  # noqa: E402

from ragloom.embeddings import HuggingFaceEmbedding  # noqa: E402
from ragloom.errors import DocumentError  # noqa: E402
from ragloom.extractors import (  # noqa: E402
    BaseExtractor,
    KeywordExtractor,
    QuestionsAnsweredExtractor,
    SummaryExtractor,
    TitleExtractor,
)
from ragloom.ingestion import IngestionCache, IngestionPipeline  # noqa: E402
from ragloom.llms.openai_like import OpenAILike  # noqa: E402
from ragloom.node_parser import SentenceSplitter  # noqa: E402
from ragloom.schema import Document, MetadataMode, NodeRelationship, RelatedNodeInfo, TextNode  # noqa: E402
from ragloom.storage import StorageContext  # noqa: E402

DOCS = {
    "cats": "Cats sleep in warm places. A cat purrs when it is content. Kittens play with yarn all day. "
            "Old cats prefer the sofa near the heater. Cats groom their fur with rough tongues.",
    "ships": "Container ships carry steel boxes across oceans. Ports unload them with huge cranes. "
             "A large vessel holds twenty thousand containers. Crews work in shifts at sea for months.",
    "bees": "Honeybees dance to show where flowers are. The queen lays eggs in wax cells. Workers "
            "collect nectar and pollen. A hive can hold sixty thousand bees in summer.",
}

BETWEEN = re.compile(r"-{10,}\n(.*?)\n-{10,}", re.S)


def body(prompt: str) -> str:
    """The text a default prompt shows between its dashed lines."""
    m = BETWEEN.search(prompt)
    return m.group(1) if m else prompt


def answer(prompt: str) -> str:
    """Deterministic answers that name what they were asked about."""
    if prompt.startswith("Candidate titles"):
        return "TITLE(" + prompt.split(":", 1)[1].split("\n", 1)[0].strip() + ")"
    text = body(prompt)
    first = text.split("Excerpt:\n")[-1].split(".")[0].strip()
    if "Propose a short title" in prompt:
        return f" cand:{first} \n"
    if "questions" in prompt:
        return f"What about {first}?\nWhy {first}?\nWhere {first}?"
    if "Summarize" in prompt:
        return f"summary of [{first}]"
    if "Keywords:" in prompt:
        return "alpha, beta"
    return "?"


@pytest.fixture(scope="module")
def embed():
    return HuggingFaceEmbedding()


@pytest.fixture
def server():
    with OpenAICompatibleServer(answer=answer) as srv:
        yield srv


def make_llm(srv, **kw):
    return OpenAILike(model="m", api_base=srv.url, max_retries=0, **kw)


def docs(texts=DOCS):
    return [Document(id_=k, text=v, metadata={"topic": k}) for k, v in texts.items()]


def splitter(embed, size=16):
    return SentenceSplitter(chunk_size=size, chunk_overlap=0, tokenizer=embed.get_tokenizer())


def calls(srv):
    return [r for r in srv.requests if r["endpoint"] == "chat"]


def by_doc(nodes):
    out = {}
    for n in nodes:
        out.setdefault(n.ref_doc_id, []).append(n)
    return out


# -- the pipeline of the issue -------------------------------------------------------------------
def test_title_and_questions_in_a_pipeline(server, embed, tmp_path):
    llm = make_llm(server)
    storage = StorageContext.from_defaults(persist_dir=tmp_path / "store", create_if_missing=True)
    cache = IngestionCache(tmp_path / "cache.sqlite")

    def pipeline():
        return IngestionPipeline(
            transformations=[splitter(embed), TitleExtractor(llm, nodes=2),
                             QuestionsAnsweredExtractor(llm, questions=3, num_workers=3), embed],
            docstore=storage.docstore, vector_store=storage.vector_store, cache=cache)

    nodes = pipeline().run(documents=docs())
    groups = by_doc(nodes)
    assert set(groups) == set(DOCS) and all(len(g) >= 3 for g in groups.values())
    prompts = [r["prompt"] for r in calls(server)]
    # titles: one candidate per first-2 node and one combine per document; questions: one per node
    cand = [p for p in prompts if "Propose a short title" in p]
    combine = [p for p in prompts if p.startswith("Candidate titles")]
    questions = [p for p in prompts if "Write 3 questions" in p]
    assert len(cand) == 2 * len(DOCS) and len(combine) == len(DOCS) and len(questions) == len(nodes)
    assert len(prompts) == len(cand) + len(combine) + len(questions)
    for members in groups.values():
        for n in members[:2]:
            assert any(n.text in body(p) for p in cand)  # the node's text is in its title prompt
        title = members[0].metadata["document_title"]
        assert title.startswith("TITLE(cand:") and title == title.strip()
        assert all(m.metadata["document_title"] == title for m in members)
        first_sentences = [m.text.split(".")[0].strip() for m in members[:2]]
        assert title == "TITLE(" + ", ".join(f"cand:{s}" for s in first_sentences) + ")"
    for n in nodes:
        q = n.metadata["questions_this_excerpt_can_answer"]
        assert q.startswith(f"What about {n.text.split('.')[0].strip()}?") and q.count("\n") == 2
        # the question prompt shows the node's text and its LLM-view metadata (the title)
        mine = [p for p in questions if n.text in p]
        assert mine and n.metadata["document_title"] in mine[0]
        # embedding_only: the questions are embedded, not shown to the LLM
        assert "questions_this_excerpt_can_answer" in n.excluded_llm_metadata_keys
        assert q in n.get_content(MetadataMode.EMBED) and q not in n.get_content(MetadataMode.LLM)
        assert n.metadata["document_title"] in n.get_content(MetadataMode.EMBED)
        assert n.text_template.startswith("Context:")
    stored = storage.vector_store.get_nodes(node_ids=[n.node_id for n in nodes])
    assert {s.node_id: s.metadata for s in stored} == {n.node_id: n.metadata for n in nodes}
    assert embed.truncated_count == 0
    first_run = len(calls(server))

    # unchanged documents, a docstore: nothing to do
    again = pipeline()
    assert again.run(documents=docs()) == []
    assert again.last_stats.unchanged == len(DOCS)
    assert len(calls(server)) == first_run

    # every document re-transformed (force): the ingestion cache answers, no LLM call
    stats = pipeline().run_batches([docs()], force=True)
    assert stats.updated == len(DOCS) and stats.nodes_written == len(nodes)
    assert len(calls(server)) == first_run

    # a fresh pipeline without a docstore, new extractor objects, the same cache file: no LLM call
    fresh = IngestionPipeline(
        transformations=[splitter(embed), TitleExtractor(make_llm(server), nodes=2),
                         QuestionsAnsweredExtractor(make_llm(server), questions=3), embed],
        cache=IngestionCache(tmp_path / "cache.sqlite"))
    out = fresh.run(documents=docs())
    assert len(calls(server)) == first_run
    assert {n.node_id: n.metadata for n in out} == {n.node_id: n.metadata for n in nodes}

    # another model name is another configuration: everything is asked again
    other = IngestionPipeline(
        transformations=[splitter(embed), QuestionsAnsweredExtractor(make_llm(server), questions=2), embed],
        cache=IngestionCache(tmp_path / "cache.sqlite"))
    other.run(documents=docs())
    assert len(calls(server)) == first_run + len(nodes)


def test_one_changed_document_asks_only_for_it(server, embed, tmp_path):
    llm = make_llm(server)
    storage = StorageContext.from_defaults(persist_dir=tmp_path / "store", create_if_missing=True)
    cache = IngestionCache(tmp_path / "cache.sqlite")

    def run(texts):
        p = IngestionPipeline(transformations=[splitter(embed), TitleExtractor(llm, nodes=2),
                                               QuestionsAnsweredExtractor(llm, questions=3), embed],
                              docstore=storage.docstore, vector_store=storage.vector_store, cache=cache)
        return p.run(documents=docs(texts))

    run(DOCS)
    before = len(calls(server))
    changed = dict(DOCS, bees=DOCS["bees"] + " Drones do not sting anyone.")
    out = run(changed)
    assert {n.ref_doc_id for n in out} == {"bees"}
    new = [r["prompt"] for r in calls(server)[before:]]
    # unchanged chunks of "bees" are cache hits; the last chunk is new, and its document's title
    # prompts are the same as before (first two chunks unchanged): answered from the cache
    assert new and all("Drones" in p for p in new)
    assert len(new) == 1


def _chain(doc_id, texts, ids=None):
    """Pre-split nodes of one document, linked as a splitter links them."""
    ids = ids or [f"{doc_id}-{i}" for i in range(len(texts))]
    nodes = [TextNode(id_=i, text=t, relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc_id)})
             for i, t in zip(ids, texts, strict=True)]
    for a, b in zip(nodes, nodes[1:], strict=False):
        a.relationships[NodeRelationship.NEXT] = RelatedNodeInfo(node_id=b.id_)
        b.relationships[NodeRelationship.PREVIOUS] = RelatedNodeInfo(node_id=a.id_)
    return nodes


SECTIONS = ["Alpha opens the story.", "Beta meets a stranger.", "Gamma finds a key.",
            "Delta opens the door.", "Epsilon ends it."]


def test_summary_neighbours_and_a_changed_neighbour(server, embed, tmp_path):
    cache_path = tmp_path / "cache.sqlite"

    def run(texts, other_doc=True):
        nodes = _chain("story", texts)
        if other_doc:
            nodes += _chain("other", ["Zeta is elsewhere.", "Eta too."])
        p = IngestionPipeline(
            transformations=[SummaryExtractor(make_llm(server), summaries=["prev", "self", "next"]), embed],
            cache=IngestionCache(cache_path))
        return {n.node_id: n for n in p.run(nodes=nodes)}

    out = run(SECTIONS)
    assert len(calls(server)) == 7  # one summary per node
    first, second, last = out["story-0"], out["story-1"], out["story-4"]
    assert second.metadata == {"section_summary": "summary of [Beta meets a stranger]",
                               "prev_section_summary": "summary of [Alpha opens the story]",
                               "next_section_summary": "summary of [Gamma finds a key]"}
    assert "prev_section_summary" not in first.metadata and "next_section_summary" not in last.metadata
    # neighbours are taken within the document (LlamaIndex would give "other-0" story-4's summary)
    assert "prev_section_summary" not in out["other-0"].metadata
    assert out["story-4"].metadata["prev_section_summary"] == "summary of [Delta opens the door]"

    # a neighbour changes: its neighbours are re-extracted (cache keys include it); only the
    # changed section's summary is asked for (the other prompts' answers are kept)
    edited = list(SECTIONS)
    edited[2] = "Gamma loses a key."
    out2 = run(edited)
    new = [r["prompt"] for r in calls(server)[7:]]
    assert len(new) == 1 and "Gamma loses a key." in new[0]
    assert out2["story-1"].metadata["next_section_summary"] == "summary of [Gamma loses a key]"
    assert out2["story-3"].metadata["prev_section_summary"] == "summary of [Gamma loses a key]"
    assert out2["story-2"].metadata["section_summary"] == "summary of [Gamma loses a key]"
    assert out2["story-0"].metadata == out["story-0"].metadata
    assert out2["story-4"].metadata == out["story-4"].metadata

    # the same again: everything from the cache
    run(edited)
    assert len(calls(server)) == 8


def test_title_depends_on_the_first_nodes_only(server, embed, tmp_path):
    cache_path = tmp_path / "cache.sqlite"
    texts = ["North wind blows.", "South sea is calm.", "East hills are green.", "West plains are dry."]

    def run(texts):
        p = IngestionPipeline(transformations=[TitleExtractor(make_llm(server), nodes=2), embed],
                              cache=IngestionCache(cache_path))
        return {n.node_id: n for n in p.run(nodes=_chain("atlas", texts))}

    out = run(texts)
    assert len(calls(server)) == 3
    title = "TITLE(cand:North wind blows, cand:South sea is calm)"
    assert {n.metadata["document_title"] for n in out.values()} == {title}

    # a node after the first two changes: it needs the title, which the kept answers give
    out = run(texts[:3] + ["West plains are wet."])
    assert len(calls(server)) == 3 and out["atlas-3"].metadata["document_title"] == title

    # a first node changes: every node is re-titled, with one new candidate and one new combine call
    out = run(["North wind howls."] + texts[1:3] + ["West plains are wet."])
    assert len(calls(server)) == 5
    assert {n.metadata["document_title"] for n in out.values()} == {
        "TITLE(cand:North wind howls, cand:South sea is calm)"}


# -- concurrency ------------------------------------------------------------------------------------
class Gauge:
    """Answers slowly (a prompt-dependent 20-80 ms, so replies come back out of order) and records
    the most requests in flight at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0

    def __call__(self, prompt):
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.02 + (zlib.crc32(prompt.encode()) % 7) / 100)
        with self.lock:
            self.now -= 1
        return answer(prompt)


@pytest.mark.parametrize("workers", [1, 3])
def test_calls_are_concurrent_bounded_and_in_order(embed, workers):
    gauge = Gauge()
    with OpenAICompatibleServer(answer=gauge) as srv:
        nodes = _chain("d", [f"Item {i} is here." for i in range(12)])
        qa = QuestionsAnsweredExtractor(make_llm(srv), questions=2, num_workers=workers)
        out = IngestionPipeline(transformations=[qa, embed], disable_cache=True).run(nodes=nodes)
        assert len(calls(srv)) == 12
    assert gauge.most == workers
    for i, n in enumerate(out):
        assert n.metadata["questions_this_excerpt_can_answer"].startswith(f"What about Item {i} is here?")


def test_async_api_is_bounded_and_in_order(embed):
    gauge = Gauge()
    with OpenAICompatibleServer(answer=gauge) as srv:
        nodes = _chain("d", [f"Part {i} says hello." for i in range(10)])
        summ = SummaryExtractor(make_llm(srv), num_workers=4, show_progress=False)
        dicts = asyncio.run(summ.aextract(nodes))
        assert len(calls(srv)) == 10
        out = asyncio.run(summ.acall(nodes, embed_model=embed))
    assert 2 <= gauge.most <= 4
    assert [d["section_summary"] for d in dicts] == [f"summary of [Part {i} says hello]" for i in range(10)]
    assert [n.metadata["section_summary"] for n in out] == [d["section_summary"] for d in dicts]


# -- failures -------------------------------------------------------------------------------------
@pytest.fixture
def quiet_server_errors(monkeypatch):
    """The server thread's traceback when an ``answer`` raises is expected here."""
    monkeypatch.setattr(local_http_server._Server, "handle_error", lambda self, request, address: None)


def test_a_failing_document_does_not_stop_the_others(embed, tmp_path, quiet_server_errors):
    broken = {"on": True}

    def flaky(prompt):
        if broken["on"] and "topic: bees" in prompt:
            raise RuntimeError("model crashed")
        return answer(prompt)

    storage = StorageContext.from_defaults(persist_dir=tmp_path / "store", create_if_missing=True)
    cache = IngestionCache(tmp_path / "cache.sqlite")
    with OpenAICompatibleServer(answer=flaky) as srv:
        def pipeline():
            return IngestionPipeline(transformations=[splitter(embed), QuestionsAnsweredExtractor(make_llm(srv)),
                                                      embed],
                                     docstore=storage.docstore, vector_store=storage.vector_store, cache=cache)

        p = pipeline()
        out = p.run(documents=docs())
        assert {n.ref_doc_id for n in out} == {"cats", "ships"}
        [failure] = p.last_stats.failed
        assert failure.doc_id == "bees" and "QuestionsAnsweredExtractor" in failure.message
        honey = [r["prompt"] for r in calls(srv) if "topic: bees" in r["prompt"]]
        good = [r["prompt"] for r in calls(srv) if "topic: bees" not in r["prompt"]]
        # each good chunk asked once (the per-document retry found their answers kept); the failing
        # calls were made in the batch and once more when their document was retried alone
        assert len(good) == len(set(good)) == len(out)
        assert len(set(honey)) >= 2 and len(honey) == 2 * len(set(honey))
        assert storage.docstore.get_document_hash("bees") is None

        broken["on"] = False
        before = len(calls(srv))
        again = pipeline()
        out2 = again.run(documents=docs())
        assert {n.ref_doc_id for n in out2} == {"bees"} and again.last_stats.failed == []
        assert all(n.metadata["questions_this_excerpt_can_answer"] for n in out2)
        assert len(calls(srv)) - before == len(out2)
        assert all("topic: bees" in r["prompt"] for r in calls(srv)[before:])


def test_raise_on_error_false_keeps_nodes_without_metadata_and_does_not_cache(embed, tmp_path,
                                                                               quiet_server_errors, caplog):
    broken = {"on": True}

    def flaky(prompt):
        if broken["on"] and "Gamma" in prompt:
            raise RuntimeError("model crashed")
        return answer(prompt)

    cache_path = tmp_path / "cache.sqlite"
    with OpenAICompatibleServer(answer=flaky) as srv:
        def run():
            summ = SummaryExtractor(make_llm(srv), raise_on_error=False)
            return {n.node_id: n for n in IngestionPipeline(transformations=[summ, embed],
                                                            cache=IngestionCache(cache_path)).run(
                nodes=_chain("story", SECTIONS))}

        with caplog.at_level(logging.WARNING, logger="ragloom.extractors.interface"):
            out = run()
        assert "section_summary" not in out["story-2"].metadata
        assert out["story-1"].metadata["section_summary"] == "summary of [Beta meets a stranger]"
        assert "extraction failed for 1 of 5 nodes" in caplog.text
        broken["on"] = False
        before = len(calls(srv))
        out = run()
        assert len(calls(srv)) == before + 1  # only the failed node is asked again
        assert out["story-2"].metadata["section_summary"] == "summary of [Gamma finds a key]"


def test_direct_call_raises_document_error(server, quiet_server_errors):
    def down(prompt):
        raise RuntimeError("down")

    server.answer = down
    qa = QuestionsAnsweredExtractor(make_llm(server), show_progress=False)
    with pytest.raises(DocumentError) as err:
        qa.extract(_chain("doc-x", ["One.", "Two."]))
    assert err.value.doc_id == "doc-x" and isinstance(err.value, ValueError)


# -- keywords -------------------------------------------------------------------------------------
ZH_DOC = ("北京大学是中国著名的高等学府，创建于1898年，校园位于北京海淀区。"
          "北京大学的图书馆藏书丰富，是亚洲最大的高校图书馆之一。"
          "龙井茶产于杭州西湖一带，是中国十大名茶之一，以色绿、香郁、味甘著称。"
          "西湖龙井的采摘时间在清明前后，明前茶的价格最高。")


def test_offline_chinese_keywords_need_no_llm(embed, tmp_path):
    from ragloom.settings import Settings

    assert Settings.llm is None
    doc = Document(id_="zh", text=ZH_DOC)
    for mode in ("tfidf", "textrank"):
        kw = KeywordExtractor(keywords=4, mode=mode)
        p = IngestionPipeline(transformations=[splitter(embed, size=48), kw, embed],
                              cache=IngestionCache(tmp_path / f"{mode}.sqlite"))
        nodes = p.run(documents=[doc])
        assert len(nodes) >= 2
        found = [n.metadata["excerpt_keywords"].split(", ") for n in nodes]
        assert all(1 <= len(f) <= 4 for f in found)
        for n, words in zip(nodes, found, strict=True):
            assert all(w in n.text.lower() for w in words)  # substrings of the node's text
            assert not {"的", "是", "之一", "中国的"} & set(words)
        assert "高等学府" in found[0] and found[1][0] == "图书馆"
        if mode == "tfidf":  # 北京大学 opens two of the four nodes: it does not set either apart
            assert "龙井茶" in found[2] and "北京大学" not in found[0] + found[1]
        assert "excerpt_keywords" in nodes[0].get_content(MetadataMode.EMBED)


def test_offline_tfidf_keywords_are_per_document(embed):
    nodes = (_chain("a", ["Solar panels convert sunlight.", "Solar farms need land and sunlight."])
             + _chain("b", ["Wind turbines spin in storms."]))
    kw = KeywordExtractor(keywords=2, mode="tfidf")
    ctx = kw.cache_contexts(nodes, kw.embed_budget(embed))
    assert ctx[0] == ctx[1] != ctx[2]  # a node's tfidf keywords depend on its document's nodes
    out = kw(nodes, embed_model=embed)
    assert out[2].metadata["excerpt_keywords"].split(", ")[0] in ("wind", "turbines", "spin", "storms")
    # "solar" and "sunlight" are in both nodes of "a": they rank below what sets each node apart
    assert out[0].metadata["excerpt_keywords"].split(", ")[0] in ("panels", "convert")


def test_keywords_by_llm(server, embed):
    kw = KeywordExtractor(make_llm(server), keywords=3, show_progress=False)
    out = kw(_chain("k", ["Tea grows on hills."]), embed_model=embed)
    assert out[0].metadata["excerpt_keywords"] == "alpha, beta"
    [prompt] = [r["prompt"] for r in calls(server)]
    assert "Tea grows on hills." in prompt and "List 3 keywords" in prompt


# -- LlamaIndex API and arguments ------------------------------------------------------------------
def test_llamaindex_api_shapes(server, embed):
    llm = make_llm(server)
    nodes = _chain("d", ["Red apples fall.", "Green pears ripen."])
    qa = QuestionsAnsweredExtractor(llm=llm, questions=2, embedding_only=False, in_place=False,
                                    show_progress=False)
    assert qa.extract(nodes) == [
        {"questions_this_excerpt_can_answer":
         "What about Red apples fall?\nWhy Red apples fall?\nWhere Red apples fall?"},
        {"questions_this_excerpt_can_answer":
         "What about Green pears ripen?\nWhy Green pears ripen?\nWhere Green pears ripen?"}]
    out = qa.process_nodes(nodes, excluded_embed_metadata_keys=["questions_this_excerpt_can_answer"],
                           excluded_llm_metadata_keys=["x"], embed_model=embed)
    assert out[0] is not nodes[0] and nodes[0].metadata == {}  # in_place=False leaves the inputs alone
    assert out[0].excluded_embed_metadata_keys == ["questions_this_excerpt_can_answer"]
    assert out[0].excluded_llm_metadata_keys == ["x"]
    assert "questions" not in out[0].get_content(MetadataMode.EMBED)
    assert "What about" in out[0].get_content(MetadataMode.LLM)  # embedding_only=False
    same = qa.__class__(llm, questions=2, in_place=True, disable_template_rewrite=True)(nodes, embed_model=embed)
    assert same[0] is nodes[0] and nodes[0].text_template == TextNode(text="").text_template
    assert TitleExtractor.class_name() == "TitleExtractor" and BaseExtractor.class_name() == "MetadataExtractor"


def test_config_is_what_decides_the_output(server):
    a = QuestionsAnsweredExtractor(make_llm(server), questions=3, num_workers=2, show_progress=False)
    b = QuestionsAnsweredExtractor(make_llm(server), questions=3, num_workers=8, show_progress=True)
    assert a.to_config() == b.to_config()
    assert a.to_config()["llm"] == {"class_name": "OpenAILike", "model_name": "m", "system_prompt": None}
    assert QuestionsAnsweredExtractor(make_llm(server), questions=4).to_config() != a.to_config()
    assert QuestionsAnsweredExtractor(OpenAILike(model="other", api_base=server.url)).to_config()["llm"][
        "model_name"] == "other"
    assert "llm" not in KeywordExtractor(mode="textrank").to_config()


class Shouty(BaseExtractor):
    """A custom extractor written as for LlamaIndex: only ``extract``."""

    def extract(self, nodes):
        return [{"shout": n.get_content().upper()} for n in nodes]


def test_custom_extractor_runs_and_caches(embed, tmp_path):
    nodes = _chain("d", ["quiet words", "more quiet words"])
    cache = IngestionCache(tmp_path / "c.sqlite")
    out = IngestionPipeline(transformations=[Shouty(), embed], cache=cache).run(nodes=nodes)
    assert [n.metadata["shout"] for n in out] == ["QUIET WORDS", "MORE QUIET WORDS"]
    assert asyncio.run(Shouty().aextract(nodes[:1])) == [{"shout": "QUIET WORDS"}]
    assert len(cache) == 4  # two nodes through Shouty, two through the embed model


@pytest.mark.parametrize("make, message", [
    (lambda llm: TitleExtractor(llm, nodes=0), "nodes"),
    (lambda llm: QuestionsAnsweredExtractor(llm, questions=0), "questions"),
    (lambda llm: KeywordExtractor(llm, keywords=-1), "keywords"),
    (lambda llm: KeywordExtractor(llm, mode="yake"), "mode"),
    (lambda llm: SummaryExtractor(llm, summaries=["self", "parent"]), "summaries"),
    (lambda llm: SummaryExtractor(llm, prompt_template="no variables"), "prompt_template"),
    (lambda llm: TitleExtractor(llm, combine_template="{context_str} {unknown}"), "combine_template"),
    (lambda llm: QuestionsAnsweredExtractor(llm, num_workers=0), "num_workers"),
    (lambda llm: QuestionsAnsweredExtractor(llm, metadata_mode="everything"), "metadata_mode"),
    (lambda llm: QuestionsAnsweredExtractor(llm, node_text_template="no content"), "node_text_template"),
    (lambda llm: QuestionsAnsweredExtractor(llm, retry_backoff=-1), "retry_backoff"),
    (lambda llm: TitleExtractor(None), "LLM"),
    (lambda llm: KeywordExtractor(None), "LLM"),
])
def test_bad_arguments(server, make, message):
    with pytest.raises(ValueError, match=message):
        make(make_llm(server))
