"""The span engine: one place where chunks are made.

Inputs: a text, a list of boundary *levels* (highest first: paragraph > sentence >
clause > word …, each a :class:`Level` proposing cut positions), a tokenizer and a
budget.  Output: ``(start, end)`` character spans.

How it works
------------
1. **Size model.**  The text is tokenized once (batched across documents) and the
   character start of every token is kept, so the token count of any span is two
   bisections (:class:`OffsetSizer`).  Tokenizers without offsets (LlamaIndex-style
   callables) are measured by calling them on the span (:class:`CallSizer`).
2. **Packer.**  A cursor walks the text.  From the cursor ``s`` the size model gives
   ``L``, the furthest token boundary within budget.  The chunk ends at the start of
   the *flattened unit* containing ``L``: the highest-level segment around ``L`` that
   fits the budget, descending a level only when that segment alone exceeds it (the
   flattened unit list is never materialised; boundary providers are queried around ``L``
   only: a level with blocks (the sentence level: text between blank lines) one whole block
   at a time, others in windows measured in tokens, so e.g. sentence segmentation runs on a
   fraction of the text).  A chunk starting inside a token (tiktoken's " word" cut at "w")
   gets one token less: that piece re-tokenizes into a token the size model does not count.
   The token level is last: a unit that cannot fit is cut at token boundaries.
3. **Overlap** is by whole units: the next chunk starts at the first unit boundary at or
   after the position ``chunk_overlap`` tokens before the chunk end.
4. **Exact verification.**  Every emitted chunk is re-counted exactly, wrapped with the
   metadata text that will be embedded with it, in batches of up to ``_COUNT_BATCH`` chunks.
   Counts of a concatenation can differ from counts in the whole-document tokenization at
   the edges, so a chunk over budget is shrunk and re-packed (from the state it was chosen
   in); nothing over budget is ever emitted.  With a tokenizer declaring cut-safe positions
   (``BaseTokenizer.safe_split``: tiktoken, BERT-style pipelines) only the chunk edges are
   re-encoded (both in one call when they join at such a position), and with a byte-level
   one (``byte_level``) not even those when the edges' UTF-8 bytes fit the room left;
   other tokenizers re-encode the chunk.

The engine reads a tokenizer only through what :class:`~ragloom.tokenizers.BaseTokenizer`
declares (``token_starts_batch``, ``count``, ``safe_split``/``safe_split_reverse``,
``encode_ordinary``, ``byte_level``); :func:`~ragloom.tokenizers.get_tokenizer` adapts
anything else.
"""

from __future__ import annotations

import bisect
import logging
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple, Union

from ragloom.node_parser.text.boundaries import SentenceLevel, SeparatorLevel

if TYPE_CHECKING:  # the engine reads only what BaseTokenizer declares
    from ragloom.tokenizers.base import BaseTokenizer, SplitPattern

logger = logging.getLogger(__name__)

__all__ = [
    "Level",
    "OffsetSizer",
    "CallSizer",
    "LimitSizer",
    "SpanCounter",
    "ExactCounter",
    "pack_spans",
    "make_sizers",
    "strip_span",
    "wrapper_overhead",
    "CallCounts",
]

Span = Tuple[int, int]


class Level(Protocol):
    """A boundary provider: proposes cut positions ``p`` with ``lo < p < hi`` (sorted).

    ``windowed`` providers give the same cuts on any window (up to a few characters of
    context, ``margin``); others are always called on the whole parent segment.  A provider with
    a ``block`` separator also cuts after each occurrence of it, and its cuts between two of them
    depend only on the text between them: the engine then queries the block around a position
    whole (when it is at most :attr:`_Finder.BLOCK_TOKENS` long), and the answer depends on no
    window.  ``block = ""``: no such guarantee.
    """

    name: str
    windowed: bool
    margin: int
    block: str

    def find(self, text: str, lo: int, hi: int) -> List[int]: ...


# -- size models ---------------------------------------------------------------------


