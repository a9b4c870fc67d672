"""Keyword table indexes (LLM, simple, RAKE) and ragloom.keywords: Chinese and English keywords,
LLM prompts against a recording server, incremental rebuilds with zero LLM calls, persistence."""

import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from llm_server import OpenAICompatibleServer  # noqa: E402

from ragloom import Document  # noqa: E402
from ragloom.indices.keyword_table import (  # noqa: E402
    KeywordTableGPTRetriever,
    KeywordTableIndex,
    KeywordTableRAKERetriever,
    KeywordTableSimpleRetriever,
    RAKEKeywordTableIndex,
    SimpleKeywordTableIndex,
)
from ragloom.indices.keyword_table import utils  # noqa: E402
from ragloom.indices.loading import load_index_from_storage  # noqa: E402
from ragloom.keywords import (  # noqa: E402
    expand_with_subtokens,
    extract_keywords,
    extract_keywords_given_response,
    keyword_key,
    normalize_text,
    rake_extract_keywords,
    simple_extract_keywords,
    tokenize,
)
from ragloom.llms.openai_like import OpenAILike  # noqa: E402
from ragloom.schema import MetadataMode  # noqa: E402
from ragloom.storage import StorageContext  # noqa: E402

ZH = {
    "bj": "北京大学是中国著名的高等学府，创建于1898年，校园位于北京海淀区。",
    "sh": "上海交通大学位于上海，以工程和船舶学科见长，是一所研究型大学。",
    "tea": "龙井茶产于杭州西湖一带，是中国十大名茶之一，以色绿、香郁、味甘著称。",
}
EN = {
    "ml": "Machine learning systems learn patterns from training data and improve with more examples.",
    "db": "Relational databases store rows in tables and answer SQL queries with indexes.",
    "bee": "Honeybees communicate the direction of flowers through a waggle dance.",
}


def docs(texts):
    return [Document(text=t, id_=k) for k, t in texts.items()]


# -- ragloom.keywords -------------------------------------------------------------------------------
CJK_CHARS = list("北京大学的是在中国上海研究机器学习和自然语言处理。，、 ")
CJK_TEXT = st.text(alphabet=st.sampled_from(CJK_CHARS), max_size=60)
ANY_TEXT = st.one_of(st.text(max_size=120), CJK_TEXT,
                     st.text(alphabet=st.sampled_from(list("abc de-f,.\nThe of 你好世界")), max_size=80))


@settings(max_examples=150, deadline=None)
@given(ANY_TEXT, st.integers(min_value=1, max_value=8))
def test_keywords_are_substrings_deterministic_and_bounded(text, k):
    norm = normalize_text(text)
    simple = simple_extract_keywords(text, k)
    rake = rake_extract_keywords(text, k, expand_with_subtokens=False)
    rake_all = rake_extract_keywords(text, k)
    for kw in simple + rake + rake_all + tokenize(text) + expand_with_subtokens(simple):
        assert kw and kw in norm
    assert len(simple) <= k and len(rake) <= k
    assert len(set(simple)) == len(simple) and len(set(rake_all)) == len(rake_all)
    assert rake_all[: len(rake)] == rake
    assert simple == simple_extract_keywords(text, k) and rake_all == rake_extract_keywords(text, k)


@settings(max_examples=60, deadline=None)
@given(st.lists(ANY_TEXT, max_size=4), st.sampled_from(["tfidf", "textrank"]), st.integers(1, 6))
def test_corpus_keywords_are_substrings_and_deterministic(texts, mode, top_n):
    out = extract_keywords(texts, mode=mode, top_n=top_n)
    assert len(out) == len(texts)
    for text, kws in zip(texts, out, strict=True):
        assert len(kws) <= top_n and len(set(kws)) == len(kws)
        assert all(kw in normalize_text(text) for kw in kws)
    assert out == extract_keywords(texts, mode=mode, top_n=top_n)


@settings(max_examples=100, deadline=None)
@given(ANY_TEXT)
def test_keyword_key_and_response_parsing_never_fail(text):
    key = keyword_key(text)
    assert key == keyword_key(text) and key == key.strip() and "  " not in key
    assert not set(key.split()) & {"the", "and", "的"}
    got = extract_keywords_given_response(text, start_token="KEYWORDS:")
    assert all(k and k == normalize_text(k) for k in got) and len(set(got)) == len(got)


