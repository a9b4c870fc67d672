"""Split functions users call directly (LlamaIndex's ``node_parser.text.utils`` names), and
the span helpers shared by the sentence-window and semantic parsers.

Every ``split_by_*`` factory returns a ``Callable[[str], list[str]]``.  Unless stated
otherwise the pieces **concatenate back to the input**: ``"".join(fn(text)) == text``
(nothing is dropped, not even whitespace or unmatched text), so a caller can recover
character offsets by summing piece lengths.  Empty pieces are never returned, and the
empty string gives ``[]``.

The span helpers (:func:`sentence_cuts`, :func:`segments`, :func:`fit_spans`) work on
character positions into the original text, never on copies, so nodes built from their
output have exact offsets.
"""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence, Tuple

from ragloom.node_parser.text.boundaries import (
    CJK_CLAUSE_LEVEL,
    RegexLevel,
    SentenceLevel,
    SeparatorLevel,
)

if TYPE_CHECKING:
    from ragloom.tokenizers.base import BaseTokenizer

__all__ = [
    "split_text_keep_separator",
    "split_by_sep",
    "split_by_char",
    "split_by_regex",
    "split_by_phrase_regex",
    "split_by_sentence_tokenizer",
    "CutsLevel",
    "sentence_cuts",
    "piece_starts",
    "segments",
    "fit_spans",
]

Span = Tuple[int, int]

#: The phrase pattern of :func:`split_by_phrase_regex` (LlamaIndex's ``CHUNKING_REGEX``).
PHRASE_REGEX = "[^,.;。？！]+[,.;。？！]?"


def _pieces(text: str, cuts: Sequence[int]) -> List[str]:
    """``text`` cut at the sorted positions ``cuts`` (empty pieces dropped)."""
    out: List[str] = []
    prev = 0
    for c in cuts:
        if c > prev:
            out.append(text[prev:c])
            prev = c
    if prev < len(text):
        out.append(text[prev:])
    return out


def split_text_keep_separator(text: str, separator: str) -> List[str]:
    """Split ``text`` at ``separator``, keeping the separator at the *start* of the piece
    that follows it (LlamaIndex's convention): ``"a b c"`` / ``" "`` → ``["a", " b", " c"]``.

    ``"".join(result) == text``.  Raises ``ValueError`` for an empty separator.
    """
    if not separator:
        raise ValueError("separator must be a non-empty string")
    parts = text.split(separator)
    out = [parts[0]] + [separator + p for p in parts[1:]]
    return [p for p in out if p]


def split_by_sep(sep: str, keep_sep: bool = True) -> Callable[[str], List[str]]:
    """Split at every occurrence of the literal ``sep``.

    ``keep_sep=True`` (default): the separator starts the following piece (see
    :func:`split_text_keep_separator`) and ``"".join(pieces) == text``.
    ``keep_sep=False``: ``text.split(sep)`` exactly (separators dropped, empty pieces
    kept), so ``sep.join(pieces) == text`` instead.

    Raises ``ValueError`` for an empty ``sep``.
    """
    if not sep:
        raise ValueError("sep must be a non-empty string")
    if keep_sep:
        return lambda text: split_text_keep_separator(text, sep)
    return lambda text: text.split(sep)


def split_by_char() -> Callable[[str], List[str]]:
    """Split into single characters (code points): ``list(text)``."""
    return lambda text: list(text)


def split_by_regex(regex: str) -> Callable[[str], List[str]]:
    """Cut after the end of every match of ``regex``.

    Unlike ``re.findall``, text that no match covers is not dropped: it stays at the
    start of the piece after it, so ``"".join(pieces) == text``.  Zero-length matches
    make no cut.  Raises ``re.error`` for an invalid pattern.
    """
    pattern = re.compile(regex)

    def split(text: str) -> List[str]:
        cuts = [m.end() for m in pattern.finditer(text) if 0 < m.end() < len(text) and m.end() > m.start()]
        return _pieces(text, cuts)

    return split


def split_by_phrase_regex() -> Callable[[str], List[str]]:
    """Split into phrases ending in ``, . ;`` or Chinese ``。？！`` (LlamaIndex's
    ``CHUNKING_REGEX`` ``[^,.;。？！]+[,.;。？！]?``); pieces concatenate back to the input."""
    return split_by_regex(PHRASE_REGEX)


def split_by_sentence_tokenizer() -> Callable[[str], List[str]]:
    """Split into sentences with ragloom's rules (those of ``SentenceSplitter``): Chinese
    terminators ``。！？；…`` (closing quotes/brackets stay on their sentence) and
    sentencex for English (``Dr.``, ``p.m.``, ``e.g.`` do not end sentences).

    Whitespace between sentences stays on the sentence before it (a run of blank lines
    may form a piece of its own); ``"".join(pieces) == text``.
    No NLTK download is needed (unlike LlamaIndex's punkt-based function).
    """
    level = SentenceLevel()

    def split(text: str) -> List[str]:
        if not text:
            return []
        return _pieces(text, level.find(text, 0, len(text)))

    return split


# -- span helpers (internal to the node parsers) ------------------------------------


class CutsLevel:
    """A span-engine boundary level from precomputed sorted cut positions (e.g. the
    sentence boundaries already found for a whole document)."""

    windowed = True
    margin = 0
    block = ""

    def __init__(self, cuts: Sequence[int], name: str = "cuts") -> None:
        self.cuts = list(cuts)
        self.name = name

    def find(self, text: str, lo: int, hi: int) -> List[int]:
        cs = self.cuts
        i = bisect.bisect_right(cs, lo)
        j = bisect.bisect_left(cs, hi)
        return cs[i:j]

    def __repr__(self) -> str:
        return f"CutsLevel({len(self.cuts)} cuts)"


