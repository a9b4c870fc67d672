"""``SemanticSplitterNodeParser``: embedding-distance boundaries under a hard token limit."""

import zlib
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from invariants import assert_invariants, texts_of

from ragloom.embeddings import BaseEmbedding
from ragloom.node_parser import SemanticSplitterNodeParser
from ragloom.node_parser.text.semantic import semantic_breakpoints
from ragloom.schema import Document, MetadataMode
from ragloom.tokenizers import get_default_tokenizer


class HashEmbedding(BaseEmbedding):
    """Cheap deterministic vectors (hashed character bigrams); counts calls."""

    def __init__(self, limit=64, dim=64):
        super().__init__(model_name="hash-bigrams", embed_batch_size=16)
        self.limit, self.dim = limit, dim
        self.array_calls = 0
        self.texts_embedded = 0

    @property
    def max_text_tokens(self):
        return self.limit

    @property
    def dimension(self):
        return self.dim

    def get_tokenizer(self):
        return get_default_tokenizer()

    def get_text_embedding_batch_array(self, texts, show_progress=False):
        self.array_calls += 1
        return super().get_text_embedding_batch_array(texts, show_progress)

    def _get_text_embeddings(self, texts):
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for a, b in pairwise(t):
                out[i, zlib.crc32((a + b).encode("utf-8", "surrogatepass")) % self.dim] += 1.0
        return out


TOPICS = {"cat": 0, "purr": 0, "kitten": 0, "stock": 1, "market": 1, "bond": 1, "leaf": 2, "plant": 2, "sun": 2}


class TopicEmbedding(HashEmbedding):
    """One axis per topic keyword family: distances are 0 within a topic, large across."""

    def _get_text_embeddings(self, texts):
        self.texts_embedded += len(texts)
        out = np.full((len(texts), 4), 0.01, dtype=np.float32)
        for i, t in enumerate(texts):
            for w, k in TOPICS.items():
                out[i, k] += t.lower().count(w)
        return out


TOPIC_TEXT = (
    "The cat sleeps. A kitten plays. Cats purr loudly. My cat is old. "
    "The stock market fell. Bond prices rose. The market is nervous. Stock traders sold. "
    "A leaf needs sun. The plant grows. Sun feeds the leaf. Every plant drinks."
)


def test_breakpoints_at_topic_changes_in_one_batched_call():
    emb = TopicEmbedding(limit=200)
    parser = SemanticSplitterNodeParser(emb, buffer_size=0, breakpoint_percentile_threshold=80)
    doc = Document(text=TOPIC_TEXT, id_="t")
    nodes = assert_invariants(parser, doc, tokenizer=parser.tokenizer, chunk_size=200)
    assert texts_of(nodes) == [
        "The cat sleeps. A kitten plays. Cats purr loudly. My cat is old.",
        "The stock market fell. Bond prices rose. The market is nervous. Stock traders sold.",
        "A leaf needs sun. The plant grows. Sun feeds the leaf. Every plant drinks.",
    ]
    emb.array_calls = 0
    parser.get_nodes_from_documents([doc, Document(text=TOPIC_TEXT + " Extra cat.", id_="u")])
    assert emb.array_calls == 1, "all sentence groups of all documents in one batched call"


def test_semantic_breakpoints_rule():
    e = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [1, 1]], dtype=np.float32)
    # distances: 0, 1, 0, 1 - 1/sqrt(2); the 50th percentile is ~0.15
    assert semantic_breakpoints(e, 50) == [1, 3]
    assert semantic_breakpoints(e, 100) == []
    assert semantic_breakpoints(e[:1], 50) == []
    assert semantic_breakpoints(np.zeros((3, 2)), 50) == []  # all distances equal: no break


def test_homogeneous_text_is_budgeted_not_one_chunk():
    emb = HashEmbedding(limit=40)
    text = "The same sentence again and again. " * 200
    parser = SemanticSplitterNodeParser(emb)
    nodes = assert_invariants(parser, Document(text=text, id_="h"), tokenizer=parser.tokenizer, chunk_size=40)
    assert len(nodes) > 10
    assert emb.texts_embedded < 10, "identical groups are embedded once"


def test_defaults_and_validation():
    emb = HashEmbedding(limit=77)
    parser = SemanticSplitterNodeParser.from_defaults(embed_model=emb)
    assert parser.max_chunk_size == 77 and parser.buffer_size == 1 and parser.breakpoint_percentile_threshold == 95
    assert SemanticSplitterNodeParser(emb, max_chunk_size=30).max_chunk_size == 30
    for kwargs in ({"buffer_size": -1}, {"breakpoint_percentile_threshold": 101}, {"max_chunk_size": 0}):
        with pytest.raises(ValueError):
            SemanticSplitterNodeParser(emb, **kwargs)
    with pytest.raises(ValueError):
        SemanticSplitterNodeParser(embed_model="not a model")
    assert parser([Document(text="", id_="e"), Document(text=" \n ", id_="f")]) == []
    assert parser.split_text("One sentence only.") == ["One sentence only."]


