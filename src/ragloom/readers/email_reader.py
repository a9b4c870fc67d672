"""E-mail (``.eml``, RFC 5322 / MIME) through the standard library's :mod:`email` package, and the
document-building shared with the Outlook ``.msg`` reader (:mod:`ragloom.readers.msg_reader`).

One document per message: the subject line, a blank line, then the body — the ``text/plain`` part,
else the ``text/html`` part as readable text (:func:`~ragloom.readers.html_reader.html_to_text`),
newlines normalised to ``\\n``.  A message with a subject but no body text and nothing else readable
(e.g. an image-only e-mail) is one small document holding just the subject, so it can still be
found.  MIME encodings (base64, quoted-printable, RFC 2047 headers, declared charsets) are decoded
by :mod:`email` with ``policy.default``; a part whose charset is wrong or unknown is decoded with
replacement characters rather than dropped.

Attachments are never indexed as raw MIME (base64 text was 19% of the chunks of a real mixed
folder).  A text attachment (``text/plain``, ``text/markdown``, ``text/csv``, ``text/html``, or a
generic type with such an extension) becomes its own document (metadata ``attachment_name`` and the
message's ``email_subject``); every other attachment is listed by name in the message's
``attachments`` metadata and not read.  Signature parts (``smime.p7s``, ``signature.asc``) are
neither read nor listed.

Enclosed messages (``message/rfc822`` parts: each message of a ``multipart/digest``, a forwarded
message attached as ``.eml``) are read like the message itself and give their own documents —
subject and body, with their own ``email_*`` metadata (and ``attachment_name`` when the part has a
file name): in a digest each message is a separate topic, and a search should find the one message,
not the whole digest.  Nesting stops at :data:`MAX_NESTING` levels.

Metadata (hidden from the embedded and LLM views unless noted): ``email_subject`` (shown),
``email_from``, ``email_to``, ``email_cc``, ``email_date``, ``attachments``.

A file with several documents gives them the ids ``f"{path}_part_{i}"`` (the message first), one
document the path itself, as :class:`~ragloom.readers.SimpleDirectoryReader` would.

Other helpers: :func:`looks_like_email` tells a raw message saved under another extension (``.txt``)
from ordinary text; a ``.p7s`` / ``.p7m`` file given to :class:`EmailReader` is read as e-mail when
it is a MIME entity (a header block with ``Content-Type``: some tools save a whole signed message
so) and otherwise refused with :data:`REASON_SMIME_SIGNATURE` / :data:`REASON_ENCRYPTED` (a
detached DER or PEM signature, an enveloped message: no text to read).
"""

from __future__ import annotations

import codecs
import email
import email.policy
import mimetypes
import re
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple, Union

from ragloom.errors import ReaderError
from ragloom.readers.base import BaseReader, doc_id_for, file_path_str, make_document
from ragloom.readers.encoding import normalize_newlines
from ragloom.readers.text import REASON_EMPTY
from ragloom.schema import Document

__all__ = [
    "EmailReader",
    "EmailParts",
    "MAX_NESTING",
    "REASON_ENCRYPTED",
    "REASON_SMIME_SIGNATURE",
    "build_email_documents",
    "decode_attachment",
    "email_parts_from_bytes",
    "guess_type",
    "is_text_attachment",
    "looks_like_email",
]

#: Reason for an encrypted message (S/MIME ``application/pkcs7-mime``, PGP/MIME ``multipart/encrypted``).
REASON_ENCRYPTED = "encrypted e-mail (S/MIME or OpenPGP): no readable text"
#: Reason for a ``.p7s`` file that is a detached PKCS#7 signature (DER or PEM), not a MIME message.
REASON_SMIME_SIGNATURE = "S/MIME signature (no text)"
#: How deep enclosed messages are followed (a message in a message in a message …).
MAX_NESTING = 5

_TEXT_ATTACHMENTS = {"text/plain", "text/markdown", "text/csv", "text/html", "text/x-markdown"}
_TEXT_EXTENSIONS = {".txt", ".text", ".md", ".markdown", ".csv", ".html", ".htm", ".log"}
_GENERIC_TYPES = {"", "application/octet-stream", "application/unknown", "application/x-unknown"}
_HIDDEN = ["email_from", "email_to", "email_cc", "email_date", "attachments"]
#: MIME types of encrypted content (S/MIME, OpenPGP) and of signatures (never indexed as text).
ENCRYPTED_TYPES = frozenset({"application/pkcs7-mime", "application/x-pkcs7-mime", "multipart/encrypted",
                             "application/pgp-encrypted"})
