"""PowerPoint (``.pptx``, python-pptx) and Excel (``.xlsx`` / ``.xlsm``, openpyxl; legacy ``.xls``,
xlrd), extra ``ragloom[office]``.

- **PPTX**: one document per slide, ``page_label`` = the slide number (1-based): the title first,
  then every other shape's text in reading order (top to bottom, left to right; group shapes
  descended), table rows as ``cell | cell`` lines, then the speaker notes after a ``Notes:`` line.
  Slides without text are left out.
- **XLSX**: one document per non-empty worksheet, ``sheet_name`` in the metadata: a ``Sheet: name``
  line, then one line per row with the row's non-empty cells joined by ``" | "`` (computed values,
  not formulas: openpyxl's ``data_only``), so a row stays together in a chunk.  Whole numbers
  print without ``.0``, dates as ISO dates (a date-time at midnight as the date alone).
- **XLS** (Excel 97-2003): the same shape as XLSX (the cached values of formulas; dates from the
  workbook's 1900/1904 date system, error cells as ``#DIV/0!`` …).  An ``.xls`` file that is really
  an XLSX/ODS zip or an HTML/XML page (Excel's web or XML export) is reported as such.

Without the extra installed, these files are reported as "unsupported format (… install
ragloom[office])".  Encrypted (password-protected) files are reported as such.
"""

from __future__ import annotations

import datetime
import io
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ragloom._optional import available
from ragloom.errors import ReaderError
from ragloom.readers.base import BaseReader, file_path_str, make_document
from ragloom.readers.text import REASON_EMPTY
from ragloom.schema import Document

__all__ = ["PptxReader", "XlsReader", "XlsxReader", "office_available", "sheet_documents"]

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # the OLE2 signature


def office_available() -> bool:
    """Whether ``ragloom[office]`` (python-pptx and openpyxl) is installed."""
    return available("pptx") and available("openpyxl")


def open_library_file(file: Path, module: str, extra: str, feature: str) -> Tuple[Any, Path, str]:
    """``(the library module, the file, its path text)`` for a reader of an optional format
    (OpenDocument, EPUB): ``module`` of ``ragloom[extra]`` imported, a 0-byte file refused.

    Raises:
        MissingDependencyError: the extra is not installed.
        ReaderError: ``"empty"`` (0 bytes).
    """
    from ragloom._optional import require

    lib = require(module, extra, feature)
    file = Path(file)
    path = file_path_str(file)
    if file.stat().st_size == 0:
        raise ReaderError(path, REASON_EMPTY)
    return lib, file, path


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
        ReaderError: ``"empty"`` (no slide), :data:`REASON_NO_SLIDE_TEXT`, ``"encrypted"`` or
            ``"corrupt PPTX: ..."``.
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
        if not docs:  # pictures only: say so, since the slides look full to the user
            raise ReaderError(path, REASON_NO_SLIDE_TEXT if len(deck.slides) else REASON_EMPTY)
        return docs


#: Skip reason of a deck whose slides hold no text at all (pictures only).
REASON_NO_SLIDE_TEXT = "no text on any slide (pictures only? ragloom does no OCR)"


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


def sheet_documents(
    file: Path, extra_info: Optional[Dict[str, Any]], sheets: Iterable[Tuple[str, Iterable[Iterable[Any]]]]
) -> List[Document]:
    """One document per sheet with a non-empty cell, from ``(sheet name, rows of cell values)``:
    a ``Sheet: name`` line, then one line per row with a value, its non-empty cells joined by
    ``" | "``; ``sheet_name`` in the metadata.  Values are Python values (``None`` for an empty
    cell; a whole float prints as an int, a date-time at midnight as the ISO date, other dates and
    times in ISO form).  The row format of the XLSX, XLS and ODS readers."""
    docs: List[Document] = []
    for name, rows in sheets:
        lines: List[str] = []
        for values in rows:
            cells = [c for c in (_cell_text(v) for v in values) if c]
            if cells:
                lines.append(" | ".join(cells))
        if lines:
            text = f"Sheet: {name}\n" + "\n".join(lines)
            docs.append(make_document(text, file, extra_info, metadata={"sheet_name": name}))
    return docs


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
            # a file object: openpyxl refuses a path by its extension (an .xlsx saved as .xls)
            with open(file, "rb") as handle:
                book = openpyxl.load_workbook(handle, read_only=True, data_only=True)
                try:
                    sheets = ((sheet.title, sheet.iter_rows(values_only=True)) for sheet in book.worksheets)
                    docs = sheet_documents(file, extra_info, sheets)
                finally:
                    book.close()
        except Exception as exc:
            raise ReaderError(path, f"corrupt XLSX: {type(exc).__name__}: {exc}", exc) from exc
        if not docs:
            raise ReaderError(path, REASON_EMPTY)
        return docs


