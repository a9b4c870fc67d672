"""E-mail (``.eml``, RFC 5322 / MIME) through the standard library's :mod:`email` package.

One document per message: the subject line, then the body — the ``text/plain`` part, else the
``text/html`` part as readable text (:func:`~ragloom.readers.html_reader.html_to_text`).  MIME
encodings (base64, quoted-printable, RFC 2047 headers, declared charsets) are decoded by
:mod:`email` with ``policy.default``; a part whose charset is wrong or unknown is decoded with
replacement characters rather than dropped.

Attachments are never indexed as raw MIME (base64 text was 19% of the chunks of a real mixed
folder).  A text attachment (``text/plain``, ``text/markdown``, ``text/csv``, ``text/html``) becomes
its own document (``f"{path}_part_{i}"``, metadata ``attachment_name``); every other attachment is
listed by name in the message's ``attachments`` metadata and not read.

Metadata (hidden from the embedded and LLM views unless noted): ``email_subject`` (shown),
``email_from``, ``email_to``, ``email_cc``, ``email_date``, ``attachments``.
"""

from __future__ import annotations

import email
import email.policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ragloom.errors import ReaderError
from ragloom.readers.base import BaseReader, file_path_str, make_document
from ragloom.readers.text import REASON_EMPTY
from ragloom.schema import Document

__all__ = ["EmailReader"]

_TEXT_ATTACHMENTS = {"text/plain", "text/markdown", "text/csv", "text/html", "text/x-markdown"}
_HIDDEN = ["email_from", "email_to", "email_cc", "email_date", "attachments"]


_ENCRYPTED = {"application/pkcs7-mime", "application/x-pkcs7-mime", "multipart/encrypted"}


def _parse(data: bytes) -> EmailMessage:
    """The message of ``data``; a file saved as UTF-16 or UTF-32 (BOM, or NUL bytes in every other
    position) is decoded first, since MIME itself is 7- or 8-bit."""
    import codecs

    text: Optional[str] = None
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        text = data.decode("utf-32")
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        text = data.decode("utf-16")
    elif len(data) > 64 and data[1:64:2].count(0) > 24:
        text = data.decode("utf-16-le", "replace")
    elif len(data) > 64 and data[0:64:2].count(0) > 24:
        text = data.decode("utf-16-be", "replace")
    if text is not None:
        return email.message_from_string(text, policy=email.policy.default)  # type: ignore[return-value]
    return email.message_from_bytes(data, policy=email.policy.default)  # type: ignore[return-value]


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


def _body_and_attachments(msg: EmailMessage) -> Tuple[str, List[Tuple[str, Any]]]:
    body_part = msg.get_body(preferencelist=("plain", "html"))
    body = _content(body_part) if body_part is not None else ""
    attachments: List[Tuple[str, Any]] = []
    for part in msg.walk():
        if part is body_part or part.is_multipart():
            continue
        name = part.get_filename()
        disposition = part.get_content_disposition()
        if name is None and disposition != "attachment":
            continue  # an alternative view of the body, or an inline part without a name
        attachments.append((name or f"attachment-{len(attachments) + 1}", part))
    return body, attachments


class EmailReader(BaseReader):
    """Reads an ``.eml`` file: the message body as one document, text attachments as more.

    Raises:
        ReaderError: ``"empty"`` (no body text and no readable attachment) or ``"corrupt e-mail: ..."``.
    """

    assigns_ids = False

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        file = Path(file)
        path = file_path_str(file)
        try:
            msg = _parse(file.read_bytes())
            if msg.get_content_type() in _ENCRYPTED:
                raise ReaderError(path, "encrypted e-mail (S/MIME or OpenPGP): no readable text")
            body, attachments = _body_and_attachments(msg)  # type: ignore[arg-type]
            headers = {
                "email_subject": str(msg.get("subject", "") or "").strip(),
                "email_from": str(msg.get("from", "") or ""),
                "email_to": str(msg.get("to", "") or ""),
                "email_cc": str(msg.get("cc", "") or ""),
                "email_date": str(msg.get("date", "") or ""),
            }
        except ReaderError:
            raise
        except Exception as exc:  # malformed headers, broken MIME trees
            raise ReaderError(path, f"corrupt e-mail: {type(exc).__name__}: {exc}", exc) from exc
        meta: Dict[str, Any] = {k: v for k, v in headers.items() if v}
        skipped = [name for name, part in attachments if part.get_content_type() not in _TEXT_ATTACHMENTS]
        if skipped:
            meta["attachments"] = skipped
        docs: List[Document] = []
        subject = headers["email_subject"]
        text = f"{subject}\n\n{body}" if subject and body else (body or subject)
        if body:
            docs.append(make_document(text, file, extra_info, metadata=meta, hidden_keys=_HIDDEN))
        for name, part in attachments:
            if part.get_content_type() not in _TEXT_ATTACHMENTS:
                continue
            content = _content(part)
            if content:
                docs.append(make_document(content, file, extra_info, metadata={"attachment_name": name,
                                                                                **({"email_subject": subject}
                                                                                   if subject else {})}))
        if not docs:
            raise ReaderError(path, REASON_EMPTY)
        return docs
