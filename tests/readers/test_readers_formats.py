"""One test (or a few) per file format, on small real fixtures from ../shared/data."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from ragloom.errors import ReaderError
from ragloom.readers import (
    CSVReader,
    DocxReader,
    HTMLReader,
    JSONReader,
    PDFReader,
    SimpleDirectoryReader,
    TextReader,
    html_to_text,
    json_to_text,
)


@pytest.fixture(scope="module")
def ex(shared_data: str) -> Path:
    # resolved: document ids are canonical paths (symlinks resolved), and CI may reach
    # ../shared through a link
    return Path(shared_data, "mixed_docs", "example-docs").resolve()


def _one(path: Path) -> list:
    r = SimpleDirectoryReader(input_files=[path])
    docs = r.load_data()
    return docs


@pytest.mark.parametrize("name", ["README.md", "README.rst", "README.org", "fake.go", "logger.py"])
def test_text_like_formats(ex: Path, name: str) -> None:
    [doc] = _one(ex / name)
    raw = (ex / name).read_text(encoding="utf-8").replace("\r\n", "\n")
    assert doc.text == raw  # text files are read verbatim
    assert doc.id_ == (ex / name).as_posix()


def test_json_readable(ex: Path) -> None:
    [doc] = _one(ex / "simple.json")
    data = json.loads((ex / "simple.json").read_text(encoding="utf-8"))
    assert doc.text == json_to_text(data)
    assert "{" not in doc.text.splitlines()[0]


def test_json_to_text_shape() -> None:
    text = json_to_text({"title": "诗经", "tags": ["a", "b"], "n": {"x": 1, "y": None, "z": True}, "e": []})
    assert text == "title: 诗经\ntags:\n  - a\n  - b\nn:\n  x: 1\n  y: null\n  z: true\ne: []"


def test_ndjson_one_document_per_record(ex: Path) -> None:
    docs = _one(ex / "arbitrary-records.ndjson")
    lines = [ln for ln in (ex / "arbitrary-records.ndjson").read_text().splitlines() if ln.strip()]
    assert len(docs) == len(lines) > 1
    assert [d.id_ for d in docs] == [
        f"{(ex / 'arbitrary-records.ndjson').as_posix()}_part_{i}" for i in range(len(docs))
    ]
    assert docs[0].metadata["line_number"] == 1
    assert "line_number" in docs[0].excluded_embed_metadata_keys


def test_invalid_json_falls_back_to_text(tmp_path: Path) -> None:
    f = tmp_path / "bad.json"
    f.write_text('{"a": 1, "b": [1, 2', encoding="utf-8")
    [doc] = JSONReader().load_data(f)
    assert doc.text == '{"a": 1, "b": [1, 2'


def test_csv_rows_as_text(ex: Path) -> None:
    [doc] = _one(ex / "stanley-cups.csv")
    lines = doc.text.splitlines()
    assert len(lines) == len([ln for ln in (ex / "stanley-cups.csv").read_text().splitlines() if ln.strip()])
    assert ", " in lines[0]


def test_csv_semicolon_tsv_and_utf16(ex: Path) -> None:
    [semi] = CSVReader().load_data(ex / "semicolon-delimited.csv")
    assert ";" not in semi.text
    [tsv] = CSVReader().load_data(ex / "stanley-cups.tsv")
    assert "\t" not in tsv.text and ", " in tsv.text
    [u16] = CSVReader().load_data(ex / "stanley-cups-utf-16.csv")
    assert u16.text.startswith("Stanley Cups")


def test_csv_quoted_commas(tmp_path: Path) -> None:
    f = tmp_path / "q.csv"
    f.write_text('name,quote\nAda,"hello, world"\n', encoding="utf-8")
    [doc] = CSVReader().load_data(f)
    assert doc.text == "name, quote\nAda, hello, world"


def test_html_cp1252(ex: Path) -> None:
    [doc] = _one(ex / "fake-html-cp1252.html")
    assert doc.metadata["encoding"] == "cp1252"
    assert "Die schöne Frau" in doc.text and "15,50 €" in doc.text and "El niño" in doc.text
    assert "<p>" not in doc.text and "\ufffd" not in doc.text


def test_html_utf16(ex: Path) -> None:
    [doc] = _one(ex / "example-steelJIS-datasheet-utf-16.html")
    assert doc.metadata["encoding"].startswith("utf-16")
    assert "SNB22-3" in doc.text and "日本語" in doc.text
    assert "<" not in doc.text.split("\n", 1)[0]


def test_html_drops_scripts_styles_and_decodes_entities(tmp_path: Path) -> None:
    f = tmp_path / "p.html"
    f.write_text(
        "<html><head><title>T &amp; C</title><style>p{color:red}</style>"
        "<script>var x = 1;</script></head><body><nav>menu</nav>"
        "<h1>Caf&eacute; &lt;b&gt;</h1><p>one <b>bold</b>\n word</p><!-- secret -->"
        "<table><tr><td>a</td><td>b</td></tr></table><div hidden>gone</div></body></html>",
        encoding="utf-8",
    )
    [doc] = HTMLReader().load_data(f)
    assert doc.text == "T & C\n\nCafé <b>\n\none bold word\n\na | b"


def test_html_with_scripts_fixture(ex: Path) -> None:
    [doc] = _one(ex / "example-with-scripts.html")
    assert "function(" not in doc.text and "<script" not in doc.text
    assert "Russian Offensive Campaign Assessment" in doc.text


def test_html_to_text_pre_keeps_lines() -> None:
    # line breaks kept in <pre>, collapsed elsewhere
    assert html_to_text("<pre>a\n  b</pre><p>c\nd</p>") == "a\nb\n\nc d"


def test_pdf_pages_with_labels(ex: Path) -> None:
    path = ex / "pdf" / "layout-parser-paper-with-empty-pages.pdf"
    docs = _one(path)
    assert len(docs) == 2  # 4 pages, 2 without text
    for d in docs:
        assert d.metadata["total_pages"] == 4
        assert d.id_.startswith(path.as_posix() + "_part_")
        assert "page_label" not in d.excluded_embed_metadata_keys
        assert "total_pages" in d.excluded_embed_metadata_keys
    assert "LayoutParser" in docs[0].text
    assert "page_label: " in docs[0].get_content("embed")


def test_pdf_roman_page_labels(ex: Path) -> None:
    docs = PDFReader().load_data(ex / "pdf" / "embedded-images-tables.pdf")
    assert docs[0].metadata["page_label"] == "4"  # the printed label, not the index


def test_pdf_encrypted_skipped(ex: Path) -> None:
    r = SimpleDirectoryReader(input_files=[ex / "pdf" / "password.pdf"])
    assert r.load_data() == []
    assert r.report.skipped[0].reason.startswith("encrypted")


def test_pdf_scanned_skipped(ex: Path) -> None:
    r = SimpleDirectoryReader(input_files=[ex / "pdf" / "loremipsum-flat.pdf"])
    assert r.load_data() == []
    assert r.report.skipped[0].reason == "no text layer (scanned PDF?)"


@pytest.mark.skipif(importlib.util.find_spec("cryptography") is None, reason="AES PDFs need cryptography")
def test_pdf_copy_protected_is_read(ex: Path) -> None:
    docs = PDFReader().load_data(ex / "pdf" / "copy-protected.pdf")
    assert docs and "LayoutParser" in docs[0].text


def test_pdf_corrupt(tmp_path: Path) -> None:
    f = tmp_path / "broken.pdf"
    f.write_bytes(b"%PDF-1.4\n1 0 obj <<>> garbage")
    r = SimpleDirectoryReader(input_files=[f])
    assert r.load_data() == []
    assert r.report.skipped[0].reason  # recorded, no exception


def test_docx_paragraphs_and_tables(ex: Path) -> None:
    [doc] = _one(ex / "fake_table.docx")
    assert doc.text.splitlines()[0] == "Header Col 1 | Header Col 2"
    [doc] = DocxReader().load_data(ex / "category-level.docx")
    assert doc.text.startswith("Call me Ishmael.")


def test_docx_inconsistent_grid(ex: Path) -> None:
    [doc] = DocxReader().load_data(ex / "grid_offset_error.docx")
    assert "Merged B1-B3" in doc.text


def test_docx_corrupt(tmp_path: Path) -> None:
    f = tmp_path / "x.docx"
    f.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ReaderError, match="corrupt DOCX"):
        DocxReader().load_data(f)


@pytest.mark.parametrize("name, kind", [("CantinaBand3.wav", "audio: "), ("img/example.jpg", "image: "),
                                        ("img/DA-1p.png", "image: ")])
def test_media_files_skipped_naming_their_kind(ex: Path, name: str, kind: str) -> None:
    r = SimpleDirectoryReader(input_files=[ex / name])
    assert r.load_data() == []
    assert r.report.skipped[0].reason.startswith(kind + "no text to read")


@pytest.mark.parametrize(
    "name, kind",
    [("fake.doc", "Word 97-2003; convert it to DOCX"),
     ("fake-power-point.ppt", "PowerPoint 97-2003; convert it to PPTX")],
)
def test_known_binary_formats_are_reported_as_unsupported(ex: Path, name: str, kind: str) -> None:
    r = SimpleDirectoryReader(input_files=[ex / name])
    assert r.load_data() == []
    assert r.report.skipped[0].reason == f"unsupported format ({kind})"


@pytest.mark.parametrize("name", ["empty.txt", "fake-text-all-whitespace.txt", "eml/empty.eml"])
def test_empty_skipped(ex: Path, name: str) -> None:
    r = SimpleDirectoryReader(input_files=[ex / name])
    assert r.load_data() == []
    assert r.report.skipped[0].reason == "empty"


def test_readers_standalone_raise_reader_error(tmp_path: Path) -> None:
    f = tmp_path / "e.txt"
    f.write_text("  \n\t ", encoding="utf-8")
    with pytest.raises(ReaderError) as info:
        TextReader().load_data(f)
    assert info.value.reason == "empty" and info.value.path == f.as_posix()


@pytest.mark.requires_extra("office")
def test_office_files_with_a_legacy_extension_are_read_by_their_content(ex: Path, tmp_path: Path) -> None:
    """A DOCX or PPTX saved as ``.doc`` / ``.ppt`` (a zip package, not OLE2) is read as what it is."""
    lang = ex / "language-docs"
    r = SimpleDirectoryReader(input_files=[lang / "eng_spa_mult.doc", lang / "eng_spa_mult.ppt"])
    docs = r.load_data()
    assert r.report.skipped == []
    assert {d.metadata["file_name"] for d in docs} == {"eng_spa_mult.doc", "eng_spa_mult.ppt"}
    slides = [d for d in docs if d.metadata["file_name"].endswith(".ppt")]
    assert [d.metadata["page_label"] for d in slides][:2] == ["1", "2"] and "slide note" in slides[0].text
    xlsx_as_xls = tmp_path / "cups.xls"
    xlsx_as_xls.write_bytes((ex / "stanley-cups.xlsx").read_bytes())
    sheets = SimpleDirectoryReader(input_files=[xlsx_as_xls]).load_data()
    assert any("Blues | STL | 1" in s.text for s in sheets)
