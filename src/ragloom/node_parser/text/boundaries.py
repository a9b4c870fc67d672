"""Boundary providers (levels) for the span engine.

Sentence segmentation (``SentenceLevel``) is a hybrid, as measured in
``shared/OFFLINE_ASSETS.md`` §5:

1. CJK sentence terminators ``。！？；…`` (and ASCII ``!?`` right after a CJK character)
   are split by one regular expression, keeping closing quotes and brackets
   (``”’」』）】》"'`` …) on the sentence they close;
2. every resulting piece that contains ASCII sentence punctuation goes to **sentencex**
   (``sentencex.segment("en", …)``, Rust, MIT) for English.

Why sentencex and not blingfire: on the reference string
``张三说：“今天下雨了。”李四点头。Dr. Smith arrived at 5 p.m. He left.`` the hybrid is
right with both, but on English alone blingfire splits after "Mr." and inside ``。”``,
while sentencex keeps "Dr.", "Mr.", "e.g.", "p.m.", "U.S." intact and reports character
offsets.  Its speed (~9–30 MB/s) matters little: the engine only segments small windows
around chunk ends.
"""

from __future__ import annotations

import re
from itertools import accumulate, islice
from typing import Callable, List, Optional, Sequence

__all__ = [
    "SeparatorLevel",
    "RegexLevel",
    "SentenceLevel",
    "FunctionLevel",
    "CJK_CLAUSE_LEVEL",
    "PunctuationRunLevel",
    "locate_pieces",
]

_CLOSERS = "”’」』）】》〉〕］｝\"')\\]"
#: clause punctuation that continues a sentence after a terminator: ``叫一声“变！”，即变做…`` is one
#: sentence (the quoted exclamation ends none), so no cut is made before it
_CONTINUERS = "，、：,:"
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
# Reference form: ``(?:[。！？；…]+|(?<=[CJK])[!?]+)[closers]*`` not followed by a continuer
# (``，、：,:``: ``叫一声“变！”，即变做…`` goes on).  The form used starts
# with a character class so the regex engine skips ahead with a fast scan (8x faster on
# ASCII text); ``test_boundaries_fast.py`` checks both give the same matches.
# A match must not be followed by a terminator, a closer (so the engine cannot give back part of
# a run to end a shorter match) or a continuer.
_NOT_AFTER = rf"(?![。！？；…!?{re.escape(_CLOSERS)}{_CONTINUERS}])"
CJK_TERMINATORS_REFERENCE = re.compile(rf"(?:[。！？；…]+|(?<=[{_CJK}])[!?]+)[{re.escape(_CLOSERS)}]*{_NOT_AFTER}")
CJK_TERMINATORS = re.compile(
    rf"[。！？；…!?](?:(?<=[。！？；…])[。！？；…]*|(?<=[{_CJK}][!?])[!?]*)[{re.escape(_CLOSERS)}]*{_NOT_AFTER}"
)
_ASCII_END = re.compile(r"[.!?]")


def _has_ascii_end(text: str, lo: int, hi: int) -> bool:
    """Whether ``text[lo:hi]`` holds one of ``.!?`` (:data:`_ASCII_END`): three ``str.find`` scans,
    several times cheaper per character than the pattern's character-class scan (which this level
    runs over most of a Chinese text, where the answer is no)."""
    return text.find(".", lo, hi) != -1 or text.find("?", lo, hi) != -1 or text.find("!", lo, hi) != -1


_END, _START = re.Match.end, re.Match.start  # mapped over matches: no Python frame per match


class SeparatorLevel:
    """Cut after every occurrence of a literal separator (the separator stays on the left piece)."""

    windowed = True
    block = ""

    def __init__(self, separator: str, name: str = "separator") -> None:
        if not separator:
            raise ValueError("separator must be a non-empty string")
        self.sep = separator
        self.name = name
        self.margin = len(separator) + 1

    def find(self, text: str, lo: int, hi: int) -> List[int]:
        sep, k = self.sep, len(self.sep)
        out: List[int] = []
        i = text.find(sep, lo, hi)
        while i != -1:
            p = i + k
            if lo < p < hi:
                out.append(p)
            i = text.find(sep, p, hi)
        return out

    def __repr__(self) -> str:
        return f"SeparatorLevel({self.sep!r})"