def test_chinese_segmentation_not_ascii_regex():
    assert tokenize("我们在北京大学学习自然语言处理。") == ["北京大学", "学习", "自然语言", "处理"]
    assert simple_extract_keywords(ZH["tea"], 3)[0] not in ("的", "是", "之一")
    assert "北京大学" in rake_extract_keywords(ZH["bj"], 5)
    assert "北京" in expand_with_subtokens(["北京大学"])
    assert keyword_key("Indexes") == keyword_key("indexing") == "index"
    assert keyword_key("自然语言处理") == "自然语言 处理"


def test_english_stopwords_and_stems():
    kws = simple_extract_keywords("The indexes and the indexing of the index are what the index does.", 2)
    assert kws[0] == "index"  # index x2, indexes, indexing: one stem, shown as its most frequent form
    assert "the" not in kws
    assert rake_extract_keywords("Compatibility of systems of linear constraints over the set of natural "
                                 "numbers", 2, expand_with_subtokens=False) == ["linear constraints",
                                                                                "natural numbers"]


def test_corpus_tfidf_prefers_distinctive_words():
    texts = ["apple banana apple cherry", "banana durian durian elderberry", "banana fig grape"]
    assert extract_keywords(texts, "tfidf", 1) == [["apple"], ["durian"], ["fig"]]
    zh = extract_keywords(list(ZH.values()), "textrank", 3)
    assert all(len(k) == 3 for k in zh)
    with pytest.raises(ValueError, match="mode"):
        extract_keywords(texts, mode="bm25")
    with pytest.raises(ValueError, match="top_n"):
        extract_keywords(texts, top_n=0)
    with pytest.raises(ValueError, match="max_keywords"):
        simple_extract_keywords("x", 0)


def test_extract_keywords_given_response_is_tolerant():
    got = extract_keywords_given_response("Sure! Here they are.\n**KEYWORDS:** 北京大学，Machine Learning、 the\n",
                                          start_token="KEYWORDS:")
    assert got[:3] == ["北京大学", "北京", "大学"] and "machine learning" in got and "learning" in got
    assert "the" not in got
    assert utils.extract_keywords_given_response("KEYWORDS: a1, b2", start_token="KEYWORDS:") == {"a1", "b2"}
    assert utils.simple_extract_keywords("cats cats dogs", 1) == {"cats"}


# -- indexes without a model ----------------------------------------------------------------------
def test_simple_keyword_index_chinese_retrieval():
    index = SimpleKeywordTableIndex.from_documents(docs(ZH))
    retriever = index.as_retriever()
    assert isinstance(retriever, KeywordTableSimpleRetriever)
    assert retriever.retrieve("北京的大学有哪些？")[0].node.ref_doc_id == "bj"
    assert retriever.retrieve("杭州西湖产什么茶")[0].node.ref_doc_id == "tea"
    top = retriever.retrieve("上海交通大学的工程学科")
    assert top[0].node.ref_doc_id == "sh" and top[0].score > (top[1].score if len(top) > 1 else 0)
    assert "北京大学" in index.index_struct.table and "北京" in index.index_struct.table


def test_rake_keyword_index_english_and_chinese():
    index = RAKEKeywordTableIndex.from_documents(docs({**EN, **ZH}))
    retriever = index.as_retriever()
    assert isinstance(retriever, KeywordTableRAKERetriever)
    assert retriever.retrieve("How do relational databases answer queries?")[0].node.ref_doc_id == "db"
    assert retriever.retrieve("training data for machine learning")[0].node.ref_doc_id == "ml"
    assert retriever.retrieve("龙井茶")[0].node.ref_doc_id == "tea"
    assert retriever.retrieve("quantum chromodynamics") == []
    assert isinstance(index.as_retriever(retriever_mode="simple"), KeywordTableSimpleRetriever)
    with pytest.raises(ValueError, match="retriever_mode must be one of default, simple, rake"):
        index.as_retriever(retriever_mode="bm25")
    with pytest.raises(ValueError, match="num_chunks_per_query"):
        index.as_retriever(num_chunks_per_query=0)


