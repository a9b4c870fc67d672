"""Junk chunks: text that is mostly base64, hex or RTF/TeX control words.

Such chunks come from attachments, embedded images, binary dumps and formats read as plain text;
a real mixed folder had 19% of them, and they ranked first for queries such as "email with an
embedded image" (their tokens are rare, so keyword scores are high).  :func:`junk_kind` flags them;
``ragloom index`` leaves them out of the index and lists them per file (``keep_junk=True`` /
``--keep-junk`` indexes them anyway).

The rules look at the share of a chunk's non-whitespace characters that sit in:

- **base64**: runs of ``[A-Za-z0-9+/]`` of 40 or more characters (``=`` padding allowed) that
  mix upper case, lower case and digits, as encoded bytes do and words, paths and identifiers
  rarely do — at least half the characters;
- **hex**: runs of 16 or more hex digits (``0x`` allowed) holding a digit, or hex-dump rows of
  twelve or more 2–4 digit groups — at least half;
- **control words**: ``\\word`` / ``\\word123`` control sequences (RTF read as text) — at least half.

Chunks under 100 non-whitespace characters are never flagged (too little to judge).
"""

from __future__ import annotations

import re
from typing import Any, List, Optional, Sequence, Tuple

from ragloom.schema import BaseNode, MetadataMode, TransformComponent

__all__ = ["junk_kind", "JunkFilter", "JUNK_SHARE", "MIN_JUDGED_CHARS"]

#: share of a chunk's non-whitespace characters above which it is junk
JUNK_SHARE = 0.5
#: chunks with fewer non-whitespace characters are not judged (a short file naming a commit hash is
#: not junk)
MIN_JUDGED_CHARS = 100

_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{40,}={0,2}")
_HEX_RUN = re.compile(r"(?<![0-9A-Za-z])(?:0[xX])?[0-9a-fA-F]{16,}(?![0-9A-Za-z])")
_HEX_DUMP = re.compile(r"(?:(?<![0-9A-Za-z])[0-9a-fA-F]{2,4}(?![0-9A-Za-z])[ \t]+){12,}")
_CONTROL_WORD = re.compile(r"\\[A-Za-z]{1,32}-?\d*")
_SPACE = re.compile(r"\s+")


def _mixed(run: str) -> bool:
    has_digit = has_upper = has_lower = False
    for ch in run:
        if ch.isdigit():
            has_digit = True
        elif ch.isupper():
            has_upper = True
        elif ch.islower():
            has_lower = True
        if has_digit and has_upper and has_lower:
            return True
    return False


def junk_kind(text: str) -> Optional[str]:
    """``"base64"``, ``"hex"`` or ``"control words"`` when ``text`` is mostly that (see the module
    docstring for the rules and thresholds), else ``None``."""
    solid = len(_SPACE.sub("", text))
    if solid < MIN_JUDGED_CHARS:
        return None
    need = JUNK_SHARE * solid
    b64 = sum(len(m.group()) for m in _BASE64_RUN.finditer(text) if _mixed(m.group()))
    if b64 >= need:
        return "base64"
    hexed = sum(len(m.group()) for m in _HEX_RUN.finditer(text) if any(c.isdigit() for c in m.group()))
    hexed += sum(len(_SPACE.sub("", m.group())) for m in _HEX_DUMP.finditer(text))
    if hexed >= need:
        return "hex"
    if text.count("\\") * 16 >= solid:  # at least one backslash per 16 characters
        control = sum(len(m.group()) for m in _CONTROL_WORD.finditer(text))
        if control >= need:
            return "control words"
    return None


class JunkFilter(TransformComponent):
    """An ingestion step that drops junk nodes (:func:`junk_kind` of their text) and remembers
    them: :attr:`dropped` lists ``(ref_doc_id, file_path or None, kind)`` per dropped node, in
    order.  ``ragloom index`` runs it between the splitter and the embed model unless
    ``keep_junk``; a document whose every chunk is junk is recorded with no nodes."""

    def __init__(self) -> None:
        super().__init__()
        self._dropped: List[Tuple[Optional[str], Optional[str], str]] = []

    @property
    def dropped(self) -> List[Tuple[Optional[str], Optional[str], str]]:
        return self._dropped

    def take_dropped(self) -> List[Tuple[Optional[str], Optional[str], str]]:
        """:attr:`dropped` so far, which is then emptied (a worker's copy hands them to the driver)."""
        taken, self._dropped = self._dropped, []
        return taken

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> List[BaseNode]:
        keep: List[BaseNode] = []
        for node in nodes:
            kind = junk_kind(node.get_content(MetadataMode.NONE))
            if kind is None:
                keep.append(node)
            else:
                path = node.metadata.get("file_path")
                self._dropped.append((node.ref_doc_id, path if isinstance(path, str) else None, kind))
        return keep
