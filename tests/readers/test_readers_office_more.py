"""OpenDocument (odfdo), EPUB (EbookLib) and legacy Excel (xlrd) through ragloom[office]."""

from __future__ import annotations

import datetime
import shutil
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from ragloom.errors import ReaderError
from ragloom.readers import SimpleDirectoryReader
from ragloom.schema import MetadataMode

pytestmark = pytest.mark.requires_extra("office")


@pytest.fixture()
def ex(shared_data) -> Path:
    return Path(shared_data, "mixed_docs", "example-docs")


def _extractors():
    from ragloom.readers.epub import EpubReader
    from ragloom.readers.odf import OdfReader
    from ragloom.readers.office import XlsReader

    odf = OdfReader()
    return {".odt": odf, ".ods": odf, ".odp": odf, ".epub": EpubReader(), ".xls": XlsReader()}


def _docs(path):
    r = SimpleDirectoryReader(input_files=[str(path)], file_extractor=_extractors())
    return r.load_data(), r.report


def _odf(kind, xml_blocks, path):
    from odfdo import Document, Element

    doc = Document(kind)
    doc.body.clear()
    for xml in xml_blocks:
        doc.body.append(Element.from_tag(xml) if isinstance(xml, str) else xml)
    doc.save(str(path))
    return path


# ---------------------------------------------------------------- ODT


def test_odt_fixtures_read_in_order_with_tables_and_lists(ex):
    from ragloom.readers.odf import OdfReader

    fake = OdfReader().load_data(ex / "fake.odt")
    assert len(fake) == 1
    assert fake[0].text == (
        "Lorem ipsum dolor sit amet.\nHeader row | Mon | Wed | Fri\nColor | Blue | Red | Green\n"
        "Time | 1pm | 2pm | 3pm\nLeader | Sarah | Mark | Ryan"
    )
    docs, report = _docs(ex / "simple.odt")
    assert report.skipped == [] and len(docs) == 1
    assert docs[0].text.splitlines()[:4] == ["These are a few of my favorite things:", "• Parrots", "•", "Hockey"]
    assert docs[0].text.endswith("2023\nDOYLESTOWN, PA 18901")
    assert not docs[0].id_.endswith("_part_0")  # one document: the file's own id
    lang, _ = _docs(ex / "language-docs" / "eng_spa_mult.odt")
    assert "born free and equal in dignity" in lang[0].text and "Todos los seres humanos nacen libres" in lang[0].text


def test_odt_inline_markup_notes_comments_and_tracked_deletions(tmp_path):
    from ragloom.readers.odf import OdfReader

    f = _odf(
        "text",
        [
            '<text:h text:outline-level="1">Harbour  cranes</text:h>',
            '<text:p>Li<!-- c -->ft<text:s text:c="2"/>fast<text:line-break/>and slow'
            '<text:note text:note-class="footnote">'
            "<text:note-citation>1</text:note-citation><text:note-body><text:p>At low tide.</text:p></text:note-body>"
            "</text:note>.<office:annotation><dc:creator>Ed</dc:creator><text:p>A comment</text:p></office:annotation>"
            "</text:p>",
            '<text:tracked-changes><text:changed-region text:id="c1"><text:deletion><text:p>Deleted words</text:p>'
            "</text:deletion></text:changed-region></text:tracked-changes>",
            "<text:list><text:list-item><text:p>outer item</text:p><text:list><text:list-item><text:p>inner item"
            "</text:p></text:list-item></text:list></text:list-item></text:list>",
            '<text:section text:name="S"><text:p>In a section<draw:frame><draw:text-box><text:p>Boxed</text:p>'
            "</draw:text-box></draw:frame></text:p></text:section>",
            '<table:table table:name="T"><table:table-column table:number-columns-repeated="3"/>'
            '<table:table-header-rows><table:table-row><table:table-cell table:number-columns-spanned="2">'
            "<text:p>Port</text:p></table:table-cell>"
            "<table:covered-table-cell/><table:table-cell><text:p>Tonnes</text:p></table:table-cell></table:table-row>"
            "</table:table-header-rows><table:table-row><table:table-cell><text:p>Rotter</text:p><text:p>dam</text:p>"
            "</table:table-cell><table:table-cell><text:p>NL</text:p></table:table-cell><table:table-cell><text:p>440"
            '</text:p></table:table-cell></table:table-row><table:table-row table:number-rows-repeated="9">'
            '<table:table-cell table:number-columns-repeated="3"/></table:table-row></table:table>',
        ],
        tmp_path / "a.odt",
    )
    [doc] = OdfReader().load_data(f)
    assert doc.text == (
        "Harbour cranes\nLift  fast\nand slow.\nAt low tide.\nouter item\ninner item\nIn a section\nBoxed\n"
        "Port | Tonnes\nRotter dam | NL | 440"
    )


