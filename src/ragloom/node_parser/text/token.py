"""``TokenTextSplitter``: chunks of at most ``chunk_size`` tokens cut between words.

Levels: words (``separator``) > ``backup_separators`` > tokens; overlap is by whole
words, at most ``chunk_overlap`` tokens.  See :mod:`ragloom.node_parser.text.engine`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ragloom.node_parser.interface import IdFuncCallable, MetadataAwareTextSplitter
from ragloom.node_parser.text.boundaries import word_levels

__all__ = ["TokenTextSplitter"]

DEFAULT_CHUNK_SIZE = 1024
DEFAULT_CHUNK_OVERLAP = 20


class TokenTextSplitter(MetadataAwareTextSplitter):
    """Split text into token-budgeted chunks at word boundaries (LlamaIndex arguments)."""

    def __init__(
        self,
        chunk_size: Optional[int] = None,
        chunk_overlap: Optional[int] = None,
        separator: str = " ",
        backup_separators: Optional[List[str]] = None,
        tokenizer: Any = None,
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        id_func: Optional[IdFuncCallable] = None,
        callback_manager: Any = None,
    ) -> None:
        super().__init__(chunk_size, chunk_overlap, tokenizer, include_metadata, include_prev_next_rel, id_func)
        self.callback_manager = callback_manager  # NODE_PARSING / CHUNKING events (ragloom.callbacks)
        self.separator = separator
        self.backup_separators = ["\n"] if backup_separators is None else list(backup_separators)
        self._level_list = word_levels(separator, self.backup_separators)

    def _config_changed(self, name: str) -> None:
        if name in ("separator", "backup_separators"):
            self._level_list = word_levels(self.separator, self.backup_separators or [])

    def _levels(self) -> list:
        return self._level_list

    def _config_extra(self) -> Dict[str, Any]:
        return {"separator": self.separator, "backup_separators": self.backup_separators}
