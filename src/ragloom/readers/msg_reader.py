"""Outlook messages (``.msg``, an OLE2 compound file) through ``extract-msg``, extra ``ragloom[outlook]`` (GPL-3.0).

The documents have the shape and metadata of an ``.eml`` read by
:class:`~ragloom.readers.email_reader.EmailReader` (both are built by
:func:`~ragloom.readers.email_reader.build_email_documents`): the subject line, a blank line, then
the body — the plain-text body, else the HTML body as readable text
(:func:`~ragloom.readers.html_reader.html_to_text`), else the RTF body through ``striprtf`` (as the
``.rtf`` reader does; RTF that merely wraps HTML or plain text is unwrapped by extract-msg first).
Metadata ``email_subject`` (shown), ``email_from``, ``email_to``, ``email_cc``, ``email_date`` (the
``Date`` of the message's internet headers when it has them, else the submit time in RFC 5322
form) and ``attachments`` (hidden from the embedded and LLM views).

Attachments: a text attachment becomes its own document (``attachment_name``); an attached Outlook
item (``.msg``) or ``.eml`` message is read like the message itself and gives its own documents
(subject and body, its own ``email_*`` metadata, ``attachment_name``), up to
:data:`~ragloom.readers.email_reader.MAX_NESTING` levels deep; every other attachment — images,
PDFs, Office files, links — is listed by name in ``attachments`` and not read.

Outlook items that are not e-mail (appointments, tasks, contacts …) are read the same way when
extract-msg knows them: their subject and body.  extract-msg's own log messages (warnings about
odd but readable files) are silenced unless the application configured the ``extract_msg`` logger.
"""

from __future__ import annotations

import email.policy
import email.utils
import logging
from pathlib import Path
from typing import Any, Dict, List, Optional

from ragloom.errors import ReaderError
from ragloom.readers.base import BaseReader, file_path_str
from ragloom.readers.email_reader import (
    ENCRYPTED_TYPES,
    MAX_NESTING,
    REASON_ENCRYPTED,
    SIGNATURE_TYPES,
    EmailParts,
    build_email_documents,
    decode_attachment,
    email_parts_from_bytes,
    guess_type,
    is_text_attachment,
)
from ragloom.readers.text import REASON_EMPTY
from ragloom.schema import Document

__all__ = ["MsgReader"]

_QUIET_LOGGERS = ("extract_msg", "RTFDE")
_ENCRYPTED_TYPES = ENCRYPTED_TYPES
_SIGNATURE_TYPES = SIGNATURE_TYPES


def _quiet_logs() -> None:
    """Raise extract-msg's loggers to CRITICAL, unless the application set a level on them."""
    for name in _QUIET_LOGGERS:
        lg = logging.getLogger(name)
        if lg.level == logging.NOTSET:
            lg.setLevel(logging.CRITICAL)


def _open_options() -> Dict[str, Any]:
    from extract_msg.enums import ErrorBehavior

    # Broken or unsupported attachments, malformed RTF and small standard violations are tolerated
    # (the body is still read); attachments load when asked for, after the encryption check.
    tolerate = ErrorBehavior.ATTACH_SUPPRESS_ALL | ErrorBehavior.RTFDE | ErrorBehavior.STANDARDS_VIOLATION
    return {"delayAttachments": True, "errorBehavior": tolerate, "recipientSeparator": ","}


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return str(value).replace("\x00", "").strip()


def _addresses(value: Any) -> str:
    """An address list as :mod:`email`'s ``policy.default`` writes it (``Name <addr>, …``, as in the
    ``.eml`` metadata); the raw text when parsing would lose an address."""
    raw = " ".join(_text(value).split())
    if not raw:
        return ""
    try:
        parsed = str(email.policy.default.header_factory("to", raw))
    except Exception:
        return raw
    return parsed if parsed.count("@") == raw.count("@") else raw


def _date(msg: Any) -> str:
    header = getattr(msg, "header", None)
    value = header.get("date") if header is not None else None
    if value:
        return " ".join(str(value).split())
    when = getattr(msg, "date", None)
    try:
        return email.utils.format_datetime(when) if when is not None else ""
    except (TypeError, ValueError):
        return str(when)


def _rtf_text(rtf: Optional[bytes]) -> str:
    if not rtf:
        return ""
    from striprtf.striprtf import rtf_to_text  # type: ignore[import-untyped]

    # RTF is 7-bit: other characters are escaped; latin-1 maps every byte for the stray ones
    text = rtf_to_text(rtf.decode("latin-1"), errors="replace")
    return "\n".join(line.strip() for line in text.splitlines() if line.strip())


def _body(msg: Any) -> str:
    body = _text(getattr(msg, "body", None))
    if body:
        return body
    html = getattr(msg, "htmlBody", None)
    if html:
        text = decode_attachment(html, "text/html") if isinstance(html, bytes) else None
        if text and text.strip():
            return text
    return _rtf_text(getattr(msg, "rtfBody", None))


