"""junk_kind: base64, hex and control-word chunks are flagged; prose, code and CJK text are not."""

import base64
import os
import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.ingestion.junk import junk_kind

WORDS = "the quick brown fox jumps over lazy dog harbour crane tide river 2024 API_KEY fooBar".split()


def test_each_kind_is_flagged():
    rnd = random.Random(0)
    data = bytes(rnd.randrange(256) for _ in range(3000))
    b64 = base64.b64encode(data).decode()
    assert junk_kind("\n".join(b64[i : i + 76] for i in range(0, len(b64), 76))) == "base64"
    assert junk_kind(f"<img src='data:image/png;base64,{b64}'>") == "base64"
    assert junk_kind(data.hex()) == "hex"
    assert junk_kind("\n".join(" ".join(f"{b:02x}" for b in data[i : i + 16]) for i in range(0, 800, 16))) == "hex"
    assert junk_kind(r"{\rtf1\ansi\deff0{\fonttbl{\f0 Arial;}}\f0\fs24\pard\sb120\qj " * 12) == "control words"


def test_real_text_is_not_junk(shared_data):
    data = Path(shared_data)
    samples = [data / "zh_classics" / "西游记.utf8.txt", *sorted((data / "markdown_fastapi").rglob("*.md"))[:60],
               *sorted((data / "code").rglob("*.py"))[:60]]
    for path in samples:
        text = path.read_text(encoding="utf-8", errors="replace")[:200_000]
        for i in range(0, len(text), 1500):
            chunk = text[i : i + 1500]
            kind = junk_kind(chunk)
            assert kind is None or "base64" in chunk.lower() or "b64" in chunk.lower(), (path, kind, chunk[:200])


@given(words=st.lists(st.sampled_from(WORDS), min_size=50, max_size=400))
@settings(max_examples=100, deadline=None)
def test_word_text_is_never_junk(words):
    assert junk_kind(" ".join(words)) is None


def test_short_text_is_not_judged():
    assert junk_kind(os.urandom(40).hex()) is None  # 80 characters: a hash in a note, not a dump
