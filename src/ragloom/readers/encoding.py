"""Turn the bytes of a text file into ``str``: BOM, then strict UTF-8, then detection.

Detection uses `charset-normalizer`_.  Two rules sit on top of it:

* any GBK-family result (``gb2312``, ``gbk``, ``cp936``, ``gb18030``, ``hz``) decodes as
  **GB18030**, the superset: real "GBK" files often hold characters that Python's strict
  ``gbk`` codec rejects but GB18030 maps;
* when the best guess is a single-byte code page and ``cp1252`` (the most common legacy
  encoding) is as plausible and as coherent, ``cp1252`` wins: short or plain Western text is
  ambiguous between code pages (``cp1250`` reads ``ñ`` as ``ń``, ``cp1006`` as Urdu), and
  the language-coherence score keeps e.g. longer Russian ``cp1251`` text as it is.

Bytes that look binary (NUL bytes outside UTF-16/32, or many control characters) raise
:class:`BinaryContentError`; that is how readers tell a binary file from a text file.

.. _charset-normalizer: https://github.com/jawah/charset_normalizer
"""

from __future__ import annotations

import codecs
import logging
from typing import Optional, Tuple

logger = logging.getLogger(__name__)

__all__ = ["BinaryContentError", "decode_bytes", "detect_encoding", "looks_binary_head", "normalize_newlines"]

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


def looks_binary_head(head: bytes) -> bool:
    """Cheap test on the first bytes of a file: NUL bytes with no UTF-16/32 BOM and no sign
    of BOM-less UTF-16/32 (NULs at every 2nd/4th byte) mean binary.  Lets readers skip a large
    binary file without reading all of it."""
    if b"\x00" not in head or _bom_encoding(head) is not None:
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
    if not matches:
        return None
    best = matches[0]
    enc = _canonical(best.encoding)
    if enc in _GB_FAMILY or any(_canonical(e) in _GB_FAMILY for e in best.could_be_from_charset):
        return "gb18030"
    if enc != "cp1252" and enc.startswith(_SINGLE_BYTE_PREFIXES) and enc not in _MULTI_BYTE_CP:
        # Single-byte code pages are often equally plausible on short or plain Western text;
        # take cp1252 when it is as plausible (chaos) and as coherent (language fit) as the best.
        for m in matches:
            if m.chaos > best.chaos + 0.01 or m.coherence < best.coherence - 0.01:
                continue
            if "cp1252" in (_canonical(e) for e in m.could_be_from_charset):
                return "cp1252"
    return enc


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
            strict UTF-8, then charset-normalizer (GBK family → GB18030).
        errors: codec error handler (``"strict"``, ``"replace"``, ``"ignore"`` …) used for
            the final decode.
        declared: an encoding the content itself claims; trusted only if it decodes.

    Newlines are returned as found; see :func:`normalize_newlines`.

    Raises:
        BinaryContentError: ``data`` looks binary (NUL bytes not explained by UTF-16/32,
            no plausible encoding, or > 5 % control characters).
        UnicodeDecodeError: a forced (or detected) codec fails with ``errors="strict"``.
        LookupError: ``encoding`` names no codec.
    """
    if encoding is not None:
        enc = _canonical(encoding)
        bom = _bom_encoding(data)
        if bom is not None and _canonical(bom[0]) == enc:
            data = data[bom[1]:]
        elif enc in ("utf-16", "utf-32"):  # these codecs consume their own BOM
            pass
        text = data.decode(enc, errors)
        if enc == "utf-8" and text.startswith("\ufeff"):
            text = text[1:]
        return text, enc

    bom = _bom_encoding(data)
    if bom is not None:
        enc, n = bom
        return data[n:].decode(enc, errors), enc

    sample = data[:_SAMPLE_BYTES]
    if b"\x00" in sample:
        # Only UTF-16/32 without a BOM explains NUL bytes in text.
        enc = detect_encoding(data)
        if enc is None or not enc.startswith(("utf_16", "utf_32", "utf-16", "utf-32")):
            raise BinaryContentError("NUL bytes")
        try:
            text = data.decode(enc, "strict")
        except UnicodeDecodeError as exc:
            raise BinaryContentError("NUL bytes") from exc
        if _looks_binary(text):
            raise BinaryContentError("control characters")
        return text, enc

    if declared:
        dec = _canonical(declared)
        if dec in _GB_FAMILY:
            dec = "gb18030"
        if not dec.startswith(("utf_16", "utf_32")):
            try:
                text = data.decode(dec, "strict")
            except (UnicodeDecodeError, LookupError):
                logger.debug("declared encoding %r does not fit; detecting", declared)
            else:
                if not _looks_binary(text):
                    return text, dec

    try:
        text = data.decode("utf-8", "strict")
    except UnicodeDecodeError:
        pass
    else:
        if _looks_binary(text):
            raise BinaryContentError("control characters")
        return text, "utf-8"

    enc = detect_encoding(data)
    if enc is None:
        raise BinaryContentError("no plausible text encoding")
    text = data.decode(enc, errors)
    if _looks_binary(text):
        raise BinaryContentError("control characters")
    return text, enc