def _is_encrypted(msg: Any) -> bool:
    """An S/MIME (``IPM.Note.SMIME``: enveloped or opaque-signed) or PGP/MIME encrypted message."""
    class_type = _text(getattr(msg, "classType", None)).lower()
    if class_type.endswith(".smime"):
        return True
    header = getattr(msg, "header", None)
    if header is not None and header.get_content_type() in _ENCRYPTED_TYPES:
        return True
    return False


def _attachment_type(att: Any, name: str) -> str:
    ctype = _text(getattr(att, "mimetype", None)).lower().split(";")[0].strip()
    return ctype or guess_type(name)


def _attachment(att: Any, index: int, depth: int) -> Any:
    """``(name, content)`` of one attachment, as :class:`EmailParts` lists them; ``None`` to leave it out."""
    from extract_msg.enums import AttachmentType

    name = _text(getattr(att, "name", None)) or f"attachment-{index}"
    kind = getattr(att, "type", None)
    if kind in (AttachmentType.MSG, AttachmentType.SIGNED_EMBEDDED):
        inner = att.data
        if depth >= MAX_NESTING or _is_encrypted(inner):
            return name, None
        return name, _message_parts(inner, depth + 1)
    ctype = _attachment_type(att, name)
    if ctype in _SIGNATURE_TYPES:
        return None
    is_message = ctype in ("message/rfc822", "message/global") or name.lower().endswith(".eml")
    if kind not in (AttachmentType.DATA, AttachmentType.SIGNED) or not (is_message or is_text_attachment(ctype, name)):
        return name, None  # binary, a link, a broken or unsupported attachment: listed by name
    data = att.data
    if not isinstance(data, bytes):
        return name, None
    if is_message:
        if depth >= MAX_NESTING:
            return name, None
        try:
            return name, email_parts_from_bytes(data, depth + 1)
        except Exception:  # encrypted or unparsable: listed
            return name, None
    return name, decode_attachment(data, ctype, name)


def _message_parts(msg: Any, depth: int = 0) -> EmailParts:
    parts = EmailParts(
        subject=_text(getattr(msg, "subject", None)),
        sender=_addresses(getattr(msg, "sender", None)),
        to=_addresses(getattr(msg, "to", None)),
        cc=_addresses(getattr(msg, "cc", None)),
        date=_date(msg),
        body=_body(msg),
    )
    for i, att in enumerate(getattr(msg, "attachments", None) or [], 1):
        try:
            entry = _attachment(att, i, depth)
        except Exception:  # a damaged attachment: listed, the message is still read
            entry = (f"attachment-{i}", None)
        if entry is not None:
            parts.attachments.append(entry)
    return parts


def _has_encrypted_payload(msg: Any, parts: EmailParts) -> bool:
    """No text, and an attachment that is an encrypted payload (``smime.p7m``, PGP/MIME's parts)."""
    if parts.body:
        return False
    for att in getattr(msg, "attachments", None) or []:
        name = _text(getattr(att, "name", None))
        if _attachment_type(att, name) in _ENCRYPTED_TYPES or name.lower().endswith(".p7m"):
            return True
        data = getattr(att, "data", None)
        if isinstance(data, bytes) and b"-----BEGIN PGP MESSAGE-----" in data[:4096]:
            return True
    return False


class MsgReader(BaseReader):
    """Reads an Outlook ``.msg`` file: the message as one document, text attachments and attached
    messages as more (see the module docstring).

    Raises:
        MissingDependencyError: ``ragloom[outlook]`` (extract-msg) is not installed.
        ReaderError: ``"empty"``, ``"encrypted e-mail (S/MIME or OpenPGP): no readable text"`` or
            ``"corrupt Outlook message: ..."`` (not an OLE2 file, not an Outlook item, damaged).
    """

    assigns_ids = True

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        from ragloom._optional import require

        extract_msg = require("extract_msg", "outlook", "reading Outlook .msg files")
        _quiet_logs()
        file = Path(file)
        path = file_path_str(file)
        msg = None
        try:
            msg = extract_msg.openMsg(str(file), **_open_options())
            if _is_encrypted(msg):
                raise ReaderError(path, REASON_ENCRYPTED)
            parts = _message_parts(msg)
            if _has_encrypted_payload(msg, parts):
                raise ReaderError(path, REASON_ENCRYPTED)
        except ReaderError:
            raise
        except Exception as exc:  # InvalidFileFormatError, olefile errors, unsupported item types …
            raise ReaderError(path, f"corrupt Outlook message: {type(exc).__name__}: {exc}", exc) from exc
        finally:
            if msg is not None:
                _close(msg)
        docs = build_email_documents(parts, file, extra_info)
        if not docs:
            raise ReaderError(path, REASON_EMPTY)
        return docs


def _close(msg: Any) -> None:
    """Close ``msg`` and the Outlook items attached to it (extract-msg's own ``close`` skips those)."""
    try:
        from extract_msg.enums import AttachmentType

        if getattr(msg, "attachmentsReady", False):
            for att in msg.attachments:
                if getattr(att, "type", None) in (AttachmentType.MSG, AttachmentType.SIGNED_EMBEDDED):
                    _close(att.data)
    except Exception:  # closing must not hide the result or the original error
        pass
    try:
        msg.close()
    except Exception:
        pass