# ---------------------------------------------------------------- ODS


def test_ods_one_document_per_sheet_with_typed_values(tmp_path):
    from odfdo import Table

    ports = Table("Ports")
    ports.set_values(
        [
            ["Port", "Tonnes", "Opened", "Deep"],
            ["Rotterdam", 440, datetime.date(1872, 3, 1), True],
            ["Antwerp", 2.5, datetime.datetime(2024, 1, 5, 10, 30), False],
        ]
    )
    f = _odf(
        "spreadsheet",
        [
            ports,
            Table("Blank"),
            '<table:table table:name="Money"><table:table-row>'
            '<table:table-cell office:value-type="percentage" office:value="0.25"><text:p>25 %'
            '</text:p></table:table-cell><table:table-cell office:value-type="currency" '
            'office:value="1234.5"><text:p>1.234,50 €</text:p></table:table-cell></table:table-row>'
            '<table:table-row table:number-rows-repeated="1048570"><table:table-cell '
            'table:number-columns-repeated="1024"/></table:table-row></table:table>',
        ],
        tmp_path / "book.ods",
    )
    docs, report = _docs(f)
    assert report.skipped == []
    assert [d.metadata["sheet_name"] for d in docs] == ["Ports", "Money"]
    assert docs[0].text == (
        "Sheet: Ports\nPort | Tonnes | Opened | Deep\nRotterdam | 440 | 1872-03-01 | True\n"
        "Antwerp | 2.5 | 2024-01-05T10:30:00 | False"
    )
    assert docs[1].text == "Sheet: Money\n0.25 | 1234.5"
    assert [d.id_[-7:] for d in docs] == ["_part_0", "_part_1"]


# ---------------------------------------------------------------- ODP


def test_odp_one_document_per_slide_title_first_then_notes(tmp_path):
    from odfdo import DrawPage, Element, Frame

    one = DrawPage("p1", name="One")
    one.append(Frame.text_frame("They lift containers.", position=("1cm", "5cm")))
    one.append(Frame.text_frame("Harbour cranes", position=("1cm", "1cm"), presentation_class="title"))
    one.append(
        Element.from_tag(
            '<presentation:notes><draw:page-thumbnail/><draw:frame presentation:class="notes"><draw:text-box>'
            "<text:p>Mention the night shift.</text:p></draw:text-box></draw:frame></presentation:notes>"
        )
    )
    blank = DrawPage("p2", name="Blank")
    three = DrawPage("p3", name="Three")
    three.append(Frame.text_frame("Tonnage", presentation_class="title"))
    three.append(
        Element.from_tag(
            "<draw:frame><table:table><table:table-row><table:table-cell><text:p>Port</text:p></table:table-cell>"
            "<table:table-cell><text:p>440</text:p></table:table-cell></table:table-row></table:table></draw:frame>"
        )
    )
    three.append(Element.from_tag("<draw:g><draw:custom-shape><text:p>Grouped</text:p></draw:custom-shape></draw:g>"))
    f = _odf("presentation", [one, blank, three], tmp_path / "deck.odp")
    docs, report = _docs(f)
    assert report.skipped == []
    assert [d.metadata["page_label"] for d in docs] == ["1", "3"]
    assert docs[0].text == "Harbour cranes\nThey lift containers.\n\nNotes:\nMention the night shift."
    assert docs[1].text == "Tonnage\nPort | 440\nGrouped"


def test_odf_that_cannot_be_read_is_reported(tmp_path):
    from ragloom.readers.odf import OdfReader

    garbage = tmp_path / "garbage.ods"
    garbage.write_bytes(b"\x00\x13 not a zip \xff" * 50)
    empty = _odf("text", [], tmp_path / "empty.odt")
    encrypted = tmp_path / "secret.odt"
    with zipfile.ZipFile(encrypted, "w") as zf:  # what LibreOffice writes: the manifest describes the cipher
        zf.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        zf.writestr("content.xml", b"\x8f\x02 ciphertext")
        zf.writestr(
            "META-INF/manifest.xml",
            '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:'
            'xmlns:manifest:1.0"><manifest:file-entry manifest:full-path="content.xml"><manifest:encryption-'
            'data manifest:checksum-type="SHA1/1K"/></manifest:file-entry></manifest:manifest>',
        )
    for f, reason in [
        (garbage, "corrupt ODF: BadZipFile"),
        (empty, "empty"),
        (encrypted, "encrypted (password-protected) OpenDocument file"),
    ]:
        with pytest.raises(ReaderError) as err:
            OdfReader().load_data(f)
        assert err.value.reason.startswith(reason)
        docs, report = _docs(f)
        assert docs == [] and report.skipped[0].reason.startswith(reason)


