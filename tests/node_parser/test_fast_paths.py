"""Fast paths of the span engine compared with their plain (slow, exact) forms,
on random text (hypothesis) and on real Markdown and Chinese text."""

import bisect
import glob
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_properties import texts

from ragloom.node_parser import SentenceSplitter, TokenTextSplitter
from ragloom.node_parser.text import engine
from ragloom.node_parser.text.boundaries import (
    CJK_CLAUSE_LEVEL,
    CJK_CLAUSE_REFERENCE,
    CJK_TERMINATORS,
    CJK_TERMINATORS_REFERENCE,
    SentenceLevel,
)
from ragloom.schema import Document, MetadataMode, NodeRelationship

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"

ALPHABET = list("abc XY.!?。！？；…”’」』）】》\"')],，、：:\n龍中文😀")
ALPHABET += ["Dr. ", "p.m. ", "e.g. ", "\n\n\n", "<|endoftext|>"]
mixed = st.lists(st.sampled_from(ALPHABET), max_size=300).map("".join)
any_text = st.one_of(texts(), mixed)


def _real_texts():
    out = []
    md = sorted(glob.glob(f"{SHARED_DATA}/markdown_fastapi/**/*.md", recursive=True))
    for p in md[:: max(1, len(md) // 12)][:12]:
        out.append(open(p, encoding="utf-8").read()[:40000])
    zh = sorted(glob.glob(f"{SHARED_DATA}/zh_classics/*.utf8.txt"))
    for p in zh[:3]:
        out.append(open(p, encoding="utf-8").read()[30000:70000])
    if not out:
        pytest.skip("shared data not available")
    return out


@pytest.fixture(scope="module")
def real_texts():
    return _real_texts()


def _matches(rx, text, lo=0, hi=None):
    hi = len(text) if hi is None else hi
    return [m.span() for m in rx.finditer(text, lo, hi)]


@given(text=any_text, data=st.data())
@settings(max_examples=300, deadline=None)
def test_cjk_terminator_regex_equals_reference(text, data):
    assert _matches(CJK_TERMINATORS, text) == _matches(CJK_TERMINATORS_REFERENCE, text)
    lo = data.draw(st.integers(0, len(text)))
    hi = data.draw(st.integers(lo, len(text)))
    assert _matches(CJK_TERMINATORS, text, lo, hi) == _matches(CJK_TERMINATORS_REFERENCE, text, lo, hi)


@given(text=any_text, data=st.data())
@settings(max_examples=300, deadline=None)
def test_sentence_find_equals_reference(text, data):
    level = SentenceLevel()
    lo = data.draw(st.integers(0, len(text)))
    hi = data.draw(st.integers(lo, len(text)))
    assert level.find(text, lo, hi) == level.find_reference(text, lo, hi)
    assert level.find(text, 0, len(text)) == level.find_reference(text, 0, len(text))


@given(text=st.one_of(any_text, st.lists(st.sampled_from(list("ab 中，、；：,;:")), max_size=300).map("".join)),
       data=st.data())
@settings(max_examples=300, deadline=None)
def test_clause_level_equals_its_regex(text, data):
    lo = data.draw(st.integers(0, len(text)))
    hi = data.draw(st.integers(lo, len(text)))
    assert CJK_CLAUSE_LEVEL.find(text, lo, hi) == CJK_CLAUSE_REFERENCE.find(text, lo, hi)


def test_a_long_line_without_punctuation_is_split_whole():
    """One line of words without punctuation (what made the clause regex quadratic: minutes for
    250,000 characters; its time is in benchmarks/hostile.py): every chunk in budget, all covered."""
    words = "harbour crane tide river bank stone quick brown fox".split()
    rnd = random.Random(0)
    text = " ".join(rnd.choice(words) for _ in range(70_000))[:400_000]
    splitter = SentenceSplitter(chunk_size=254, chunk_overlap=31)
    nodes = splitter.get_nodes_from_documents([Document(text=text)])
    assert nodes[0].start_char_idx == 0 and nodes[-1].end_char_idx == len(text)
    gaps = [text[a.end_char_idx : b.start_char_idx] for a, b in zip(nodes, nodes[1:], strict=False)]
    assert not "".join(gaps).strip()  # no text lost between chunks
    assert max(splitter.tokenizer.count_batch([n.text for n in nodes])) <= 254


def test_real_text_regex_and_sentences(real_texts):
    level = SentenceLevel()
    rnd = random.Random(1)
    for text in real_texts:
        assert _matches(CJK_TERMINATORS, text) == _matches(CJK_TERMINATORS_REFERENCE, text)
        for _ in range(40):
            lo = rnd.randrange(len(text))
            hi = min(len(text), lo + rnd.randrange(1, 1500))
            assert level.find(text, lo, hi) == level.find_reference(text, lo, hi)


def _spans(splitter, text, fast):
    orig = engine._Finder._all_cuts
    if not fast:
        engine._Finder._all_cuts = lambda self, li, level: None
    try:
        return splitter.split_spans(text)
    finally:
        engine._Finder._all_cuts = orig


SPLITTERS = [
    lambda: SentenceSplitter(chunk_size=60, chunk_overlap=15, tokenizer="cl100k_base"),
    lambda: SentenceSplitter(chunk_size=200, chunk_overlap=40, tokenizer="cl100k_base", paragraph_separator="\n\n"),
    lambda: TokenTextSplitter(chunk_size=50, chunk_overlap=10, tokenizer="cl100k_base", separator="\n"),
    lambda: SentenceSplitter(chunk_size=60, chunk_overlap=10),  # default (HF WordPiece) tokenizer
    # a one-character separator below the first level (" " then "\n"): whole-text cuts per parent
    lambda: TokenTextSplitter(chunk_size=40, chunk_overlap=8, tokenizer="cl100k_base"),
]


@given(text=any_text, which=st.integers(0, len(SPLITTERS) - 1))
@settings(max_examples=150, deadline=None)
def test_whole_text_cuts_equal_windowed(text, which):
    splitter = SPLITTERS[which]()
    assert _spans(splitter, text, True) == _spans(splitter, text, False)


def test_whole_text_cuts_equal_windowed_real(real_texts):
    for make in SPLITTERS[:3] + SPLITTERS[4:]:
        splitter = make()
        for text in real_texts[::2]:
            assert _spans(splitter, text, True) == _spans(splitter, text, False)


@pytest.mark.parametrize("prev_next", [True, False])
def test_node_ids_and_link_hashes_equal_plain_forms(prev_next, real_texts):
    splitter = SentenceSplitter(
        chunk_size=128, chunk_overlap=20, tokenizer="cl100k_base", include_prev_next_rel=prev_next
    )
    doc = Document(
        text=real_texts[0][:6000] + "\n" + real_texts[-1][:3000] + "\ud800 tail",
        id_="doc-x",
        metadata={"file_name": "a.md", "mtime": 5, "secret": "s"},
        excluded_embed_metadata_keys=["mtime", "secret"],
        excluded_llm_metadata_keys=["mtime"],
    )
    nodes = splitter.get_nodes_from_documents([doc])
    assert len(nodes) > 3
    for i, n in enumerate(nodes):
        assert n.id_ == splitter._node_id(i, doc.id_, n.start_char_idx, n.end_char_idx, n.text)
        assert n.relationships[NodeRelationship.SOURCE].hash == doc.hash
        assert n.get_content(MetadataMode.NONE) == n.text
        if prev_next:
            if i > 0:
                info = n.relationships[NodeRelationship.PREVIOUS]
                assert (info.node_id, info.hash, info.node_type) == (
                    nodes[i - 1].id_,
                    nodes[i - 1].hash,
                    nodes[i - 1].get_type(),
                )
            if i + 1 < len(nodes):
                info = n.relationships[NodeRelationship.NEXT]
                assert (info.node_id, info.hash) == (nodes[i + 1].id_, nodes[i + 1].hash)
        else:
            assert set(n.relationships) == {NodeRelationship.SOURCE}
    # nodes do not share mutable parts
    nodes[0].metadata["x"] = 1
    nodes[0].excluded_embed_metadata_keys.append("x")
    assert "x" not in nodes[1].metadata and "x" not in nodes[1].excluded_embed_metadata_keys


def test_many_documents_pipeline_matches_one_by_one(real_texts):
    """Tokenizing in small batches ahead of packing gives the same nodes as one document at a time."""
    splitter = SentenceSplitter(chunk_size=100, chunk_overlap=20, tokenizer="cl100k_base")
    docs = [Document(text=t, id_=f"d{i}") for i, t in enumerate(real_texts * 3)]
    together = splitter.get_nodes_from_documents(docs)
    apart = [n for d in docs for n in splitter.get_nodes_from_documents([d])]
    assert [(n.id_, n.text, n.start_char_idx) for n in together] == [(n.id_, n.text, n.start_char_idx) for n in apart]


@pytest.mark.parametrize("prev_next", [True, False])
def test_format_parser_nodes_equal_plain_forms(prev_next):
    """The one node builder with per-piece metadata (Markdown's hidden ``header_path``): ids are
    the one id function's, and PREVIOUS/NEXT equal the neighbours' ``as_related_node_info()``."""
    from ragloom.node_parser import MarkdownNodeParser

    parser = MarkdownNodeParser(chunk_size=48, tokenizer="cl100k_base", include_prev_next_rel=prev_next)
    text = "# A\n\nintro text.\n\n## B\n\n" + "Some words here. " * 40 + "\n\n## C\n\nlast \ud800 bit."
    doc = Document(
        text=text,
        id_="md-x",
        metadata={"file_name": "a.md", "mtime": 5},
        excluded_embed_metadata_keys=["mtime"],
        excluded_llm_metadata_keys=["mtime"],
    )
    nodes = parser.get_nodes_from_documents([doc])
    assert len(nodes) > 3 and len({repr(n.metadata) for n in nodes}) > 1
    for i, n in enumerate(nodes):
        assert n.id_ == parser._node_id(i, doc.id_, n.start_char_idx, n.end_char_idx, n.text)
        assert n.relationships[NodeRelationship.SOURCE] == doc.as_related_node_info()
        if prev_next:
            if i > 0:
                assert n.relationships[NodeRelationship.PREVIOUS] == nodes[i - 1].as_related_node_info()
            if i + 1 < len(nodes):
                assert n.relationships[NodeRelationship.NEXT] == nodes[i + 1].as_related_node_info()
        else:
            assert set(n.relationships) == {NodeRelationship.SOURCE}


# -- chunks counted in batches; counts proved by bytes; sentence cuts per block --------------------

BATCH_SPLITTERS = [
    lambda: SentenceSplitter(chunk_size=40, chunk_overlap=10, tokenizer="cl100k_base"),
    lambda: TokenTextSplitter(chunk_size=30, chunk_overlap=6, tokenizer="cl100k_base"),
    lambda: SentenceSplitter(chunk_size=48, chunk_overlap=8, tokenizer="o200k_base"),
    lambda: SentenceSplitter(chunk_size=50, chunk_overlap=10),  # default (HF WordPiece) tokenizer
]


def _nodes(splitter, text, batch):
    orig = engine._COUNT_BATCH
    engine._COUNT_BATCH = batch
    try:
        doc = Document(text=text, id_="d", metadata={"title": "t " * 5, "file_name": "a b.md"})
        return [(n.start_char_idx, n.end_char_idx) for n in splitter.get_nodes_from_documents([doc])]
    finally:
        engine._COUNT_BATCH = orig


@given(text=any_text, which=st.integers(0, len(BATCH_SPLITTERS) - 1))
@settings(max_examples=150, deadline=None)
def test_counting_chunks_in_batches_equals_counting_each_one(text, which):
    """The packer chooses up to ``_COUNT_BATCH`` chunks before counting them exactly; a chunk over
    budget sends it back to the state that chunk was chosen in.  The nodes are those of a packer
    that counts every chunk as it chooses it (batch of 1), metadata wrappers included."""
    splitter = BATCH_SPLITTERS[which]()
    assert _nodes(splitter, text, 16) == _nodes(splitter, text, 1)


def test_counting_chunks_in_batches_on_real_text(real_texts):
    for make in BATCH_SPLITTERS[:2]:
        splitter = make()
        for text in real_texts[::3]:
            assert _nodes(splitter, text[:12000], 16) == _nodes(splitter, text[:12000], 1)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@given(text=any_text, data=st.data())
@settings(max_examples=100, deadline=None)
def test_first_over_equals_exact_counts(name, text, data):
    """``ExactCounter.first_over`` (edges, or a short chunk whole, bounded by their UTF-8 bytes,
    encoded only when the bound does not prove a fit) finds the same first span over the limit as
    counting every wrapped span."""
    from ragloom.tokenizers import get_tokenizer

    tok = get_tokenizer(name)
    sizer = engine.make_sizers(tok, [text])[0]
    counter = engine.ExactCounter(tok, sizer)
    n = len(text)
    spans = []
    for _ in range(data.draw(st.integers(1, 6))):
        a = data.draw(st.integers(0, n))
        spans.append((a, data.draw(st.integers(a, n))))
    wrappers = data.draw(st.sampled_from([[("", "")], [("title: a b\n\n", "")], [("", ""), ("x: 中文\n\n", "\n\ny")]]))
    limit = data.draw(st.integers(0, 80))
    exact = [max(tok.count(p + text[a:b] + s) for p, s in wrappers) for a, b in spans]
    want = next((k for k, c in enumerate(exact) if c > limit), None)
    assert counter.first_over(spans, wrappers, limit) == want


BLOCKY = ALPHABET + ["\n\n", "\n\n\n\n", "Mr. Smith left.", "\n"]


@given(text=st.lists(st.sampled_from(BLOCKY), max_size=200).map("".join))
@settings(max_examples=200, deadline=None)
def test_sentence_cuts_are_local_to_blocks(text):
    """The sentence level cuts after every blank line (each ``"\\n\\n"``), and its cuts inside a
    block are those of the block alone: the engine can query a block whole, whatever window."""
    level = SentenceLevel()
    n = len(text)
    whole = level.find(text, 0, n)
    edges = sorted({i + 2 for i in range(n - 1) if text.startswith("\n\n", i)} - {n})
    assert set(edges) <= set(whole)
    bounds = [0] + edges + [n]
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        assert level.find(text, lo, hi) == [c for c in whole if lo < c < hi]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_a_letter_newer_than_tiktokens_unicode_is_no_cut(name):
    """U+323B0 (CJK extension J, Unicode 17) is a letter to the ``regex`` module but not to tiktoken's
    tables: a cut after it changes the count.  The safe positions skip it (found by a trial run)."""
    from ragloom.tokenizers import get_tokenizer

    tok = get_tokenizer(name)
    line = "x" * 46 + "." + "x" * 16 + "\U000323b0" + ",x中x"
    counter = engine.ExactCounter(tok, engine.make_sizers(tok, [line])[0])
    assert counter.count(0, len(line)) == tok.count(line)
    splitter = TokenTextSplitter(chunk_size=19, chunk_overlap=0, tokenizer=name, keep_whitespaces=True)
    assert max(tok.count(c) for c in splitter.split_text("\n".join([line] * 3))) <= 19


def test_a_lone_surrogate_does_not_stop_sentence_detection():
    """sentencex rejects a lone surrogate; the sentence level segments U+FFFD in its place (same
    length, so the cuts are the text's)."""
    text = "abc \ud800 def. " * 10
    splitter = SentenceSplitter(chunk_size=32, chunk_overlap=0, tokenizer="cl100k_base")
    spans = splitter.split_spans(text)
    assert len(spans) > 1 and all(text[a:b].strip() for a, b in spans)
    level = SentenceLevel()
    assert level.find(text, 0, len(text)) == level.find(text.replace("\ud800", "\ufffd"), 0, len(text))


@pytest.mark.parametrize("name", ["cl100k_base", "hf"])
def test_surrogate_pairs_keep_offsets_and_do_not_shift_later_documents(name):
    """A high surrogate followed by a low one is two characters of the document; tokenizing a batch
    once joined them into one, so the token starts of every later document in the batch were one
    character early (a trial found a chunk of 33 tokens at chunk_size 32, and spans that differed
    from splitting each document alone)."""
    from ragloom.tokenizers import get_default_tokenizer, get_tokenizer

    tok = get_default_tokenizer() if name == "hf" else get_tokenizer(name)
    texts = [
        "\ud800\udc00" * 3,
        "向宝玉道且随宝玉恍恍册，又随警幻来至后面。但见画栋雕檐，珠\n\n----------------------- Page 24---------------",
        "\ud83d\ude00 ok. " * 5 + "abc def ghi.",
        "一二三四五六七八九十" * 4,
    ]
    docs = [Document(text=t, id_=f"d{i}") for i, t in enumerate(texts)]
    for splitter in (
        SentenceSplitter(chunk_size=32, chunk_overlap=0, tokenizer=tok),
        SentenceSplitter(chunk_size=8, chunk_overlap=2, tokenizer=tok),
        TokenTextSplitter(chunk_size=8, chunk_overlap=2, tokenizer=tok),
    ):
        together = splitter.get_nodes_from_documents(docs)
        alone = [n for d in docs for n in splitter.get_nodes_from_documents([d])]
        assert [(n.id_, n.start_char_idx, n.end_char_idx) for n in together] == [
            (n.id_, n.start_char_idx, n.end_char_idx) for n in alone
        ]
        by_id = {d.id_: d.text for d in docs}
        for n in together:
            assert by_id[n.ref_doc_id][n.start_char_idx : n.end_char_idx] == n.text
            assert tok.count(n.text) <= splitter.chunk_size


# sorted token starts with repeats (several tokens starting in one character: an emoji in cl100k)
_starts = st.lists(st.integers(0, 60), max_size=40).map(sorted)


@given(starts=_starts, a=st.integers(-2, 62), b=st.integers(-2, 62), budget=st.integers(1, 45))
@settings(max_examples=300, deadline=None)
def test_offset_sizer_searches_equal_their_plain_forms(starts, a, b, budget):
    """``OffsetSizer``'s searches (bounded by ``max_per_char``, one search for a chunk's end, the
    previous start compared instead of a second search) equal their definitions on the starts."""
    n = 61
    # at most max_per_char starts in one character (the bound tokens() relies on)
    if any(starts.count(x) > 4 for x in set(starts)):
        starts = sorted(set(starts))
    sizer = engine.OffsetSizer("x" * n, starts, max_per_char=4)
    assert sizer.tokens(a, b) == (sum(a <= s < b for s in starts) if b > a else 0)
    a = max(0, min(a, n - 1))
    straddle = 1 if budget > 1 and sizer.straddles(a) else 0
    assert sizer.chunk_limit(a, budget) == sizer.limit(a, budget - straddle)
    # back_limit: the definition it was written from (a second search for the start's first token)
    k = bisect.bisect_left(starts, b)
    j = k - budget
    if j <= 0:
        want = 0 if k <= budget else starts[0]
    else:
        want = starts[j]
        if bisect.bisect_left(starts, want) < j:
            r = bisect.bisect_right(starts, want)
            want = starts[r] if r < k else b
    assert sizer.back_limit(b, budget) == want


def test_an_ascii_block_after_a_cjk_character_keeps_its_terminator():
    """The CJK-terminator pattern looks behind ``lo``: ``!`` after ``中`` ends a sentence even when the
    queried range itself is ASCII (the ASCII shortcut must not skip it; found by review)."""
    level = SentenceLevel()
    text = "中!abc def. Ghi jkl."
    assert level.find(text, 1, len(text)) == level.find_reference(text, 1, len(text)) == [2, 11]
    splitter = SentenceSplitter(chunk_size=4, chunk_overlap=0, paragraph_separator="中", tokenizer="cl100k_base")
    assert splitter.split_text("前言中!abcdef ghijkl mnopqr. Ghi jkl.")[:2] == ["前言中!", "abcdef ghijkl"]


def test_a_lone_surrogate_in_metadata_does_not_abort_the_batch():
    """UTF-8 has no form for a lone surrogate, and the metadata half of a node's hash once raised
    ``UnicodeEncodeError`` for one, aborting every document of the call.  Now each document gets
    its nodes, the PREVIOUS/NEXT links carry the hash the neighbour itself reports, and metadata
    differing only in which surrogate it holds hashes differently."""
    body = "Tea is brewed. " * 40
    docs = [
        Document(id_="good", text=body, metadata={"file_name": "ok.txt"}),
        Document(id_="bad", text=body, metadata={"file_name": "b\udc80d.txt", "tags": ["x\ud800"], "k\udc81": 1}),
        Document(id_="bad2", text=body, metadata={"file_name": "b\udc81d.txt", "tags": ["x\ud800"], "k\udc81": 1}),
    ]
    splitter = SentenceSplitter(chunk_size=32, chunk_overlap=0, tokenizer="cl100k_base")
    nodes = splitter.get_nodes_from_documents(docs)
    by_doc = {d.id_: [n for n in nodes if n.ref_doc_id == d.id_] for d in docs}
    assert all(len(v) > 1 for v in by_doc.values())
    for group in by_doc.values():
        for prev, nxt in zip(group, group[1:], strict=False):
            assert prev.next_node.hash == nxt.hash and nxt.prev_node.hash == prev.hash
    assert by_doc["bad"][0].hash != by_doc["bad2"][0].hash != by_doc["good"][0].hash
    # a literal backslash escape is other metadata than the surrogate it spells
    spelled = Document(id_="bad", text=body, metadata={"file_name": "b\\udc80d.txt", "tags": ["x\\ud800"],
                                                        "k\\udc81": 1})
    assert spelled.hash != docs[1].hash


def test_ordinary_metadata_hashes_as_before():
    """Hashes of metadata without surrogates are msgspec's sorted JSON as before the surrogate
    fallback (a value computed by the earlier code): stored indexes see no change."""
    node = Document(text="abc", metadata={"a": 1, "b": "x", "c": [1.5, None]})
    assert node.hash == "0853399c6b453a739053ad3501462f0d7eaa864486972395d71312b03ac44deb"


def test_a_documents_metadata_header_is_encoded_once_per_call(monkeypatch):
    """The embedded metadata header is checked against the budget, sized for packing and cut at
    its last safe position for the edge counts; all three once encoded it (three tokenizer calls
    on a string of up to chunk_size tokens, per document).  Now one encoding serves them, and every
    chunk still fits with its header, counted whole."""
    from ragloom.tokenizers import get_tokenizer

    tok = get_tokenizer("cl100k_base")
    seen: list = []
    plain = tok.encode_ordinary

    def spy(text):
        seen.append(text)
        return plain(text)

    monkeypatch.setattr(tok, "encode_ordinary", spy)
    docs = [
        Document(
            id_=f"d{i}",
            text=" ".join(f"Sentence {j} of document {i} is about tea." for j in range(60)),
            metadata={"file_path": f"/data/tea/notes_{i}.md", "title": f"Notes on tea, part {i}"},
        )
        for i in range(3)
    ]
    nodes = SentenceSplitter(chunk_size=48, chunk_overlap=8, tokenizer=tok).get_nodes_from_documents(docs)
    assert len(nodes) > 9
    headers = [t for t in seen if "file_path:" in t]
    assert len(headers) == len(docs), headers
    for n in nodes:  # every chunk fits with its header, counted whole
        assert len(plain(n.get_content(MetadataMode.EMBED))) <= 48


@pytest.mark.parametrize("cls", [SentenceSplitter, TokenTextSplitter])
def test_a_header_leaving_three_tokens_still_splits_a_word_cut_inside_its_token(cls):
    """With 3 tokens of room, a chunk starting at "architectures" (inside the size model's token
    " architect") re-tokenizes into "arch", "itect": two more than the model counts, not one.  The
    packer shrank the chunk by the whole excess at once, reached 0 and refused the document ("one
    character may need several tokens") where a 1-token budget fits; it now tries every budget
    down to one token.  A header that leaves no room for the first token names the document."""
    from ragloom.tokenizers import get_tokenizer

    tok = get_tokenizer("cl100k_base")
    text = 'Technically, Deep Learning model architectures">models</dfn>.'
    doc = Document(id_="doc-7", text=text, metadata={"title": "word " * 58})
    nodes = cls(chunk_size=64, chunk_overlap=16, tokenizer=tok).get_nodes_from_documents([doc])
    assert max(tok.count(n.get_content(MetadataMode.EMBED)) for n in nodes) <= 64
    assert all(text[n.start_char_idx : n.end_char_idx] == n.text for n in nodes)
    assert "architectures" in "".join(n.text for n in nodes)
    full = Document(id_="doc-8", text=text, metadata={"title": "word " * 60})
    with pytest.raises(ValueError, match=r"document 'doc-8': cannot fit the text at char \d+ into chunk_size 64: "
                                         r"with the embedded metadata \(63 tokens\)"):
        cls(chunk_size=64, chunk_overlap=16, tokenizer=tok).get_nodes_from_documents([full])


def test_a_format_parser_refusal_names_the_document():
    """The Markdown, HTML, JSON and code parsers raised a bare ``ValueError`` ("cannot fit text at
    char …") when the metadata left no room, naming no document; it is a ``DocumentError`` now."""
    from ragloom.errors import DocumentError
    from ragloom.node_parser import MarkdownNodeParser

    doc = Document(id_="doc-9", text="# Title\n\nSome text here about tea and more words.\n",
                   metadata={"title": "word " * 60})
    with pytest.raises(DocumentError, match=r"document 'doc-9': cannot fit the text at char \d+ into chunk_size 64"):
        MarkdownNodeParser(chunk_size=64, tokenizer="cl100k_base").get_nodes_from_documents([doc])
