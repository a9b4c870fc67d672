"""Encoding detection: BOMs, strict UTF-8, GB18030 for GBK-family bytes, cp1252, forced codecs."""

from __future__ import annotations

import codecs
import os
from pathlib import Path

import pytest

from ragloom.readers import SimpleDirectoryReader, TextReader, decode_bytes
from ragloom.readers.encoding import BinaryContentError, looks_binary_head

TEXT = "Grüße, 世界! Ünïcödé — 孙悟空\nsecond line\n"


@pytest.mark.parametrize(
    "codec,bom",
    [
        ("utf-8", codecs.BOM_UTF8),
        ("utf-16-le", codecs.BOM_UTF16_LE),
        ("utf-16-be", codecs.BOM_UTF16_BE),
        ("utf-32-le", codecs.BOM_UTF32_LE),
        ("utf-32-be", codecs.BOM_UTF32_BE),
    ],
)
def test_bom_variants(tmp_path: Path, codec: str, bom: bytes) -> None:
    f = tmp_path / "bom.txt"
    f.write_bytes(bom + TEXT.encode(codec))
    [doc] = TextReader().load_data(f)
    assert doc.text == TEXT  # BOM removed, nothing else changed
    assert doc.metadata["encoding"] == codec


def test_plain_utf8_and_crlf(tmp_path: Path) -> None:
    f = tmp_path / "a.md"
    f.write_bytes("# Titel\r\nÄpfel\r\n".encode("utf-8"))
    [doc] = TextReader().load_data(f)
    assert doc.text == "# Titel\nÄpfel\n"
    assert doc.metadata["encoding"] == "utf-8"


@pytest.mark.parametrize("name", ["红楼梦", "西游记", "三国演义", "水浒传"])
def test_zh_classics_gbk_decode_as_gb18030(shared_data: str, name: str) -> None:
    gbk = Path(shared_data, "zh_classics", f"{name}.gbk.txt")
    [doc] = TextReader().load_data(gbk)
    assert doc.metadata["encoding"] == "gb18030"
    assert "\ufffd" not in doc.text
    utf8 = Path(shared_data, "zh_classics", f"{name}.utf8.txt").read_text(encoding="utf-8")
    assert doc.text == utf8.replace("\r\n", "\n")


def test_xiyouji_contains_expected_text(shared_data: str) -> None:
    [doc] = TextReader().load_data(Path(shared_data, "zh_classics", "西游记.gbk.txt"))
    assert "孙悟空" in doc.text
    assert "唐僧" in doc.text


def test_strict_gbk_would_fail_on_three(shared_data: str) -> None:
    failures = 0
    for name in ["红楼梦", "西游记", "三国演义", "水浒传"]:
        try:
            Path(shared_data, "zh_classics", f"{name}.gbk.txt").read_bytes().decode("gbk")
        except UnicodeDecodeError:
            failures += 1
    assert failures == 3  # the reason GB18030 is used