def test_num_chunks_and_max_keywords_per_query():
    index = SimpleKeywordTableIndex.from_documents(docs(ZH))
    assert len(index.as_retriever(num_chunks_per_query=1).retrieve("大学 中国 上海 北京")) == 1
    assert len(index.as_retriever().retrieve("大学 中国 上海 北京")) == 3
    with pytest.raises(ValueError, match="max_keywords_per_chunk"):
        SimpleKeywordTableIndex(max_keywords_per_chunk=0)


# -- the LLM-built index against a recording server -----------------------------------------------
def keyword_answer(prompt):
    """Answers keyword prompts the way a model would: KEYWORDS: the text's frequent words."""
    body = re.search(r"-{5,}\n(.*?)\n-{5,}", prompt, re.S).group(1)
    limit = int(re.search(r"up to (\d+) keywords", prompt).group(1))
    return "KEYWORDS: " + ", ".join(simple_extract_keywords(body, limit))


def test_llm_keyword_index_prompts_incremental_and_reload(tmp_path):
    sc = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    with OpenAICompatibleServer(answer=keyword_answer) as srv:
        llm = OpenAILike(model="m", api_base=srv.url, max_retries=0)
        index = KeywordTableIndex.from_documents(docs(ZH), storage_context=sc, llm=llm, max_keywords_per_chunk=4)
        assert len(srv.requests) == 3
        build_prompts = [r["prompt"] for r in srv.requests]
        assert any(ZH["bj"] in p for p in build_prompts)
        assert all("up to 4 keywords" in p for p in build_prompts)

        retriever = index.as_retriever()
        assert isinstance(retriever, KeywordTableGPTRetriever)
        got = retriever.retrieve("龙井茶产自哪里？")
        assert "龙井茶产自哪里？" in srv.requests[-1]["prompt"] and "up to 10 keywords" in srv.requests[-1]["prompt"]
        assert got[0].node.ref_doc_id == "tea"

        n = len(srv.requests)
        assert index.refresh_ref_docs(docs(ZH)) == [False, False, False]
        assert len(srv.requests) == n  # unchanged documents: no LLM call
        changed = {**ZH, "sh": "复旦大学位于上海杨浦区，文理医学科齐全。"}
        assert index.refresh_ref_docs(docs(changed)) == [False, True, False]
        assert len(srv.requests) == n + 1 and "复旦大学" in srv.requests[-1]["prompt"]
        assert "上海交通大学" not in index.index_struct.table and "复旦大学" in index.index_struct.table

        index.delete_ref_doc("tea")
        assert index.as_retriever(retriever_mode="simple").retrieve("龙井茶") == []

        sc.persist()
        loaded = load_index_from_storage(StorageContext.from_defaults(persist_dir=tmp_path), llm=llm)
        assert type(loaded) is KeywordTableIndex and loaded.max_keywords_per_chunk == 4
        n = len(srv.requests)
        assert loaded.refresh_ref_docs(docs({k: changed[k] for k in ("bj", "sh")})) == [False, False]
        assert len(srv.requests) == n  # the recorded settings are reused: nothing rebuilt
        assert loaded.as_retriever(retriever_mode="simple").retrieve("复旦大学")[0].node.ref_doc_id == "sh"

        # another max_keywords_per_chunk changes what the index stores: the next refresh rebuilds
        more = KeywordTableIndex(index_struct=loaded._index_struct, storage_context=loaded.storage_context,
                                 llm=llm, max_keywords_per_chunk=6)
        assert more.refresh_ref_docs(docs({k: changed[k] for k in ("bj", "sh")})) == [True, True]
        assert len(srv.requests) == n + 2 and "up to 6 keywords" in srv.requests[-1]["prompt"]


