"""Turn the bytes of a text file into ``str``: BOM, then strict UTF-8, then detection.

Detection uses `charset-normalizer`_.  Two rules sit on top of it:

* any GBK-family result (``gb2312``, ``gbk``, ``cp936``, ``gb18030``, ``hz``) decodes as
  **GB18030**, the superset: real "GBK" files often hold characters that Python's strict
  ``gbk`` codec rejects but GB18030 maps;
* when the best guess is a single-byte code page and ``cp1252`` (the most common legacy
  encoding) is as plausible and as coherent, ``cp1252`` wins: short or plain Western text is
  ambiguous between code pages (``cp1250`` reads ``ñ`` as ``ń``, ``cp1006`` as Urdu), and
  the language-coherence score keeps e.g. longer Russian ``cp1251`` text as it is;
* **short CJK files** (at most :data:`SHORT_CJK_BYTES` bytes) are decided here, not by the
  detector, whose language statistics need more text: a 13-character GBK sentence came back as
  ``cp949`` mojibake.  See :func:`short_cjk_encoding`.

Bytes that look binary (NUL bytes outside UTF-16/32, or many control characters) raise
:class:`BinaryContentError`; that is how readers tell a binary file from a text file.

**Slightly damaged text is still text.**  A file cut mid-character or holding a stray bad
byte fails every strict decode (charset-normalizer then proposes nothing).  Instead of calling
it binary, each candidate codec (the detector's guess, then UTF-8, GB18030, Big5, Shift-JIS,
EUC-JP, EUC-KR) decodes it with U+FFFD replacement characters, and a candidate is accepted
when it needs at most ``max(1, characters // 1000)`` replacements (≤ 1 per 1,000 characters;
at least 1 so a short file cut mid-character still reads) and charset-normalizer's
``mess_ratio`` of the result is below its own default 0.2.  Random or compressed binary
needs far more (every ``0x80``/``0xFF`` byte alone is invalid in all of these codecs, ≈ 1 per
128 bytes), so it still raises :class:`BinaryContentError`.  UTF-8 that is only cut inside its last character (with
multi-byte characters before the cut) is taken as UTF-8 before detection, unless it is short and reads cleanly as
CJK text in a legacy codec (:func:`short_cjk_encoding`).  Among the
accepted candidates the least messy wins (Big5 bytes are also valid GB18030, but read as nonsense), then the
one with fewer replacements.  Each such decode is logged as a warning.

.. _charset-normalizer: https://github.com/jawah/charset_normalizer
"""

from __future__ import annotations

import codecs
import logging
import re
from typing import Dict, List, Optional, Tuple

logger = logging.getLogger(__name__)

__all__ = [
    "BinaryContentError",
    "SHORT_CJK_BYTES",
    "decode_bytes",
    "decode_bytes_counted",
    "detect_encoding",
    "looks_binary_head",
    "normalize_newlines",
    "replacement_note",
    "short_cjk_encoding",
]

