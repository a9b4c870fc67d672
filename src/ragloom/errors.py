"""ragloom's own exceptions.  Bad arguments raise ``ValueError``; file-system problems raise the
built-in ``OSError`` family; ingestion failures that concern one file raise :class:`ReaderError`."""

from __future__ import annotations

import shlex
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
    """Another process holds the write lock of an index directory; ``pid`` is its process id when known."""

    pid: Optional[int] = None


class PathNotFoundError(RagloomError, FileNotFoundError):
    """A path given to index does not exist, and the index holds no document from it (a typo, not a
    deleted folder: that one's documents are removed instead); ``filename`` is the path."""


class EmptiedFolderError(RagloomError):
    """Documents would leave the index because a folder holding their files is now empty: an
    unmounted drive or share looks like that (its mount point stays, empty), so nothing is removed.
    ``folder`` is that folder, ``held`` how many documents the index holds from below it."""

    def __init__(self, folder: str, held: int) -> None:
        super().__init__(
            f"{folder} is empty, but the index holds {held} document{'' if held == 1 else 's'} from it: "
            "nothing was removed (is a drive or share not mounted?). If its files were deleted on purpose, "
            f"remove their documents with `ragloom remove {shlex.quote(folder)}` "
            "(in Python: ragloom.ingestion.manage.remove_paths)."
        )
        self.folder = folder
        self.held = held


class DocumentError(RagloomError, ValueError):
    """One input document cannot be ingested; the others go on.

    ``doc_id`` is the document, ``keys`` the metadata keys at fault (empty when the text itself is),
    ``reason`` a short human-readable cause.  A ``ValueError``, so callers that catch bad input keep
    working.
    """

    def __init__(self, doc_id: str, reason: str, keys: tuple = ()) -> None:
        super().__init__(f"document {doc_id!r}: {reason}")
        self.doc_id = doc_id
        self.reason = reason
        self.keys = tuple(keys)

    def __reduce__(self) -> tuple:
        # rebuilt from its fields: raised in a worker process (SplitPool), it must unpickle in the
        # parent, or the pool breaks and the run stops instead of failing this document alone
        return (type(self), (self.doc_id, self.reason, self.keys))


class MetadataTooLongError(DocumentError):
    """A document's embedded metadata leaves no room for text within ``chunk_size`` tokens."""


class UnserializableMetadataError(DocumentError):
    """A metadata value cannot be stored as JSON (e.g. a custom object)."""


class IngestionError(RagloomError, ValueError):
    """Raised by ingestion with ``raise_on_error=True``: ``failures`` lists every document that failed."""

    def __init__(self, failures: list) -> None:
        lines = "; ".join(f"{f.doc_id}: {f.message}" for f in failures[:5])
        more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
        super().__init__(f"{len(failures)} document(s) could not be ingested: {lines}{more}")
        self.failures = list(failures)
