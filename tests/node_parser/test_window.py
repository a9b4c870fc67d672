"""``SentenceWindowNodeParser``: one node per sentence, window in metadata."""

import re
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from invariants import assert_invariants, texts_of

from ragloom.node_parser import SentenceSplitter, SentenceWindowNodeParser
from ragloom.schema import Document, MetadataMode, NodeRelationship
from ragloom.tokenizers import get_default_tokenizer

REF = "张三说：“今天下雨了。”李四点头。Dr. Smith arrived at 5 p.m. He left."
ZH_COMMAS = "，".join(["孙悟空拜师学艺", "在灵台方寸山", "斜月三星洞中", "学得七十二般变化"] * 19) + "。"


def _check_windows(nodes, text, w, wkey="window", okey="original_text"):
    for i, n in enumerate(nodes):
        a = nodes[max(0, i - w)].start_char_idx
        b = nodes[min(len(nodes) - 1, i + w)].end_char_idx
        assert n.metadata[wkey] == text[a:b]
        assert n.metadata[okey] == n.text
        for keys in (n.excluded_embed_metadata_keys, n.excluded_llm_metadata_keys):
            assert wkey in keys and okey in keys


def test_reference_sentences_and_windows(hf_tok):
    doc = Document(text=REF, id_="d", metadata={"title": "T"})
    parser = SentenceWindowNodeParser(window_size=1)
    nodes = assert_invariants(parser, doc, tokenizer=hf_tok, chunk_size=parser.chunk_size)
    assert texts_of(nodes) == ["张三说：“今天下雨了。”", "李四点头。", "Dr. Smith arrived at 5 p.m.", "He left."]
    _check_windows(nodes, REF, 1)
    assert nodes[1].metadata["window"] == "张三说：“今天下雨了。”李四点头。Dr. Smith arrived at 5 p.m."
    # the window is hidden from the embed model and the LLM
    assert nodes[1].get_content(MetadataMode.EMBED) == "title: T\n\n李四点头。"
    assert nodes[1].get_content(MetadataMode.LLM) == "title: T\n\n李四点头。"
    assert nodes[0].relationships[NodeRelationship.NEXT].node_id == nodes[1].id_
    assert nodes[1].relationships[NodeRelationship.NEXT].hash == nodes[2].hash


def test_custom_sentence_splitter_window_size_1():
    def my_fn(text):  # drops whitespace like NLTK's sent_tokenize
        return [s for s in re.split(r"(?<=[.!?])\s+", text) if s]

    text = "One fish. Two fish!  Red fish?\nBlue fish. The end."
    doc = Document(text=text, id_="d")
    parser = SentenceWindowNodeParser(window_size=1, sentence_splitter=my_fn)
    nodes = assert_invariants(parser, doc)
    assert texts_of(nodes) == ["One fish.", "Two fish!", "Red fish?", "Blue fish.", "The end."]
    _check_windows(nodes, text, 1)
    assert nodes[2].metadata["window"] == "Two fish!  Red fish?\nBlue fish."


def test_splitter_that_drops_separators_keeps_them_with_the_sentence():
    parser = SentenceWindowNodeParser(window_size=1, sentence_splitter=lambda t: t.split("。"))
    nodes = parser([Document(text="天很冷。我们走吧。好", id_="d")])
    assert texts_of(nodes) == ["天很冷。", "我们走吧。", "好"]


def test_from_defaults_and_custom_keys():
    parser = SentenceWindowNodeParser.from_defaults(
        window_size=0, window_metadata_key="w", original_text_metadata_key="o"
    )
    nodes = parser([Document(text="Cats purr. Dogs bark.", id_="d")])
    assert [n.metadata["w"] for n in nodes] == ["Cats purr.", "Dogs bark."]
    assert [n.metadata["o"] for n in nodes] == ["Cats purr.", "Dogs bark."]
    assert parser.split_text("Cats purr. Dogs bark.") == ["Cats purr.", "Dogs bark."]


@pytest.mark.parametrize("kwargs", [{"window_size": -1}, {"window_size": 1.5}, {"window_metadata_key": ""},
                                    {"window_metadata_key": "k", "original_text_metadata_key": "k"}, {"chunk_size": 0}])
def test_validation(kwargs):
    with pytest.raises(ValueError):
        SentenceWindowNodeParser(**kwargs)


def test_metadata_too_large_is_a_clear_error():
    doc = Document(text="Hello there.", id_="d", metadata={"k": "word " * 200})
    with pytest.raises(ValueError, match="metadata"):
        SentenceWindowNodeParser(chunk_size=50)([doc])


