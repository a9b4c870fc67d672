"""``FlatReader``: one :class:`~ragloom.schema.Document` per file, its raw text (LlamaIndex name).

Unlike :class:`~ragloom.readers.TextReader` it adds no title and hides nothing: the
document is the file's text as it is (encoding detected, newlines normalised to ``\\n``),
with ``filename`` and ``extension`` metadata, so format-aware node parsers (Markdown,
HTML, JSON, code) see the original markup.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

from ragloom.readers.base import BaseReader, make_document
from ragloom.readers.text import read_text_file
from ragloom.schema import Document

__all__ = ["FlatReader"]


class FlatReader(BaseReader):
    """Read a file into one document holding its raw text.

    Args:
        encoding: codec to force, or ``None`` to detect (see
            :func:`~ragloom.readers.encoding.decode_bytes`).
        errors: codec error handler (``"strict"`` by default).

    The document id is the absolute POSIX path; metadata: ``extra_info`` plus
    ``filename`` (the file's name) and ``extension`` (its suffix, e.g. ``".py"``).
    """

    assigns_ids = True

    def __init__(self, encoding: Optional[str] = None, errors: str = "strict", *args: Any, **kwargs: Any) -> None:
        self.encoding = encoding
        self.errors = errors

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        path = Path(file)
        text, _ = read_text_file(path, self.encoding, self.errors)
        meta = {"filename": path.name, "extension": path.suffix}
        return [make_document(text, path, extra_info, metadata=meta)]
