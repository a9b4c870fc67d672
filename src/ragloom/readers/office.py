"""PowerPoint (``.pptx``, python-pptx) and Excel (``.xlsx`` / ``.xlsm``, openpyxl), extra
``ragloom[office]``.

- **PPTX**: one document per slide, ``page_label`` = the slide number (1-based): the title first,
  then every other shape's text in reading order (top to bottom, left to right; group shapes
  descended), table rows as ``cell | cell`` lines, then the speaker notes after a ``Notes:`` line.
  Slides without text are left out.
- **XLSX**: one document per non-empty worksheet, ``sheet_name`` in the metadata: a ``Sheet: name``
  line, then one line per row with the row's non-empty cells joined by ``" | "`` (computed values,
  not formulas: openpyxl's ``data_only``), so a row stays together in a chunk.

Without the extra installed, these files are reported as "unsupported format (… install
ragloom[office])".  Encrypted (password-protected) files are reported as such.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ragloom._optional import available
from ragloom.errors import ReaderError
from ragloom.readers.base import BaseReader, file_path_str, make_document
from ragloom.readers.text import REASON_EMPTY
from ragloom.schema import Document

__all__ = ["PptxReader", "XlsxReader", "office_available"]

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # the OLE2 signature


def office_available() -> bool:
    """Whether ``ragloom[office]`` (python-pptx and openpyxl) is installed."""
    return available("pptx") and available("openpyxl")


def _open(file: Path, module: str, kind: str) -> Tuple[Any, Path, str]:
    """``(the library module, the file, its path text)``, after refusing an encrypted file (an
    encrypted OOXML file is an OLE2 container, not a zip).

    Raises:
        MissingDependencyError: ``ragloom[office]`` is not installed.
        ReaderError: the file is encrypted.
    """
    from ragloom._optional import require

    lib = require(module, "office", f"reading {kind} files")
    file = Path(file)
    path = file_path_str(file)
    with open(file, "rb") as f:
        if f.read(8) == _OLE_MAGIC:
            raise ReaderError(path, f"encrypted (password-protected) {kind} file")
    return lib, file, path


def _shape_lines(shape: Any, out: List[str]) -> None:
    if getattr(shape, "shape_type", None) == 6 or hasattr(shape, "shapes"):  # a group: its members in order
        for sub in _ordered(list(shape.shapes)):
            _shape_lines(sub, out)
        return
    if getattr(shape, "has_table", False):
        for row in shape.table.rows:
            cells = [c.text.strip() for c in row.cells]
            if any(cells):
                out.append(" | ".join(cells))
        return
    if getattr(shape, "has_text_frame", False):
        text = "\n".join(p.text.strip() for p in shape.text_frame.paragraphs if p.text.strip())
        if text:
            out.append(text)


def _ordered(shapes: List[Any]) -> List[Any]:
    return sorted(shapes, key=lambda s: ((s.top or 0) // 20000, s.left or 0))  # rows of about 2 mm


class PptxReader(BaseReader):
    """Reads a ``.pptx`` file: one document per slide with text (see the module docstring).

    Raises:
        ReaderError: ``"empty"``, ``"encrypted"`` or ``"corrupt PPTX: ..."``.
    """

    assigns_ids = False

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        pptx, file, path = _open(file, "pptx", "PowerPoint")
        try:
            deck = pptx.Presentation(str(file))
            docs: List[Document] = []
            for number, slide in enumerate(deck.slides, 1):
                lines: List[str] = []
                title = slide.shapes.title
                if title is not None and title.has_text_frame and title.text_frame.text.strip():
                    lines.append(title.text_frame.text.strip())
                for shape in _ordered([s for s in slide.shapes if title is None or s.shape_id != title.shape_id]):
                    _shape_lines(shape, lines)
                if slide.has_notes_slide:
                    notes = slide.notes_slide.notes_text_frame
                    if notes is not None and notes.text.strip():
                        lines.extend(["", "Notes:", notes.text.strip()])
                body = "\n".join(lines).strip()
                if body:
                    docs.append(make_document(body, file, extra_info, metadata={"page_label": str(number)}))
        except ReaderError:
            raise
        except Exception as exc:  # zipfile.BadZipFile, KeyError on missing parts, lxml errors …
            raise ReaderError(path, f"corrupt PPTX: {type(exc).__name__}: {exc}", exc) from exc
        if not docs:
            raise ReaderError(path, REASON_EMPTY)
        return docs


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime.datetime) and value.time() == datetime.time(0):
        return value.date().isoformat()
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return str(value).strip()


class XlsxReader(BaseReader):
    """Reads an ``.xlsx`` / ``.xlsm`` workbook: one document per non-empty sheet (see the module
    docstring).  Read-only mode: memory stays small on big sheets.

    Raises:
        ReaderError: ``"empty"``, ``"encrypted"`` or ``"corrupt XLSX: ..."``.
    """

    assigns_ids = False

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        openpyxl, file, path = _open(file, "openpyxl", "Excel")
        docs: List[Document] = []
        try:
            book = openpyxl.load_workbook(str(file), read_only=True, data_only=True)
            try:
                for sheet in book.worksheets:
                    rows: List[str] = []
                    for values in sheet.iter_rows(values_only=True):
                        cells = [_cell_text(v) for v in values]
                        if any(cells):
                            rows.append(" | ".join(c for c in cells if c))
                    if rows:
                        text = f"Sheet: {sheet.title}\n" + "\n".join(rows)
                        docs.append(make_document(text, file, extra_info, metadata={"sheet_name": sheet.title}))
            finally:
                book.close()
        except Exception as exc:
            raise ReaderError(path, f"corrupt XLSX: {type(exc).__name__}: {exc}", exc) from exc
        if not docs:
            raise ReaderError(path, REASON_EMPTY)
        return docs