def test_llm_keyword_index_custom_template_is_recorded(tmp_path):
    sc = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    template = "Give up to {max_keywords} keywords.\n-----\n{text}\n-----\nKEYWORDS:"
    with OpenAICompatibleServer(answer=keyword_answer) as srv:
        llm = OpenAILike(model="m", api_base=srv.url, max_retries=0)
        KeywordTableIndex.from_documents(docs(EN), storage_context=sc, llm=llm, keyword_extract_template=template)
        assert srv.requests[0]["prompt"].startswith("Give up to 10 keywords.")
        sc.persist()
        loaded = load_index_from_storage(StorageContext.from_defaults(persist_dir=tmp_path), llm=llm)
        assert loaded.keyword_extract_template.get_template() == template
        n = len(srv.requests)
        assert loaded.refresh_ref_docs(docs(EN)) == [False, False, False] and len(srv.requests) == n
        engine = loaded.as_query_engine(retriever_mode="simple", response_mode="no_text")
        assert engine.query("waggle dance of honeybees").source_nodes[0].node.ref_doc_id == "bee"
    with pytest.raises(ValueError, match="keyword_extract_template"):
        KeywordTableIndex(keyword_extract_template="no variables")


def test_hangul_katakana_and_contractions_regression():
    """rjieba splits hangul and kana into single characters tagged unknown: Korean text had no keywords
    at all and katakana words were lost; contraction stems ("don", "won") were keywords."""
    assert tokenize("한국어 텍스트 처리 검색") == ["한국어", "텍스트", "처리", "검색"]
    assert tokenize("東京タワーは日本の電波塔です") == ["東京", "タワー", "日本", "電波塔"]
    assert "タワー" in expand_with_subtokens(["東京タワー"])
    assert tokenize("We don't know why it won't start; isn't it odd?") == ["know", "start", "odd"]
    # narrative Chinese: directional complements and speech verbs are not keywords
    kws = simple_extract_keywords("宝玉笑道：“你出来。”黛玉走出来，说道：“起来罢。”宝玉站起来，黛玉又进来。", 4)
    assert {"宝玉", "黛玉"} <= set(kws) and not {"出来", "起来", "进来", "说道"} & set(kws)
    # (Korean words carry their particles: 서울은 is not 서울; no Korean analyser here)
    index = SimpleKeywordTableIndex.from_documents(docs({"ko": "서울 인구 통계 자료", "ja": "東京タワーは電波塔です"}))
    assert index.as_retriever().retrieve("인구 통계")[0].node.ref_doc_id == "ko"
    assert index.as_retriever().retrieve("タワー")[0].node.ref_doc_id == "ja"


def test_rake_and_simple_round_trip_through_persist_dir(tmp_path):
    from ragloom.indices.loading import load_indices_from_storage
    from ragloom.node_parser import SentenceSplitter

    sc = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    splitter = SentenceSplitter(chunk_size=48, chunk_overlap=0)
    rake = RAKEKeywordTableIndex.from_documents(docs({**EN, **ZH}), storage_context=sc, transformations=[splitter],
                                                max_keywords_per_chunk=5)
    simple = SimpleKeywordTableIndex.from_documents(docs(EN), storage_context=sc, transformations=[splitter])
    table, ids = rake.index_struct.table, {rake.index_id: "rake", simple.index_id: "simple"}
    sc.persist()
    sc2 = StorageContext.from_defaults(persist_dir=tmp_path)
    loaded = {ids[i.index_id]: i for i in load_indices_from_storage(sc2)}
    assert type(loaded["rake"]) is RAKEKeywordTableIndex and type(loaded["simple"]) is SimpleKeywordTableIndex
    assert loaded["rake"].max_keywords_per_chunk == 5 and loaded["rake"].index_struct.table == table
    token = sc2.database.change_token()
    assert loaded["rake"].refresh_ref_docs(docs({**EN, **ZH})) == [False] * 6
    assert loaded["simple"].refresh_ref_docs(docs(EN)) == [False] * 3
    assert sc2.database.change_token() == token
    assert loaded["rake"].as_retriever().retrieve("龙井茶")[0].node.ref_doc_id == "tea"
    assert loaded["simple"].as_retriever().retrieve("waggle dance")[0].node.ref_doc_id == "bee"


