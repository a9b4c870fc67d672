"""The :class:`Tokenizer` protocol and the callable adapter."""

from __future__ import annotations

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

__all__ = ["Tokenizer", "CallableTokenizer"]


@runtime_checkable
class Tokenizer(Protocol):
    """What the span engine needs from a tokenizer.

    ``encode_offsets`` returns the *character* span ``(start, end)`` of every token of
    ``text`` (special tokens such as ``[CLS]`` excluded), in order.  A backend that
    cannot report offsets raises :class:`NotImplementedError`; the engine then sizes
    spans by counting.
    """

    name: str

    def count(self, text: str) -> int: ...

    def count_batch(self, texts: Sequence[str]) -> List[int]: ...

    def encode_offsets(self, text: str) -> List[Tuple[int, int]]: ...

    def encode(self, text: str) -> List[int]: ...


class CallableTokenizer:
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

    def count_batch(self, texts: Sequence[str]) -> List[int]:
        return [self.count(t) for t in texts]

    def encode_offsets(self, text: str) -> List[Tuple[int, int]]:
        raise NotImplementedError(f"{self.name} cannot report token offsets")

    def encode(self, text: str) -> List[int]:
        out = self.fn(text)
        if all(isinstance(t, int) for t in out):
            return list(out)
        raise NotImplementedError(f"{self.name} does not return token ids")

    def __repr__(self) -> str:
        return f"CallableTokenizer({self.name!r})"
