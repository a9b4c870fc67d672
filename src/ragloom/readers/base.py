"""The reader interface and helpers shared by the per-format readers."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence

from ragloom.schema import Document

__all__ = ["BaseReader", "doc_id_for", "file_path_str", "make_document"]


def file_path_str(file: "os.PathLike[str] | str") -> str:
    """Absolute POSIX form of ``file`` (not resolving symlinks): the basis of document ids."""
    return Path(os.path.abspath(os.fspath(file))).as_posix()


def doc_id_for(file: "os.PathLike[str] | str", part: Optional[int] = None) -> str:
    """Stable document id: the file's canonical absolute POSIX path (symlinks resolved, so a
    file reached through a symlinked folder — or macOS's ``/tmp`` → ``/private/tmp`` — has one
    id), or ``f"{path}_part_{part}"`` for part ``part`` (0-based) of a file that yields several
    documents (PDF pages, JSONL lines).  ``file_path`` metadata keeps the path as given."""
    path = Path(os.path.realpath(os.fspath(file))).as_posix()
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