def test_llm_keyword_index_without_an_llm_raises_instead_of_building_an_empty_index(tmp_path, monkeypatch):
    """Regression: "no LLM configured" (a ValueError) was taken for a fault of each document, so
    from_documents logged warnings and returned an empty index."""
    from ragloom.indices.base import IndexNotReadyError
    from ragloom.settings import Settings

    monkeypatch.setattr(Settings, "_llm", None)
    sc = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    with pytest.raises(IndexNotReadyError, match="KeywordTableIndex cannot build its nodes: .*LLM"):
        KeywordTableIndex.from_documents(docs(EN), storage_context=sc)
    assert sc.database.execute("SELECT count(*) FROM index_nodes")[0][0] == 0
    with OpenAICompatibleServer(answer=keyword_answer) as srv:
        llm = OpenAILike(model="m", api_base=srv.url, max_retries=0)
        index = KeywordTableIndex.from_documents(docs(EN), storage_context=sc, llm=llm)
        assert len(srv.requests) == 3
    # reopened without an LLM: unchanged documents need none; a changed one does
    sc.persist()
    loaded = load_index_from_storage(StorageContext.from_defaults(persist_dir=tmp_path), index_id=index.index_id)
    assert loaded.refresh_ref_docs(docs(EN)) == [False, False, False]
    with pytest.raises(IndexNotReadyError):
        loaded.refresh_ref_docs(docs({**EN, "db": "Graph databases store edges."}))
    assert loaded.as_retriever(retriever_mode="simple").retrieve("relational tables")[0].node.ref_doc_id == "db"


# -- node-level incremental refresh (regression: one appended line re-extracted all 68 chunks) ------
LONG = [
    "Alpine lakes freeze from the surface down each winter.",
    "Glaciers carve valleys that later fill with meltwater.",
    "Trout spawn in cold streams that feed the lakes.",
    "Mountain huts shelter hikers crossing the high passes.",
    "Avalanche forecasts rate the snowpack danger daily.",
    "Marmots whistle to warn their colony of eagles.",
    "Cable cars carry skiers above the tree line.",
    "Shepherds move their flocks to summer pastures.",
]


def _splitter():
    from ragloom.node_parser import SentenceSplitter

    return SentenceSplitter(chunk_size=24, chunk_overlap=0)


def _new_chunks(old_text, new_text):
    """``(chunks of new_text whose text is no chunk of old_text, chunks of new_text)``."""
    split = _splitter()
    old = {n.hash for n in split.get_nodes_from_documents([Document(text=old_text, id_="long")])}
    new = split.get_nodes_from_documents([Document(text=new_text, id_="long")])
    return sum(1 for n in new if n.hash not in old), len(new)


def _llm_keyword_index(sc, llm, texts):
    return KeywordTableIndex.from_documents(docs(texts), storage_context=sc, llm=llm,
                                            transformations=[_splitter()], max_keywords_per_chunk=4)


def test_llm_keyword_refresh_extracts_only_new_or_edited_chunks(tmp_path):
    from ragloom.ingestion.engine import set_commit_hook

    text = " ".join(LONG)
    edited = text.replace("Marmots whistle", "Ibexes climb cliffs") + " Edelweiss grows on limestone ledges."
    changed, total = _new_chunks(text, edited)
    assert total >= 4 and changed == 2  # a real multi-chunk document, most chunks unchanged
    sc = StorageContext.from_defaults(persist_dir=tmp_path / "a", create_if_missing=True)
    with OpenAICompatibleServer(answer=keyword_answer) as srv:
        llm = OpenAILike(model="m", api_base=srv.url, max_retries=0)
        index = _llm_keyword_index(sc, llm, {"long": text, "bee": EN["bee"]})
        n = len(srv.requests)
        assert n == len(index._node_ids())
        assert index.refresh_ref_docs(docs({"long": edited, "bee": EN["bee"]})) == [True, False]
        prompts = [r["prompt"] for r in srv.requests[n:]]
        assert len(prompts) == changed  # only the edited / new chunks went to the LLM
        assert any("Ibexes" in p for p in prompts) and any("Edelweiss" in p for p in prompts)
        # unchanged chunks keep their keywords, also after the edit (their ids changed: offsets moved)
        assert not any("Glaciers" in p or "Cable cars" in p for p in prompts)

        # a refresh killed before its commit, then run again, equals a clean build
        again = edited.replace("Cable cars carry skiers", "Gondolas lift sightseers")

        def kill(event):
            if event == "before_commit":
                raise RuntimeError("killed")

        set_commit_hook(kill)
        try:
            with pytest.raises(RuntimeError, match="killed"):
                index.refresh_ref_docs(docs({"long": again, "bee": EN["bee"]}))
        finally:
            set_commit_hook(None)
        n = len(srv.requests)
        assert index.refresh_ref_docs(docs({"long": again, "bee": EN["bee"]})) == [True, False]
        assert len(srv.requests) - n == _new_chunks(edited, again)[0] >= 1
        clean = _llm_keyword_index(StorageContext.from_defaults(persist_dir=tmp_path / "b", create_if_missing=True),
                                   llm, {"long": again, "bee": EN["bee"]})
        assert index.index_struct.table == clean.index_struct.table
        assert sorted(index._node_ids()) == sorted(clean._node_ids())
        assert all(not k.startswith("\x00") for k in index.index_struct.table)


