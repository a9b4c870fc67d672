"""Plain text of any kind: ``.txt``, Markdown, reST, org, source code, and unknown extensions."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ragloom.errors import ReaderError
from ragloom.readers.base import BaseReader, file_path_str, make_document
from ragloom.readers.encoding import (
    BinaryContentError,
    decode_bytes_counted,
    looks_binary_head,
    normalize_newlines,
    replacement_note,
)
from ragloom.readers.markdown import MARKDOWN_EXTS, TITLE_KEY, markdown_title
from ragloom.schema import Document

logger = logging.getLogger(__name__)

__all__ = ["TextReader", "read_text_file", "REASON_BINARY", "REASON_EMPTY"]

REASON_BINARY = "binary file"
REASON_EMPTY = "empty"

#: Metadata keys readers add for bookkeeping; hidden from the embed and LLM views.
ENCODING_KEY = "encoding"
_SNIFF_BYTES = 8192


def read_text_file(
    file: Path,
    encoding: Optional[str] = None,
    errors: str = "strict",
    declared: Optional[str] = None,
    data: Optional[bytes] = None,
) -> Tuple[str, str]:
    """Read and decode a text file; return ``(text, codec_name)`` with ``\\n`` newlines.

    See :func:`ragloom.readers.encoding.decode_bytes` for how the codec is chosen.  Slightly
    damaged text (cut mid-character, a stray bad byte: ≤ 1 undecodable byte per 1,000
    characters) is read with U+FFFD replacement characters and logged as a warning naming
    the file, e.g. ``"<path>: decoded as gb18030 with 1 replacement character"``.

    Raises:
        ReaderError: reason ``"binary file"`` if the bytes are not text, or
            ``"cannot decode as <codec>: ..."`` if decoding fails under ``errors="strict"``.
        OSError: the file cannot be opened (e.g. ``PermissionError``).
    """
    if data is None:
        with open(file, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
            if encoding is None and looks_binary_head(head):
                raise ReaderError(file_path_str(file), REASON_BINARY)
            data = head + fh.read()
    try:
        text, enc, replaced = decode_bytes_counted(data, encoding=encoding, errors=errors, declared=declared)
    except BinaryContentError as exc:
        raise ReaderError(file_path_str(file), REASON_BINARY, exc) from exc
    except UnicodeDecodeError as exc:
        raise ReaderError(file_path_str(file), f"cannot decode as {exc.encoding}: {exc.reason}", exc) from exc
    if replaced:
        logger.warning("%s: %s (undecodable bytes)", file_path_str(file), replacement_note(enc, replaced))
    return normalize_newlines(text), enc


class TextReader(BaseReader):
    """Reads a whole text file into one :class:`Document` (id = absolute POSIX path).

    Args:
        encoding: codec to force, or ``None`` to detect (BOM → UTF-8 → charset-normalizer,
            GBK family read as GB18030).
        errors: codec error handler for the decode (``"strict"`` by default).

    The document's metadata gets ``encoding`` (the codec used), hidden from embed and
    LLM views.  Markdown files also get ``document_title`` (their first H1, see
    :func:`~ragloom.readers.markdown.markdown_title`), visible to both, so every chunk of
    the file carries its title into the embedding and the keyword index.  ``text`` is the
    file's characters with newlines normalised to ``\\n``.

    Raises:
        ReaderError: ``"binary file"``, ``"empty"`` (no non-whitespace character) or a
            decoding failure.
    """

    assigns_ids = True

    def __init__(self, encoding: Optional[str] = None, errors: str = "strict") -> None:
        self.encoding = encoding
        self.errors = errors

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        text, enc = read_text_file(Path(file), self.encoding, self.errors)
        if not text.strip():
            raise ReaderError(file_path_str(file), REASON_EMPTY)
        metadata: Dict[str, Any] = {}
        if Path(file).suffix.lower() in MARKDOWN_EXTS:
            title = markdown_title(text)
            if title:
                metadata[TITLE_KEY] = title
        metadata[ENCODING_KEY] = enc
        return [make_document(text, file, extra_info, metadata=metadata, hidden_keys=[ENCODING_KEY])]
