"""DOCX via python-docx: paragraphs and tables in document order."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Dict, List, Optional

from ragloom.errors import ReaderError
from ragloom.readers.base import BaseReader, file_path_str, make_document
from ragloom.readers.text import REASON_EMPTY
from ragloom.schema import Document

logger = logging.getLogger(__name__)

__all__ = ["DocxReader"]


def _table_lines(table: Any, out: List[str]) -> None:
    from docx.table import _Cell

    for row in table.rows:
        cells: List[str] = []
        # The row's own <w:tc> elements, not ``row.cells``: that one repeats merged cells per
        # grid column and raises on inconsistent grids (real files have them).  A cell merged
        # down from the row above is an empty continuation here, so its text appears once.
        for tc in row._tr.tc_lst:
            cell = _Cell(tc, table)
            parts: List[str] = []
            for block in cell.iter_inner_content():
                if hasattr(block, "rows"):
                    sub: List[str] = []
                    _table_lines(block, sub)
                    parts.extend(sub)
                else:
                    t = block.text.strip()
                    if t:
                        parts.append(t)
            cells.append(" ".join(parts))
        if any(cells):
            out.append(" | ".join(cells))


class DocxReader(BaseReader):
    """Reads a ``.docx`` file into one document: the body's paragraphs and tables in order.

    Paragraphs become lines (empty ones dropped); each table row becomes a line with cells
    joined by ``" | "`` (merged cells once, nested tables inline).  Headers and footers are
    left out (they repeat on every page).

    Raises:
        ReaderError: ``"empty"`` (no text) or ``"corrupt DOCX: ..."`` (not a valid package).
    """

    assigns_ids = True

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        import docx
        from docx.opc.exceptions import PackageNotFoundError

        file = Path(file)
        path = file_path_str(file)
        try:
            document = docx.Document(str(file))
        except PackageNotFoundError as exc:
            raise ReaderError(path, f"corrupt DOCX: {exc}", exc) from exc
        except (KeyError, ValueError) as exc:
            raise ReaderError(path, f"corrupt DOCX: {exc}", exc) from exc
        except Exception as exc:  # zipfile.BadZipFile, lxml errors …
            raise ReaderError(path, f"corrupt DOCX: {type(exc).__name__}: {exc}", exc) from exc
        lines: List[str] = []
        for block in document.iter_inner_content():
            if hasattr(block, "rows"):
                _table_lines(block, lines)
            else:
                text = block.text.strip()
                if text:
                    lines.append(text)
        body = "\n".join(lines)
        if not body.strip():
            raise ReaderError(path, REASON_EMPTY)
        return [
            make_document(
                body,
                file,
                extra_info,
                mimetype="text/plain",
            )
        ]
