"""Property tests of the span-engine splitters (ARCHITECTURE.md invariants)."""

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragloom.node_parser import SentenceSplitter, TokenTextSplitter
from ragloom.node_parser.text.engine import ExactCounter, make_sizers
from ragloom.schema import Document, MetadataMode, NodeRelationship
from ragloom.tokenizers import get_default_tokenizer, get_tokenizer


EN = [
    "The", "quick", "brown", "fox", "Dr.", "Smith", "arrived", "at", "5", "p.m.", "e.g.", "U.S.", "it's", "don't",
    "HELLO", "naïve", "café", "x" * 40,
]
ZH = ["张三说", "今天下雨了", "李四点头", "孙悟空", "花果山", "水帘洞", "美猴王", "龍", "𠀀"]
PUNCT = [
    ".", ",", ";", "!", "?", "。", "，", "、", "；", "：", "！", "？", "…", "“", "”", "「", "」", "（", "）", "《",
    "》", '"', "'", "-", "—", "#", "*", "`", "```", "http://x.y/z?a=b",
]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧", "🇨🇳", "❤️", "é", "e\u0301", "\u200b", "\ufeff"]
WS = [" ", "  ", "\n", "\n\n", "\n\n\n", "\t", "\u3000", "\r\n", " \n \n "]

piece = st.one_of(
    st.sampled_from(EN),
    st.sampled_from(ZH),
    st.sampled_from(PUNCT),
    st.sampled_from(EMOJI),
    st.sampled_from(WS),
    st.text(min_size=1, max_size=30),  # hostile: any code points (incl. controls, marks)
)


@st.composite
def texts(draw):
    kind = draw(st.sampled_from(["mix", "mix", "mix", "en", "zh", "ws", "nopunct", "long-run"]))
    if kind == "en":
        words = draw(st.lists(st.sampled_from(EN + [".", ",", " ", "\n\n"]), max_size=200))
        return " ".join(words)
    if kind == "zh":
        return "".join(
            draw(st.lists(st.sampled_from(ZH + ["。", "，", "！", "？", "；", "…", "”", "\n"]), max_size=200))
        )
    if kind == "ws":
        return "".join(draw(st.lists(st.sampled_from(WS), max_size=20)))
    if kind == "nopunct":
        return "".join(draw(st.lists(st.sampled_from(ZH + ["abc", "defgh"]), max_size=150)))
    if kind == "long-run":
        return draw(st.sampled_from(["a", "龍", "😀", "ab ", "9"])) * draw(st.integers(0, 600))
    return "".join(draw(st.lists(piece, max_size=150)))


TOKENIZERS = {
    "hf": get_default_tokenizer,
    "cl100k": lambda: get_tokenizer("cl100k_base"),
    "o200k": lambda: get_tokenizer("o200k_base"),
}


def _make(kind, tok_name, chunk_size, overlap):
    tok = TOKENIZERS[tok_name]()
    if kind == "sentence":
        return SentenceSplitter(chunk_size=chunk_size, chunk_overlap=overlap, tokenizer=tok)
    return TokenTextSplitter(chunk_size=chunk_size, chunk_overlap=overlap, tokenizer=tok,
                             keep_whitespaces=kind == "token_keep_ws")


def _check(splitter, text, metadata, stripped=True):
    tok = splitter.tokenizer
    doc = Document(
        text=text,
        id_="doc-1",
        metadata=metadata,
        excluded_llm_metadata_keys=["secret"] if "secret" in metadata else [],
    )
    nodes = splitter.get_nodes_from_documents([doc])
    if not text.strip():
        assert nodes == []
        return
    assert nodes, "non-blank text gives nodes"
    covered = bytearray(len(text))
    prev = (-1, -1)
    for n in nodes:
        a, b = n.start_char_idx, n.end_char_idx
        assert text[a:b] == n.text
        assert n.text.strip()  # never only whitespace
        if stripped:  # keep_whitespaces=True keeps the whitespace around a chunk
            assert n.text == n.text.strip()
        assert (a, b) > prev and b >= prev[1], "spans in order"
        prev = (a, b)
        covered[a:b] = b"\x01" * (b - a)
        for mode in (MetadataMode.EMBED, MetadataMode.LLM):
            c = tok.count(n.get_content(mode))
            assert c <= splitter.chunk_size, (mode, c, n.get_content(mode))
        assert n.relationships[NodeRelationship.SOURCE].node_id == "doc-1"
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert not missing, f"uncovered chars at {missing[:10]}"
    again = splitter.get_nodes_from_documents([doc])
    assert [n.id_ for n in again] == [n.id_ for n in nodes]
    assert [n.text for n in again] == [n.text for n in nodes]


META = st.sampled_from([{}, {"title": "A title"}, {"file_name": "西游记.txt", "secret": "x y z " * 2}])


