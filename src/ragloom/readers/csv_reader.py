"""CSV/TSV: each row becomes one line of text, cells joined by ``", "``."""

from __future__ import annotations

import csv
import io
import logging
from pathlib import Path
from typing import Any, Dict, List, Optional

from ragloom.errors import ReaderError
from ragloom.readers.base import BaseReader, file_path_str, make_document
from ragloom.readers.text import ENCODING_KEY, REASON_EMPTY, read_text_file
from ragloom.schema import Document

logger = logging.getLogger(__name__)

__all__ = ["CSVReader"]


class CSVReader(BaseReader):
    """Reads a delimited table into one document: one line per non-empty row, cells joined by
    ``cell_separator`` (default ``", "``), the header row (if any) first like any row.

    The delimiter is ``delimiter`` if given; else ``\\t`` for ``.tsv``/``.tab``; else sniffed
    (``csv.Sniffer`` over the first 64 KiB, among ``, ; \\t |``), falling back to ``,``.
    A file the csv module cannot parse is read as plain text (logged).

    Raises:
        ReaderError: ``"empty"``, ``"binary file"`` or a decoding failure.
    """

    assigns_ids = True

    def __init__(
        self,
        delimiter: Optional[str] = None,
        cell_separator: str = ", ",
        encoding: Optional[str] = None,
        errors: str = "strict",
    ) -> None:
        self.delimiter = delimiter
        self.cell_separator = cell_separator
        self.encoding = encoding
        self.errors = errors

    def _delimiter(self, file: Path, text: str) -> str:
        if self.delimiter:
            return self.delimiter
        if file.suffix.lower() in (".tsv", ".tab"):
            return "\t"
        try:
            return csv.Sniffer().sniff(text[:65536], delimiters=",;\t|").delimiter
        except csv.Error:
            return ","

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        file = Path(file)
        text, enc = read_text_file(file, self.encoding, self.errors)
        if not text.strip():
            raise ReaderError(file_path_str(file), REASON_EMPTY)
        try:
            rows = csv.reader(io.StringIO(text, newline=""), delimiter=self._delimiter(file, text))
            lines = [self.cell_separator.join(c.strip() for c in row) for row in rows if any(c.strip() for c in row)]
            body = "\n".join(lines)
        except csv.Error as exc:
            logger.warning("%s: cannot parse as CSV (%s); reading it as plain text", file, exc)
            body = text
        if not body.strip():
            raise ReaderError(file_path_str(file), REASON_EMPTY)
        return [make_document(body, file, extra_info, metadata={ENCODING_KEY: enc}, hidden_keys=[ENCODING_KEY])]
