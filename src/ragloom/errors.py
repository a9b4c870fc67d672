"""ragloom's own exceptions.  Bad arguments raise ``ValueError``; file-system problems raise the
built-in ``OSError`` family; ingestion failures that concern one file raise :class:`ReaderError`."""

from __future__ import annotations

from typing import Optional


class RagloomError(Exception):
    """Base class of ragloom's own errors."""


class ReaderError(RagloomError):
    """A file could not be read.  ``path`` is the file, ``reason`` a short human-readable cause."""

    def __init__(self, path: str, reason: str, cause: Optional[BaseException] = None) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.__cause__ = cause


class ModelNotAvailableError(RagloomError, OSError):
    """An embedding model (or tokenizer) was asked for that is not available on this machine offline."""


class IndexLockedError(RagloomError):
    """Another process holds the write lock of an index directory."""