_ENCRYPTED = ENCRYPTED_TYPES
SIGNATURE_TYPES = frozenset({"application/pkcs7-signature", "application/x-pkcs7-signature",
                             "application/pgp-signature"})
_SIGNATURES = SIGNATURE_TYPES
_MESSAGE_TYPES = {"message/rfc822", "message/global"}
_SNIFF_BYTES = 8192


# -- what a reader extracts from one message, and the documents built from it ------------------------


@dataclass
class EmailParts:
    """One message as the readers extract it, before it becomes documents.

    ``attachments`` keeps the message's attachments in order as ``(name, content)``: ``content`` is
    the text of a readable text attachment, an :class:`EmailParts` for an enclosed message, or
    ``None`` for one that is only listed by name (the name is ``None`` only for an enclosed message
    that has none).  Header fields are display strings (``""`` when absent).
    """

    subject: str = ""
    sender: str = ""
    to: str = ""
    cc: str = ""
    date: str = ""
    body: str = ""
    attachments: List[Tuple[Optional[str], Union[str, "EmailParts", None]]] = field(default_factory=list)

    def header_metadata(self) -> Dict[str, Any]:
        values = {
            "email_subject": self.subject,
            "email_from": self.sender,
            "email_to": self.to,
            "email_cc": self.cc,
            "email_date": self.date,
        }
        return {k: " ".join(v.split()) for k, v in values.items() if v and v.strip()}


_Pending = Tuple[str, Dict[str, Any], List[str]]  # text, metadata, hidden keys


def _flatten(parts: EmailParts, out: List[_Pending], name: Optional[str] = None) -> None:
    meta = parts.header_metadata()
    subject = meta.get("email_subject", "")
    body = normalize_newlines(parts.body).strip()
    if name is not None:
        meta["attachment_name"] = name
    listed = [n for n, content in parts.attachments if content is None and n]
    if listed:
        meta["attachments"] = listed
    start = len(out)
    if body:
        out.append((f"{subject}\n\n{body}" if subject else body, meta, _HIDDEN))
    for att_name, content in parts.attachments:
        if isinstance(content, EmailParts):
            _flatten(content, out, att_name)
        elif content is not None and content.strip():
            att_meta: Dict[str, Any] = {"attachment_name": att_name} if att_name else {}
            if subject:
                att_meta["email_subject"] = subject
            out.append((normalize_newlines(content).strip(), att_meta, []))
    if len(out) == start and subject:
        out.append((subject, meta, _HIDDEN))  # no text at all: the subject alone keeps the message findable