# ---------------------------------------------------------------- XLS


def test_xls_one_document_per_sheet_like_xlsx(ex):
    from ragloom.readers.office import XlsReader

    docs = XlsReader().load_data(ex / "tests-example.xls")
    assert [d.metadata["sheet_name"] for d in docs] == ["Example Test", "Format Abbr.", "Readme"]
    assert docs[0].text.startswith("Sheet: Example Test\nMC | What is 2+2? | 4 | correct | 3 | incorrect\n")
    assert "MAT | Match the lower-case greek letter with its capital form. | λ | Λ | α" in docs[0].text
    assert "Abbreviation | Question Type\nMC | Multiple Choice" in docs[1].text
    via_dir, report = _docs(ex / "tests-example.xls")
    assert report.skipped == [] and [d.text for d in via_dir] == [d.text for d in docs]
    assert via_dir[2].id_.endswith("_part_2")


def test_xls_cell_values_use_the_book_date_system():
    import xlrd

    from ragloom.readers.office import _xls_value

    def cell(kind, value):
        return SimpleNamespace(ctype=kind, value=value)

    assert _xls_value(cell(xlrd.XL_CELL_DATE, 45296.5), 0, xlrd) == datetime.datetime(2024, 1, 5, 12, 0)
    assert _xls_value(cell(xlrd.XL_CELL_DATE, 45296.5 - 1462), 1, xlrd) == datetime.datetime(2024, 1, 5, 12, 0)
    assert _xls_value(cell(xlrd.XL_CELL_DATE, 0.4375), 0, xlrd) == datetime.time(10, 30)
    assert _xls_value(cell(xlrd.XL_CELL_BOOLEAN, 1), 0, xlrd) is True
    assert _xls_value(cell(xlrd.XL_CELL_ERROR, 7), 0, xlrd) == "#DIV/0!"
    assert _xls_value(cell(xlrd.XL_CELL_BLANK, ""), 0, xlrd) is None


def test_xls_that_cannot_be_read_is_reported(ex, tmp_path, monkeypatch):
    import xlrd

    from ragloom.readers.office import XlsReader

    xlsx = tmp_path / "renamed.xls"
    shutil.copyfile(ex / "stanley-cups.xlsx", xlsx)
    page = tmp_path / "export.xls"
    page.write_text("\ufeff<html><body><table><tr><td>1</td></tr></table></body></html>", encoding="utf-8")
    garbage = tmp_path / "garbage.xls"
    garbage.write_bytes(b"\x01\x02garbage bytes" * 40)
    with pytest.raises(ReaderError, match="not an XLS file but a zip package"):
        XlsReader().load_data(xlsx)
    [first, *_] = _docs(xlsx)[0]  # the directory reader reads it by its content, as XLSX
    assert first.metadata["sheet_name"] and "|" in first.text
    cases = [
        (page, "not an XLS file but an HTML or XML page"),
        (garbage, "corrupt XLS: XLRDError: Unsupported format, or corrupt file"),
    ]
    for f, reason in cases:
        docs, report = _docs(f)
        assert docs == [] and report.skipped[0].reason.startswith(reason)

    def encrypted(*args, **kwargs):
        raise xlrd.XLRDError("Workbook is encrypted")

    monkeypatch.setattr(xlrd, "open_workbook", encrypted)  # no encrypted .xls fixture, and xlwt is not installed
    with pytest.raises(ReaderError) as err:
        XlsReader().load_data(ex / "tests-example.xls")
    assert err.value.reason == "encrypted (password-protected) Excel file"


# ---------------------------------------------------------------- EPUB


