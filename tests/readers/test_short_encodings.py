"""Short legacy-encoded files (issue 14): GBK Chinese read as Chinese, not as CP949 mojibake,
without breaking Korean, Japanese or Big5 files of a sentence or more.

See ``ragloom.readers.encoding.short_cjk_encoding``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ragloom.readers import SimpleDirectoryReader, TextReader
from ragloom.readers.encoding import SHORT_CJK_BYTES, decode_bytes, short_cjk_encoding

BRIEF_CASE = "今天天气很好，我们去公园。"

# GB 2312's hanzi (both levels) and the punctuation Chinese text uses
_GB2312_HANZI = [bytes([a, b]).decode("gb2312") for a in range(0xB0, 0xF8) for b in range(0xA1, 0xFF)
                 if not (a == 0xD7 and b > 0xF9)]
_PUNCT = list("，。！？、；：“”（）《》")


def _valid_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_the_reported_file_reads_as_chinese(tmp_path: Path):
    raw = BRIEF_CASE.encode("gbk")
    assert len(BRIEF_CASE) == 13 and len(raw) == 26
    f = tmp_path / "note.txt"
    f.write_bytes(raw)
    [doc] = TextReader().load_data(f)
    assert doc.text == BRIEF_CASE and doc.metadata["encoding"] == "gb18030"
    [doc] = SimpleDirectoryReader(input_files=[str(f)]).load_data()
    assert doc.text == BRIEF_CASE


@pytest.mark.parametrize("text", ["我们去公园", "今天天气很好", "北京是中国的首都。", "第一章 总则",
                                  "人工智能正在改变世界"])
def test_short_chinese_phrases(text: str):
    """Each of these was read as CP949 (Korean) or Big5 mojibake before."""
    assert decode_bytes(text.encode("gbk")) == (text, "gb18030")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_GB2312_HANZI + _PUNCT), min_size=5, max_size=40))
def test_random_gbk_strings_decode_back(chars: list) -> None:
    text = "".join(chars)
    raw = text.encode("gbk")
    assume(not _valid_utf8(raw))  # bytes that are valid UTF-8 are read as UTF-8, by design
    assert decode_bytes(raw)[0] == text


KOREAN = [
    "안녕하세요. 오늘 날씨가 좋네요.",
    "저는 학생입니다. 한국어를 공부해요.",
    "서울은 한국의 수도입니다.",
    "회의는 내일 오후 3시에 시작합니다.",
    "모든 인간은 태어날 때부터 자유롭다.",
    "대한민국 헌법 제1조 大韓民國은 民主共和國이다.",  # with Hanja
]
JAPANESE = [
    "こんにちは、今日はいい天気ですね。",
    "東京都に住んでいます。",
    "会議は明日の午後三時からです。",
    "すべての人間は、生まれながらにして自由である。",
    "カタカナのテキスト",
]
TRADITIONAL = ["今天天氣很好，我們去公園。", "我們的學校很大。", "人人生而自由，在尊嚴和權利上一律平等。",
               "臺灣的首都是臺北。"]


@pytest.mark.parametrize("codec", ["euc_kr", "cp949"])
@pytest.mark.parametrize("text", KOREAN)
def test_korean_sentences_stay_korean(text: str, codec: str):
    got, enc = decode_bytes(text.encode(codec))
    assert got == text and enc == "cp949"


@pytest.mark.parametrize("codec", ["shift_jis", "euc_jp"])
@pytest.mark.parametrize("text", JAPANESE)
def test_japanese_sentences_stay_japanese(text: str, codec: str):
    assert decode_bytes(text.encode(codec))[0] == text


@pytest.mark.parametrize("text", TRADITIONAL)
def test_big5_sentences_stay_big5(text: str):
    assert decode_bytes(text.encode("big5")) == (text, "big5")


@pytest.mark.parametrize(("text", "codec"), [
    ("café naïve résumé", "cp1252"), ("Müller straße", "cp1252"), ("Привет, как дела?", "cp1251"),
    ("Tout moun fèt lib, egal ego", "cp1252"),  # the detector alone said Big5
])
def test_western_and_cyrillic_are_not_taken_for_cjk(text: str, codec: str):
    """Latin text with a few accented letters also decodes in Big5 / Shift-JIS ("è" + "t" is a
    Big5 hanzi); a reading that is not mostly CJK is never chosen."""
    assert decode_bytes(text.encode(codec))[0] == text


def test_rule_keeps_well_formed_thai_and_non_cjk_guesses():
    thai = "สวัสดีครับ วันนี้อากาศดี".encode("cp874")
    assert short_cjk_encoding(thai, "cp874") == "cp874"
    # the GBK bytes read as Thai are not well-formed Thai: the Chinese reading replaces the guess
    gbk = "驴。猢述龟脸霜饯纸夕".encode("gbk")
    assert short_cjk_encoding(gbk, "cp874") == "gb18030"
    # a guess from the Korean family keeps its own name when it reads the same text
    assert short_cjk_encoding(KOREAN[0].encode("euc_kr"), "euc_kr") == "euc_kr"
    assert short_cjk_encoding(b"plain ascii", "ascii") == "ascii"


def test_known_limits_one_word_korean_and_long_files():
    """Documented: a lone Korean word without spaces reads equally well as Chinese, and the tie
    goes to Chinese; past SHORT_CJK_BYTES the detector decides alone."""
    assert decode_bytes("감사합니다!".encode("euc_kr"))[1] == "gb18030"
    long_korean = (" ".join(KOREAN[:5]) + " ") * 40
    raw = long_korean.encode("euc_kr")
    assert len(raw) > SHORT_CJK_BYTES and decode_bytes(raw)[0] == long_korean
