"""``SentenceSplitter``: chunks that keep sentences (and paragraphs) whole where they fit.

Levels, highest first: paragraphs (``paragraph_separator``) > sentences (hybrid CJK
regex + sentencex, found between blank lines, each of which is also a cut; or
``chunking_tokenizer_fn``) > ``secondary_chunking_regex`` >
CJK clause punctuation (``，、；：``) > lines (``\\n``) > words (``separator``) > ``backup_separators`` >
tokens.  A segment is split into the next level only when it alone exceeds the budget;
see :mod:`ragloom.node_parser.text.engine`.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from ragloom.node_parser.interface import IdFuncCallable, MetadataAwareTextSplitter
from ragloom.node_parser.text.boundaries import (
    CJK_CLAUSE_LEVEL,
    FunctionLevel,
    RegexLevel,
    SentenceLevel,
    SeparatorLevel,
    word_levels,
)

__all__ = ["SentenceSplitter", "DEFAULT_PARAGRAPH_SEP", "CHUNKING_REGEX"]

DEFAULT_PARAGRAPH_SEP = "\n\n\n"
CHUNKING_REGEX = "[^,.;。？！]+[,.;。？！]?"
DEFAULT_CHUNK_SIZE = 1024
SENTENCE_CHUNK_OVERLAP = 200
# the arguments the boundary levels are built from (rebuilt when one is re-assigned)
_LEVEL_ARGS = (
    "separator", "paragraph_separator", "secondary_chunking_regex", "chunking_tokenizer_fn", "backup_separators"
)


class SentenceSplitter(MetadataAwareTextSplitter):
    """Split text into chunks of at most ``chunk_size`` tokens, preferring whole sentences.

    Arguments follow LlamaIndex's ``SentenceSplitter``.  ``tokenizer=None`` measures in
    ``Settings.tokenizer`` (the embed model's own tokenizer); a name (``"cl100k_base"``),
    a ``tokenizer.json`` path or a LlamaIndex-style ``Callable[[str], list]`` also work.
    Chunks (plus the metadata embedded with them) never exceed ``chunk_size`` tokens.

    ``chunk_size=None`` (the default) is :attr:`Settings.chunk_size <ragloom.settings.Settings>`:
    the embed model's text-token limit, capped at 1024 (LlamaIndex's fixed 1024 would be truncated
    by the bundled model, which reads 254); ``chunk_overlap=None`` is ``chunk_size // 8``.
    """

    def __init__(
        self,
        chunk_size: Optional[int] = None,
        chunk_overlap: Optional[int] = None,
        separator: str = " ",
        paragraph_separator: str = DEFAULT_PARAGRAPH_SEP,
        secondary_chunking_regex: Optional[str] = CHUNKING_REGEX,
        chunking_tokenizer_fn: Optional[Callable[[str], List[str]]] = None,
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
        self.paragraph_separator = paragraph_separator
        self.secondary_chunking_regex = secondary_chunking_regex
        self.chunking_tokenizer_fn = chunking_tokenizer_fn
        self.backup_separators = list(backup_separators) if backup_separators else []
        self._level_list = self._build_levels()

    def _build_levels(self) -> list:
        levels: list = []
        if self.paragraph_separator:
            levels.append(SeparatorLevel(self.paragraph_separator, "paragraph"))
        fn = self.chunking_tokenizer_fn
        levels.append(FunctionLevel(fn) if fn is not None else SentenceLevel())
        if self.secondary_chunking_regex:
            levels.append(RegexLevel(self.secondary_chunking_regex, "secondary"))
        levels.append(CJK_CLAUSE_LEVEL)
        if self.separator != "\n":
            levels.append(SeparatorLevel("\n", "line"))
        levels.extend(word_levels(self.separator, self.backup_separators or []))
        return levels

    def _config_changed(self, name: str) -> None:
        if name in _LEVEL_ARGS:
            self._level_list = self._build_levels()

    def _levels(self) -> list:
        return self._level_list

    def _config_extra(self) -> Dict[str, Any]:
        fn = self.chunking_tokenizer_fn
        return {
            "separator": self.separator,
            "paragraph_separator": self.paragraph_separator,
            "secondary_chunking_regex": self.secondary_chunking_regex,
            "chunking_tokenizer_fn": None
            if fn is None
            else f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', repr(fn))}",
            "backup_separators": self.backup_separators,
        }