def build_email_documents(parts: EmailParts, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
    """The documents of one message (see the module docstring): the message, then its text
    attachments and enclosed messages in order.  Ids: the path for one document, else
    ``f"{path}_part_{i}"``.  Returns ``[]`` when the message has no text at all."""
    pending: List[_Pending] = []
    _flatten(parts, pending)
    many = len(pending) > 1
    docs = []
    for i, (text, meta, hidden) in enumerate(pending):
        doc = make_document(text, file, extra_info, metadata=meta, hidden_keys=hidden)
        doc.id_ = doc_id_for(file, i if many else None)
        docs.append(doc)
    return docs


def is_text_attachment(content_type: Optional[str], name: str) -> bool:
    """Whether an attachment is read as text: a text type, or a generic type (or none) with a
    text file extension."""
    ctype = (content_type or "").lower()
    if ctype in _TEXT_ATTACHMENTS:
        return True
    return ctype in _GENERIC_TYPES and Path(name).suffix.lower() in _TEXT_EXTENSIONS


def guess_type(name: str) -> str:
    """The MIME type of a file name (``""`` if unknown)."""
    return mimetypes.guess_type(name, strict=False)[0] or ""


def decode_attachment(data: bytes, content_type: Optional[str], name: str = "") -> Optional[str]:
    """The text of a text attachment's bytes (HTML — by type, or by extension for a generic type —
    as readable text), or ``None`` if they are binary."""
    from ragloom.readers.encoding import BinaryContentError, decode_bytes_counted

    declared = None
    ctype = (content_type or "").lower()
    html = ctype == "text/html" or (ctype in _GENERIC_TYPES and guess_type(name) == "text/html")
    if html:
        from bs4.dammit import EncodingDetector

        declared = EncodingDetector.find_declared_encoding(data[:_SNIFF_BYTES], is_html=True)
    try:
        text = decode_bytes_counted(data, errors="replace", declared=declared)[0]
    except (BinaryContentError, UnicodeError, LookupError):
        return None
    if html:
        from ragloom.readers.html_reader import html_to_text

        text = html_to_text(text)
    return text


# -- .eml ----------------------------------------------------------------------------------------------


def _decode_wide(data: bytes) -> Optional[str]:
    """The text of ``data`` saved as UTF-16 or UTF-32 (BOM, or NUL bytes in every other position),
    else ``None``.  A UTF-8 BOM is dropped."""
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return data.decode("utf-32", "replace")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", "replace")
    if len(data) > 64 and data[1:64:2].count(0) > 24:
        return data.decode("utf-16-le", "replace")
    if len(data) > 64 and data[0:64:2].count(0) > 24:
        return data.decode("utf-16-be", "replace")
    if data.startswith(codecs.BOM_UTF8):
        return data[3:].decode("utf-8", "replace")
    return None


def _parse(data: bytes) -> EmailMessage:
    """The message of ``data``; a file saved as UTF-16 or UTF-32 is decoded first, since MIME itself
    is 7- or 8-bit."""
    text = _decode_wide(data)
    if text is not None:
        return email.message_from_string(text, policy=email.policy.default)
    return email.message_from_bytes(data, policy=email.policy.default)


def _content(part: Any) -> str:
    """The decoded text of a MIME part; undecodable bytes become U+FFFD."""
    try:
        text = part.get_content()
    except (LookupError, UnicodeError, AssertionError, ValueError):
        payload = part.get_payload(decode=True) or b""
        text = payload.decode(part.get_content_charset() or "utf-8", "replace") if isinstance(payload, bytes) else ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if part.get_content_type() == "text/html":
        from ragloom.readers.html_reader import html_to_text

        text = html_to_text(text)
    return text.strip()


class _EncryptedMessage(Exception):
    pass


def _header(msg: Any, name: str) -> str:
    return str(msg.get(name, "") or "").strip()


def _message_parts(msg: EmailMessage, depth: int = 0) -> EmailParts:
    """What :func:`build_email_documents` needs from a parsed message.

    Raises:
        _EncryptedMessage: the message is encrypted.
    """
    if msg.get_content_type() in _ENCRYPTED:
        raise _EncryptedMessage()
    body_part = msg.get_body(preferencelist=("plain", "html"))
    parts = EmailParts(
        subject=_header(msg, "subject"),
        sender=_header(msg, "from"),
        to=_header(msg, "to"),
        cc=_header(msg, "cc"),
        date=_header(msg, "date"),
        body=_content(body_part) if body_part is not None else "",
    )
    _collect(msg, body_part, parts.attachments, depth)
    return parts


def _collect(part: Any, body_part: Any, out: List[Tuple[Optional[str], Any]], depth: int) -> None:
    """The attachments under ``part`` (not descending into enclosed messages) into ``out``."""
    if part is body_part:
        return
    ctype = part.get_content_type()
    name = part.get_filename()
    if ctype in _MESSAGE_TYPES:
        payload = part.get_payload()
        inner = payload[0] if isinstance(payload, list) and payload else None
        label = name or f"attachment-{len(out) + 1}.eml"
        if inner is None or depth >= MAX_NESTING:
            out.append((label, None))
            return
        try:
            out.append((name, _message_parts(inner, depth + 1)))
        except Exception:  # encrypted, or its headers or MIME tree are broken: listed, not read
            out.append((label, None))
        return
    if part.is_multipart():
        for sub in part.iter_parts():
            _collect(sub, body_part, out, depth)
        return
    if ctype in _SIGNATURES or (name is None and part.get_content_disposition() != "attachment"):
        return  # a signature, an alternative view of the body, or an inline part without a name
    name = name or f"attachment-{len(out) + 1}"
    text: Optional[str] = None
    if ctype in _TEXT_ATTACHMENTS:
        text = _content(part)
    elif is_text_attachment(ctype, name):  # a generic type with a text extension: decoded if it is text
        payload = part.get_payload(decode=True)
        text = decode_attachment(payload, ctype, name) if isinstance(payload, bytes) else None
    out.append((name, text))


def email_parts_from_bytes(data: bytes, depth: int = 0) -> EmailParts:
    """:class:`EmailParts` of a raw RFC 5322 message (e.g. an ``.eml`` attached to an Outlook message).

    Raises:
        ValueError: the message is encrypted.
    """
    try:
        return _message_parts(_parse(data), depth)
    except _EncryptedMessage:
        raise ValueError(REASON_ENCRYPTED) from None


class EmailReader(BaseReader):
    """Reads an ``.eml`` file: the message as one document, text attachments and enclosed messages
    as more (see the module docstring).

    Raises:
        ReaderError: ``"empty"`` (no subject, body text or readable attachment),
            :data:`REASON_ENCRYPTED`, :data:`REASON_SMIME_SIGNATURE` (a ``.p7s`` that is not a MIME
            message) or ``"corrupt e-mail: ..."``.
    """

    assigns_ids = True

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        file = Path(file)
        path = file_path_str(file)
        data = file.read_bytes()
        suffix = file.suffix.lower()
        if suffix in (".p7s", ".p7m") and not _is_mime_entity(data[:_SNIFF_BYTES]):
            raise ReaderError(path, REASON_SMIME_SIGNATURE if suffix == ".p7s" else REASON_ENCRYPTED)
        try:
            parts = _message_parts(_parse(data))
        except _EncryptedMessage:
            raise ReaderError(path, REASON_ENCRYPTED) from None
        except Exception as exc:  # malformed headers, broken MIME trees
            raise ReaderError(path, f"corrupt e-mail: {type(exc).__name__}: {exc}", exc) from exc
        docs = build_email_documents(parts, file, extra_info)
        if not docs:
            raise ReaderError(path, REASON_EMPTY)
        return docs


# -- sniffing: a raw message saved as .txt ---------------------------------------------------------


# A field name: printable ASCII but ':' (RFC 5322 ftext); obsolete syntax allows blanks before ':'.
_FIELD = re.compile(r"([!-9;-~]+)[ \t]*:")
_MBOX_FROM = re.compile(r"From \S+ ")  # the "From " line that starts each message of an mbox file
_KNOWN_FIELDS = frozenset(
    """from to cc bcc subject date mime-version content-type content-transfer-encoding received
    message-id return-path reply-to sender delivered-to in-reply-to references x-mailer user-agent
    dkim-signature authentication-results x-received x-originating-ip thread-topic thread-index
    list-id importance x-priority""".split()
)
_MIN_KNOWN = 3
# Fields that only mail software writes: one of them must be present.
_MAIL_FIELDS = frozenset({"from", "mime-version", "received", "return-path", "delivered-to"})


def _known_fields(head: bytes) -> Optional[Set[str]]:
    """The well-known fields (lower-cased) written capitalised in the header block that opens
    ``head``, or ``None`` when ``head`` does not open with a header block (after an optional mbox
    ``From `` line: only ``Name: value`` lines and folded continuations up to the first blank line)."""
    text = _decode_wide(head)
    if text is None:
        text = head.decode("latin-1")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and _MBOX_FROM.match(lines[0]):
        lines = lines[1:]
    if "" not in (line.strip() for line in lines) and not text.endswith(("\n", "\r")):
        lines = lines[:-1]  # no blank line in the head: its last line may be cut off
    known: Set[str] = set()
    seen_field = False
    for line in lines:
        if not line.strip():
            break
        if line[0] in " \t":
            if not seen_field:
                return None
            continue
        m = _FIELD.match(line)
        if m is None:
            return None
        seen_field = True
        name = m.group(1)
        if name.lower() in _KNOWN_FIELDS and name[0].isupper():
            known.add(name.lower())
    return known if seen_field else None


def looks_like_email(head: bytes) -> bool:
    """Whether ``head`` (the first few KB of a file, e.g. 8 KiB) is the start of a raw RFC 5322 message.

    True when the file opens (after an optional mbox ``From `` line) with a header block — only
    ``Name: value`` lines and their folded continuations up to the first blank line — holding at
    least three distinct well-known fields written capitalised (``From:``, ``To:``, ``Subject:``,
    ``Date:``, ``MIME-Version:``, ``Content-Type:``, ``Received:``, ``Message-ID:`` …), one of them
    written only by mail software: ``From``, ``MIME-Version``, ``Received``, ``Return-Path`` or
    ``Delivered-To`` (a long trace of ``Received`` lines can fill the head before ``From``).  A
    plain-text memo opening with ``From:``, ``To:`` and ``Subject:`` lines counts as a message.
    Lower-case keys (YAML, config files), Markdown front matter, Pelican-style ``Title:``/``Date:``
    blocks, HTTP dumps and prose are not messages.  UTF-8 (with or without BOM), Latin-1 and
    UTF-16/32 heads are recognised.  Reads no more than it is given; never raises.
    """
    known = _known_fields(head)
    return known is not None and len(known) >= _MIN_KNOWN and bool(known & _MAIL_FIELDS)


def _is_mime_entity(head: bytes) -> bool:
    """Whether ``head`` opens with a header block declaring a MIME type (looser than
    :func:`looks_like_email`: a saved signed or encrypted entity may have no ``From``)."""
    known = _known_fields(head)
    return known is not None and "content-type" in known
