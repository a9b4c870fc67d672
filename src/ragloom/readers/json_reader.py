"""JSON as readable indented ``key: value`` text; JSON Lines / NDJSON as one document per record."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Dict, List, Optional

from ragloom.errors import ReaderError
from ragloom.readers.base import BaseReader, file_path_str, make_document
from ragloom.readers.text import ENCODING_KEY, REASON_EMPTY, read_text_file
from ragloom.schema import Document

logger = logging.getLogger(__name__)

__all__ = ["JSONReader", "json_to_text"]

LINE_NUMBER_KEY = "line_number"


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


def _render(value: Any, depth: int, out: List[str]) -> None:
    pad = "  " * depth
    if isinstance(value, dict):
        if not value:
            out.append(pad + "{}")
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                out.append(f"{pad}{key}:")
                _render(item, depth + 1, out)
            else:
                out.append(f"{pad}{key}: {_scalar(item) if not isinstance(item, (dict, list)) else json.dumps(item)}")
    elif isinstance(value, list):
        if not value:
            out.append(pad + "[]")
        for item in value:
            if isinstance(item, (dict, list)) and item:
                out.append(f"{pad}-")
                _render(item, depth + 1, out)
            else:
                out.append(f"{pad}- {_scalar(item) if not isinstance(item, (dict, list)) else json.dumps(item)}")
    else:
        out.append(pad + _scalar(value))


def json_to_text(value: Any) -> str:
    """Render parsed JSON as indented, YAML-like text: ``key: value`` lines, ``- item`` for list
    items, two spaces per nesting level; strings unquoted, non-ASCII kept as is."""
    out: List[str] = []
    _render(value, 0, out)
    return "\n".join(out)


class JSONReader(BaseReader):
    """Reads ``.json`` into one document of readable text and ``.jsonl``/``.ndjson`` into one
    document per non-empty line.

    Args:
        is_jsonl: ``True``/``False`` to force JSON Lines or JSON; ``None`` (default) decides
            by extension (``.jsonl``, ``.ndjson`` → lines).
        encoding, errors: as for :class:`~ragloom.readers.text.TextReader`.

    JSON Lines documents have ids ``{path}_part_{i}`` (``i`` = 0-based record ordinal) and
    metadata ``line_number`` (1-based, hidden from embed/LLM views).  A line that is not valid
    JSON is kept as its raw text (logged).  A ``.json`` file that is not valid JSON is read as
    plain text (logged), because its characters still carry meaning.

    Raises:
        ReaderError: ``"empty"``, ``"binary file"`` or a decoding failure.
    """

    assigns_ids = True

    def __init__(self, is_jsonl: Optional[bool] = None, encoding: Optional[str] = None, errors: str = "strict") -> None:
        self.is_jsonl = is_jsonl
        self.encoding = encoding
        self.errors = errors

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        file = Path(file)
        text, enc = read_text_file(file, self.encoding, self.errors)
        if not text.strip():
            raise ReaderError(file_path_str(file), REASON_EMPTY)
        is_jsonl = self.is_jsonl
        if is_jsonl is None:
            is_jsonl = file.suffix.lower() in (".jsonl", ".ndjson")
        hidden = [ENCODING_KEY, LINE_NUMBER_KEY]
        if not is_jsonl:
            try:
                body = json_to_text(json.loads(text))
            except (ValueError, RecursionError) as exc:
                logger.warning("%s: not valid JSON (%s); reading it as plain text", file, exc)
                body = text
            if not body.strip():
                raise ReaderError(file_path_str(file), REASON_EMPTY)
            return [make_document(body, file, extra_info, metadata={ENCODING_KEY: enc}, hidden_keys=hidden)]

        docs: List[Document] = []
        for lineno, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                body = json_to_text(json.loads(line))
            except (ValueError, RecursionError) as exc:
                logger.warning("%s line %d: not valid JSON (%s); keeping the raw line", file, lineno, exc)
                body = line.strip()
            if not body.strip():
                continue
            docs.append(
                make_document(
                    body,
                    file,
                    extra_info,
                    part=len(docs),
                    metadata={ENCODING_KEY: enc, LINE_NUMBER_KEY: lineno},
                    hidden_keys=hidden,
                )
            )
        if not docs:
            raise ReaderError(file_path_str(file), REASON_EMPTY)
        return docs
