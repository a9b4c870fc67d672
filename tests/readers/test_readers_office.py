"""PowerPoint and Excel through ragloom[office] (python-pptx, openpyxl)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.readers import SimpleDirectoryReader
from ragloom.readers.office import office_available

pytestmark = pytest.mark.skipif(not office_available(), reason="ragloom[office] is not installed")


@pytest.fixture()
def ex(shared_data) -> Path:
    return Path(shared_data, "mixed_docs", "example-docs")


def _docs(path):
    r = SimpleDirectoryReader(input_files=[str(path)])
    return r.load_data(), r.report


def test_pptx_one_document_per_slide_with_title_text_tables_and_notes(ex, tmp_path):
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    s1 = deck.slides.add_slide(deck.slide_layouts[1])
    s1.shapes.title.text = "Harbour cranes"
    s1.placeholders[1].text = "They lift containers at the tide."
    s1.notes_slide.notes_text_frame.text = "Mention the night shift."
    s2 = deck.slides.add_slide(deck.slide_layouts[5])
    s2.shapes.title.text = "Tonnage"
    table = s2.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for (r, c), v in {(0, 0): "Port", (0, 1): "Tonnes", (1, 0): "Rotterdam", (1, 1): "440"}.items():
        table.cell(r, c).text = v
    deck.slides.add_slide(deck.slide_layouts[6])  # blank: left out
    f = tmp_path / "deck.pptx"
    deck.save(str(f))
    docs, report = _docs(f)
    assert [d.metadata["page_label"] for d in docs] == ["1", "2"]
    assert docs[0].text == "Harbour cranes\nThey lift containers at the tide.\n\nNotes:\nMention the night shift."
    assert docs[1].text == "Tonnage\nPort | Tonnes\nRotterdam | 440"
    assert docs[0].id_.endswith("_part_0") and report.skipped == []
    shared, _ = _docs(ex / "fake-power-point.pptx")
    assert shared[0].text.startswith("Adding a Bullet Slide")


def test_xlsx_one_document_per_sheet_rows_kept_together(ex):
    docs, _ = _docs(ex / "stanley-cups.xlsx")
    assert docs[0].metadata["sheet_name"] == "Stanley Cups"
    assert "Team | Location | Stanley Cups\nBlues | STL | 1" in docs[0].text


@pytest.mark.parametrize("name, reason", [("password_protected.xlsx", "encrypted"), ("empty.xlsx", "empty"),
                                          ("fake-power-point-malformed.pptx", None)])
def test_office_files_that_cannot_be_read_are_reported(ex, name, reason):
    docs, report = _docs(ex / name)
    if reason is None:  # malformed but readable: read, or reported, never raised
        assert docs or report.skipped
    else:
        assert docs == [] and report.skipped[0].reason.startswith(reason)
