"""What a read did, file by file: :class:`ReadReport`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List


@dataclass(frozen=True)
class FileRead:
    """A file that was read: ``path`` (absolute POSIX), ``num_documents``, ``num_chars``
    (characters of document text, summed over its documents)."""

    path: str
    num_documents: int
    num_chars: int


#: Skip reasons that say nothing about the file's content (the next read may succeed): permission
#: denied, an I/O error, a reader that crashed.  The readers produce these strings; callers use
#: :attr:`FileSkipped.transient` rather than matching them.
TRANSIENT_REASON_PREFIXES = ("permission denied", "corrupt or unreadable", "cannot read:", "cannot stat:",
                             "cannot list:", "too large to read (out of memory)", "changed while being read",
                             "read took over")


@dataclass(frozen=True)
class FileSkipped:
    """A file that was skipped: ``path`` (absolute POSIX) and a short ``reason``
    (``"empty"``, ``"binary file"``, ``"encrypted (password required)"``,
    ``"no text layer (scanned PDF?)"``, ``"permission denied"``, ``"corrupt …"``, …)."""

    path: str
    reason: str

    @property
    def transient(self) -> bool:
        """``True`` when the reason says nothing about the file's content (see
        :data:`TRANSIENT_REASON_PREFIXES`): an index should keep what it had for the file.
        ``False``: the file has no indexable text now (empty, binary, encrypted, …)."""
        return self.reason.startswith(TRANSIENT_REASON_PREFIXES)


@dataclass
class ReadReport:
    """Per-file outcome of :meth:`SimpleDirectoryReader.load_data` / ``iter_data``.

    ``read`` and ``skipped`` are in reading order; ``elapsed_s`` is wall-clock seconds.
    ``members_skipped``: members of read archives that were not read, each ``path`` being
    ``"ARCHIVE!/MEMBER"`` (not counted as files).
    """

    read: List[FileRead] = field(default_factory=list)
    skipped: List[FileSkipped] = field(default_factory=list)
    elapsed_s: float = 0.0
    members_skipped: List[FileSkipped] = field(default_factory=list)

    @property
    def num_documents(self) -> int:
        return sum(r.num_documents for r in self.read)

    @property
    def num_chars(self) -> int:
        return sum(r.num_chars for r in self.read)

    def skipped_reasons(self) -> Dict[str, str]:
        """``{path: reason}`` for the skipped files."""
        return {s.path: s.reason for s in self.skipped}

    def summary(self) -> str:
        """One line: files read, documents, characters, files skipped, seconds."""
        return (
            f"read {len(self.read)} files ({self.num_documents} documents, {self.num_chars} characters), "
            f"skipped {len(self.skipped)}, in {self.elapsed_s:.2f} s"
        )

    def __str__(self) -> str:
        lines = [self.summary()]
        lines += [f"  skipped {s.path}: {s.reason}" for s in self.skipped + self.members_skipped]
        return "\n".join(lines)