# Longest BOMs first: the UTF-32-LE BOM starts with the UTF-16-LE one.
_BOMS: Tuple[Tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

_GB_FAMILY = {"gb2312", "gbk", "cp936", "gb18030", "hz", "euc_cn", "ms936"}
_SINGLE_BYTE_PREFIXES = ("cp", "iso8859", "mac_", "koi8", "latin", "kz1048", "ptcp154", "tis_620", "hp_roman8")
_MULTI_BYTE_CP = {"cp932", "cp949", "cp950", "cp936", "cp65001"}
# Control characters that never appear in real text (C0 minus \t \n \v \f \r and ESC).
_BAD_CONTROLS = {chr(c) for c in range(0x20) if c not in (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1B)}
_SAMPLE_BYTES = 8192
# Lossy fallback (see the module docstring): codecs tried, replacements allowed per character,
# charset-normalizer's default chaos threshold, and how many characters it measures.
_LOSSY_CANDIDATES = ("utf-8", "gb18030", "big5", "shift_jis", "euc_jp", "euc_kr")
_MAX_REPLACEMENT_RATE = 1 / 1000
_MAX_MESS = 0.2
_MESS_SAMPLE_CHARS = 20000


class BinaryContentError(ValueError):
    """The bytes are not text in any encoding we accept (binary data)."""


def _canonical(name: str) -> str:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return name.lower()


def _bom_encoding(data: bytes) -> Optional[Tuple[str, int]]:
    for bom, enc in _BOMS:
        if data.startswith(bom):
            return enc, len(bom)
    return None


def _looks_binary(text: str) -> bool:
    sample = text[:4096]
    if not sample:
        return False
    bad = sum(1 for ch in sample if ch in _BAD_CONTROLS)
    return bad / len(sample) > 0.05


def _common_char(ch: str) -> bool:
    """Whether ``ch`` is a character of ordinary text: printable ASCII or a line/tab control, Latin
    letters and punctuation (U+00A0–U+024F, U+2000–U+206F), CJK punctuation, kana, ideographs
    (U+3000–U+30FF, U+3400–U+9FFF), Hangul syllables, full-width forms."""
    o = ord(ch)
    return ((0x20 <= o < 0x7F) or ch in "\n\r\t" or 0xA0 <= o <= 0x24F or 0x2000 <= o <= 0x206F
            or 0x3000 <= o <= 0x30FF or 0x3400 <= o <= 0x9FFF or 0xAC00 <= o <= 0xD7A3 or 0xFF00 <= o <= 0xFFEF)


#: :func:`utf16_without_bom` takes a reading whose characters are at least this share common ones
UTF16_COMMON_SHARE = 0.95


def utf16_without_bom(data: bytes) -> Optional[str]:
    """``"utf-16-le"`` or ``"utf-16-be"`` when ``data`` (NUL bytes in it, no BOM) reads as text in one
    byte order and not in the other, else ``None``; judged on the first :data:`UTF16_SAMPLE_BYTES`.

    Text that is mostly CJK has few NUL bytes (only its ASCII characters, such as line breaks, and the
    characters U+xx00 hold one), so it shows none of the every-other-byte pattern that charset-normalizer
    and :func:`looks_binary_head` recognise UTF-16 by.  A byte order reads as text when the sample
    decodes in it strictly (random bytes rarely do: unpaired surrogates), holds no U+0000, has more
    characters under U+0100 (whose high byte is the NUL) than U+xx00 ones other than ideographs (whose
    low byte is: a repeated binary pattern such as 00 01) and one in :data:`UTF16_LATIN_EVERY` at
    least, and at least :data:`UTF16_COMMON_SHARE` of
    its characters are common ones (:func:`_common_char`).  In the wrong order line breaks and CJK
    punctuation become unassigned or rare code points; when both orders read as text (ASCII letters
    with a stray NUL pair up into ideographs either way) the answer is ``None``."""
    sample = data[:UTF16_SAMPLE_BYTES]
    sample = sample[: len(sample) - len(sample) % 2]
    passed = []
    for codec in ("utf-16-le", "utf-16-be"):
        try:
            text = sample.decode(codec)
        except UnicodeDecodeError:
            try:  # a sample cut inside a surrogate pair
                text = sample[:-2].decode(codec)
            except UnicodeDecodeError:
                continue
        if not text or "\x00" in text:  # text has no U+0000 (a NUL pair: binary)
            continue
        latin = sum(1 for ch in text if ch < "\u0100")
        low_nul = sum(1 for ch in text if ch >= "\u0100" and not ord(ch) & 0xFF and not _ideograph(ch))
        if latin <= low_nul or latin * UTF16_LATIN_EVERY < len(text):
            continue
        if sum(map(_common_char, text)) / len(text) >= UTF16_COMMON_SHARE:
            passed.append(codec)
    return passed[0] if len(passed) == 1 else None


def _ideograph(ch: str) -> bool:
    return "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff"


#: :func:`utf16_without_bom` wants at least one character under U+0100 (a line break, a space, a
#: digit) per this many characters: what stray NULs in other data lack
UTF16_LATIN_EVERY = 500
#: how much of the data :func:`utf16_without_bom` reads to decide (bytes)
UTF16_SAMPLE_BYTES = 16384


def looks_binary_head(head: bytes) -> bool:
    """Cheap test on the first bytes of a file: NUL bytes with no UTF-16/32 BOM and no sign
    of BOM-less UTF-16/32 (NULs at every 2nd/4th byte, or a reading as mostly-CJK UTF-16:
    :func:`utf16_without_bom`) mean binary.  Lets readers skip a large binary file without
    reading all of it."""
    if b"\x00" not in head or _bom_encoding(head) is not None:
        return False
    if utf16_without_bom(head) is not None:
        return False
    n = len(head) - len(head) % 4
    if n < 4:
        return True
    even_nul = head[0:n:2].count(0) / (n // 2)
    odd_nul = head[1:n:2].count(0) / (n // 2)
    # UTF-16 text of mostly ASCII/Latin has NULs at nearly every other byte; UTF-32 more so.
    return not (max(even_nul, odd_nul) > 0.5 and min(even_nul, odd_nul) < 0.1) and not (
        head[0:n:4].count(0) + head[3:n:4].count(0) > 0 and head[1:n:4].count(0) / (n // 4) > 0.9
        and head[2:n:4].count(0) / (n // 4) > 0.9
    )


def detect_encoding(data: bytes) -> Optional[str]:
    """Best-guess codec name for ``data`` (bytes) by charset-normalizer plus the rules above.

    Returns ``None`` when no encoding fits (binary data).  Does not look at BOMs.
    """
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data))
    short = len(data) <= SHORT_CJK_BYTES and not data.isascii()
    if not matches:
        found = short_cjk_encoding(data, "") if short else ""
        return found or None
    best = matches[0]
    enc = _canonical(best.encoding)
    if enc in _GB_FAMILY or any(_canonical(e) in _GB_FAMILY for e in best.could_be_from_charset):
        enc = "gb18030"
    if short:
        enc = short_cjk_encoding(data, enc)
        if _CJK_FAMILY.get(enc) and not _mostly_cjk(data.decode(enc, "replace")) and not _in_gb2312(data, enc):
            # a CJK codec whose reading is not CJK text: Western text with a few accented letters
            # (``fèt`` is a Big5 hanzi after ``f``); take the detector's best other guess.  (GB 2312
            # has Latin letters with tone marks: GBK pinyin such as "nǐ hǎo" stays GB18030.)
            other = next((m for m in matches if not _CJK_FAMILY.get(_canonical(m.encoding))
                          and not _canonical(m.encoding).startswith(("utf_16", "utf_32"))), None)
            if other is not None:
                best, enc = other, _canonical(other.encoding)
            elif _decodes(data, "cp1252"):  # the detector offered only CJK codecs: the common legacy one
                return "cp1252"
    if _CJK_FAMILY.get(enc):
        return enc
    if enc != "cp1252" and enc.startswith(_SINGLE_BYTE_PREFIXES) and enc not in _MULTI_BYTE_CP:
        # Single-byte code pages are often equally plausible on short or plain Western text;
        # take cp1252 when it is as plausible (chaos) and as coherent (language fit) as the best.
        for m in matches:
            if m.chaos > best.chaos + 0.01 or m.coherence < best.coherence - 0.01:
                continue
            if "cp1252" in (_canonical(e) for e in m.could_be_from_charset):
                return "cp1252"
    return enc


#: Files up to this many bytes get :func:`short_cjk_encoding`'s decision (about 1,000 CJK
#: characters).  Measured with random GB2312 text (hanzi and punctuation): charset-normalizer
#: alone misread 99 of 100 5-character strings, 31 of 100 40-character ones and 2 of 100
#: 80-character ones; past a few hundred characters its language statistics take over.
SHORT_CJK_BYTES = 2048

#: Multi-byte CJK codecs :func:`short_cjk_encoding` weighs, in its order of preference on a tie
#: (Chinese first: the brief case is a short Chinese file read as Korean).
_CJK_CANDIDATES = ("gb18030", "big5", "cp949", "euc_jp", "cp932")
_CJK_FAMILY = {
    "gb18030": "gb18030", "big5": "big5", "big5hkscs": "big5", "cp950": "big5",
    "cp949": "cp949", "euc_kr": "cp949", "johab": "cp949",
    "euc_jp": "euc_jp", "euc_jis_2004": "euc_jp", "euc_jisx0213": "euc_jp",
    "cp932": "cp932", "shift_jis": "cp932", "shift_jis_2004": "cp932", "shift_jisx0213": "cp932",
}
#: A CJK character, then optional ASCII punctuation, then spaces, then a CJK character: how
#: Korean separates words, and what Chinese and Japanese text does not do.
_CJK = "\u3040-\u30ff\u3400-\u9fff\uac00-\ud7a3\uf900-\ufaff"
_SPACED_CJK = re.compile(f"[{_CJK}][!-/:-@\\[-`{{-~]*[ \t]+(?=[{_CJK}])")
_SPACED_HANGUL = re.compile("[\uac00-\ud7a3][!-/:-@\\[-`{-~]*[ \t]+(?=[\uac00-\ud7a3])")
_KANA = re.compile("[\u3041-\u3096\u30a1-\u30fa]")  # kana letters (not marks such as ゞ or ー)


def _typical_char(ch: str, codec: str) -> bool:
    """Whether ``ch`` is usual in text of ``codec``'s language, by its row in the national
    standard: Chinese (GB 2312): punctuation, full-width forms and hanzi, not kana, Greek,
    Cyrillic or box drawing; Big5: symbols and hanzi; Korean (KS X 1001): the 2,350 Hangul
    syllables and symbols, not 、。 or full-width forms (Korean writes ASCII punctuation), not
    Hanja or lone jamo; Japanese (JIS X 0208): symbols, full-width forms, kana and kanji, not
    half-width katakana."""
    ref = {"gb18030": "gb2312", "big5": "big5", "cp949": "euc_kr"}.get(codec, "euc_jp")
    try:
        b = ch.encode(ref)
    except UnicodeEncodeError:
        return False
    if len(b) != 2:
        return False
    lead, code = b[0], b[0] << 8 | b[1]
    if ref == "gb2312":
        return lead in (0xA1, 0xA2, 0xA3) or 0xB0 <= lead <= 0xF7
    if ref == "big5":
        return 0xA140 <= code <= 0xA3BF or 0xA440 <= code <= 0xC67E or 0xC940 <= code <= 0xF9D5
    if ref == "euc_kr":  # Korean writes ASCII punctuation: 、。 and full-width forms are Chinese habits
        return "\uac00" <= ch <= "\ud7a3" or lead in (0xA1, 0xA2) and ch not in "、。"
    return lead in (0xA1, 0xA2, 0xA3, 0xA4, 0xA5) or 0xB0 <= lead <= 0xF4


def _misfit(text: str, codec: str) -> float:
    """How much ``text`` (decoded as ``codec``) does not look like that language: 1 per unusual
    character (:func:`_typical_char`), plus, for Chinese and Japanese, 1 per run of spaces
    between two CJK characters (those languages do not separate words; Korean does).  In a
    Korean reading whose Hangul words are separated by spaces, a Hanja counts 1/4 (Korean text
    does use some; a Korean reading of Chinese bytes has many, and no spaces)."""
    hanja_weight = 0.25 if codec == "cp949" and _SPACED_HANGUL.search(text) else 1.0
    bad = 0.0
    for ch in text:
        if ord(ch) > 0x7F and not _typical_char(ch, codec):
            bad += hanja_weight if "\u4e00" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" else 1.0
    if codec != "cp949":
        bad += len(_SPACED_CJK.findall(text))
    return bad


#: Share of a reading's non-space characters that must be CJK (ideographs, kana, Hangul, CJK
#: punctuation and full-width forms) for :func:`short_cjk_encoding` to consider it: Western text
#: with a few accented letters also decodes in Big5 or Shift-JIS (``è`` + ``t`` is a Big5 hanzi).
_MIN_CJK_SHARE = 0.3
_CJK_CHAR = re.compile("[\u3000-\u30ff\u3400-\u9fff\uac00-\ud7a3\uf900-\ufaff\uff00-\uffef]")


def _cjk_fits(data: bytes) -> Dict[str, Tuple[float, str]]:
    """``{codec: (misfit, text)}`` for each CJK candidate that decodes ``data`` strictly into
    mostly CJK text (:data:`_MIN_CJK_SHARE`)."""
    fits: Dict[str, Tuple[float, str]] = {}
    for codec in _CJK_CANDIDATES:
        try:
            text = data.decode(codec, "strict")
        except UnicodeDecodeError:
            continue
        if _looks_binary(text) or not _mostly_cjk(text):
            continue
        fits[codec] = (_misfit(text, codec), text)
    return fits


def _in_gb2312(data: bytes, enc: str) -> bool:
    """Whether ``data`` is GB18030 text of GB 2312 characters only."""
    if enc != "gb18030":
        return False
    try:
        data.decode("gb18030", "strict").encode("gb2312", "strict")
    except (UnicodeDecodeError, UnicodeEncodeError):
        return False
    return True


def _decodes(data: bytes, codec: str) -> bool:
    try:
        data.decode(codec, "strict")
    except UnicodeDecodeError:
        return False
    return True


def _mostly_cjk(text: str) -> bool:
    """Whether at least :data:`_MIN_CJK_SHARE` of ``text``'s non-space characters are CJK."""
    visible = len(text) - sum(1 for ch in text if ch.isspace())
    return visible > 0 and len(_CJK_CHAR.findall(text)) >= _MIN_CJK_SHARE * visible


def _tie_break(tied: List[str], fits: Dict[str, Tuple[float, str]], family: Optional[str]) -> str:
    """Among equally fitting candidates: Korean when its reading separates Hangul words with
    spaces, Japanese when its reading has kana, else GB18030, else the detector's ``family``,
    else the first in :data:`_CJK_CANDIDATES`."""
    if "cp949" in tied and _SPACED_HANGUL.search(fits["cp949"][1]):
        return "cp949"
    for codec in ("euc_jp", "cp932"):
        if codec in tied and _KANA.search(fits[codec][1]):
            return codec
    if "gb18030" not in tied and family in tied:
        return family
    return tied[0]


def short_cjk_encoding(data: bytes, guess: str) -> str:
    """The codec of a short file (≤ :data:`SHORT_CJK_BYTES` bytes) given the detector's
    ``guess`` (a canonical codec name).

    Each of GB18030, Big5, CP949 (EUC-KR), EUC-JP and CP932 (Shift-JIS) that decodes the bytes
    strictly into mostly CJK characters (at least :data:`_MIN_CJK_SHARE` of the non-space
    characters; when none does, ``guess`` stands) gets a *misfit* (:func:`_misfit`): characters
    unusual in its language plus, for Chinese and Japanese, spaces between CJK characters.
    The same bytes often decode validly in several of them: GBK Chinese reads as Hangul and
    Hanja in CP949, EUC-KR Korean as common hanzi in GB18030.  The misfit tells them apart: a
    Chinese reading of Korean has spaces between words; a Korean reading of Chinese has Hanja
    and 、。; a Chinese reading of Big5 or Japanese has rare GBK characters or kana.

    * ``guess`` is one of these families: the least misfit wins; a tie goes to Korean when its
      reading separates Hangul words by spaces, to Japanese when its reading has kana, else to
      GB18030, else to the detector's family (so a one-word Korean file such as ``안녕하세요``
      reads as Chinese).
    * ``guess`` is anything else (a single-byte code page such as ``cp874``, UTF-16 without a
      BOM, or ``""`` when the detector found nothing): a candidate replaces it only when its
      misfit is 0.  Short text in those code pages rarely reads as well-formed CJK: a space
      or a lone byte breaks the pairs (but a short Thai phrase without spaces, ``สวัสดี`` in
      CP874, can read as three common hanzi and is then taken for Chinese).

    Returns the chosen codec (the detector's own name for it when that reads the same text, e.g.
    ``euc_kr`` rather than ``cp949``), or ``guess`` unchanged.

    A decision between readings that fit equally well is logged (INFO).
    """
    family = _CJK_FAMILY.get(guess)
    fits = _cjk_fits(data)
    if not fits:
        return guess
    least = min(m for m, _ in fits.values())
    tied = [c for c in _CJK_CANDIDATES if c in fits and fits[c][0] == least]
    if family is None and least > 0:
        return guess
    choice = _tie_break(tied, fits, family)
    if len({fits[c][1] for c in tied}) > 1:
        logger.info("short text of %d bytes reads equally well as %s; read as %s", len(data), ", ".join(tied), choice)
    if family == choice and guess != choice:  # the detector's member of the family, when it reads the same
        try:
            if data.decode(guess, "strict") == fits[choice][1]:
                return guess
        except (UnicodeDecodeError, LookupError):
            pass
    return choice


def _count_replacements(data: bytes, enc: str) -> Tuple[str, int]:
    """``data`` decoded as ``enc`` with U+FFFD for bad bytes, and how many were inserted (a
    U+FFFD already in the text is not counted: ``replace`` and ``ignore`` differ by exactly
    the inserted ones)."""
    text = data.decode(enc, "replace")
    return text, len(text) - len(data.decode(enc, "ignore"))


def _decode_lossy(data: bytes, candidates: Tuple[str, ...], errors: str) -> Optional[Tuple[str, str, int]]:
    """Best tolerable lossy decode as ``(text, codec, replacements)``, or ``None``."""
    from charset_normalizer.md import mess_ratio

    best = None
    seen = set()
    for order, name in enumerate(candidates):
        enc = _canonical(name)
        if enc in seen:
            continue
        seen.add(enc)
        text, n = _count_replacements(data, enc)
        if n > max(1, len(text) * _MAX_REPLACEMENT_RATE) or _looks_binary(text):
            continue
        mess = mess_ratio(text[:_MESS_SAMPLE_CHARS].replace("\ufffd", ""), maximum_threshold=1.0)
        if mess >= _MAX_MESS:
            continue
        key = (round(mess, 2), n, order)
        if best is None or key < best[0]:
            best = (key, text, enc, n)
    if best is None:
        return None
    _, text, enc, n = best
    if errors not in ("strict", "replace"):
        text = data.decode(enc, errors)  # e.g. "ignore": the caller's handler for the bad bytes
    return text, enc, n


def replacement_note(encoding: str, replacements: int) -> str:
    """Human note for a lossy decode, e.g. ``"decoded as gb18030 with 1 replacement character"``."""
    plural = "" if replacements == 1 else "s"
    return f"decoded as {encoding} with {replacements} replacement character{plural}"


def normalize_newlines(text: str) -> str:
    """``\\r\\n`` and lone ``\\r`` become ``\\n`` (what Python's text mode does)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def decode_bytes(
    data: bytes,
    encoding: Optional[str] = None,
    errors: str = "strict",
    declared: Optional[str] = None,
) -> Tuple[str, str]:
    """Decode ``data`` (bytes) to text; return ``(text, codec_name)``.

    Args:
        data: the raw bytes of a file.
        encoding: force this codec (a leading BOM of that codec is dropped) and decode
            with ``errors``.  ``None`` detects: a UTF-8/16/32 BOM first, then
            ``declared`` (e.g. an HTML ``<meta charset>``) if it decodes strictly, then
            strict UTF-8, then charset-normalizer (GBK family → GB18030), then the lossy
            fallback for slightly damaged text (module docstring), logged as a warning.
        errors: codec error handler (``"strict"``, ``"replace"``, ``"ignore"`` …) used for
            the final decode; the lossy fallback uses ``"replace"`` unless this names
            another non-strict handler.
        declared: an encoding the content itself claims; trusted only if it decodes.

    Newlines are returned as found; see :func:`normalize_newlines`.

    Raises:
        BinaryContentError: ``data`` looks binary (NUL bytes not explained by UTF-16/32,
            no encoding fits even with ≤ 1 replacement per 1,000 characters, or > 5 %
            control characters).
        UnicodeDecodeError: a forced codec fails with ``errors="strict"``, or a BOM's
            codec fails on more bytes than the lossy fallback tolerates.
        LookupError: ``encoding`` names no codec.
    """
    text, enc, n = decode_bytes_counted(data, encoding, errors, declared)
    if n:
        logger.warning("%s (undecodable bytes)", replacement_note(enc, n))
    return text, enc


def decode_bytes_counted(
    data: bytes,
    encoding: Optional[str] = None,
    errors: str = "strict",
    declared: Optional[str] = None,
) -> Tuple[str, str, int]:
    """:func:`decode_bytes` without the warning, returning ``(text, codec_name, replacements)``:
    ``replacements`` counts the U+FFFD characters the lossy fallback inserted (0 when the
    bytes decoded strictly or the codec was forced).  Same arguments and errors."""
    if encoding is not None:
        return _decode_forced(data, encoding, errors)
    bom = _bom_encoding(data)
    if bom is not None:
        return _decode_after_bom(data, bom, errors)
    if b"\x00" in data[:_SAMPLE_BYTES]:
        return _decode_with_nul(data)
    if declared:
        found = _decode_declared(data, declared)
        if found is not None:
            return found
    found = _decode_utf8(data, errors)
    if found is not None:
        return found
    return _decode_detected(data, errors)


_Decoded = Tuple[str, str, int]


def _decode_forced(data: bytes, encoding: str, errors: str) -> _Decoded:
    enc = _canonical(encoding)
    bom = _bom_encoding(data)
    if bom is not None and _canonical(bom[0]) == enc:
        data = data[bom[1]:]
    # (utf-16 and utf-32 consume their own BOM)
    text = data.decode(enc, errors)
    if enc == "utf-8" and text.startswith("\ufeff"):
        text = text[1:]
    return text, enc, 0


def _decode_after_bom(data: bytes, bom: Tuple[str, int], errors: str) -> _Decoded:
    enc, n = bom
    try:
        return data[n:].decode(enc, errors), enc, 0
    except UnicodeDecodeError:
        lossy = _decode_lossy(data[n:], (enc,), errors)
        if lossy is None:
            raise
        return lossy


def _decode_with_nul(data: bytes) -> _Decoded:
    # Only UTF-16/32 without a BOM explains NUL bytes in text.
    enc = detect_encoding(data)
    if enc is None or not enc.startswith(("utf_16", "utf_32", "utf-16", "utf-32")):
        enc = utf16_without_bom(data)  # mostly-CJK UTF-16: few NULs, which charset-normalizer misses
        if enc is None:
            raise BinaryContentError("NUL bytes")
    try:
        text = data.decode(enc, "strict")
    except UnicodeDecodeError as exc:
        raise BinaryContentError("NUL bytes") from exc
    if _looks_binary(text):
        raise BinaryContentError("control characters")
    return text, enc, 0


def _decode_declared(data: bytes, declared: str) -> Optional[_Decoded]:
    """The text in the content's own ``declared`` encoding, or ``None`` when it does not fit."""
    dec = _canonical(declared)
    if dec in _GB_FAMILY:
        dec = "gb18030"
    if dec.startswith(("utf_16", "utf_32")):
        return None
    try:
        text = data.decode(dec, "strict")
    except (UnicodeDecodeError, LookupError):
        logger.debug("declared encoding %r does not fit; detecting", declared)
        return None
    return None if _looks_binary(text) else (text, dec, 0)


def _decode_utf8(data: bytes, errors: str) -> Optional[_Decoded]:
    """The text as UTF-8 (strict, or lossy when only the last character is cut), else ``None``."""
    try:
        text = data.decode("utf-8", "strict")
    except UnicodeDecodeError as exc:
        # Valid UTF-8 cut inside its last character: the detector would guess a code page
        # for mostly-ASCII text (mojibake), so take UTF-8 when everything before the cut
        # decodes and holds multi-byte sequences (chance in a legacy encoding is negligible).
        if exc.reason == "unexpected end of data" and not data[: exc.start].isascii():
            # unless a short text reads cleanly as CJK in a legacy codec (GBK bytes can look like
            # UTF-8 cut short): a strict reading beats one with a replacement character
            alt = short_cjk_encoding(data, "") if len(data) <= SHORT_CJK_BYTES else ""
            if alt:
                return data.decode(alt, errors), alt, 0
            return _decode_lossy(data, ("utf-8",), errors)
        return None
    if _looks_binary(text):
        raise BinaryContentError("control characters")
    return text, "utf-8", 0


def _decode_detected(data: bytes, errors: str) -> _Decoded:
    """charset-normalizer's guess, then the lossy fallback; ``BinaryContentError`` if nothing fits."""
    enc = detect_encoding(data)
    if enc is not None:
        try:
            text = data.decode(enc, errors)
        except UnicodeDecodeError:  # charset-normalizer tolerates e.g. a cut last character
            pass
        else:
            if _looks_binary(text):
                raise BinaryContentError("control characters")
            return text, enc, 0
    lossy = _decode_lossy(data, ((enc,) if enc else ()) + _LOSSY_CANDIDATES, errors)
    if lossy is None:
        raise BinaryContentError("no plausible text encoding")
    return lossy
