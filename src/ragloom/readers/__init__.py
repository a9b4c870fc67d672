"""Readers: files into :class:`~ragloom.schema.Document` s.

``SimpleDirectoryReader`` reads a folder (or a list of files) and picks a reader per
extension: PDF (pypdf, one document per page), DOCX (python-docx), HTML (readable text),
JSON / JSON Lines, CSV/TSV, and text of any kind (Markdown, reST, org, source code, unknown
extensions) with encoding detection.  Unreadable files are skipped and listed in
``reader.report``.
"""

from __future__ import annotations

from ragloom.readers.base import BaseReader, doc_id_for
from ragloom.readers.csv_reader import CSVReader
from ragloom.readers.directory import (
    DEFAULT_EXCLUDED_METADATA_KEYS,
    SimpleDirectoryReader,
    default_file_extractor,
    default_file_metadata_func,
)
from ragloom.readers.docx_reader import DocxReader
from ragloom.readers.encoding import decode_bytes, detect_encoding
from ragloom.readers.flat import FlatReader
from ragloom.readers.html_reader import HTMLReader, html_to_text
from ragloom.readers.json_reader import JSONReader, json_to_text
from ragloom.readers.pdf import PDFReader
from ragloom.readers.report import FileRead, FileSkipped, ReadReport
from ragloom.readers.text import TextReader

__all__ = [
    "BaseReader",
    "CSVReader",
    "DEFAULT_EXCLUDED_METADATA_KEYS",
    "DocxReader",
    "FileRead",
    "FileSkipped",
    "FlatReader",
    "HTMLReader",
    "JSONReader",
    "PDFReader",
    "ReadReport",
    "SimpleDirectoryReader",
    "TextReader",
    "decode_bytes",
    "default_file_extractor",
    "default_file_metadata_func",
    "detect_encoding",
    "doc_id_for",
    "html_to_text",
    "json_to_text",
]
