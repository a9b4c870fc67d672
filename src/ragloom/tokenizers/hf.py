"""Hugging Face ``tokenizers`` backend (the embed model's own tokenizer)."""

from __future__ import annotations

import os
from typing import Any, List, Sequence, Tuple, Union

from ragloom.tokenizers.base import BaseTokenizer, valid_unicode

__all__ = ["HFTokenizer"]


class HFTokenizer(BaseTokenizer):
    """A ``tokenizers.Tokenizer`` with truncation and padding off.

    Counts and offsets exclude special tokens; :attr:`num_special_tokens` is how many
    the model adds around one sequence (2 for BERT's ``[CLS]``/``[SEP]``).  Offsets are
    the ``tokenizers`` library's character offsets.

    Raises:
        FileNotFoundError: a path without ``tokenizer.json``.
        ValueError: ``tokenizer`` is neither a path nor a ``tokenizers.Tokenizer``.
    """

    has_offsets = True

    def __init__(self, tokenizer: Union[str, "os.PathLike[str]", Any], name: str | None = None) -> None:
        from tokenizers import Tokenizer as _HFTok

        if isinstance(tokenizer, (str, os.PathLike)):
            path = os.fspath(tokenizer)
            if os.path.isdir(path):
                path = os.path.join(path, "tokenizer.json")
            if not os.path.isfile(path):
                raise FileNotFoundError(f"no tokenizer.json at {path}")
            tok = _HFTok.from_file(path)
            default_name = f"hf:{os.path.basename(os.path.dirname(os.path.abspath(path))) or path}"
        elif isinstance(tokenizer, _HFTok):
            tok = _HFTok.from_str(tokenizer.to_str())  # copy: never change the caller's object
            default_name = "hf:tokenizer"
        else:
            raise ValueError(
                f"HFTokenizer needs a tokenizer.json path or tokenizers.Tokenizer, got {type(tokenizer).__name__}"
            )
        tok.no_truncation()
        tok.no_padding()
        self._tok = tok
        self.name = name or default_name
        self.num_special_tokens: int = int(tok.num_special_tokens_to_add(False))

    @property
    def hf_tokenizer(self) -> Any:
        return self._tok

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._tok.encode(valid_unicode(text), add_special_tokens=False).ids)

    def count_batch(self, texts: Sequence[str]) -> List[int]:
        if not texts:
            return []
        return [len(e.ids) for e in self._tok.encode_batch([valid_unicode(t) for t in texts], add_special_tokens=False)]

    def encode(self, text: str) -> List[int]:
        return list(self._tok.encode(valid_unicode(text), add_special_tokens=False).ids) if text else []

    def encode_offsets(self, text: str) -> List[Tuple[int, int]]:
        return list(self._tok.encode(valid_unicode(text), add_special_tokens=False).offsets) if text else []

    def encode_offsets_batch(self, texts: Sequence[str]) -> List[List[Tuple[int, int]]]:
        if not texts:
            return []
        encs = self._tok.encode_batch([valid_unicode(t) for t in texts], add_special_tokens=False)
        return [list(e.offsets) for e in encs]

    def token_starts_batch(self, texts: Sequence[str]) -> List[Sequence[int]]:
        """Character start of every token of each text (what the span engine sizes spans with),
        the whole batch in one ``encode_batch`` call."""
        out: List[Sequence[int]] = []
        encs = self._tok.encode_batch([valid_unicode(t) for t in texts], add_special_tokens=False) if texts else []
        for e in encs:
            out.append([o[0] for o in e.offsets])
        return out

    def __repr__(self) -> str:
        return f"HFTokenizer({self.name!r})"