def test_custom_sentence_splitter():
    emb = TopicEmbedding(limit=200)
    parser = SemanticSplitterNodeParser(emb, buffer_size=0, breakpoint_percentile_threshold=80,
                                        sentence_splitter=lambda t: t.split(". "))
    chunks = parser.split_text(TOPIC_TEXT)
    assert len(chunks) == 3 and chunks[1].startswith("The stock market") and chunks[0].endswith("old.")


# -- properties (cheap deterministic model) ---------------------------------------------

PIECES = [
    "The", "cat", "stock", "leaf", "Dr.", "p.m.", "张三说", "今天下雨了", "孙悟空", ".", ",", "!", "。", "，", "；",
    "😀", " ", "\n", "\n\n", "\u3000", "x" * 25,
]
text_st = st.one_of(st.lists(st.sampled_from(PIECES), max_size=150).map("".join),
                    st.lists(st.sampled_from(PIECES), max_size=80).map(" ".join), st.text(max_size=80))


@given(text=text_st, limit=st.integers(24, 80), buffer_size=st.integers(0, 2), pct=st.floats(0, 100),
       meta=st.sampled_from([{}, {"title": "A title"}]))
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_invariants(text, limit, buffer_size, pct, meta):
    emb = HashEmbedding(limit=limit)
    parser = SemanticSplitterNodeParser(emb, buffer_size=buffer_size, breakpoint_percentile_threshold=pct)
    doc = Document(text=text, id_="doc-1", metadata=meta)
    nodes = assert_invariants(parser, doc, tokenizer=parser.tokenizer, chunk_size=limit)
    assert bool(nodes) == bool(text.strip())
    assert all(n.text == n.text.strip() and n.text for n in nodes)
    assert emb.array_calls <= 2  # one batched call per run (two runs)


# -- the real bundled model ---------------------------------------------------------------


@pytest.fixture(scope="module")
def real_model():
    from ragloom.embeddings import HuggingFaceEmbedding

    return HuggingFaceEmbedding()


@pytest.mark.slow
def test_real_model_topic_text(real_model):
    parser = SemanticSplitterNodeParser(real_model, buffer_size=1, breakpoint_percentile_threshold=70)
    doc = Document(text=TOPIC_TEXT, id_="t", metadata={"title": "Topics"})
    nodes = assert_invariants(parser, doc, tokenizer=real_model.get_tokenizer(), chunk_size=real_model.max_text_tokens)
    assert 2 <= len(nodes) <= 6


@pytest.mark.slow
def test_real_model_homogeneous_20k_tokens(real_model):
    """Regression: a homogeneous 20,000-token text (no distance stands out) must not come
    out as one 20k-token chunk; every chunk fits the model's limit, metadata included."""
    sentences = [
        "The river flows slowly through the green valley near the old stone bridge.",
        "Farmers in the valley grow wheat and barley along the river banks every year.",
        "In spring the river rises and the fields by the bridge turn bright green.",
        "Children from the village fish in the river below the stone bridge in summer.",
    ]
    tok = real_model.get_tokenizer()
    text = " ".join(sentences * 340)
    assert tok.count(text) >= 20_000
    doc = Document(text=text, id_="river", metadata={"title": "The valley"})
    parser = SemanticSplitterNodeParser(real_model)
    assert parser.max_chunk_size == real_model.max_text_tokens
    nodes = parser.get_nodes_from_documents([doc])
    assert_invariants(parser, doc, tokenizer=tok, chunk_size=parser.max_chunk_size, nodes=nodes)
    assert len(nodes) >= 20_000 // parser.max_chunk_size
    assert max(tok.count(n.get_content(MetadataMode.EMBED)) for n in nodes) <= parser.max_chunk_size


@pytest.mark.slow
def test_real_model_distinct_homogeneous_sentences(real_model):
    """Distinct (non-repeating) sentences on one topic: every group is embedded, in batches."""
    text = " ".join(f"Sensor {i} in hall {i % 7} reported {20 + i % 9} degrees at noon." for i in range(64))
    calls = []
    orig = real_model._get_text_embeddings

    def spy(texts):
        calls.append(len(texts))
        return orig(texts)

    real_model._get_text_embeddings = spy
    try:
        parser = SemanticSplitterNodeParser(real_model, max_chunk_size=100)
        nodes = parser.get_nodes_from_documents([Document(text=text, id_="s")])
    finally:
        del real_model._get_text_embeddings
    assert sum(calls) == 64 and len(calls) <= 64 // real_model.embed_batch_size + 1
    assert_invariants(parser, Document(text=text, id_="s"), tokenizer=parser.tokenizer, chunk_size=100, nodes=nodes)


def test_a_refusal_names_the_document():
    """As in the window parser: no room for one token next to the metadata raised a bare
    ``ValueError``; it is a ``DocumentError`` naming the document now."""
    from ragloom.errors import DocumentError

    doc = Document(id_="doc-s", text='Technically, Deep Learning model architectures">models</dfn>.',
                   metadata={"title": "word " * 60})
    parser = SemanticSplitterNodeParser(HashEmbedding(), max_chunk_size=64, tokenizer="cl100k_base")
    with pytest.raises(DocumentError, match=r"document 'doc-s': cannot fit the text at char \d+ into chunk_size 64"):
        parser.get_nodes_from_documents([Document(id_="ok", text="Fine. Short."), doc])
