"""The reader interface and helpers shared by the per-format readers."""

from __future__ import annotations

import os
import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence

from ragloom.schema import Document

__all__ = [
    "BaseReader",
    "doc_id_for",
    "file_path_str",
    "make_document",
    "path_text",
    "fs_path",
    "escaped_path",
]

# A file name that is not valid UTF-8 decodes (``os.fsdecode``, PEP 383) with each undecodable byte
# 0xNN as the lone surrogate U+DCNN, which SQLite, JSON and tokenizers reject.  Ids and metadata hold
# U+10FENN instead (Supplementary Private Use Area-B, which real names do not use), so the path is
# valid text and still maps back to the same bytes.
_SURROGATE_LO, _SURROGATE_HI, _PUA_SHIFT = 0xDC80, 0xDCFF, 0x10FE00 - 0xDC00
_PUA_LO, _PUA_HI = _SURROGATE_LO + _PUA_SHIFT, _SURROGATE_HI + _PUA_SHIFT


def path_text(path: str) -> str:
    """``path`` (an ``os.fsdecode`` string) as valid Unicode, losslessly: each undecodable byte
    0xNN (lone surrogate U+DCNN) becomes U+10FENN; other lone surrogates become U+FFFD.  The
    identity for every path that is valid UTF-8.  Inverse: :func:`fs_path`."""
    if path.isascii():
        return path
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        out = []
        for ch in path:
            o = ord(ch)
            if _SURROGATE_LO <= o <= _SURROGATE_HI:
                out.append(chr(o + _PUA_SHIFT))
            elif 0xD800 <= o <= 0xDFFF:
                out.append("\ufffd")
            else:
                out.append(ch)
        return "".join(out)


def fs_path(text: str) -> str:
    """The ``os.fsdecode`` string of a path stored by :func:`path_text` (U+10FENN back to the byte
    0xNN), for opening or ``stat``-ing the file."""
    if text.isascii() or not any(_PUA_LO <= ord(ch) <= _PUA_HI for ch in text):
        return text
    return "".join(chr(ord(ch) - _PUA_SHIFT) if _PUA_LO <= ord(ch) <= _PUA_HI else ch for ch in text)


def escaped_path(text: str) -> str:
    """A stored path for display on one line: each byte of a name that is not UTF-8 as ``\\xNN``, and
    each control character (a newline in a file name, say) as ``\\n``, ``\\t``, ``\\r`` or ``\\xNN``."""
    if not text.isascii():
        text = "".join(f"\\x{ord(ch) - _PUA_LO + 0x80:02x}" if _PUA_LO <= ord(ch) <= _PUA_HI else ch for ch in text)
    return _CONTROL.sub(_escape_control, text) if _CONTROL.search(text) else text


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CONTROL_NAMES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape_control(m: "re.Match[str]") -> str:
    ch = m.group()
    return _CONTROL_NAMES.get(ch) or f"\\x{ord(ch):02x}"


def _os_str(file: "os.PathLike[str] | str") -> str:
    s = os.fspath(file)
    return fs_path(s) if isinstance(s, str) else os.fsdecode(s)


def file_path_str(file: "os.PathLike[str] | str") -> str:
    """Absolute POSIX form of ``file`` (not resolving symlinks) as valid text (:func:`path_text`):
    the basis of document ids and ``file_path`` metadata."""
    return path_text(Path(os.path.abspath(_os_str(file))).as_posix())


def doc_id_for(file: "os.PathLike[str] | str", part: Optional[int] = None) -> str:
    """Stable document id: the file's canonical absolute POSIX path (symlinks resolved, so a
    file reached through a symlinked folder — or macOS's ``/tmp`` → ``/private/tmp`` — has one
    id) as valid text (:func:`path_text`), or ``f"{path}_part_{part}"`` for part ``part``
    (0-based) of a file that yields several documents (PDF pages, JSONL lines).  ``file_path``
    metadata keeps the path as given."""
    path = path_text(Path(os.path.realpath(_os_str(file))).as_posix())
    return path if part is None else f"{path}_part_{part}"


def make_document(
    text: str,
    file: "os.PathLike[str] | str",
    extra_info: Optional[Dict[str, Any]] = None,
    part: Optional[int] = None,
    metadata: Optional[Dict[str, Any]] = None,
    hidden_keys: Sequence[str] = (),
    mimetype: str = "text/plain",
) -> Document:
    """Build a :class:`Document` with a stable id.

    ``extra_info`` (the file's metadata) is copied, then ``metadata`` added; keys in
    ``hidden_keys`` are excluded from both the embed and the LLM view.
    """
    md: Dict[str, Any] = dict(extra_info or {})
    if metadata:
        md.update(metadata)
    hidden = [k for k in hidden_keys if k in md]
    return Document(
        id_=doc_id_for(file, part),
        text=text,
        metadata=md,
        excluded_embed_metadata_keys=list(hidden),
        excluded_llm_metadata_keys=list(hidden),
        mimetype=mimetype,
    )


class BaseReader(ABC):
    """Reads one file into documents.

    Subclasses implement :meth:`load_data`.  A reader that cannot read a file raises
    :class:`ragloom.errors.ReaderError` with a short reason (``"encrypted"``, ``"empty"`` …);
    :class:`~ragloom.readers.SimpleDirectoryReader` records it and moves on.  Any other
    exception is treated the same way (reason ``"corrupt or unreadable: <error>"``).

    ``assigns_ids``: ``True`` if the reader gives its documents stable ids itself
    (all ragloom readers do, via :func:`doc_id_for`).  For readers that leave it ``False``,
    SimpleDirectoryReader sets ids to the file path (``{path}_part_{i}`` for several).
    """

    assigns_ids: bool = False

    @abstractmethod
    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        """Read ``file`` into a list of documents (possibly several, e.g. one per PDF page).

        ``extra_info`` is metadata to copy into every document.

        Raises:
            ragloom.errors.ReaderError: the file cannot be read (reason says why).
        """

    def lazy_load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> Iterator[Document]:
        """Iterate over :meth:`load_data`'s documents."""
        yield from self.load_data(file, extra_info)

    @classmethod
    def class_name(cls) -> str:
        return cls.__name__
