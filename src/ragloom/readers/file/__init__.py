"""LlamaIndex's file-reader import paths, mapped onto ragloom's readers.

``from llama_index.readers.file import FlatReader`` (the ``llama-index-readers-file`` package)
ports as ``from ragloom.readers.file import FlatReader``; ``llama_index.core.readers.file``
(``SimpleDirectoryReader``) is here too.  Each name is ragloom's own reader, not a copy:

==================  ==============================================================
name                ragloom reader
==================  ==============================================================
``CSVReader``       :class:`~ragloom.readers.csv_reader.CSVReader` (one document per
                    file; LlamaIndex's ``concat_rows=False``, a document per row, is
                    not supported: ``TypeError``)
``DocxReader``      :class:`~ragloom.readers.docx_reader.DocxReader`
``EpubReader``      :class:`~ragloom.readers.epub.EpubReader` (needs ``ragloom[epub]``
                    when it reads)
``FlatReader``      :class:`~ragloom.readers.flat.FlatReader`
``PDFReader``       :class:`~ragloom.readers.pdf.PDFReader` (one document per page;
                    LlamaIndex's ``return_full_document`` is not supported)
``PptxReader``      :class:`~ragloom.readers.office.PptxReader` (one document per
                    slide; no image captioning)
``RTFReader``       :class:`~ragloom.readers.rtf_reader.RTFReader`
``SimpleDirectoryReader``  :class:`~ragloom.readers.directory.SimpleDirectoryReader`
==================  ==============================================================

The other readers of ``llama_index.readers.file`` have no ragloom equivalent; importing one
raises ``ImportError`` saying what to use instead (:data:`NOT_PROVIDED`).
"""

from __future__ import annotations

from typing import Dict

from ragloom.readers.csv_reader import CSVReader
from ragloom.readers.directory import SimpleDirectoryReader
from ragloom.readers.docx_reader import DocxReader
from ragloom.readers.epub import EpubReader
from ragloom.readers.flat import FlatReader
from ragloom.readers.office import PptxReader
from ragloom.readers.pdf import PDFReader
from ragloom.readers.rtf_reader import RTFReader

__all__ = [
    "CSVReader",
    "DocxReader",
    "EpubReader",
    "FlatReader",
    "PDFReader",
    "PptxReader",
    "RTFReader",
    "SimpleDirectoryReader",
]

#: ``llama_index.readers.file`` names ragloom does not provide, and what to use instead.
NOT_PROVIDED: Dict[str, str] = {
    "HTMLTagReader": "ragloom.readers.HTMLReader reads the readable text of a whole HTML page "
                     "(it does not select tags)",
    "MarkdownReader": "SimpleDirectoryReader reads a Markdown file whole (ragloom.readers.TextReader) and "
                      "ragloom.node_parser.MarkdownNodeParser splits it into header sections",
    "PandasCSVReader": "ragloom.readers.file.CSVReader (no pandas)",
    "PandasExcelReader": "ragloom.readers.office.XlsxReader (.xlsx, one document per sheet; needs ragloom[office])",
    "PagedCSVReader": "ragloom.readers.file.CSVReader (one document per file)",
    "MboxReader": "ragloom.readers.email_reader.EmailReader reads one message per .eml file",
    "IPYNBReader": "no notebook reader: export the notebook to .py or .md first",
    "HWPReader": "no HWP reader",
    "PyMuPDFReader": "ragloom.readers.file.PDFReader (pypdf)",
    "UnstructuredReader": "the readers of SimpleDirectoryReader (no unstructured.io)",
    "XMLReader": "no XML reader: XML files are read as plain text by SimpleDirectoryReader",
    "ImageReader": "no image or OCR reader",
    "ImageCaptionReader": "no image or OCR reader",
    "ImageVisionLLMReader": "no image or OCR reader",
    "ImageTabularChartReader": "no image or OCR reader",
    "VideoAudioReader": "no audio or video reader",
}


def __getattr__(name: str) -> object:
    """``ImportError`` naming ragloom's alternative for a LlamaIndex reader it does not provide
    (``from ragloom.readers.file import MarkdownReader``); ``AttributeError`` for other names."""
    hint = NOT_PROVIDED.get(name)
    if hint is not None:
        raise ImportError(f"ragloom does not provide llama_index.readers.file.{name}: {hint}", name=name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