def test_bomless_utf16_fixtures(shared_data: str) -> None:
    d = Path(shared_data, "mixed_docs", "example-docs")
    for name, enc in [("fake-text-utf-16-be.txt", "utf_16_be"), ("fake-text-utf-16-le.txt", "utf_16_le")]:
        [doc] = TextReader().load_data(d / name)
        assert doc.text.startswith("This is a test document")
        assert doc.metadata["encoding"].replace("-", "_") == enc
    [doc] = TextReader().load_data(d / "fake-text-utf-32.txt")
    assert doc.text.startswith("This is a test document")


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_bomless_utf16_chinese(tmp_path: Path, shared_data: str, codec: str) -> None:
    """Mostly-Chinese UTF-16 without a BOM has few NUL bytes (line breaks, ASCII), which neither the
    every-other-byte pattern nor charset-normalizer recognised: it was skipped as a binary file (and
    an index dropped the document it had)."""
    short = "孙悟空拜菩提祖师为师，学得七十二变。他后来大闹天宫！\n"
    # a passage of long paragraphs: more 一 (U+4E00, a NUL byte) than line breaks
    xiyouji = Path(shared_data, "zh_classics", "西游记.utf8.txt").read_text(encoding="utf-8")[20000:26000]
    for name, text in (("short.txt", short), ("xiyouji.txt", xiyouji.replace("\r\n", "\n"))):
        f = tmp_path / name
        f.write_bytes(text.encode(codec))
        assert b"\x00" in f.read_bytes() and not looks_binary_head(f.read_bytes()[:4096])
        r = SimpleDirectoryReader(input_files=[f])
        [doc] = r.load_data()
        assert doc.text == text and doc.metadata["encoding"] == codec, r.report.skipped_reasons()
    # ASCII letters with one stray NUL pair up into ideographs in either byte order: not UTF-16
    letters = ("SomeIdentifierNameWithoutSpaces" * 100).encode()
    f = tmp_path / "letters.txt"
    f.write_bytes(letters[:500] + b"\x00" + letters[500:])
    r = SimpleDirectoryReader(input_files=[f])
    assert r.load_data() == [] and r.report.skipped_reasons() == {f.as_posix(): "binary file"}


def test_latin1_family_prefers_cp1252(shared_data: str) -> None:
    d = Path(shared_data, "mixed_docs", "example-docs")
    [doc] = TextReader().load_data(d / "umlauts-non-utf8.md")
    assert "können" in doc.text and "äöüß" in doc.text


def test_forced_encoding_uses_errors(tmp_path: Path) -> None:
    f = tmp_path / "latin1.txt"
    f.write_bytes("café crème".encode("latin-1"))
    # detected
    assert SimpleDirectoryReader(input_files=[f]).load_data()[0].text == "café crème"
    # forced utf-8, strict: skipped with a decode reason
    r = SimpleDirectoryReader(input_files=[f], encoding="utf-8")
    assert r.load_data() == []
    assert "cannot decode as utf-8" in r.report.skipped[0].reason
    # forced utf-8, replace
    docs = SimpleDirectoryReader(input_files=[f], encoding="utf-8", errors="replace").load_data()
    assert docs[0].text == "caf\ufffd cr\ufffdme"


def test_binary_detection() -> None:
    with pytest.raises(BinaryContentError):
        decode_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4)
    assert looks_binary_head(b"PK\x03\x04\x14\x00\x06\x00" * 50)
    assert not looks_binary_head("hello world".encode("utf-16-le"))
    assert not looks_binary_head("hello world".encode("utf-32-le"))
    assert not looks_binary_head(b"plain ascii")


def test_declared_encoding_must_fit() -> None:
    data = "naïve".encode("utf-8")
    text, enc = decode_bytes(data, declared="ascii")  # wrong declaration is ignored
    assert text == "naïve" and enc == "utf-8"
    text, enc = decode_bytes("naïve".encode("cp1252"), declared="windows-1252")
    assert text == "naïve" and enc == "cp1252"


def test_invalid_encoding_argument() -> None:
    with pytest.raises(ValueError, match="encoding"):
        SimpleDirectoryReader(input_files=[os.__file__], encoding="no-such-codec")


# --- slightly damaged text is read with replacement characters, binary is still skipped ---


def _xiyouji_gbk(shared_data: str) -> bytes:
    return Path(shared_data, "zh_classics", "西游记.gbk.txt").read_bytes()


def _read_logged(f: Path, caplog: pytest.LogCaptureFixture) -> tuple:
    r = SimpleDirectoryReader(input_files=[f])
    with caplog.at_level("WARNING", logger="ragloom.readers"):
        docs = r.load_data()
    assert r.report.skipped == [], r.report.skipped
    warnings = [rec.getMessage() for rec in caplog.records if "replacement character" in rec.getMessage()]
    return docs, warnings


