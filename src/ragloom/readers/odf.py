"""OpenDocument (``.odt`` / ``.ods`` / ``.odp``, odfdo), extra ``ragloom[office]``.

One reader, :class:`OdfReader`, for the three kinds; it goes by the document's own body (an
``.odt`` that really holds a spreadsheet is read as one):

- **Text** (ODT): one document, the body in reading order: headings, paragraphs and list items one
  per line (line breaks inside a paragraph kept), footnotes after their paragraph, text boxes and
  sections where they stand, table rows as ``cell | cell`` lines (merged cells once).  Comments
  and tracked deletions are left out, and so are headers and footers (they repeat on every page).
- **Spreadsheet** (ODS): one document per non-empty sheet, the XLSX reader's shape (see
  :mod:`ragloom.readers.office`): a ``Sheet: name`` line, then one line per row with its non-empty
  cells joined by ``" | "``, ``sheet_name`` in the metadata.  Numbers, dates and booleans are
  the cells' values (whole numbers without ``.0``, dates in ISO form), not their display format.
- **Presentation** (ODP; drawings too): one document per slide, ``page_label`` = the slide
  number (1-based): the title first, then the other shapes' text in document order, tables as
  ``cell | cell`` lines, then the speaker notes after a ``Notes:`` line.  Slides without text are
  left out.

A password-protected file (its manifest lists encrypted parts) is reported as ``"encrypted
(password-protected) OpenDocument file"``.  Without the extra installed, these files are reported
as "unsupported format (… install ragloom[office])".
"""

from __future__ import annotations

import datetime
import re
import zipfile
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ragloom.errors import ReaderError
from ragloom.readers.base import BaseReader, make_document
from ragloom.readers.office import open_library_file, sheet_documents
from ragloom.readers.text import REASON_EMPTY
from ragloom.schema import Document

__all__ = ["OdfReader"]

REASON_ENCRYPTED = "encrypted (password-protected) OpenDocument file"

# Never text of the body: comments, deleted text kept for change tracking, declarations, forms.
_SKIP = frozenset(
    "office:annotation office:annotation-end text:tracked-changes office:forms text:sequence-decls "
    "text:variable-decls text:user-field-decls table:table-columns table:table-column "
    "table:table-header-columns presentation:notes draw:page-thumbnail".split()
)
# Inside a paragraph: text set apart from the line (footnotes, text boxes, drawings), read after it.
_DEFERRED = frozenset("text:note draw:frame draw:custom-shape draw:rect draw:ellipse draw:g draw:a".split())
_ROW_CONTAINERS = frozenset("table:table-header-rows table:table-rows table:table-row-group".split())
_SPACE = re.compile(r"[ \t\r\n]+")
# A repeated row or cell (number-rows-/number-columns-repeated) is written out at most this many
# times: spreadsheets repeat empty rows to the sheet's end, and a repeated value stays bounded.
_MAX_REPEAT = 1000
# Cells written out per table at most: repeats multiply (1,000 rows × 1,000 columns each), and a
# 100 KB file must not become gigabytes of text; a longer table is cut there.
_MAX_CELLS = 1_000_000


def _tag(el: Any) -> str:
    """``el``'s prefixed tag (``"text:p"``); ``""`` for an XML comment or processing instruction."""
    try:
        return str(el.tag)
    except TypeError:  # odfdo wraps them as elements, but their lxml tag is a function
        return ""


def _inline(el: Any, out: List[str], deferred: List[Any]) -> None:
    """The text of a paragraph-like element into ``out``: runs of XML whitespace as one space (as
    ODF renders them), ``text:s`` / ``text:tab`` / ``text:line-break`` as spaces, tab and newline;
    notes, frames and shapes go to ``deferred``."""
    out.append(_SPACE.sub(" ", el.text))
    for child in el.children:
        tag = _tag(child)
        if tag in _DEFERRED:
            deferred.append(child)
        elif tag == "text:line-break":
            out.append("\n")
        elif tag in ("text:s", "text:tab"):
            out.append(str(child))
        elif tag and tag not in _SKIP:
            _inline(child, out, deferred)
        out.append(_SPACE.sub(" ", child.tail or ""))  # a comment's tail too: the text after it


def _block(el: Any, lines: List[str]) -> None:
    """The lines of one body element: a paragraph or heading (then its notes and frames), a
    table, or whatever block elements it holds (lists, sections, frames, shapes …)."""
    tag = _tag(el)
    if tag in ("text:p", "text:h"):
        parts: List[str] = []
        deferred: List[Any] = []
        _inline(el, parts, deferred)
        lines.extend(line.strip() for line in "".join(parts).split("\n") if line.strip())
        for extra in deferred:
            _block(extra, lines)
    elif tag == "table:table":
        _table_lines(el, lines)
    elif tag and tag not in _SKIP:
        _blocks(el, lines)


def _blocks(el: Any, lines: List[str]) -> None:
    """The lines of the elements under ``el`` in document order."""
    for child in el.children:
        _block(child, lines)


def _repeat(el: Any, attribute: str) -> int:
    try:
        return max(1, min(int(el.get_attribute_string(attribute) or 1), _MAX_REPEAT))
    except ValueError:
        return 1


def _rows(table: Any) -> Iterator[Any]:
    """The ``table:table-row`` elements of ``table``, header rows and row groups included."""
    for child in table.children:
        tag = _tag(child)
        if tag == "table:table-row":
            yield child
        elif tag in _ROW_CONTAINERS:
            yield from _rows(child)