class OffsetSizer:
    """Token counts of spans from the character starts of the document's tokens.

    ``max_per_char``: at most that many tokens start in any one character (4 for a byte-level
    tokenizer: a character is at most 4 UTF-8 bytes), so ``tokens(a, b) <= (b - a) * max_per_char``;
    ``0``: no such bound.
    """

    exact_edges = True

    def __init__(self, text: str, starts: Sequence[int], max_per_char: int = 0) -> None:
        self.text = text
        self.n = len(text)
        self.st = starts
        self.max_per_char = max_per_char

    def tokens(self, a: int, b: int) -> int:
        """Tokens starting in ``[a, b)`` (``0`` when ``b <= a``); searches ``b`` only among the
        ``(b - a) * max_per_char`` starts after ``a``, so it relies on that bound."""
        if b <= a:
            return 0
        st = self.st
        i = bisect.bisect_left(st, a)
        k = self.max_per_char  # at most (b - a) * k tokens start in [a, b): bisect only those
        return bisect.bisect_left(st, b, i, min(len(st), i + (b - a) * k + 1) if k else len(st)) - i

    def limit(self, a: int, budget: int) -> int:
        """Largest token boundary ``p > a`` with ``tokens(a, p) <= budget`` (``n`` if the rest fits)."""
        return self._limit_from(bisect.bisect_left(self.st, a), a, budget)

    def chunk_limit(self, a: int, budget: int) -> int:
        """The end of a chunk starting at ``a``: :meth:`limit` of ``budget - straddles(a)`` when
        ``budget > 1`` (see :meth:`straddles`), else of ``budget``; one search of the starts."""
        i = bisect.bisect_left(self.st, a)
        return self._limit_from(i, a, budget - self._straddles_at(i, a) if budget > 1 else budget)

    def _limit_from(self, i: int, a: int, budget: int) -> int:
        """:meth:`limit`, given ``i``, the index of the first token start at or after ``a``."""
        st = self.st
        j = i + budget
        if j >= len(st):
            return self.n
        p = st[j]
        if p <= a:  # several tokens inside one character at ``a``
            k = bisect.bisect_right(st, a)
            return st[k] if k < len(st) else self.n
        return p

    def straddles(self, a: int) -> int:
        """``1`` when ``a`` falls inside a token (after its first character: the token is cut, and
        its piece from ``a`` on re-tokenizes into at least one token that ``tokens(a, ·)`` does not
        count), else ``0``."""
        return self._straddles_at(bisect.bisect_left(self.st, a), a)

    def _straddles_at(self, i: int, a: int) -> int:
        """:meth:`straddles`, given ``i``, the index of the first token start at or after ``a``."""
        st = self.st
        return 0 if i == 0 or i < len(st) and st[i] == a else 1

    def back_limit(self, b: int, budget: int) -> int:
        """Smallest token start ``p`` with ``tokens(p, b) <= budget``."""
        st = self.st
        k = bisect.bisect_left(st, b)
        j = k - budget
        if j <= 0:
            return 0 if k <= budget else st[0]
        p = st[j]
        if st[j - 1] == p:  # p is shared by tokens before j (starts are sorted): move to the next start
            r = bisect.bisect_right(st, p)
            p = st[r] if r < k else b
        return p

    def token_unit(self, x: int) -> Span:
        st = self.st
        i = bisect.bisect_right(st, x) - 1
        a = st[i] if i >= 0 else 0
        r = bisect.bisect_right(st, a)
        return a, (st[r] if r < len(st) else self.n)


class CallSizer:
    """Token counts of spans by calling the tokenizer on them (no offsets available)."""

    exact_edges = False
    max_per_char = 0

    def __init__(self, text: str, count: Callable[[str], int]) -> None:
        self.text = text
        self.n = len(text)
        self._count = count
        self._cache: Dict[Span, int] = {}

    def tokens(self, a: int, b: int) -> int:
        if b <= a:
            return 0
        key = (a, b)
        c = self._cache.get(key)
        if c is None:
            if len(self._cache) > 4096:
                self._cache.clear()
            c = self._cache[key] = self._count(self.text[a:b])
        return c

    def limit(self, a: int, budget: int) -> int:
        n = self.n
        if self.tokens(a, n) <= budget:
            return n
        lo, hi = a + 1, n  # tokens(a, lo) assumed <= budget for one char; hi over budget
        step = max(1, budget * 4)
        probe = min(n, a + step)
        while probe < n and self.tokens(a, probe) <= budget:
            lo = probe
            step *= 2
            probe = min(n, a + step)
        hi = probe
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.tokens(a, mid) <= budget:
                lo = mid
            else:
                hi = mid
        return lo

    def back_limit(self, b: int, budget: int) -> int:
        if self.tokens(0, b) <= budget:
            return 0
        lo, hi = 0, b  # tokens(lo, b) over budget; tokens(hi, b) == 0
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.tokens(mid, b) <= budget:
                hi = mid
            else:
                lo = mid
        return hi

    def straddles(self, a: int) -> int:
        return 0  # spans are counted whole

    def chunk_limit(self, a: int, budget: int) -> int:
        """The end of a chunk starting at ``a``: :meth:`limit` (no token is cut at ``a``)."""
        return self.limit(a, budget)

    def token_unit(self, x: int) -> Span:
        return x, x + 1


Sizer = Union[OffsetSizer, CallSizer]


