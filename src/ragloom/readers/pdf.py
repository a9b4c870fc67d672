"""PDF via pypdf: one document per page that has text."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Dict, List, Optional

from ragloom.errors import ReaderError
from ragloom.readers.base import BaseReader, file_path_str, make_document
from ragloom.schema import Document

logger = logging.getLogger(__name__)

__all__ = ["PDFReader", "REASON_ENCRYPTED", "REASON_NO_TEXT"]

REASON_ENCRYPTED = "encrypted (password required)"
REASON_NO_TEXT = "no text layer (scanned PDF?)"
PAGE_LABEL_KEY = "page_label"
TOTAL_PAGES_KEY = "total_pages"


class _Dedupe(logging.Filter):
    """Passes each distinct pypdf log message once per file (pypdf repeats font warnings per page)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set = set()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.levelno, record.getMessage()[:200])
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


class PDFReader(BaseReader):
    """Reads a PDF with pypdf into one :class:`Document` per page that has text.

    Page ``i`` (0-based) gets id ``{path}_part_{i}`` and metadata ``page_label`` (the
    printed label, e.g. ``"iv"`` or ``"12"``; embedded with the text) and ``total_pages``
    (hidden from embed/LLM views).  Pages without text are skipped, so part numbers can
    have gaps; ids stay stable across reads.

    A PDF encrypted with an empty user password (copy/print-protected) is decrypted; AES
    needs the ``cryptography`` package.

    Args:
        password: tried when the PDF is encrypted (after the empty password).

    Raises:
        ReaderError: ``"encrypted (password required)"``, ``"no text layer (scanned PDF?)"``
            when no page has text, ``"empty"`` for zero pages, or ``"corrupt PDF: ..."``.
    """

    assigns_ids = True

    def __init__(self, password: Optional[str] = None) -> None:
        self.password = password

    def _decrypt(self, reader: Any, path: str, dependency_error: type) -> None:
        """Open an encrypted PDF with the empty password, then ``password``; ``ReaderError`` if neither works."""
        for pw in ("", self.password):
            if pw is None:
                continue
            try:
                if reader.decrypt(pw):
                    return
            except dependency_error as exc:
                raise ReaderError(path, f"encrypted (AES; install 'cryptography' to read): {exc}", exc) from exc
        raise ReaderError(path, REASON_ENCRYPTED)

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        import pypdf
        from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError

        file = Path(file)
        path = file_path_str(file)
        # a filter on "pypdf" does not see what its child loggers ("pypdf._cmap" …) log: every one gets it
        pypdf_loggers = [logging.getLogger("pypdf")] + [
            lg for name, lg in logging.root.manager.loggerDict.items()
            if name.startswith("pypdf.") and isinstance(lg, logging.Logger)]
        dedupe = _Dedupe()
        for lg in pypdf_loggers:
            lg.addFilter(dedupe)
        try:
            try:
                reader = pypdf.PdfReader(str(file))
                if reader.is_encrypted:
                    self._decrypt(reader, path, DependencyError)
                pages = reader.pages
                total = len(pages)
                labels = _page_labels(reader, total)
            except ReaderError:
                raise
            except FileNotDecryptedError as exc:
                raise ReaderError(path, REASON_ENCRYPTED, exc) from exc
            except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
                raise ReaderError(path, f"corrupt PDF: {exc}", exc) from exc
            if total == 0:
                raise ReaderError(path, "empty")
            docs: List[Document] = []
            failed = 0
            for i in range(total):
                try:
                    text = pages[i].extract_text() or ""
                except FileNotDecryptedError as exc:
                    raise ReaderError(path, REASON_ENCRYPTED, exc) from exc
                except Exception as exc:  # one broken page must not lose the others
                    failed += 1
                    logger.warning("%s: page %d: text extraction failed: %s", path, i + 1, exc)
                    continue
                text = text.replace("\x00", "")
                if not text.strip():
                    continue
                docs.append(
                    make_document(
                        text,
                        file,
                        extra_info,
                        part=i,
                        metadata={PAGE_LABEL_KEY: labels[i], TOTAL_PAGES_KEY: total},
                        hidden_keys=[TOTAL_PAGES_KEY],
                    )
                )
            if not docs:
                if failed == total:
                    raise ReaderError(path, "corrupt PDF: text extraction failed on every page")
                raise ReaderError(path, REASON_NO_TEXT)
            return docs
        finally:
            for lg in pypdf_loggers:
                lg.removeFilter(dedupe)


def _page_labels(reader: Any, total: int) -> List[str]:
    """The PDF's page labels, or ``"1"``, ``"2"`` … when it has none or a malformed label tree."""
    try:
        labels = list(reader.page_labels)
    except Exception:  # malformed label tree: fall back to 1-based numbers
        labels = []
    if len(labels) != total:
        labels = [str(i + 1) for i in range(total)]
    return labels