def _cells(row: Any) -> Iterator[Any]:
    """The cells of ``row``; a cell covered by a merged one is left out (its text shows once)."""
    for child in row.children:
        if _tag(child) == "table:table-cell":
            yield child


def _cell_text(cell: Any) -> str:
    lines: List[str] = []
    _blocks(cell, lines)
    return " ".join(lines)


def _table_lines(table: Any, out: List[str]) -> None:
    budget = _MAX_CELLS
    for row in _rows(table):
        cells: List[str] = []
        for cell in _cells(row):
            text = _cell_text(cell)
            cells.extend([text] * (_repeat(cell, "table:number-columns-repeated") if text else 1))
            if len(cells) > budget:
                break
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            times = min(_repeat(row, "table:number-rows-repeated"), max(1, budget // len(cells)))
            out.extend([" | ".join(cells[:budget])] * times)
            budget -= len(cells) * times
            if budget <= 0:
                return


def _cell_value(cell: Any) -> Any:
    """A spreadsheet cell's value: ``float`` for numbers, percentages and currencies, ``datetime``
    for dates, ``bool``; otherwise (text, times, unparsable values) its text."""
    kind = cell.get_attribute_string("office:value-type")
    try:
        if kind in ("float", "percentage", "currency"):
            return float(cell.get_attribute_string("office:value") or "")
        if kind == "date":
            return datetime.datetime.fromisoformat(cell.get_attribute_string("office:date-value") or "")
        if kind == "boolean":
            return (cell.get_attribute_string("office:boolean-value") or "").lower() == "true"
    except ValueError:
        pass
    return _cell_text(cell)


def _sheet_rows(table: Any) -> Iterator[List[Any]]:
    budget = _MAX_CELLS
    for row in _rows(table):
        values: List[Any] = []
        for cell in _cells(row):
            value = _cell_value(cell)
            values.extend([value] * (_repeat(cell, "table:number-columns-repeated") if value != "" else 1))
            if len(values) > budget:
                break
        if any(v != "" for v in values):
            for _ in range(_repeat(row, "table:number-rows-repeated")):
                yield values[:budget]
                budget -= len(values)
                if budget <= 0:
                    return


def _slide_lines(page: Any) -> List[str]:
    """A slide's text: title shapes first, the other shapes in document order, then the notes."""
    shapes = [c for c in page.children if _tag(c)]
    lines: List[str] = []
    for shape in sorted(shapes, key=lambda s: s.get_attribute_string("presentation:class") != "title"):
        _block(shape, lines)
    notes: List[str] = []
    for element in shapes:
        if _tag(element) == "presentation:notes":
            _blocks(element, notes)
    if notes:
        lines.extend(["", "Notes:"] + notes)
    return lines


def _check_package(file: Path, path: str) -> None:
    """Refuse an encrypted package (its manifest describes the encryption of each part).

    Raises:
        ReaderError: encrypted.
        zipfile.BadZipFile: not a zip package.
    """
    with zipfile.ZipFile(file) as zf:
        try:
            manifest = zf.read("META-INF/manifest.xml")
        except KeyError:
            return
    if b"encryption-data" in manifest:
        raise ReaderError(path, REASON_ENCRYPTED)


class OdfReader(BaseReader):
    """Reads an OpenDocument file (``.odt``, ``.ods``, ``.odp``; also ``.ott`` / ``.ots`` / ``.otp``
    templates and ``.odg`` drawings): one document for text, one per non-empty sheet
    (``sheet_name``) or one per slide with text (``page_label``); see the module docstring.

    Raises:
        ReaderError: ``"empty"``, ``"encrypted (password-protected) OpenDocument file"`` or
            ``"corrupt ODF: ..."``.
    """

    assigns_ids = False

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        odfdo, file, path = open_library_file(file, "odfdo", "office", "reading OpenDocument files")
        try:
            _check_package(file, path)
            body = odfdo.Document(str(file)).body
            docs = self._documents(body, file, extra_info)
        except ReaderError:
            raise
        except Exception as exc:  # zipfile.BadZipFile, KeyError on a missing part, lxml errors …
            raise ReaderError(path, f"corrupt ODF: {type(exc).__name__}: {exc}", exc) from exc
        if not docs:
            raise ReaderError(path, REASON_EMPTY)
        return docs

    @staticmethod
    def _documents(body: Any, file: Path, extra_info: Optional[Dict[str, Any]]) -> List[Document]:
        if body.tag == "office:spreadsheet":
            sheets: List[Tuple[str, Any]] = [
                (t.get_attribute_string("table:name") or "", _sheet_rows(t))
                for t in body.children
                if _tag(t) == "table:table"
            ]
            return sheet_documents(file, extra_info, sheets)
        if body.tag in ("office:presentation", "office:drawing"):
            docs: List[Document] = []
            pages = [p for p in body.children if _tag(p) == "draw:page"]
            for number, page in enumerate(pages, 1):
                text = "\n".join(_slide_lines(page)).strip()
                if text:
                    docs.append(make_document(text, file, extra_info, metadata={"page_label": str(number)}))
            return docs
        lines: List[str] = []
        _blocks(body, lines)
        text = "\n".join(lines)
        return [make_document(text, file, extra_info)] if text.strip() else []