def word_levels(separator: str, backup_separators: "list[str]") -> "list[SeparatorLevel]":
    """The lowest text levels both splitters share: words (``separator``), then each non-empty
    backup separator, before the engine falls back to token cuts."""
    levels = [SeparatorLevel(separator, "word")] if separator else []
    levels.extend(SeparatorLevel(sep, "backup") for sep in backup_separators if sep)
    return levels


class RegexLevel:
    """Cut at the end of every match of a regular expression (LlamaIndex's ``secondary_chunking_regex``)."""

    windowed = True
    margin = 64
    block = ""

    def __init__(self, pattern: str, name: str = "regex") -> None:
        self.pattern = pattern
        self.regex = re.compile(pattern)
        self.name = name

    def find(self, text: str, lo: int, hi: int) -> List[int]:
        return [p for m in self.regex.finditer(text, lo, hi) if lo < (p := m.end()) < hi]

    def __repr__(self) -> str:
        return f"RegexLevel({self.pattern!r})"


class PunctuationRunLevel:
    """Cut after every maximal run of ``chars`` that follows other text inside the window: the
    cuts of ``RegexLevel(f"[^{chars}]+[{chars}]+")``, found in linear time.  (That pattern
    backtracks over each start position when a window holds none of ``chars``: quadratic, 0.7 s
    for one 6,000-character window of a long line without punctuation.)"""

    windowed = True
    margin = 64
    block = ""

    def __init__(self, chars: str, name: str) -> None:
        self.chars = chars
        self.run = re.compile(f"[{re.escape(chars)}]+")
        self.name = name

    def find(self, text: str, lo: int, hi: int) -> List[int]:
        return [p for m in self.run.finditer(text, lo, hi) if m.start() > lo and lo < (p := m.end()) < hi]

    def __repr__(self) -> str:
        return f"PunctuationRunLevel({self.chars!r})"


# Chinese/Japanese clause punctuation (and ASCII ,;:), used after the secondary regex so
# that long ，-separated Chinese sentences are cut between phrases, not mid-phrase.
CJK_CLAUSE_LEVEL = PunctuationRunLevel("，、；：,;:", name="clause")
#: The pattern :data:`CJK_CLAUSE_LEVEL` is equivalent to (kept for the equivalence test).
CJK_CLAUSE_REFERENCE = RegexLevel(r"[^，、；：,;:]+[，、；：,;:]+", name="clause")


