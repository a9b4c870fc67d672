"""The tokenizer interface the span engine relies on.

- :class:`Tokenizer` — the protocol: every attribute and method the span engine
  (:mod:`ragloom.node_parser.text`) and the splitters read from a tokenizer.
- :class:`BaseTokenizer` — the abstract base class every backend subclasses; it gives
  the documented defaults, so a backend implements :meth:`~BaseTokenizer.count` and
  :meth:`~BaseTokenizer.encode_offsets` and overrides the rest only to be faster.
- :class:`CallableTokenizer` — adapter for a LlamaIndex-style ``Callable[[str], list]``.
- :class:`ForeignTokenizer` — adapter for any other object with ``count`` and
  ``encode_offsets`` (what :func:`~ragloom.tokenizers.get_tokenizer` wraps them in), so
  the engine always receives a :class:`BaseTokenizer`.

Units: token counts are numbers of tokens *without* special tokens (``[CLS]``,
``<|endoftext|>`` …); offsets and starts are *character* (``str``) indices into the text
given, never byte indices.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import (
    Any,
    Callable,
    List,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    runtime_checkable,
)

__all__ = ["Tokenizer", "BaseTokenizer", "CallableTokenizer", "ForeignTokenizer", "SplitPattern", "valid_unicode"]


#: any surrogate code point: in a Python ``str`` even a high one followed by a low one is two characters
_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_unicode(text: str) -> str:
    """``text`` with every surrogate code point (from ``surrogateescape``-decoded bytes, or a JSON
    ``"\\udc80"``) replaced by U+FFFD, one character for one, so character offsets are unchanged.
    A high surrogate followed by a low one is replaced too, as two characters: joining them into one
    character (what a UTF-16 round trip, and tiktoken's own fallback, do) would shift every offset
    after them.  Tokenizers, models and JSON encoders reject surrogates; everything that hands text
    to them uses this."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)


class _Match(Protocol):
    def start(self) -> int: ...


class SplitPattern(Protocol):
    """A compiled pattern (``re`` or ``regex``) searched in a window of a string."""

    def search(self, string: str, pos: int = ..., endpos: int = ...) -> Optional[_Match]: ...


@runtime_checkable
class Tokenizer(Protocol):
    """What the span engine needs from a tokenizer (implemented by :class:`BaseTokenizer`).

    Attributes:
        name: stable identifier (``"tiktoken:cl100k_base"``, ``"hf:all-MiniLM-L6-v2"``);
            part of every splitter's configuration, hence of node ids.
        has_offsets: ``True`` when :meth:`encode_offsets` reports offsets; ``False``
            when it raises :class:`NotImplementedError` (the engine then sizes spans by
            calling :meth:`count` on them).
        safe_split / safe_split_reverse: the optional fast exact-count capability (see
            :class:`BaseTokenizer`); ``None`` when the tokenizer does not have it.
        releases_gil: ``True`` when :meth:`token_starts_batch` runs without holding Python's
            GIL (Hugging Face ``tokenizers``), so the splitters tokenize the next documents in a
            background thread while they pack the current ones; ``False`` (tiktoken holds it) makes
            such a thread pure overhead, and they tokenize in turn.
        byte_level: ``True`` when every token holds at least one UTF-8 byte of the text, so
            ``count(t) <= len(t.encode("utf-8"))`` (byte-level BPE: tiktoken); the span engine then
            skips encoding a chunk edge when even that many tokens would fit.  ``False`` (the
            default) promises nothing.
    """

    name: str
    has_offsets: bool
    releases_gil: bool
    byte_level: bool
    safe_split: Optional[SplitPattern]
    safe_split_reverse: Optional[SplitPattern]

    def count(self, text: str) -> int: ...

    def count_batch(self, texts: Sequence[str]) -> List[int]: ...

    def encode(self, text: str) -> List[int]: ...

    def encode_offsets(self, text: str) -> List[Tuple[int, int]]: ...

    def token_starts_batch(self, texts: Sequence[str]) -> Optional[List[Sequence[int]]]: ...

    def encode_ordinary(self, text: str) -> Sequence[int]: ...


class BaseTokenizer(ABC):
    """Base class of every tokenizer backend; see :class:`Tokenizer` for the attributes.

    A subclass sets :attr:`name` (class attribute or in ``__init__``) and implements
    :meth:`count` and :meth:`encode_offsets`; every other member has a default built on
    those two.

    **Fast exact counting** (optional, tiktoken): :attr:`safe_split` matches positions
    ``h`` of a text where cutting does not change the tokenization, i.e.
    ``count(x[a:b]) == count(x[a:h]) + count(x[h:b])``, and :attr:`safe_split_reverse`
    is the same pattern searching backwards (``regex``'s ``(?r)``).  When both are set
    (and the engine sizes with offsets) a chunk is counted exactly by re-encoding only
    its edges with :meth:`encode_ordinary`, which must then agree with :meth:`count`
    (``len(encode_ordinary(t)) == count(t)``) — a pattern that does not have the cut
    property makes chunk counts wrong.  Both default to ``None`` (the chunk is re-counted
    whole with :meth:`count`).
    """

    name: str
    #: ``True``: :meth:`encode_offsets` works.  ``False``: it raises ``NotImplementedError``.
    has_offsets: bool = True
    #: ``True``: :meth:`token_starts_batch` releases the GIL (see :class:`Tokenizer`).
    releases_gil: bool = False
    #: ``True``: at most one token per UTF-8 byte of the text (see :class:`Tokenizer`).
    byte_level: bool = False
    safe_split: Optional[SplitPattern] = None
    safe_split_reverse: Optional[SplitPattern] = None

    @abstractmethod
    def count(self, text: str) -> int:
        """Number of tokens of ``text`` (special tokens excluded); ``0`` for ``""``."""

    def count_batch(self, texts: Sequence[str]) -> List[int]:
        """``[count(t) for t in texts]``, one int per text in order (default: that loop)."""
        return [self.count(t) for t in texts]

    def encode(self, text: str) -> List[int]:
        """Token ids of ``text`` (special tokens excluded); ``[]`` for ``""``.

        Raises:
            NotImplementedError: the tokenizer does not report ids (the default).
        """
        raise NotImplementedError(f"{self.name} does not report token ids")

    @abstractmethod
    def encode_offsets(self, text: str) -> List[Tuple[int, int]]:
        """The character span ``(start, end)`` of every token of ``text``, in order
        (special tokens excluded; tokens inside one character share its span).

        Raises:
            NotImplementedError: the tokenizer cannot report offsets (then
                :attr:`has_offsets` is ``False``).
        """

    def token_starts_batch(self, texts: Sequence[str]) -> Optional[List[Sequence[int]]]:
        """Character start of every token of each text (a non-decreasing sequence of
        ``str`` indices per text), or ``None`` when offsets are unavailable.

        What the span engine sizes spans with (:class:`~ragloom.node_parser.text.engine.OffsetSizer`);
        ``None`` makes it measure spans by :meth:`count` instead.  Default: ``None`` when
        :attr:`has_offsets` is ``False``, else the starts of :meth:`encode_offsets` of each
        text, or ``None`` when that raises :class:`NotImplementedError`.  Backends override
        it to tokenize the batch at once.
        """
        if not self.has_offsets:
            return None
        try:
            return [[o[0] for o in self.encode_offsets(t)] for t in texts]
        except NotImplementedError:
            return None

    def encode_ordinary(self, text: str) -> Sequence[int]:
        """Token ids of ``text`` with special-token text encoded as ordinary text, as fast
        as the backend allows; used only by fast exact counting (see the class docstring).

        Default: :meth:`encode`.

        Raises:
            NotImplementedError: the tokenizer does not report ids.
        """
        return self.encode(text)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({getattr(self, 'name', '?')!r})"


class CallableTokenizer(BaseTokenizer):
    """Adapter for a LlamaIndex-style ``tokenizer: Callable[[str], list]``.

    ``count(text) == len(fn(text))``.  Offsets are unavailable, so
    :meth:`encode_offsets` raises :class:`NotImplementedError` and the span engine
    measures spans by calling the function on them.
    """

    has_offsets = False

    def __init__(self, fn: Callable[[str], Sequence[Any]], name: Optional[str] = None) -> None:
        if not callable(fn):
            raise ValueError(f"tokenizer must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.name = name or f"callable:{getattr(fn, '__qualname__', type(fn).__name__)}"

    def count(self, text: str) -> int:
        return len(self.fn(text)) if text else 0

    def encode_offsets(self, text: str) -> List[Tuple[int, int]]:
        raise NotImplementedError(f"{self.name} cannot report token offsets")

    def encode(self, text: str) -> List[int]:
        out = self.fn(text)
        if all(isinstance(t, int) for t in out):
            return list(out)
        raise NotImplementedError(f"{self.name} does not return token ids")

    def __repr__(self) -> str:
        return f"CallableTokenizer({self.name!r})"


class ForeignTokenizer(BaseTokenizer):
    """Adapter for a duck-typed tokenizer object that is not a :class:`BaseTokenizer`:
    anything with ``count(text) -> int`` and ``encode_offsets(text) -> [(start, end)]``.

    The object's optional members are looked up once, here, and forwarded when present
    (otherwise the :class:`BaseTokenizer` defaults apply): ``name`` (default: the
    object's ``repr``), ``has_offsets`` (default ``True``), ``releases_gil`` (default
    ``False``), ``count_batch``, ``encode``,
    ``token_starts_batch``; and the fast exact-count capability ``safe_split`` +
    ``safe_split_reverse`` + ``encoding.encode_ordinary`` (a ``tiktoken.Encoding``),
    taken only when all three are there.

    Raises:
        ValueError: ``obj`` has no callable ``count`` or ``encode_offsets``.
    """

    def __init__(self, obj: Any) -> None:
        if not callable(getattr(obj, "count", None)) or not callable(getattr(obj, "encode_offsets", None)):
            raise ValueError(f"a tokenizer object needs count() and encode_offsets(), got {type(obj).__name__}")
        self.wrapped = obj
        name = getattr(obj, "name", None)
        self.name = name if isinstance(name, str) else repr(obj)
        self.has_offsets = bool(getattr(obj, "has_offsets", True))
        self.releases_gil = bool(getattr(obj, "releases_gil", False))
        self._count_batch = getattr(obj, "count_batch", None)
        self._encode = getattr(obj, "encode", None)
        self._starts = getattr(obj, "token_starts_batch", None)
        enc = getattr(obj, "encoding", None)
        safe = getattr(obj, "safe_split", None)
        safe_rev = getattr(obj, "safe_split_reverse", None)
        ordinary = getattr(enc, "encode_ordinary", None) if enc is not None else None
        self._ordinary = ordinary
        if safe is not None and safe_rev is not None and ordinary is not None:
            self.safe_split = safe
            self.safe_split_reverse = safe_rev

    def count(self, text: str) -> int:
        return self.wrapped.count(text)

    def count_batch(self, texts: Sequence[str]) -> List[int]:
        if self._count_batch is not None:
            return list(self._count_batch(texts))
        return [self.wrapped.count(t) for t in texts]

    def encode(self, text: str) -> List[int]:
        if self._encode is None:
            raise NotImplementedError(f"{self.name} does not report token ids")
        return self._encode(text)

    def encode_offsets(self, text: str) -> List[Tuple[int, int]]:
        return self.wrapped.encode_offsets(text)

    def token_starts_batch(self, texts: Sequence[str]) -> Optional[List[Sequence[int]]]:
        if self._starts is not None:
            return self._starts(list(texts))
        return super().token_starts_batch(texts)

    def encode_ordinary(self, text: str) -> Sequence[int]:
        if self._ordinary is not None:
            return self._ordinary(text)
        return super().encode_ordinary(text)

    def __repr__(self) -> str:
        return f"ForeignTokenizer({self.wrapped!r})"