def _not_xls(head: bytes) -> Optional[str]:
    """Why a file named ``.xls`` that starts with ``head`` is not an Excel 97-2003 workbook (a zip
    package, or a markup page that Excel also opens), or ``None``."""
    if head.startswith(b"PK\x03\x04"):
        return "not an XLS file but a zip package (an XLSX or ODS workbook?): give it its real extension"
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 text
        head = head[2:].replace(b"\x00", b"")
    if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
        return "not an XLS file but an HTML or XML page (Excel's web-page or XML export): save it as .xlsx"
    return None


def _xls_value(cell: Any, datemode: int, xlrd: Any) -> Any:
    """The Python value of an xlrd cell: dates through ``xldate_as_tuple`` with the book's date
    system (a time of day alone as a ``time``), booleans as ``bool``, errors as their ``#...`` text."""
    kind, value = cell.ctype, cell.value
    if kind in (xlrd.XL_CELL_EMPTY, xlrd.XL_CELL_BLANK):
        return None
    if kind == xlrd.XL_CELL_DATE:
        try:
            y, mo, d, h, mi, s = xlrd.xldate_as_tuple(value, datemode)
        except xlrd.xldate.XLDateError:  # out of range for the date system: the serial number
            return value
        return datetime.time(h, mi, s) if y == 0 else datetime.datetime(y, mo, d, h, mi, s)
    if kind == xlrd.XL_CELL_BOOLEAN:
        return bool(value)
    if kind == xlrd.XL_CELL_ERROR:
        return xlrd.error_text_from_code.get(value, "#ERROR")
    return value


class XlsReader(BaseReader):
    """Reads a legacy ``.xls`` workbook (Excel 97-2003) with xlrd: one document per non-empty
    sheet, the XLSX reader's shape (see the module docstring).  Sheets are loaded one at a time.

    Raises:
        ReaderError: ``"empty"``, ``"encrypted (password-protected) Excel file"``, ``"not an XLS
            file ..."`` (a zip package or an HTML/XML page named ``.xls``) or ``"corrupt XLS: ..."``.
    """

    assigns_ids = False

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        from ragloom._optional import require

        xlrd = require("xlrd", "office", "reading legacy Excel (.xls) files")
        file = Path(file)
        path = file_path_str(file)
        with open(file, "rb") as f:
            head = f.read(512)
        if not head:
            raise ReaderError(path, REASON_EMPTY)
        wrong = _not_xls(head)
        if wrong:
            raise ReaderError(path, wrong)
        docs: List[Document] = []
        try:
            # logfile: xlrd prints its warnings (OLE2 inconsistencies …) to stdout by default
            with xlrd.open_workbook(str(file), on_demand=True, logfile=io.StringIO()) as book:
                for index in range(book.nsheets):
                    sheet = book.sheet_by_index(index)
                    rows = ([_xls_value(c, book.datemode, xlrd) for c in row] for row in sheet.get_rows())
                    docs.extend(sheet_documents(file, extra_info, [(sheet.name, rows)]))
                    book.unload_sheet(index)
        except Exception as exc:
            if isinstance(exc, xlrd.XLRDError) and "encrypt" in str(exc).lower():  # "Workbook is encrypted"
                raise ReaderError(path, "encrypted (password-protected) Excel file", exc) from exc
            raise ReaderError(path, f"corrupt XLS: {type(exc).__name__}: {exc}", exc) from exc
        if not docs:
            raise ReaderError(path, REASON_EMPTY)
        return docs