class SentenceLevel:
    """Hybrid CJK-terminator regex + sentencex (English) sentence boundaries, found block by block.

    A *block* is the text between blank lines: the level cuts after every ``"\n\n"`` (after each
    pair of a longer run of newlines), and the sentence ends inside a block depend on that block
    alone, so the span engine segments just the blocks it needs, whole, and the cuts do not depend
    on where a query window falls (:attr:`block`).  sentencex itself ends a sentence at a blank line.
    """

    windowed = True
    margin = 48
    name = "sentence"
    #: the separator of the blocks the cuts of :meth:`find` are local to
    block = "\n\n"

    def __init__(self) -> None:
        import sentencex

        self._sx = sentencex.get_sentence_boundaries
        self._segment = sentencex.segment

    def costly(self, text: str, lo: int, hi: int) -> bool:
        """Whether :meth:`find` on ``[lo, hi)`` runs sentencex (the text holds ASCII ``.!?``); without
        it the cuts are one regular-expression pass."""
        return _has_ascii_end(text, lo, hi)

    def find(self, text: str, lo: int, hi: int) -> List[int]:
        """The cuts ``lo < p < hi``: after every ``"\n\n"`` and at every sentence end inside a block."""
        return self._by_blocks(text, lo, hi, self._find_block)

    def find_reference(self, text: str, lo: int, hi: int) -> List[int]:
        """The plain form of :meth:`find` (every piece checked separately); for tests."""
        return self._by_blocks(text, lo, hi, self._find_block_reference)

    def _by_blocks(self, text: str, lo: int, hi: int, find_block: Callable[[str, int, int], List[int]]) -> List[int]:
        i = text.find("\n\n", lo, hi)
        if i == -1:
            return find_block(text, lo, hi)
        out: List[int] = []
        prev = lo
        while i != -1:
            p = i + 2
            out.extend(find_block(text, prev, p))
            if p < hi:
                out.append(p)
            prev = p
            i = text.find("\n\n", i + 1, hi)
        if prev < hi:
            out.extend(find_block(text, prev, hi))
        return out

    def _find_block(self, text: str, lo: int, hi: int) -> List[int]:
        # no CJK terminator (none in ASCII text, which an ASCII check finds far cheaper than the
        # pattern's scan; ``str.isascii`` of a whole text is a flag): one English piece.  The
        # pattern's look-behind sees the character before ``lo`` (a CJK one makes a ``!`` at ``lo``
        # a terminator), so that character is checked with the block.
        if text.isascii() or text[max(lo - 1, 0) : hi].isascii() or CJK_TERMINATORS.search(text, lo, hi) is None:
            out: List[int] = []
            self._english(text, lo, hi, out)
            return out
        ends = list(map(_END, CJK_TERMINATORS.finditer(text, lo, hi)))
        ascii_ends = list(map(_START, _ASCII_END.finditer(text, lo, hi))) if _has_ascii_end(text, lo, hi) else []
        if not ascii_ends:  # no English sentence punctuation: CJK terminators only
            if ends and ends[-1] >= hi:
                ends.pop()
            return ends
        # sentencex only on the pieces (between CJK terminators) that hold ASCII ``.!?``
        out = []
        k, na = 0, len(ascii_ends)
        prev = lo
        for p in ends:
            if k < na and ascii_ends[k] < p:
                self._english(text, prev, p, out)
                while k < na and ascii_ends[k] < p:
                    k += 1
            if p < hi:
                out.append(p)
            prev = p
        if k < na:
            self._english(text, prev, hi, out)
        return out

    def _find_block_reference(self, text: str, lo: int, hi: int) -> List[int]:
        out: List[int] = []
        prev = lo
        for m in CJK_TERMINATORS_REFERENCE.finditer(text, lo, hi):
            p = m.end()
            self._english(text, prev, p, out)
            if lo < p < hi:
                out.append(p)
            prev = p
        self._english(text, prev, hi, out)
        return out

    def _english(self, text: str, a: int, b: int, out: List[int]) -> None:
        if b - a < 3 or not _has_ascii_end(text, a, b):
            return
        piece = text[a:b]
        # ``segment`` returns the sentences as consecutive slices of the piece (no per-sentence
        # dict, a third cheaper): the cuts are their running lengths.  Over 10 kB sentencex cuts
        # the text into chunks and ``segment`` drops the separators between them; then the
        # lengths fall short and the offsets of ``get_sentence_boundaries`` are used.
        try:
            sentences = self._segment("en", piece)
        except UnicodeEncodeError:  # a lone surrogate: U+FFFD in its place, one character for one
            from ragloom.tokenizers.base import valid_unicode

            piece = valid_unicode(piece)
            sentences = self._segment("en", piece)
        lengths = list(map(len, sentences))
        if sum(lengths) == b - a and 0 not in lengths:
            out.extend(islice(accumulate(lengths[:-1], initial=a), 1, None))
            return
        for sent in self._sx("en", piece)[:-1]:
            p = a + sent["end_index"]
            if a < p < b:
                out.append(p)

    def __repr__(self) -> str:
        return "SentenceLevel()"


def locate_pieces(text: str, pieces: Sequence[str], lo: int, hi: int) -> List[int]:
    """Cut positions after each piece of a user splitter's output, found in order with a cursor.

    Pieces may have lost surrounding whitespace (e.g. NLTK's ``sent_tokenize``); a piece
    that cannot be found is skipped.
    """
    out: List[int] = []
    cur = lo
    for piece in pieces:
        core = piece.strip()
        if not core:
            continue
        i = text.find(core, cur, hi)
        if i < 0:
            continue
        cur = i + len(core)
        if lo < cur < hi:
            out.append(cur)
    return out


class FunctionLevel:
    """A user's ``Callable[[str], list[str]]`` splitter (LlamaIndex ``chunking_tokenizer_fn``).

    Called on the whole parent segment (the function's behaviour is unknown, so no
    windows); its pieces are located in order in the text to get positions.
    """

    windowed = False
    margin = 0
    block = ""

    def __init__(self, fn: Callable[[str], List[str]], name: Optional[str] = None) -> None:
        self.fn = fn
        self.name = name or "sentence"

    def find(self, text: str, lo: int, hi: int) -> List[int]:
        sub = text[lo:hi]
        return [lo + p for p in locate_pieces(sub, self.fn(sub), 0, len(sub))]

    def __repr__(self) -> str:
        return f"FunctionLevel({getattr(self.fn, '__qualname__', self.fn)!r})"
