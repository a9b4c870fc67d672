"""``TokenTextSplitter``: chunks of at most ``chunk_size`` tokens cut between words.

Levels: words (``separator``) > ``backup_separators`` > tokens; overlap is by whole
words, at most ``chunk_overlap`` tokens.  See :mod:`ragloom.node_parser.text.engine`.
With ``keep_whitespaces=True`` (LlamaIndex's argument) the whitespace around the chunks is
kept in them instead of stripped (:func:`keep_whitespace_spans`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from ragloom.node_parser.interface import IdFuncCallable, MetadataAwareTextSplitter
from ragloom.node_parser.text.boundaries import word_levels

if TYPE_CHECKING:
    from ragloom.node_parser.text.engine import CallCounts

__all__ = ["TokenTextSplitter", "keep_whitespace_spans"]

Span = Tuple[int, int]

DEFAULT_CHUNK_SIZE = 1024
DEFAULT_CHUNK_OVERLAP = 20


def keep_whitespace_spans(n: int, spans: Sequence[Span], fits: Callable[[int, int], bool]) -> List[Span]:
    """``spans`` (whitespace-stripped chunks of a text of ``n`` characters, in order) widened over
    the whitespace around them: the text's leading whitespace joins the first chunk, the
    whitespace between two chunks joins the one after it (as LlamaIndex's splits carry their
    separator in front; with BPE tokenizers a word's leading space is usually part of its token,
    so this costs no token) or, where that does not fit, the one before it; the trailing
    whitespace joins the last chunk.  Each only where ``fits(start, end)`` says the widened chunk
    is within budget; whitespace that fits nowhere stays out.  Chunks that overlap have no
    whitespace between them to give.

    So with no overlap and room everywhere, the chunks tile the text: ``"".join(chunks) == text``.
    """
    out = [list(s) for s in spans]
    if not out:
        return []
    if out[0][0] > 0 and fits(0, out[0][1]):
        out[0][0] = 0
    for prev, cur in zip(out, out[1:], strict=False):
        if cur[0] > prev[1]:  # a whitespace gap
            if fits(prev[1], cur[1]):
                cur[0] = prev[1]
            elif fits(prev[0], cur[0]):
                prev[1] = cur[0]
    if out[-1][1] < n and fits(out[-1][0], n):
        out[-1][1] = n
    return [(a, b) for a, b in out]


class TokenTextSplitter(MetadataAwareTextSplitter):
    """Split text into token-budgeted chunks at word boundaries (LlamaIndex arguments).

    Args:
        chunk_size / chunk_overlap: tokens per chunk (metadata embedded with it included) /
            tokens shared by neighbouring chunks (``None``: ``Settings`` or the defaults 1024 / 20).
        separator / backup_separators: where words end (``" "``) and the cuts tried before
            token cuts (``["\\n"]``).
        tokenizer: what budgets are measured in (default ``Settings.tokenizer``).
        keep_whitespaces: ``False`` (default, as LlamaIndex): chunks are stripped of whitespace at
            both ends.  ``True``: the whitespace around each chunk stays in a chunk
            (:func:`keep_whitespace_spans`): with ``chunk_overlap=0`` the chunks then join back
            into the text exactly.  Either way ``text[start_char_idx:end_char_idx] == node.text``,
            and a chunk never exceeds ``chunk_size``: whitespace that would push both of its
            neighbours over the budget is left out (LlamaIndex keeps it and can go over).
        include_metadata, include_prev_next_rel, id_func, callback_manager: as in LlamaIndex.

    Raises:
        ValueError: bad ``chunk_size``/``chunk_overlap``; ``keep_whitespaces`` not a bool.
    """

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
        keep_whitespaces: bool = False,
    ) -> None:
        if not isinstance(keep_whitespaces, bool):
            raise ValueError(f"keep_whitespaces must be True or False, got {keep_whitespaces!r}")
        super().__init__(chunk_size, chunk_overlap, tokenizer, include_metadata, include_prev_next_rel, id_func)
        self.callback_manager = callback_manager  # NODE_PARSING / CHUNKING events (ragloom.callbacks)
        self.keep_whitespaces = keep_whitespaces
        self.separator = separator
        self.backup_separators = ["\n"] if backup_separators is None else list(backup_separators)
        self._level_list = word_levels(separator, self.backup_separators)

    def _config_changed(self, name: str) -> None:
        if name in ("separator", "backup_separators"):
            self._level_list = word_levels(self.separator, self.backup_separators or [])

    def _levels(self) -> list:
        return self._level_list

    def _pack(
        self, text: str, sizer: Any, wrappers: Sequence[Tuple[str, str]], counts: Optional["CallCounts"] = None
    ) -> List[Span]:
        spans = super()._pack(text, sizer, wrappers, counts)
        if not self.keep_whitespaces or not spans:
            return spans
        from ragloom.node_parser.text.engine import ExactCounter

        counter = ExactCounter(self.tokenizer, sizer, counts)
        pairs = list(wrappers) or [("", "")]

        def fits(a: int, b: int) -> bool:
            return all(counter.count(a, b, p, s) <= self.chunk_size for p, s in pairs)

        return keep_whitespace_spans(len(text), spans, fits)

    def _config_extra(self) -> Dict[str, Any]:
        extra: Dict[str, Any] = {"separator": self.separator, "backup_separators": self.backup_separators}
        if self.keep_whitespaces:  # only when set: the default's node ids stay as they were
            extra["keep_whitespaces"] = True
        return extra
