"""PromptHelper: repack / truncate measured in the LLM's tokenizer (property tests with hypothesis)."""

import re
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragloom import PromptHelper, PromptTemplate
from ragloom.llms import LLMMetadata, MockLLM
from ragloom.tokenizers import get_tokenizer

TOK = get_tokenizer("cl100k_base")
QA = PromptTemplate("Context:\n{context_str}\nQuestion: {query_str}\nAnswer: ").partial_format(query_str="what is it?")

# words from English, Chinese, emoji and odd whitespace, so cuts land next to multi-byte characters
WORDS = st.sampled_from(
    [
        "tea", "water", "temperature", "80°C", "绿茶", "用", "的水。", "泡茶", "🍵", "👩‍👩‍👧", "é", "naïve", "\n",
        "\n\n", "  ", "x" * 30, "中文句子，逗号",
    ]
)
TEXT = st.lists(WORDS, min_size=0, max_size=120).map(lambda ws: " ".join(ws))
CHUNKS = st.lists(TEXT, min_size=0, max_size=8)
PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _helper(window, num_output=20, ratio=0.1, limit=None):
    return PromptHelper(context_window=window, num_output=num_output, chunk_overlap_ratio=ratio,
                        chunk_size_limit=limit, tokenizer=TOK)


def _nows(s):
    return re.sub(r"\s+", "", s)


@PROPS
@given(chunks=CHUNKS, window=st.integers(min_value=60, max_value=400), ratio=st.sampled_from([0.0, 0.1, 0.5]))
def test_every_repacked_piece_fits(chunks, window, ratio):
    helper = _helper(window, ratio=ratio)
    pieces = helper.repack(QA, chunks)
    budget = window - 20 - helper.prompt_tokens(QA)
    for piece in pieces:
        assert piece.strip() == piece and piece
        # the filled prompt fits the window minus the output budget
        assert TOK.count(QA.format(context_str=piece)) <= window - 20
        assert TOK.count(piece) <= budget - 5
    if any(c.strip() for c in chunks):
        assert pieces
    else:
        assert pieces == []


@PROPS
@given(chunks=CHUNKS, window=st.integers(min_value=60, max_value=400))
def test_repack_loses_no_text(chunks, window):
    """Without overlap, the pieces are the joined chunks cut apart: same non-space text, in order."""
    pieces = _helper(window, ratio=0.0).repack(QA, chunks)
    assert _nows("".join(pieces)) == _nows("".join(chunks))


@PROPS
@given(chunks=CHUNKS, window=st.integers(min_value=60, max_value=400))
def test_repack_with_overlap_covers_text_in_order(chunks, window):
    helper = _helper(window, ratio=0.3)
    pieces = helper.repack(QA, chunks)
    joined = "\n\n".join(c.strip() for c in chunks if c.strip())
    spans = helper.get_text_splitter_given_prompt(QA).split_spans(joined)
    assert pieces == [joined[a:b] for a, b in spans]  # every piece is a slice of the joined text
    covered_to = 0
    for prev, (a, b) in pairwise([(0, 0)] + spans):
        assert a >= prev[0] and b > prev[1], "pieces advance"
        assert not joined[covered_to:a].strip(), "no non-space text skipped between pieces"
        covered_to = b
    assert not joined[covered_to:].strip()


@PROPS
@given(chunks=st.lists(TEXT, min_size=1, max_size=6), window=st.integers(min_value=150, max_value=500))
def test_truncate_fits_and_keeps_prefixes(chunks, window):
    helper = _helper(window)
    cut = helper.truncate(QA, chunks)
    assert len(cut) == len(chunks)
    share = (window - 20 - helper.prompt_tokens(QA)) // len(chunks) - 5
    for original, piece in zip(chunks, cut, strict=True):
        assert original.startswith(piece)
        assert TOK.count(piece) <= share
        if TOK.count(original) <= share:
            assert piece == original
    filled = QA.format(context_str="\n".join(cut))
    assert TOK.count(filled) <= window - 20


def test_truncate_cuts_at_token_boundaries_never_inside_a_character():
    helper = _helper(200)
    text = "🍵" * 50  # each emoji is several cl100k tokens
    for budget in range(0, 20):
        piece = helper.truncate_text(text, budget)
        assert set(piece) <= {"🍵"} and TOK.count(piece) <= budget
        ends = {e for _, e in TOK.encode_offsets(text)}
        assert len(piece) in ends or piece == ""


def test_repack_packs_small_chunks_into_one_piece_and_splits_big_ones():
    helper = _helper(300)
    small = [f"fact {i}: green tea likes cooler water." for i in range(5)]
    assert helper.repack(QA, small) == ["\n\n".join(small)]
    big = ["word " * 1000]
    pieces = helper.repack(QA, big)
    assert len(pieces) > 3
    assert len(pieces) <= 1000 // (300 - 20 - helper.prompt_tokens(QA) - 5) + 2


def test_prompt_alone_over_the_window_says_by_how_much():
    helper = PromptHelper(context_window=50, num_output=10, tokenizer=TOK)
    prompt = PromptTemplate("word " * 60 + "{context_str}")
    over = helper.prompt_tokens(prompt) - 40
    with pytest.raises(ValueError, match=rf"{over} more than the 40 available"):
        helper.repack(prompt, ["text"])
    with pytest.raises(ValueError, match="more than the 40 available"):
        helper.truncate(prompt, ["text"])


def test_too_many_chunks_for_truncate():
    helper = PromptHelper(context_window=60, num_output=10, tokenizer=TOK)
    with pytest.raises(ValueError, match="no room for text"):
        helper.truncate("{context_str}", ["a"] * 30)


def test_chunk_size_limit_caps_pieces():
    helper = PromptHelper(
        context_window=4000, num_output=10, chunk_size_limit=20, chunk_overlap_ratio=0.0, tokenizer=TOK
    )
    pieces = helper.repack(QA, ["one two three " * 40])
    assert len(pieces) >= 6 and all(TOK.count(p) <= 20 for p in pieces)


def test_system_prompt_is_counted():
    llm = MockLLM()
    llm.system_prompt = "You are careful. " * 10
    helper = _helper(300)
    assert helper.prompt_tokens(QA, llm=llm) == helper.prompt_tokens(QA) + TOK.count(llm.system_prompt + "\n\n")


def test_from_llm_metadata_and_from_llm():
    h = PromptHelper.from_llm_metadata(LLMMetadata(context_window=1000, num_output=100), tokenizer="cl100k_base")
    assert (h.context_window, h.num_output) == (1000, 100)
    h = PromptHelper.from_llm(MockLLM(max_tokens=32, context_window=512))
    assert (h.context_window, h.num_output) == (512, 32)
    assert h.tokenizer.name == MockLLM().get_tokenizer().name


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"context_window": 0}, "context_window"),
        ({"num_output": -1}, "num_output"),
        ({"context_window": 100, "num_output": 100}, "num_output"),
        ({"chunk_overlap_ratio": 1.0}, "chunk_overlap_ratio"),
        ({"chunk_overlap_ratio": -0.1}, "chunk_overlap_ratio"),
        ({"chunk_size_limit": 0}, "chunk_size_limit"),
        ({"separator": ""}, "separator"),
    ],
)
def test_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        PromptHelper(**kwargs)