@pytest.mark.requires_extra("epub")
def test_epub_fixtures_one_document_per_chapter(ex):
    from ragloom.readers.epub import EpubReader

    docs = EpubReader().load_data(ex / "winter-sports.epub")
    assert [d.metadata["chapter"] for d in docs] == [str(n) for n in range(2, 11)]  # 1 is the cover image
    assert docs[0].text.startswith("The Project Gutenberg eBook of Winter Sports in Switzerland, by E. F. Benson")
    assert docs[1].metadata["chapter_title"] == "CHAPTER II RINKS AND SKATERS"
    assert docs[2].metadata["chapter_title"] == "THIRD-CLASS TEST"  # no heading: the table of contents
    assert "skating" in docs[1].text and docs[-1].metadata["chapter_title"] == "THE FULL PROJECT GUTENBERG LICENSE"
    md = docs[1].metadata
    assert (md["book_title"], md["book_author"]) == ("Winter Sports in Switzerland", "E. F. Benson")
    assert "E. F. Benson" not in docs[1].get_metadata_str(MetadataMode.EMBED)
    assert "Winter Sports in Switzerland" in docs[1].get_metadata_str(MetadataMode.EMBED)
    lang, report = _docs(ex / "language-docs" / "eng_spa_mult.epub")
    assert report.skipped == [] and len(lang) == 1
    assert lang[0].text.startswith("All human beings are born free and equal in dignity and rights.")
    assert "Todos los seres humanos" in lang[0].text
    assert "chapter_title" not in lang[0].metadata  # its only title is the book's, "Untitled document"


def _epub(path, chapters, encryption=None):
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("harbour-1")
    book.set_title("Harbour Book")
    book.set_language("en")
    book.add_author("Ann Smith")
    book.add_author("Bo Li")
    items = []
    for i, (title, body) in enumerate(chapters, 1):
        item = epub.EpubHtml(title=title, file_name=f"c{i}.xhtml")
        item.content = body
        book.add_item(item)
        items.append(item)
    book.toc = [epub.Link(f"c{i}.xhtml", t, f"c{i}") for i, (t, _) in enumerate(chapters, 1)]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    epub.write_epub(str(path), book, {"raise_exceptions": True})
    if encryption is not None:
        with zipfile.ZipFile(path, "a") as zf:
            zf.writestr("META-INF/encryption.xml", encryption)
    return path


_ENCRYPTION = (
    '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" xmlns:enc="http://www.w3.org/2001/04/xmlenc#">'
    '<enc:EncryptedData><enc:EncryptionMethod Algorithm="{}"/><enc:CipherData>'
    '<enc:CipherReference URI="EPUB/c1.xhtml"/></enc:CipherData></enc:EncryptedData></encryption>'
)


@pytest.mark.requires_extra("epub")
def test_epub_chapters_in_spine_order_with_titles(tmp_path):
    f = _epub(
        tmp_path / "book.epub",
        [
            ("Cranes", "<h1>Cranes at <br/>work</h1><p>They lift containers.</p>"),
            ("Blank", "<p> </p>"),
            (
                "Tides in the port",
                "<p>The tide turns twice a day.</p><table><tr><td>High</td><td>06:10</td></tr></table>",
            ),
        ],
    )
    docs, report = _docs(f)
    assert report.skipped == []
    assert [(d.metadata["chapter"], d.metadata["chapter_title"]) for d in docs] == [
        ("1", "Cranes at work"),
        ("3", "Tides in the port"),
    ]  # the nav page is no chapter; a blank one is skipped
    assert docs[0].text == "Cranes at\nwork\n\nThey lift containers."
    assert docs[1].text == "The tide turns twice a day.\n\nHigh | 06:10"  # no <title> line
    assert docs[1].metadata["book_author"] == "Ann Smith, Bo Li"
    assert docs[1].excluded_llm_metadata_keys.count("book_author") == 1
    assert [d.id_[-7:] for d in docs] == ["_part_0", "_part_1"]


@pytest.mark.requires_extra("epub")
def test_epub_that_cannot_be_read_is_reported(tmp_path):
    from ragloom.readers.epub import EpubReader

    chapters = [("One", "<p>Plain text.</p>")]
    drm = _epub(tmp_path / "drm.epub", chapters, _ENCRYPTION.format("http://www.w3.org/2001/04/xmlenc#aes128-cbc"))
    fonts = _epub(tmp_path / "fonts.epub", chapters, _ENCRYPTION.format("http://www.idpf.org/2008/embedding"))
    garbage = tmp_path / "garbage.epub"
    garbage.write_bytes(b"PK\x03\x04 broken zip" * 30)
    empty = _epub(tmp_path / "empty.epub", [("Blank", "<p></p>")])
    for f, reason in [(drm, "encrypted (DRM) EPUB"), (garbage, "corrupt EPUB: BadZipFile"), (empty, "empty")]:
        with pytest.raises(ReaderError) as err:
            EpubReader().load_data(f)
        assert err.value.reason.startswith(reason)
        docs, report = _docs(f)
        assert docs == [] and report.skipped[0].reason.startswith(reason)
    assert EpubReader().load_data(fonts)[0].text == "Plain text."  # obfuscated fonts only: not DRM
