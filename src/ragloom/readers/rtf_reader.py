"""RTF through ``striprtf`` (pure Python, BSD): the text without control words, groups or
embedded pictures; the codec of ``\\ansicpg`` and ``\\'hh`` / ``\\uN`` escapes decoded."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

from ragloom.errors import ReaderError
from ragloom.readers.base import BaseReader, file_path_str, make_document
from ragloom.readers.text import REASON_EMPTY
from ragloom.schema import Document

__all__ = ["RTFReader"]


class RTFReader(BaseReader):
    """Reads an ``.rtf`` file into one document of plain text.

    Raises:
        ReaderError: ``"empty"``, ``"not an RTF file"`` (no ``{\\rtf`` header) or ``"corrupt RTF: ..."``.
    """

    assigns_ids = True

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        from striprtf.striprtf import rtf_to_text

        file = Path(file)
        path = file_path_str(file)
        data = file.read_bytes()
        if not data.lstrip()[:5] == b"{\\rtf":
            raise ReaderError(path, "not an RTF file (no {\\rtf header)")
        try:
            # RTF is 7-bit: other characters are escaped; latin-1 maps every byte for the stray ones
            text = rtf_to_text(data.decode("latin-1"), errors="replace")
        except Exception as exc:
            raise ReaderError(path, f"corrupt RTF: {type(exc).__name__}: {exc}", exc) from exc
        lines = [line.strip() for line in text.splitlines()]
        body = "\n".join(line for line in lines if line)
        if not body.strip():
            raise ReaderError(path, REASON_EMPTY)
        return [make_document(body, file, extra_info)]