def test_gbk_cut_mid_character_is_read(tmp_path: Path, shared_data: str, caplog: pytest.LogCaptureFixture) -> None:
    raw = _xiyouji_gbk(shared_data)
    cut = raw[:200_000]
    with pytest.raises(UnicodeDecodeError):  # really ends inside a two-byte character
        cut.decode("gb18030")
    f = tmp_path / "xiyouji_cut.txt"
    f.write_bytes(cut)
    [doc], warnings = _read_logged(f, caplog)
    assert doc.metadata["encoding"] == "gb18030"
    assert doc.text == raw[:199_999].decode("gb18030").replace("\r\n", "\n") + "\ufffd"
    assert "孙悟空" in doc.text
    assert warnings == [f"{f.as_posix()}: decoded as gb18030 with 1 replacement character (undecodable bytes)"]


def test_gbk_with_one_bad_byte_is_read(tmp_path: Path, shared_data: str, caplog: pytest.LogCaptureFixture) -> None:
    raw = _xiyouji_gbk(shared_data)
    text = raw.decode("gb18030")
    at = len(text[: len(text) // 2].encode("gb18030"))  # a character boundary mid-file
    f = tmp_path / "xiyouji_ff.txt"
    f.write_bytes(raw[:at] + b"\xff" + raw[at:])
    [doc], warnings = _read_logged(f, caplog)
    assert doc.metadata["encoding"] == "gb18030"
    half = len(text) // 2
    assert doc.text == (text[:half] + "\ufffd" + text[half:]).replace("\r\n", "\n")
    assert len(warnings) == 1 and "decoded as gb18030 with 1 replacement character" in warnings[0]


def test_utf8_cut_mid_character_is_read(tmp_path: Path, shared_data: str, caplog: pytest.LogCaptureFixture) -> None:
    utf8 = Path(shared_data, "zh_classics", "西游记.utf8.txt").read_bytes()
    cut = utf8[:100_001]
    with pytest.raises(UnicodeDecodeError):
        cut.decode("utf-8")
    f = tmp_path / "xiyouji_utf8_cut.txt"
    f.write_bytes(cut)
    [doc], warnings = _read_logged(f, caplog)
    assert doc.metadata["encoding"] == "utf-8"
    assert doc.text.endswith("\ufffd") and doc.text.count("\ufffd") == 1
    assert len(warnings) == 1 and "decoded as utf-8 with 1 replacement character" in warnings[0]
    # a short English file cut inside "é" is read too (the detector's guess fails strictly)
    g = tmp_path / "short.txt"
    g.write_bytes("A café on the corner. Résumé attached, café".encode("utf-8")[:-1])
    [doc] = TextReader().load_data(g)
    assert doc.text == "A café on the corner. Résumé attached, caf\ufffd"


def test_clean_text_has_no_replacement_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    f = tmp_path / "ok.txt"
    f.write_bytes("正常的文本，没有坏字节。".encode("gb18030") * 50)
    docs, warnings = _read_logged(f, caplog)
    assert docs[0].metadata["encoding"] == "gb18030" and warnings == []


def test_real_binary_still_skipped(tmp_path: Path) -> None:
    import random
    import struct
    import zlib

    rng = random.Random(1234)
    noise = bytes(rng.getrandbits(8) for _ in range(64_000))
    files = {
        "random.bin": noise,
        # no NUL byte at all: only the replacement-rate rule can reject it
        "random_no_nul.txt": noise.replace(b"\x00", b"\x01"),
        "image.png": b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + zlib.compress(noise),
        "blob.dat": zlib.compress(noise),  # a compressed stream with no known signature
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    r = SimpleDirectoryReader(input_files=[tmp_path / n for n in files])
    assert r.load_data() == []
    reasons = {Path(p).name: why for p, why in r.report.skipped_reasons().items()}
    assert reasons.pop("image.png").startswith("image: no text to read")  # named by its kind
    assert reasons == {n: "binary file" for n in files if n != "image.png"}
    with pytest.raises(BinaryContentError):
        decode_bytes(noise.replace(b"\x00", b"\x01"))