@pytest.mark.parametrize("tok_name", ["hf", "cl100k"])
@pytest.mark.parametrize("kind", ["sentence", "token", "token_keep_ws"])
@given(text=texts(), chunk_size=st.integers(40, 100), overlap_frac=st.floats(0, 0.5), metadata=META)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_invariants(kind, tok_name, text, chunk_size, overlap_frac, metadata):
    splitter = _make(kind, tok_name, chunk_size, int(chunk_size * overlap_frac))
    _check(splitter, text, metadata, stripped=kind != "token_keep_ws")


@pytest.mark.parametrize("kind", ["sentence", "token"])
@given(text=texts(), chunk_size=st.integers(20, 60), section=st.integers(40, 400), metadata=META)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_invariants_hold_across_sections_of_a_long_text(kind, text, chunk_size, section, metadata):
    """A text longer than SECTION_CHARS is packed section by section (bounded memory): the same
    invariants hold, and split_spans gives the nodes' spans."""
    from ragloom.node_parser import interface

    old = interface.SECTION_CHARS
    interface.SECTION_CHARS = section
    try:
        splitter = _make(kind, "hf", chunk_size, chunk_size // 4)
        _check(splitter, text, metadata)
        spans = [(n.start_char_idx, n.end_char_idx) for n in splitter.get_nodes_from_documents([Document(text=text)])]
        assert spans == splitter.split_spans(text)
        assert all(b - a <= section for a, b in interface.text_sections(text))
    finally:
        interface.SECTION_CHARS = old


@given(text=texts(), chunk_size=st.integers(8, 40))
@settings(max_examples=60, deadline=None)
def test_split_text_within_budget_no_metadata(text, chunk_size):
    for tok_name in ("hf", "cl100k"):
        splitter = _make("sentence", tok_name, chunk_size, chunk_size // 4)
        chunks = splitter.split_text(text)
        for c in chunks:
            assert splitter.tokenizer.count(c) <= chunk_size
        spans = splitter.split_spans(text)
        assert [text[a:b] for a, b in spans] == chunks


# added-token text (BERT's ``[MASK]``), a prefix with cut positions inside, tokenizer-specific runs
HOSTILE = st.sampled_from(["[MASK]", "[CLS]x", "a]b", "##", "x" * 120, "ǅ", "İ", "\u00a8", "\u0301", "\x00", "\r\n"])


@pytest.mark.parametrize("tok_name", ["hf", "cl100k", "o200k"])
@given(text=texts(), extra=st.lists(HOSTILE, max_size=6), data=st.data())
@settings(max_examples=100, deadline=None)
def test_exact_counter_edges_match_full_count(tok_name, text, extra, data):
    """The edge-only verification (fast exact count) equals a full re-encode on every span,
    with and without metadata wrappers around it."""
    tok = TOKENIZERS[tok_name]()
    assert tok.safe_split is not None  # both take the fast path this test pins
    text = text + "".join(extra)
    sizer = make_sizers(tok, [text])[0]
    counter = ExactCounter(tok, sizer)
    n = len(text)
    for _ in range(5):
        a = data.draw(st.integers(0, n))
        b = data.draw(st.integers(a, n))
        prefix = data.draw(st.sampled_from(["", "title: x\n\n", "😀", "file_path: /a/b c.md, 中文\n\n", "[MASK"]))
        suffix = data.draw(st.sampled_from(["", "\n\nsource: a.b, c", "]"]))
        assert counter.count(a, b, prefix, suffix) == tok.count(prefix + text[a:b] + suffix)


@pytest.mark.parametrize("tok_name", ["hf", "cl100k", "o200k"])
@given(text=texts(), extra=st.lists(HOSTILE, max_size=6))
@settings(max_examples=150, deadline=None)
def test_safe_split_positions_keep_the_count(tok_name, text, extra):
    """The cut property each tokenizer declares: at every ``safe_split`` match ``h``,
    ``count(x) == count(x[:h]) + count(x[h:])``."""
    tok = TOKENIZERS[tok_name]()
    text = "".join(extra) + text
    total = tok.count(text)
    for m in tok.safe_split.finditer(text):
        h = m.start()
        assert tok.count(text[:h]) + tok.count(text[h:]) == total, (h, text[max(0, h - 5) : h + 5])


@pytest.mark.parametrize("tok_name", ["hf", "cl100k"])
def test_exact_counter_on_real_text(tok_name, shared_data):
    tok = TOKENIZERS[tok_name]()
    text = open(f"{shared_data}/zh_classics/西游记.utf8.txt", encoding="utf-8").read()[20000:60000]
    text += " The quick brown fox, e.g. Dr. Smith, jumps over it. " * 200
    md = sorted(Path(shared_data, "markdown_fastapi").rglob("*.md"))[:20]
    text += "".join(p.read_text(encoding="utf-8") for p in md)
    sizer = make_sizers(tok, [text])[0]
    counter = ExactCounter(tok, sizer)
    rnd = random.Random(0)
    for _ in range(300):
        a = rnd.randrange(len(text))
        b = min(len(text), a + rnd.randrange(1, 3000))
        assert counter.count(a, b) == tok.count(text[a:b])