def test_simple_and_rake_refresh_keep_keys_of_unchanged_chunks(tmp_path, monkeypatch):
    text = " ".join(LONG)
    edited = text.replace("Trout spawn", "Salmon leap")
    for cls in (SimpleKeywordTableIndex, RAKEKeywordTableIndex):
        sc = StorageContext.from_defaults(persist_dir=tmp_path / cls.__name__, create_if_missing=True)
        index = cls.from_documents(docs({"long": text}), storage_context=sc, transformations=[_splitter()])
        calls = []
        real = cls._extract_keywords
        monkeypatch.setattr(cls, "_extract_keywords",
                            lambda self, t, real=real, calls=calls: calls.append(t) or real(self, t))
        assert index.refresh_ref_docs(docs({"long": edited})) == [True]
        assert len(calls) == _new_chunks(text, edited)[0] and "Salmon" in calls[0]
        monkeypatch.undo()
        clean = cls.from_documents(docs({"long": edited}), transformations=[_splitter()])
        assert index.index_struct.table == clean.index_struct.table


# -- keywords of the text, not of the metadata (regression: every chunk keyed by its file path) -----
def test_keywords_come_from_text_not_file_path_metadata(tmp_path):
    meta = {"file_path": "/data/share/quarterly/report_path.txt", "file_name": "report_path.txt"}
    doc = Document(text=EN["bee"], id_="bee", metadata=meta)
    assert "share" in doc.get_content(metadata_mode=MetadataMode.LLM)  # the LLM view has the path
    path_words = {keyword_key(w) for w in ("data", "share", "quarterly", "report", "path", "file", "txt")}
    for cls in (SimpleKeywordTableIndex, RAKEKeywordTableIndex):
        table = cls.from_documents([doc]).index_struct.table
        assert table and not path_words & set(table), cls.__name__
    with OpenAICompatibleServer(answer=keyword_answer) as srv:
        llm = OpenAILike(model="m", api_base=srv.url, max_retries=0)
        table = KeywordTableIndex.from_documents([doc], llm=llm).index_struct.table
        assert len(srv.requests) == 1 and "share" not in srv.requests[0]["prompt"]
        assert "waggle" in srv.requests[0]["prompt"] and table and not path_words & set(table)


def test_keys_version_bump_rebuilds_old_indexes(tmp_path, monkeypatch):
    """Indexes built before keywords ignored metadata (KEYWORD_KEYS_VERSION 2) re-extract on refresh."""
    from ragloom.indices.keyword_table import base as kt_base

    sc = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    monkeypatch.setattr(kt_base, "KEYWORD_KEYS_VERSION", kt_base.KEYWORD_KEYS_VERSION - 1)
    index = SimpleKeywordTableIndex.from_documents(docs(EN), storage_context=sc, transformations=[_splitter()])
    assert index.refresh_ref_docs(docs(EN)) == [False] * 3
    monkeypatch.undo()
    calls = []
    real = SimpleKeywordTableIndex._extract_keywords
    monkeypatch.setattr(SimpleKeywordTableIndex, "_extract_keywords", lambda self, t: calls.append(t) or real(self, t))
    assert index.refresh_ref_docs(docs(EN)) == [True] * 3
    assert len(calls) == len(index._node_ids())  # no keys of the old version reused
