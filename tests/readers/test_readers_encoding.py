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
