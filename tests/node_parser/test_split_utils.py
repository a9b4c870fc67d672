"""The split helpers users call directly (``ragloom.node_parser.text.utils``)."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.node_parser import (
    split_by_char,
    split_by_phrase_regex,
    split_by_regex,
    split_by_sentence_tokenizer,
    split_by_sep,
)
from ragloom.node_parser.text.utils import split_text_keep_separator

REF = "张三说：“今天下雨了。”李四点头。Dr. Smith arrived at 5 p.m. He left."

alphabet = st.sampled_from(list("ab ,.;。，？！\n") + ["Dr.", "你好", "😀", "e.g.", "\u3000"])
hostile = st.one_of(st.lists(alphabet, max_size=60).map("".join), st.text(max_size=60))

FACTORIES = {
    "sep_space": lambda: split_by_sep(" "),
    "sep_para": lambda: split_by_sep("\n\n"),
    "char": split_by_char,
    "regex": lambda: split_by_regex(r"[^,.;]+[,.;]?"),
    "phrase": split_by_phrase_regex,
    "sentence": split_by_sentence_tokenizer,
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
@given(text=hostile)
@settings(max_examples=60, deadline=None)
def test_pieces_concatenate_back(name, text):
    pieces = FACTORIES[name]()(text)
    assert "".join(pieces) == text
    assert all(pieces), "no empty pieces"


def test_split_by_sep_keeps_separator_on_following_piece():
    assert split_by_sep(" ")("a b  c") == ["a", " b", " ", " c"]
    assert split_text_keep_separator("x||y||", "||") == ["x", "||y", "||"]


def test_split_by_sep_without_keep_sep_is_str_split():
    fn = split_by_sep(" ", keep_sep=False)
    assert fn("a b  c") == ["a", "b", "", "c"]
    assert " ".join(fn("a b  c")) == "a b  c"


def test_empty_separator_is_an_error():
    with pytest.raises(ValueError):
        split_by_sep("")


def test_split_by_regex_keeps_unmatched_text():
    # re.findall would drop the second comma; the split keeps it
    assert re.findall(r"[^,.;]+[,.;]?", "a,,b. c") == ["a,", "b.", " c"]
    assert split_by_regex(r"[^,.;]+[,.;]?")("a,,b. c") == ["a,", ",b.", " c"]


def test_phrase_regex_chinese():
    assert split_by_phrase_regex()("你好。我们走吧！好") == ["你好。", "我们走吧！", "好"]


def test_sentence_tokenizer_cjk_and_english():
    got = [p.strip() for p in split_by_sentence_tokenizer()(REF)]
    assert got == ["张三说：“今天下雨了。”", "李四点头。", "Dr. Smith arrived at 5 p.m.", "He left."]


def test_char_and_empty():
    assert split_by_char()("龍😀a") == ["龍", "😀", "a"]
    for fn in FACTORIES.values():
        assert fn()("") in ([], [""])