def test_blank_documents_give_no_nodes():
    assert SentenceWindowNodeParser()([Document(text=" \n\n ", id_="d"), Document(text="", id_="e")]) == []


@pytest.mark.parametrize("tok_name", [None, "cl100k_base"])
def test_chinese_comma_paragraph_cut_between_phrases(tok_name):
    """A 600-character paragraph separated only by ，: cut between phrases, within budget."""
    assert 550 <= len(ZH_COMMAS) <= 650
    doc = Document(text=ZH_COMMAS, id_="zh")
    for parser in (
        SentenceSplitter(chunk_size=60, chunk_overlap=0, tokenizer=tok_name),
        SentenceWindowNodeParser(window_size=1, chunk_size=60, tokenizer=tok_name),
    ):
        tok = parser.tokenizer
        nodes = assert_invariants(parser, doc, tokenizer=tok, chunk_size=60)
        assert len(nodes) > 1
        for n in nodes:
            assert n.text.endswith("，") or n.text.endswith("。"), n.text
            phrases = {"孙悟空拜师学艺", "在灵台方寸山", "斜月三星洞中", "学得七十二般变化"}
            assert n.text.split("，")[0].rstrip("。") in phrases


def test_chinese_comma_paragraph_default_budget(hf_tok):
    """Defaults: budget = the embed model's limit (254 tokens for the bundled model)."""
    parser = SentenceWindowNodeParser(window_size=1)
    assert parser.chunk_size == 254
    nodes = assert_invariants(parser, Document(text=ZH_COMMAS, id_="zh"), tokenizer=hf_tok, chunk_size=254)
    assert len(nodes) >= 3
    assert all(n.text.endswith(("，", "。")) for n in nodes)
    assert "".join(n.text for n in nodes) == ZH_COMMAS


def test_long_sentence_split_under_default_budget():
    """The default budget is the embed model's limit: nothing the model would truncate."""
    text = ("word " * 600).strip() + ". Short one."
    parser = SentenceWindowNodeParser(window_size=1)
    nodes = assert_invariants(
        parser, Document(text=text, id_="d"), tokenizer=get_default_tokenizer(), chunk_size=parser.chunk_size
    )
    assert nodes[-1].text == "Short one." and len(nodes) >= 3


# -- properties ------------------------------------------------------------------------

EN = ["The", "quick", "fox", "Dr.", "Smith", "p.m.", "e.g.", "naïve", "x" * 30]
ZH = ["张三说", "今天下雨了", "孙悟空", "龍", "𠀀"]
PIECES = EN + ZH + [".", ",", "!", "?", "。", "，", "；", "…", "”", "😀", "👨‍👩‍👧", " ", "\n", "\n\n", "\t", "\u3000"]
text_st = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=120).map("".join),
    st.lists(st.sampled_from(PIECES + ["abc", "\x00", "\u200b"]), max_size=60).map(" ".join),
    st.text(max_size=80),
)
META = st.sampled_from([{}, {"title": "A title"}, {"file_name": "西游记.txt"}])


@given(text=text_st, chunk_size=st.integers(24, 80), w=st.integers(0, 3), meta=META)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_invariants(hf_tok, text, chunk_size, w, meta):
    parser = SentenceWindowNodeParser(window_size=w, chunk_size=chunk_size, tokenizer=hf_tok)
    doc = Document(text=text, id_="doc-1", metadata=meta)
    nodes = assert_invariants(parser, doc, tokenizer=hf_tok, chunk_size=chunk_size)
    assert bool(nodes) == bool(text.strip())
    for n in nodes:
        assert n.text and n.text == n.text.strip()
    _check_windows(nodes, text, w)
    spans = [(n.start_char_idx, n.end_char_idx) for n in nodes]
    assert all(b1 <= a2 for (_, b1), (a2, _) in pairwise(spans)), "sentences do not overlap"


def test_a_refusal_names_the_document():
    """Metadata leaving one token of room next to a sentence that needs two: the window parser
    raised a bare ``ValueError`` ("cannot fit the text at char …"); it names the document now, as
    the other splitters do (a ``DocumentError``, still a ``ValueError``)."""
    from ragloom.errors import DocumentError

    doc = Document(id_="doc-w", text='Technically, Deep Learning model architectures">models</dfn>.',
                   metadata={"title": "word " * 60})
    parser = SentenceWindowNodeParser(chunk_size=64, tokenizer="cl100k_base")
    with pytest.raises(DocumentError, match=r"document 'doc-w': cannot fit the text at char \d+ into chunk_size 64"):
        parser.get_nodes_from_documents([Document(id_="ok", text="Fine. Short."), doc])
