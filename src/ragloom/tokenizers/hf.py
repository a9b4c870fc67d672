"""Hugging Face ``tokenizers`` backend (the embed model's own tokenizer)."""

from __future__ import annotations

import json
import os
import unicodedata
from typing import Any, List, Optional, Sequence, Tuple, Union

import regex

from ragloom.tokenizers.base import BaseTokenizer, valid_unicode

__all__ = ["HFTokenizer", "bert_cut_patterns"]

# the characters BERT's normalizer surrounds with spaces (``handle_chinese_chars``; the BMP blocks)
_BERT_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# punctuation (category P*) from blocks whose punctuation every Unicode table in use agrees on
# (ASCII, Latin-1, General Punctuation, CJK Symbols and Punctuation, Halfwidth and Fullwidth
# Forms): a newer character such as U+2E5A is punctuation to ``regex`` but not to the Rust tables
# inside ``tokenizers``, and a cut before it would change the count
_BERT_PUNCT = "".join(
    chr(c)
    for lo, hi in ((0x21, 0x7E), (0xA1, 0xFF), (0x2010, 0x205E), (0x3001, 0x303F), (0xFF01, 0xFF65))
    for c in range(lo, hi + 1)
    if unicodedata.category(chr(c)).startswith("P")
)
_BERT_CUT_CLASS = f"[ \\t\\n\\r{regex.escape(_BERT_PUNCT)}{_BERT_CJK}]"
# normalizers that map each character on its own (no context, no composition across characters)
_PER_CHAR_NORMALIZERS = {"BertNormalizer", "Lowercase", "NFD", "NFKD", "StripAccents"}


def _normalizer_per_char(state: Any) -> bool:
    if state is None:
        return True
    if state.get("type") == "Sequence":
        return all(_normalizer_per_char(n) for n in state.get("normalizers", []))
    return state.get("type") in _PER_CHAR_NORMALIZERS


def bert_cut_patterns(tok: Any) -> Optional[Tuple[Any, Any]]:
    """The fast exact-count patterns (forward, reverse) of a BERT-style ``tokenizers.Tokenizer``,
    or ``None`` when its pipeline is not one where they hold.

    A match is a position ``h`` before an ASCII whitespace character, a punctuation character
    (category ``P*``, from the blocks every Unicode table agrees on) or a CJK ideograph.  With
    BERT's pre-tokenizer (whitespace dropped, each punctuation character a word of its own) after
    a per-character normalizer (BERT's puts spaces around each CJK ideograph), no word spans
    ``h``, and the model runs word by word, so
    ``count(x[a:b]) == count(x[a:h]) + count(x[h:b])`` (checked by hypothesis in
    ``tests/node_parser/test_properties.py``).  Added tokens (``[MASK]``) are matched in the raw
    text first, so a character they hold after their first one is never a cut (``]``), and added
    tokens that strip neighbouring spaces or match only whole words turn the patterns off.
    Source: the ``BertPreTokenizer`` and ``BertNormalizer`` definitions of Hugging Face
    ``tokenizers`` (after Google's BERT ``BasicTokenizer``).
    """
    pre = tok.pre_tokenizer
    if pre is None or json.loads(pre.__getstate__()).get("type") != "BertPreTokenizer":
        return None
    norm = tok.normalizer
    if not _normalizer_per_char(json.loads(norm.__getstate__()) if norm is not None else None):
        return None
    inner: set = set()
    for added in tok.get_added_tokens_decoder().values():
        if added.lstrip or added.rstrip or added.single_word:
            return None
        inner.update(added.content[1:])
    excluded = "".join(sorted(c for c in inner if regex.fullmatch(_BERT_CUT_CLASS, c)))
    body = f"(?![{regex.escape(excluded)}]){_BERT_CUT_CLASS}" if excluded else _BERT_CUT_CLASS
    return regex.compile(body), regex.compile("(?r)" + body)


#: Texts :meth:`HFTokenizer.count_batch` encodes per ``encode_batch`` call (bounded memory).
BATCH_TEXTS = 1024

class HFTokenizer(BaseTokenizer):
    """A ``tokenizers.Tokenizer`` with truncation and padding off.

    Counts and offsets exclude special tokens; :attr:`num_special_tokens` is how many
    the model adds around one sequence (2 for BERT's ``[CLS]``/``[SEP]``).  Offsets are
    the ``tokenizers`` library's character offsets.

    BERT-style tokenizers (BERT's pre-tokenizer after a per-character normalizer, as in the
    bundled all-MiniLM-L6-v2) have the fast exact-count capability: :attr:`safe_split` is
    :func:`bert_cut_patterns`, so the span engine re-encodes only chunk edges.  Others have
    ``safe_split = None`` (chunks are re-counted whole).

    Raises:
        FileNotFoundError: a path without ``tokenizer.json``.
        ValueError: ``tokenizer`` is neither a path nor a ``tokenizers.Tokenizer``.
    """

    has_offsets = True
    releases_gil = True  # ``encode_batch`` runs in Rust threads without the GIL

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
        cuts = bert_cut_patterns(tok)
        if cuts is not None:
            self.safe_split, self.safe_split_reverse = cuts

    @property
    def hf_tokenizer(self) -> Any:
        return self._tok

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._tok.encode(valid_unicode(text), add_special_tokens=False).ids)

    def count_batch(self, texts: Sequence[str]) -> List[int]:
        """``[count(t) for t in texts]``, encoded :data:`BATCH_TEXTS` texts at a time: a Rust
        ``Encoding`` keeps ids, tokens, offsets and masks, about 100 bytes a token, so the 36,835
        chunks of a 50 MB text encoded at once took about 0.9 GB."""
        out: List[int] = []
        for start in range(0, len(texts), BATCH_TEXTS):
            part = [valid_unicode(t) for t in texts[start : start + BATCH_TEXTS]]
            out.extend(len(e.ids) for e in self._tok.encode_batch(part, add_special_tokens=False))
        return out

    def encode(self, text: str) -> List[int]:
        return list(self._tok.encode(valid_unicode(text), add_special_tokens=False).ids) if text else []

    def encode_ordinary(self, text: str) -> List[int]:
        """The ids of :meth:`encode` (special-token text such as ``"[CLS]"`` in ``text`` is the
        tokenizer's added token, as in :meth:`count`, so ``len(encode_ordinary(t)) == count(t)``)."""
        return self._tok.encode(valid_unicode(text), add_special_tokens=False).ids

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