class LimitSizer:
    """A size model that also honours a line and a character limit (``CodeSplitter``).

    The size of a span is ``max(tokens, ceil(lines * room / max_lines), ceil(chars * room /
    max_chars))``: each limit is scaled so that it alone maps to ``room`` (the token budget
    left after the wrappers, :func:`wrapper_overhead`), so a span is within ``room`` exactly when
    its tokens, its lines and its characters are all within their limits.  The packer needs
    nothing else: its units, overlap and budget checks use this size, and its exact
    verification counts tokens only (lines and characters are exact here).  ``chars`` counts
    ``prefix_width`` more per line when lines are shown with a prefix (``"42|"``).
    """

    max_per_char = 0  # a size is also scaled lines and characters: no per-character bound

    def __init__(
        self, tokens: Sizer, room: int, max_lines: int, max_chars: int, prefix_width: int = 0
    ) -> None:
        self.base = tokens
        self.text = tokens.text
        self.n = tokens.n
        self.exact_edges = tokens.exact_edges
        self.room, self.max_lines, self.max_chars, self.width = room, max_lines, max_chars, prefix_width
        self.line_starts = [0]
        i = self.text.find("\n")
        while i != -1:
            self.line_starts.append(i + 1)
            i = self.text.find("\n", i + 1)

    def _lines(self, a: int, b: int) -> int:
        """Lines of ``text[a:b]``; a newline at its end starts no line (units end at line starts)."""
        return self.text.count("\n", a, b - 1) + 1

    def tokens(self, a: int, b: int) -> int:
        if b <= a:
            return 0
        room, lines = self.room, self._lines(a, b)
        chars = b - a + lines * self.width
        return max(self.base.tokens(a, b), -(-lines * room // self.max_lines), -(-chars * room // self.max_chars))

    def limit(self, a: int, budget: int) -> int:
        p = self.base.limit(a, budget)
        ls = self.line_starts
        k = max(1, budget * self.max_lines // self.room)  # lines allowed
        li = bisect.bisect_right(ls, a) - 1
        if li + k < len(ls):
            p = min(p, ls[li + k])  # the start of line k + 1
        chars = budget * self.max_chars // self.room
        lo, hi = a, min(p, a + chars)  # the last c in [lo, hi] with c - a + lines * width <= chars
        if self.width:
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if mid - a + self._lines(a, mid) * self.width <= chars:
                    lo = mid
                else:
                    hi = mid - 1
        p = lo if self.width else hi
        return p if p >= self.n else max(p, a + 1)

    def back_limit(self, b: int, budget: int) -> int:
        p = self.base.back_limit(b, budget)
        ls = self.line_starts
        k = budget * self.max_lines // self.room
        last = b - 2 if b >= 2 and self.text[b - 1] == "\n" else b - 1  # a final newline starts no line
        li = bisect.bisect_right(ls, max(last, 0)) - 1
        p = max(p, ls[li - k + 1] if k >= 1 and li - k + 1 >= 0 else (0 if k >= 1 else b))
        chars = budget * self.max_chars // self.room
        lo, hi = max(p, b - chars), b  # the first c in [lo, hi] with b - c + lines * width <= chars
        if self.width:
            while lo < hi:
                mid = (lo + hi) // 2
                if b - mid + self._lines(mid, b) * self.width <= chars:
                    hi = mid
                else:
                    lo = mid + 1
        return lo

    def chunk_limit(self, a: int, budget: int) -> int:
        """The end of a chunk starting at ``a``: :meth:`limit` of ``budget`` less the base model's
        ``straddles(a)`` (of ``budget`` when it is at most 1)."""
        return self.limit(a, budget - self.base.straddles(a) if budget > 1 else budget)

    def token_unit(self, x: int) -> Span:
        return self.base.token_unit(x)


def wrapper_overhead(
    tokenizer: BaseTokenizer, wrappers: Sequence[Tuple[str, str]], counts: Optional[Dict[str, int]] = None
) -> int:
    """Tokens the largest ``(prefix, suffix)`` of ``wrappers`` takes (0 without any); ``counts``: see
    :func:`counted`."""
    if not any(p or s for p, s in wrappers):
        return 0
    return max(counted(tokenizer, p, counts) + counted(tokenizer, s, counts) for p, s in wrappers)


def counted(tokenizer: BaseTokenizer, text: str, counts: Optional[Dict[str, int]] = None) -> int:
    """``tokenizer.count(text)`` (0 for ``""``), remembered in ``counts`` when given (keyed by the
    string; emptied once it holds :data:`_HEADERS_KEPT` strings): a document's metadata header is
    checked against the budget, sized for packing and cut for the edge counts with one encoding
    (:attr:`CallCounts.headers`)."""
    if not text:
        return 0
    if counts is None:
        return tokenizer.count(text)
    n = counts.get(text)
    if n is None:
        if len(counts) >= _HEADERS_KEPT:
            counts.clear()
        n = counts[text] = tokenizer.count(text)
    return n


#: metadata headers :func:`counted` remembers (each serves the pieces of one document, in order)
_HEADERS_KEPT = 16


class CallCounts:
    """Exact token counts one splitting call remembers, by string: ``edges``, chunk edges of up to
    :data:`_EDGE_CACHE_CHARS` characters (they repeat: a Markdown chunk often starts with "*" or "#"
    and ends with "."; at most 65,536 kept), and ``headers``, the metadata headers of the last
    :data:`_HEADERS_KEPT` documents (:func:`counted`)."""

    __slots__ = ("edges", "headers")

    def __init__(self) -> None:
        self.edges: Dict[str, int] = {}
        self.headers: Dict[str, int] = {}


def make_sizers(tokenizer: BaseTokenizer, texts: Sequence[str]) -> List[Sizer]:
    """One size model per text: an :class:`OffsetSizer` from the token starts of
    ``tokenizer.token_starts_batch`` (all texts in one batch), or a :class:`CallSizer` on
    ``tokenizer.count`` when the tokenizer reports no offsets (``None``)."""
    all_starts = tokenizer.token_starts_batch(list(texts))
    if all_starts is not None:
        per_char = 4 if tokenizer.byte_level else 0  # a byte-level token holds at least one byte
        return [OffsetSizer(t, s, per_char) for t, s in zip(texts, all_starts, strict=True)]
    return [CallSizer(t, tokenizer.count) for t in texts]


class SpanCounter:
    """What :func:`pack_spans` counts chunks with: :meth:`count` (subclasses define it) and the
    two questions the packer asks, answered from it unless a subclass answers them faster."""

    tok: Any  # the tokenizer the wrappers are measured in (:func:`wrapper_overhead`)

    def count(self, a: int, b: int, prefix: str = "", suffix: str = "") -> int:
        """Exact size of ``prefix + text[a:b] + suffix``."""
        raise NotImplementedError

    def wrapper_tokens(self, wrappers: Sequence[Tuple[str, str]]) -> int:
        """:func:`wrapper_overhead` of ``wrappers`` in :attr:`tok`."""
        return wrapper_overhead(self.tok, wrappers)

    def worst_count(self, a: int, b: int, wrappers: Sequence[Tuple[str, str]]) -> int:
        """The largest :meth:`count` of ``text[a:b]`` over ``wrappers``."""
        return max(self.count(a, b, p, sf) for p, sf in wrappers)

    def first_over(self, spans: Sequence[Span], wrappers: Sequence[Tuple[str, str]], limit: int) -> Optional[int]:
        """The index of the first span whose :meth:`worst_count` exceeds ``limit`` (``None``: all fit)."""
        for k, (a, b) in enumerate(spans):
            if self.worst_count(a, b, wrappers) > limit:
                return k
        return None


class ExactCounter(SpanCounter):
    """Exact token count of ``prefix + text[a:b] + suffix`` in the tokenizer.

    With the tokenizer's fast exact-count capability (``safe_split`` and
    ``safe_split_reverse`` set, see :class:`~ragloom.tokenizers.BaseTokenizer`) and an
    :class:`OffsetSizer`, only the chunk's edges are re-encoded (``encode_ordinary``);
    otherwise the wrapped chunk is counted whole (``count``).  The wrappers are cut at
    their own last (prefix) or first (suffix) safe position, and the part beyond it is
    counted once per wrapper, so a long metadata header is not re-encoded per chunk.
    """

    def __init__(self, tokenizer: BaseTokenizer, sizer: Sizer, counts: Optional[CallCounts] = None) -> None:
        self.tok = tokenizer
        self.sizer = sizer
        # counts shared by the counters of one splitting call (one encode call costs several
        # microseconds however short its text)
        counts = CallCounts() if counts is None else counts
        self._edge_counts = counts.edges
        self._header_counts = counts.headers
        self.text = sizer.text
        self.safe: Optional[SplitPattern] = None
        self.safe_rev: Optional[SplitPattern] = None
        self._enc: Optional[Callable[[str], Sequence[int]]] = None
        # wrapper -> (the part re-encoded with the chunk edge, tokens of the rest)
        self._prefixes: Dict[str, Tuple[str, int]] = {}
        self._suffixes: Dict[str, Tuple[str, int]] = {}
        safe, safe_rev = tokenizer.safe_split, tokenizer.safe_split_reverse
        if isinstance(sizer, OffsetSizer) and safe is not None and safe_rev is not None:
            self.safe, self.safe_rev = safe, safe_rev
            self._enc = tokenizer.encode_ordinary

    def wrapper_tokens(self, wrappers: Sequence[Tuple[str, str]]) -> int:
        """:func:`wrapper_overhead` of ``wrappers``, remembered with the call's header counts."""
        return wrapper_overhead(self.tok, wrappers, self._header_counts)

    def _wrapper(self, wrapper: str, is_prefix: bool) -> Tuple[str, int]:
        """``(the part of the wrapper re-encoded with the chunk edge, tokens of the rest)``: a prefix
        is cut at its last safe position, a suffix at its first (the rest counted once, memoised)."""
        memo = self._prefixes if is_prefix else self._suffixes
        got = memo.get(wrapper)
        if got is None:
            pattern = self.safe_rev if is_prefix else self.safe
            m = pattern.search(wrapper) if wrapper and pattern is not None else None
            if m is None:
                got = (wrapper, 0)
            else:  # a safe position splits the count: the rest is the whole less the edge part
                # (``tok.count`` is ``len(encode_ordinary(·))`` for the tokenizers with safe positions)
                h = m.start()
                part = wrapper[h:] if is_prefix else wrapper[:h]
                got = (part, counted(self.tok, wrapper, self._header_counts) - self._count_str(part))
            memo[wrapper] = got
        return got

    def _edges(self, a: int, b: int, prefix: str, suffix: str) -> Optional[Tuple[int, str, str]]:
        """``(known, left, right)`` with ``count(a, b, prefix, suffix) == known + count(left) +
        count(right)``: the tokens known from the size model between the first and the last safe
        position, and the edges around them (wrappers included); ``None`` when the fast path does
        not apply (no safe positions, or a chunk of 64 characters or less)."""
        text = self.text
        if self.safe is None or self.safe_rev is None or b - a <= 64:
            return None
        m = self.safe.search(text, a + 1, b)
        if m is None:
            return None
        h = m.start()
        # the forward match at ``h`` is a match in [h, b), so the backward search finds one
        t = self.safe_rev.search(text, h, b).start()  # type: ignore[union-attr]
        head, head_n = self._wrapper(prefix, True) if prefix else ("", 0)
        tail, tail_n = self._wrapper(suffix, False) if suffix else ("", 0)
        return head_n + self.sizer.tokens(h, t) + tail_n, head + text[a:h], text[t:b] + tail

    def _parts(
        self, a: int, b: int, prefix: str, suffix: str, edges: Optional[Tuple[int, str, str]]
    ) -> Tuple[int, Tuple[str, ...]]:
        """``(known, strings)`` with ``count(a, b, prefix, suffix) == known + sum of the strings' counts``,
        from the chunk's :meth:`_edges`: the tokens known from the size model and the edges to encode,
        both in one string when their junction is itself a safe position (it is for tiktoken's
        pattern: ``left`` ends where a match began, ``right`` starts with it); the whole wrapped chunk
        when the fast path does not apply (``edges`` is ``None``)."""
        if edges is None:
            return 0, (prefix + self.text[a:b] + suffix,)
        known, left, right = edges
        joined = left + right
        j = self.safe.search(joined, len(left)) if self.safe is not None else None
        if j is not None and j.start() == len(left):
            return known, (joined,)
        return known, (left, right)

    def _count_str(self, s: str) -> int:
        if self._enc is None:
            return self.tok.count(s)  # a whole chunk: seen once
        if len(s) > _EDGE_CACHE_CHARS:
            return len(self._enc(s))
        memo = self._edge_counts
        n = memo.get(s)
        if n is None:
            if len(memo) >= 65536:
                memo.clear()
            n = memo[s] = len(self._enc(s))
        return n

    def count(self, a: int, b: int, prefix: str = "", suffix: str = "") -> int:
        """Exact tokens of ``prefix + text[a:b] + suffix``."""
        known, parts = self._parts(a, b, prefix, suffix, self._edges(a, b, prefix, suffix))
        return known + sum(map(self._count_str, parts))

    def first_over(self, spans: Sequence[Span], wrappers: Sequence[Tuple[str, str]], limit: int) -> Optional[int]:
        """The index of the first span whose :meth:`count` with some wrapper exceeds ``limit``
        (``None``: all fit).  Encodes as little as it can prove: with a byte-level tokenizer a chunk
        whose known tokens plus the UTF-8 bytes of its edges (of the whole wrapped chunk, for one
        counted whole) are within ``limit`` fits (no token is shorter than a byte); the other edges
        are built first and then encoded in one run (the tokenizer's tables stay in the CPU cache)."""
        todo: List[Tuple[int, int, Tuple[str, ...]]] = []
        bounded = self._enc is not None and self.tok.byte_level
        for k, (a, b) in enumerate(spans):
            for p, sf in wrappers:
                edges = self._edges(a, b, p, sf)
                if bounded:
                    if edges is not None:
                        bound = edges[0] + _utf8_len(edges[1]) + _utf8_len(edges[2])
                    else:  # counted whole (a short chunk, most often): its bytes bound it
                        bound = _utf8_len(p) + _utf8_len(self.text[a:b]) + _utf8_len(sf)
                    if bound <= limit:
                        continue
                todo.append((k, *self._parts(a, b, p, sf, edges)))
        count = self._count_str
        for k, known, parts in todo:
            if known + sum(map(count, parts)) > limit:
                return k
        return None


#: chunk edges up to this many characters are remembered (see :class:`ExactCounter`)
_EDGE_CACHE_CHARS = 32


def _utf8_len(s: str) -> int:
    return len(s) if s.isascii() else len(s.encode("utf-8", "surrogatepass"))


# -- packer --------------------------------------------------------------------------


def strip_span(text: str, a: int, b: int) -> Span:
    """Shrink ``[a, b)`` to exclude surrounding whitespace (``str.strip`` semantics)."""
    if a < b and not text[a].isspace() and not text[b - 1].isspace():
        return a, b  # the usual case, without copying the span
    piece = text[a:b]
    ls = piece.lstrip()
    if not ls:
        return a, a
    a2 = a + (len(piece) - len(ls))
    return a2, a2 + len(ls.rstrip())


#: characters per token assumed where a size model has no offsets (windows, block lengths)
_CHARS_PER_TOKEN = 4


class _Finder:
    """Finds the flattened unit containing a position, querying levels in windows."""

    BACK_TOKENS, FWD_TOKENS = 40, 24  # first window around a position (grown x2 while it finds no cut)
    # a longer block (see :class:`Level`) is searched in windows (in characters: see __init__) ...
    BLOCK_TOKENS = 256
    CHEAP_BLOCK_TOKENS = 8192  # ... unless its cuts need no model (:meth:`_block_cuts`) and it is within this
    CHAR_REACH = 4096  # how far :meth:`_around_char` looks on each side of a position

    def __init__(self, text: str, levels: Sequence[Level], sizer) -> None:
        self.text = text
        self.levels = levels
        self.sizer = sizer
        self.n = len(text)
        self._whole: Dict[Tuple[int, int, int], List[int]] = {}
        # per level and parent segment: the zone last queried and its cuts (see :meth:`_zone`); a
        # query made for another parent may start before this parent, and its cuts there are not ours
        self._zones: Dict[Tuple[int, int, int], Tuple[int, int, List[int]]] = {}
        self._by_tokens = isinstance(sizer, OffsetSizer)  # windows measured in tokens (else chars)
        # BLOCK_TOKENS in characters: at the text's characters per token (else _CHARS_PER_TOKEN)
        per_token = self.n / max(1, len(sizer.st)) if isinstance(sizer, OffsetSizer) else _CHARS_PER_TOKEN
        self._block_chars = max(64, int(self.BLOCK_TOKENS * per_token))
        self._big_block_chars = max(64, int(self.CHEAP_BLOCK_TOKENS * per_token))
        # (level, block start, end) -> its cuts (None: searched in windows)
        self._blocks: Dict[Tuple[int, int, int], Optional[List[int]]] = {}
        # per level: (parent start, parent end, block start, block end, its cuts) of its last block
        self._last_block: List[Optional[Tuple[int, int, int, int, Optional[List[int]]]]] = [None] * len(levels)
        # per level: its last segment found from a whole-text cut list or a whole block, which
        # answers any position inside it: (parent start, parent end, start, end, size, exact), the
        # size its token count (exact) or an upper bound of it (see :meth:`_remember`)
        self._memo: List[Optional[Tuple[int, int, int, int, int, bool]]] = [None] * len(levels)
        # per level: its cuts over the whole text, once computed (``None``: not worth it)
        self._all: Dict[int, Optional[List[int]]] = {}

    def _segment_whole(self, li: int, level: Level, plo: int, phi: int, x: int, budget: int):
        key = (li, plo, phi)
        bs = self._whole.get(key)
        if bs is None:
            if len(self._whole) > 64:
                self._whole.clear()
            bs = self._whole[key] = level.find(self.text, plo, phi)
        i = bisect.bisect_right(bs, x)
        a = bs[i - 1] if i > 0 else plo
        b = bs[i] if i < len(bs) else phi
        return a, b, self._over(a, b, budget)

    def _all_cuts(self, li: int, level: Level) -> Optional[List[int]]:
        """Every cut of a literal separator level in the whole text (``None``: not worth it).

        A one-character separator's cuts inside any parent ``[plo, phi)`` are exactly the
        whole-text cuts strictly between ``plo`` and ``phi`` (no occurrence can straddle the
        parent's edge), so one list serves every parent; a longer separator qualifies only as the
        first level, whose parent is the whole text.  Taken when the separator is rare enough
        (at most one in 16 characters; one in 256 for a longer one): bisecting the list replaces
        windowed queries that mostly find nothing (``"\n\n\n"`` paragraphs in Markdown, lines
        of Chinese prose).
        """
        if not isinstance(level, SeparatorLevel):
            return None
        sep = level.sep
        if len(sep) == 1:
            limit = self.n // 16 + 8
        elif li == 0:
            limit = self.n // 256 + 8
        else:
            return None
        if self.text.count(sep) > limit:
            return None
        return level.find(self.text, 0, self.n)

    def _around_char(self, sep: str, plo: int, phi: int, x: int) -> Optional[Span]:
        """The segment around ``x`` between the cuts of a one-character separator level inside the
        parent ``[plo, phi)``, found with ``rfind``/``find``: the segment bisecting the whole-text cut
        list gives (see :meth:`_all_cuts`), without listing the cuts of a frequent separator (words).
        ``None`` when a side finds no cut within :attr:`CHAR_REACH` before the parent's edge (the
        windowed search, which stops once the budget is exceeded, takes over)."""
        text = self.text
        lo = max(plo, x - self.CHAR_REACH)
        i = text.rfind(sep, lo, x)  # a cut ``i + 1`` in ``(plo, x]``
        if i != -1:
            a = i + 1
        elif lo == plo:
            a = plo
        else:
            return None
        hi = min(phi - 1, x + self.CHAR_REACH)
        j = text.find(sep, x, hi)  # a cut ``j + 1`` in ``(x, phi)``
        if j != -1:
            return a, j + 1
        return (a, phi) if hi == phi - 1 else None

    def _block_cuts(self, li: int, level: Level, bl: int, bh: int) -> Optional[List[int]]:
        """The cuts of level ``li`` inside the block ``[bl, bh)``, found once per block; ``None`` for a
        block to search in windows instead: longer than :attr:`BLOCK_TOKENS`, unless the level finds
        its cuts there with no costly model (a sentence block with no English punctuation is one
        regular-expression pass, while sentencex grows faster than the text on long blocks)."""
        key = (li, bl, bh)
        if key in self._blocks:
            return self._blocks[key]
        if len(self._blocks) > 64:
            self._blocks.clear()
        whole = bh - bl <= self._block_chars or (
            isinstance(level, SentenceLevel) and not level.costly(self.text, bl, bh)
        )
        bs = self._blocks[key] = level.find(self.text, bl, bh) if whole else None
        return bs

    def _block_around(self, sep: str, plo: int, phi: int, x: int) -> Optional[Span]:
        """The block of the parent ``[plo, phi)`` containing ``x``: from the last cut after an
        occurrence of ``sep`` at or before ``x`` (else ``plo``) to the first after ``x`` (else
        ``phi``); ``None`` when it is longer than :attr:`CHEAP_BLOCK_TOKENS` (in characters, at the text's
        average characters per token; found without looking farther than that on either side)."""
        text = self.text
        k = len(sep)
        reach = self._big_block_chars
        lo = max(plo, x - reach)
        i = text.rfind(sep, lo, x)  # an occurrence ending at or before x: a cut at i + k <= x
        if i == -1 and lo > plo:
            return None
        a = plo if i == -1 else i + k
        hi = min(phi, a + reach + k)
        j = text.find(sep, max(plo, x - k + 1), hi)  # the first occurrence ending after x
        if j == -1 and hi < phi:
            return None
        b = phi if j == -1 else j + k
        return (a, b) if b - a <= reach else None

    def _size(self, a: int, b: int, budget: int) -> Tuple[int, bool]:
        """``(size, exact)`` of ``[a, b)``: its token count (``exact``), or, without bisecting, the
        bound ``(b - a) * max_per_char`` when that alone proves it fits ``budget``."""
        k = self.sizer.max_per_char
        if k and (b - a) * k <= budget:
            return (b - a) * k, False
        return self.sizer.tokens(a, b), True

    def _over(self, a: int, b: int, budget: int) -> bool:
        """``tokens(a, b) > budget`` (see :meth:`_size`)."""
        return self._size(a, b, budget)[0] > budget

    def _remember(self, li: int, plo: int, phi: int, a: int, b: int, budget: int) -> bool:
        """Whether the segment ``[a, b)`` of level ``li`` exceeds ``budget``; the segment is kept as
        the level's memo with its :meth:`_size`."""
        size, exact = self._size(a, b, budget)
        self._memo[li] = (plo, phi, a, b, size, exact)
        return size > budget

    def _memo_over(self, li: int, memo: Tuple[int, int, int, int, int, bool], budget: int) -> bool:
        size, exact = memo[4], memo[5]
        if size <= budget:
            return False
        if exact:
            return True
        return self._remember(li, memo[0], memo[1], memo[2], memo[3], budget)

    def _zone(self, li: int, level: Level, plo: int, phi: int, wlo: int, whi: int) -> Tuple[int, int, List[int]]:
        """``(zlo, zhi, cuts)``: a zone of the parent ``[plo, phi)`` that contains ``[wlo, whi]``, and
        every cut of level ``li`` in it.  The level is queried with ``margin`` characters of context
        beyond the zone on each side (none at the parent's edges), and only the cuts with that context
        are kept.  The zone of the last call (per level and parent) is extended: only the part not yet
        known is queried (overlapping the known zone by twice the margin, so the joint is covered), so
        a window that grows, or the next position asked for near the last, costs only the new text."""
        key = (li, plo, phi)
        m, text, find = level.margin, self.text, level.find
        z = self._zones.get(key)
        if z is None or whi < z[0] or wlo > z[1]:
            qlo, qhi = max(plo, wlo - m), min(phi, whi + m)
            zlo = plo if qlo == plo else qlo + m
            zhi = phi if qhi == phi else qhi - m
            cuts = [c for c in find(text, qlo, qhi) if zlo <= c <= zhi]
        else:
            zlo, zhi, cuts = z
            if wlo < zlo:
                qlo = max(plo, wlo - m)
                nlo = plo if qlo == plo else qlo + m
                cuts = [c for c in find(text, qlo, min(phi, zlo + m)) if nlo <= c < zlo] + cuts
                zlo = nlo
            if whi > zhi:
                qhi = min(phi, whi + m)
                nhi = phi if qhi == phi else qhi - m
                cuts = cuts + [c for c in find(text, max(plo, zhi - m), qhi) if zhi < c <= nhi]
                zhi = nhi
        if len(self._zones) > 64:
            self._zones.clear()
        self._zones[key] = (zlo, zhi, cuts)
        return zlo, zhi, cuts

    def _window(self, anchor: int, x: int, back: int, fwd: int) -> Span:
        """``back`` tokens before ``anchor`` to ``fwd`` tokens after ``x`` (with offsets; else
        :data:`_CHARS_PER_TOKEN` characters per token, which costs no tokenizer call)."""
        if self._by_tokens:
            return self.sizer.back_limit(anchor, back), self.sizer.limit(x, fwd)
        return anchor - _CHARS_PER_TOKEN * back, x + _CHARS_PER_TOKEN * fwd

    # one widening-window search (which side grows depends on which cut is missing)
    def segment(self, li: int, plo: int, phi: int, x: int, budget: int, reach: int = 0):  # noqa: C901
        """``(a, b, over)``: the segment of level ``li`` around ``x`` inside the parent
        ``[plo, phi)``, and whether it alone exceeds ``budget``.  ``reach``: tokens before ``x``
        whose segment will be asked for next (the overlap); the first window reaches back over
        them, so that answer needs no new query."""
        memo = self._memo[li]
        if memo is not None and memo[2] <= x < memo[3] and memo[0] == plo and memo[1] == phi:
            return memo[2], memo[3], self._memo_over(li, memo, budget)
        level = self.levels[li]
        if li in self._all:
            cuts = self._all[li]
        else:
            cuts = self._all[li] = self._all_cuts(li, level)
        if cuts is not None:
            i = bisect.bisect_right(cuts, x)
            lo = cuts[i - 1] if i > 0 and cuts[i - 1] > plo else plo
            hi = cuts[i] if i < len(cuts) and cuts[i] < phi else phi
            return lo, hi, self._remember(li, plo, phi, lo, hi, budget)
        if isinstance(level, SeparatorLevel) and len(level.sep) == 1:
            around = self._around_char(level.sep, plo, phi, x)
            if around is not None:
                return around[0], around[1], self._over(around[0], around[1], budget)
        if not level.windowed:
            return self._segment_whole(li, level, plo, phi, x, budget)
        sizer = self.sizer
        last = self._last_block[li]
        if last is not None and last[2] <= x < last[3] and last[0] == plo and last[1] == phi:
            bl, bh, bs = last[2], last[3], last[4]  # the block last looked at (the overlap start's, often)
        else:
            block = self._block_around(level.block, plo, phi, x) if level.block else None
            bs = None
            if block is not None:
                bl, bh = block
                bs = self._block_cuts(li, level, bl, bh)
                self._last_block[li] = (plo, phi, bl, bh, bs)
        if bs is not None:  # the block around x, queried whole (once)
            i = bisect.bisect_right(bs, x)
            ba = bs[i - 1] if i > 0 else bl
            bb = bs[i] if i < len(bs) else bh
            return ba, bb, self._remember(li, plo, phi, ba, bb, budget)
        # windows (a level without blocks, or a block too long to query whole)
        z = self._zones.get((li, plo, phi))
        if z is not None and z[0] <= x < z[1]:  # the last zone may already answer (the overlap start)
            wlo = whi = x
        else:
            anchor = sizer.back_limit(x, reach) if reach > 0 and self._by_tokens else x - _CHARS_PER_TOKEN * reach
            wlo, whi = self._window(min(x, max(plo, anchor)), x, self.BACK_TOKENS, self.FWD_TOKENS)
        back, fwd = self.BACK_TOKENS, self.FWD_TOKENS
        while True:
            zlo, zhi, zcuts = self._zone(li, level, plo, phi, max(plo, wlo), min(phi, whi))
            i = bisect.bisect_right(zcuts, x)
            a: Optional[int] = zcuts[i - 1] if i > 0 else (plo if zlo == plo else None)
            b: Optional[int] = zcuts[i] if i < len(zcuts) else (phi if zhi == phi else None)
            if a is not None and b is not None:
                return a, b, self._over(a, b, budget)
            if a is None and self._over(zlo, x, budget):
                return (plo, b if b is not None else phi, True)
            if b is None and self._over(x, zhi, budget):
                return (a if a is not None else plo, phi, True)
            # grow the missing side beyond the zone, by more each time
            if a is None:
                back *= 2
                wlo = self._window(zlo, zlo, back, 0)[0]
            if b is None:
                fwd *= 2
                whi = self._window(zhi, zhi, 0, fwd)[1]

    def unit_at(self, x: int, budget: int, reach: int = 0) -> Span:
        plo, phi = 0, self.n
        for li in range(len(self.levels)):
            a, b, over = self.segment(li, plo, phi, x, budget, reach)
            if not over:
                return a, b
            plo, phi = a, b
        a, b = self.sizer.token_unit(x)
        return max(a, plo), min(b, phi)


#: chunks chosen before they are counted exactly together (a chunk over budget, rare, makes the
#: packer choose again the ones after it: at most this many)
_COUNT_BATCH = 16


# the packing loop (fit, shrink, overlap, advance) shares its cursor state between branches;
# kept as one function so its invariants read in one place (pinned by the property tests)
def pack_spans(  # noqa: C901
    text: str,
    levels: Sequence[Level],
    sizer,
    counter: SpanCounter,
    chunk_size: int,
    chunk_overlap: int,
    wrappers: Sequence[Tuple[str, str]] = (("", ""),),
) -> List[Span]:
    """Pack ``text`` into whitespace-stripped spans of at most ``chunk_size`` tokens each,
    counted on ``prefix + chunk + suffix`` for every ``(prefix, suffix)`` in ``wrappers``.

    Chunks are chosen optimistically (each as if its exact count fits), up to ``_COUNT_BATCH`` at a
    time, and then counted exactly together (:meth:`SpanCounter.first_over`); from the first one
    over budget, packing resumes from the cursor state that chunk was chosen in, this time counting
    and shrinking it at once, as a packer that counts every chunk when it chooses it (the spans are
    the same: ``tests/node_parser/test_fast_paths.py`` compares batches of 16 and of 1).

    Raises ``ValueError`` when not even one token fits next to the wrappers.
    """
    n = len(text)
    first, end_all = strip_span(text, 0, n)
    if first >= end_all:
        return []
    overhead = counter.wrapper_tokens(wrappers)
    budget = chunk_size - overhead
    if budget <= 0:
        raise ValueError(f"no room for text: wrappers take {overhead} tokens of chunk_size {chunk_size}")
    overlap = min(chunk_overlap, budget - 1) if budget > 1 else 0
    finder = _Finder(text, levels, sizer)
    wrappers = list(wrappers)
    spans: List[Span] = []
    states: List[Tuple[int, int]] = []  # per span: the cursor state (s, prev_end) it was chosen in
    checked = 0  # spans[:checked] are counted exactly and fit
    s, prev_end = first, -1
    exact_at: Optional[Tuple[int, int]] = None  # the state whose chunk must be counted at once
    while True:
        done = True  # the text is packed to its end (else: a batch of chunks to count first)
        while s < end_all:
            if len(spans) - checked >= _COUNT_BATCH:
                done = False
                break
            state = (s, prev_end)
            exact = state == exact_at
            bud = budget
            while True:
                # a chunk starting inside a token (tiktoken's " word" when the chunk starts at "w")
                # re-tokenizes that piece: one token more than the size model counts from ``s``
                L = sizer.chunk_limit(s, bud)
                if L >= end_all:
                    e = end_all
                else:
                    u0, _ = finder.unit_at(L, bud, overlap)
                    e = u0 if u0 > s else L
                if e <= prev_end and s < prev_end:
                    # overlap left no room for new text: start after the previous chunk instead
                    s = prev_end
                    while s < end_all and text[s].isspace():
                        s += 1
                    bud = budget
                    if s >= end_all:
                        break
                    continue
                cs, ce = strip_span(text, s, e)
                if cs >= ce or not exact:
                    break
                worst = counter.worst_count(cs, ce, wrappers)
                if worst <= chunk_size:
                    break
                if bud <= 1:
                    why = (
                        f"with the embedded metadata ({overhead} tokens), the first token there makes {worst} tokens; "
                        "raise chunk_size or exclude metadata keys from embedding (excluded_embed_metadata_keys)"
                        if overhead
                        else f"the first token there takes {worst} tokens on its own (a word cut from its space, or a "
                        "character of several tokens); raise chunk_size"
                    )
                    raise ValueError(f"cannot fit the text at char {s} into chunk_size {chunk_size}: {why}")
                # shrink by the excess, in the size model's tokens; never below one token in one step:
                # a chunk that starts inside a token can re-tokenize into more than the one extra token
                # the size model allows for (" architect" cut at "a": "arch", "itect")
                bud = max(1, min(bud - 1, sizer.tokens(s, e) - (worst - chunk_size)))
            if s >= end_all:
                break
            if cs < ce:
                spans.append((cs, ce))
                states.append(state)
                if exact:
                    checked = len(spans)
            if e >= end_all:
                break
            nxt = e
            if overlap > 0 and cs < ce:
                X = sizer.back_limit(e, overlap)
                if s < X < e:
                    u0, u1 = finder.unit_at(X, budget)
                    o = X if u0 == X else u1
                    if s < o < e:
                        nxt = o
            prev_end = e
            while nxt < end_all and text[nxt].isspace():
                nxt += 1
            s = nxt
        bad = counter.first_over(spans[checked:], wrappers, chunk_size)
        if bad is None:
            if done:
                return spans
            checked = len(spans)
            continue
        # resume from the state the first chunk over budget was chosen in, counting it at once
        bad += checked
        s, prev_end = exact_at = states[bad]
        del spans[bad:], states[bad:]
        checked = bad