def sentence_cuts(
    text: str,
    sentence_splitter: Optional[Callable[[str], List[str]]] = None,
    paragraph_separator: Optional[str] = "\n\n",
) -> List[int]:
    """Sorted cut positions ``0 < p < len(text)`` between sentences.

    Default rules: the sentence boundaries of ``SentenceSplitter`` plus a cut after every
    ``paragraph_separator`` (a sentence never spans a blank line).  With a custom
    ``sentence_splitter``, its pieces are located in order with a cursor
    (:func:`piece_starts`) and no paragraph cuts are added: the user's function decides.
    """
    n = len(text)
    if n == 0:
        return []
    if sentence_splitter is not None:
        return piece_starts(text, sentence_splitter(text))
    level = SentenceLevel()
    cuts = level.find(text, 0, n)
    # the sentence level already cuts after every blank line (its blocks): only another separator adds cuts
    if paragraph_separator and paragraph_separator != level.block and paragraph_separator in text:
        cuts = sorted(set(cuts) | set(SeparatorLevel(paragraph_separator).find(text, 0, n)))
    return cuts


def piece_starts(text: str, pieces: Sequence[str]) -> List[int]:
    """Cut positions at the start of each located piece after the first.

    Pieces are found in order with a cursor, by their whitespace-stripped core, so a
    splitter may drop whitespace or separators (``text.split(". ")``, NLTK's
    ``sent_tokenize``): whatever lies between two pieces stays with the piece *before*
    it (the dropped ``"."`` ends its sentence).  A piece that cannot be found is skipped.
    """
    out: List[int] = []
    cur = 0
    n = len(text)
    for piece in pieces:
        core = piece.strip() if isinstance(piece, str) else ""
        if not core:
            continue
        i = text.find(core, cur)
        if i < 0:
            continue
        if 0 < i < n and (not out or i > out[-1]) and cur > 0:
            out.append(i)
        cur = i + len(core)
    return out


def segments(text: str, cuts: Sequence[int], lo: int = 0, hi: Optional[int] = None) -> List[Span]:
    """Whitespace-stripped, non-empty spans between consecutive ``cuts`` within ``[lo, hi)``."""
    hi = len(text) if hi is None else hi
    out: List[Span] = []
    prev = lo
    for c in list(cuts) + [hi]:
        if c <= prev:
            continue
        piece = text[prev:c]
        stripped = piece.strip()
        if stripped:
            a = prev + (len(piece) - len(piece.lstrip()))
            out.append((a, a + len(stripped)))
        prev = c
    return out


#: Levels used to split one oversized unit (a sentence, a semantic group) further.
def lower_levels(word_separator: str = " ") -> list:
    """Phrase regex > CJK clause punctuation (``，、；：``) > lines > words; tokens last."""
    return [
        RegexLevel(PHRASE_REGEX, "secondary"),
        CJK_CLAUSE_LEVEL,
        SeparatorLevel("\n", "line"),
        SeparatorLevel(word_separator, "word"),
    ]


def pack_range(
    text: str,
    a: int,
    b: int,
    levels: Sequence,
    tokenizer: BaseTokenizer,
    budget: int,
    wrappers: Sequence[Tuple[str, str]],
) -> List[Span]:
    """Spans of ``text[a:b]`` packed by the span engine (no overlap), each ≤ ``budget``
    tokens with every ``(prefix, suffix)`` wrapper; positions are into ``text``.

    ``levels`` see positions relative to ``text[a:b]``.  Raises ``ValueError`` when the
    wrappers leave no room.
    """
    from ragloom.node_parser.text.engine import ExactCounter, make_sizers, pack_spans

    sub = text[a:b]
    sizer = make_sizers(tokenizer, [sub])[0]
    spans = pack_spans(sub, levels, sizer, ExactCounter(tokenizer, sizer), budget, 0, wrappers)
    return [(a + x, a + y) for x, y in spans]


def fit_spans(
    text: str,
    spans: Sequence[Span],
    tokenizer: BaseTokenizer,
    budget: int,
    wrappers: Sequence[Tuple[str, str]],
    levels_for: Optional[Callable[[int, int], list]] = None,
) -> List[Span]:
    """Keep each span that fits ``budget`` tokens (counted exactly on
    ``prefix + text[a:b] + suffix`` for every wrapper, one batched tokenizer call per
    wrapper, ``tokenizer.count_batch``); split the others with the span engine at ``levels_for(a, b)`` (default:
    :func:`lower_levels`).  Order is kept; output spans are stripped and non-empty.
    """
    spans = list(spans)
    if not spans:
        return []
    wrappers = list(wrappers) or [("", "")]
    worst = [0] * len(spans)
    for p, s in wrappers:
        counts = list(tokenizer.count_batch([p + text[x:y] + s for x, y in spans]))
        worst = [max(w, c) for w, c in zip(worst, counts, strict=True)]
    out: List[Span] = []
    for (x, y), w in zip(spans, worst, strict=True):
        if w <= budget:
            out.append((x, y))
            continue
        levels = levels_for(x, y) if levels_for is not None else lower_levels()
        out.extend(pack_range(text, x, y, levels, tokenizer, budget, wrappers))
    return out
