"""E-mail and RTF read as text (issue 15: both were indexed as raw MIME / control words)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from ragloom.errors import ReaderError
from ragloom.readers import SimpleDirectoryReader
from ragloom.readers.email_reader import REASON_ENCRYPTED, REASON_SMIME_SIGNATURE, EmailReader, looks_like_email

BASE64_LINE = re.compile(r"^[A-Za-z0-9+/=]{60,}$", re.M)
CONTROL_WORD = re.compile(r"\\[a-z]{2,}\d*")


def _read(path):
    r = SimpleDirectoryReader(input_files=[str(path)])
    return r.load_data(), r.report


def test_every_shared_email_reads_as_text_or_is_skipped_with_a_reason(shared_data):
    folder = Path(shared_data, "mixed_docs", "example-docs", "eml")
    r = SimpleDirectoryReader(folder, required_exts=[".eml"])
    docs = r.load_data()
    assert len(r.report.read) >= 25 and r.report.num_documents == len(docs)
    for d in docs:
        assert not BASE64_LINE.search(d.text), (d.id_, d.text[:300])  # no attachment as base64
        assert "Content-Type:" not in d.text and "MIME-Version" not in d.text, d.id_
    reasons = {Path(s.path).name: s.reason for s in r.report.skipped}
    assert reasons.get("fake-encrypted.eml", "").startswith("encrypted e-mail")
    assert all(reasons.values())


def test_email_headers_body_and_attachments(shared_data):
    eml = Path(shared_data, "mixed_docs", "example-docs", "eml")
    (msg,), _ = _read(eml / "email-with-image.eml")
    assert msg.text.startswith("email-with-image\n\nHi,") and "unstructured logo is attached" in msg.text
    assert msg.metadata["email_from"].startswith("Mallori Harrell") and msg.metadata["attachments"] == [
        "unstructured_logo.png"
    ]
    assert "email_from" in msg.excluded_embed_metadata_keys and "email_subject" not in msg.excluded_embed_metadata_keys
    body, attachment = _read(eml / "fake-email-attachment.eml")[0]
    assert "Here's the attachments!" in body.text
    assert attachment.text == "Hey this is a fake attachment!" and attachment.metadata["attachment_name"] == (
        "fake-attachment.txt"
    )
    assert body.id_.endswith("_part_0") and attachment.id_.endswith("_part_1")
    for name in ("fake-email-utf-16.eml", "fake-email-utf-16-be.eml", "fake-email-utf-16-le.eml", "fake-email-b64.eml"):
        (d,), _ = _read(eml / name)
        assert d.text.startswith("Test Email\n\nThis is a test email"), name


def test_rtf_reads_as_text(shared_data, tmp_path):
    (doc,), _ = _read(Path(shared_data, "mixed_docs", "example-docs", "fake-doc.rtf"))
    assert doc.text.startswith("My First Heading\nMy first paragraph.") and not CONTROL_WORD.search(doc.text)
    bad = tmp_path / "fake.rtf"
    bad.write_text("just text pretending")
    docs, report = _read(bad)
    assert docs == [] and report.skipped[0].reason.startswith("not an RTF file")
    accents = tmp_path / "accents.rtf"
    accents.write_bytes(b"{\\rtf1\\ansi\\ansicpg1252 Caf\\'e9 na\\u239?ve}")
    (doc,), _ = _read(accents)
    assert doc.text == "Café naïve"


@pytest.mark.parametrize("name", ["broken.eml"])
def test_a_broken_email_is_reported_not_raised(tmp_path, name):
    p = tmp_path / name
    p.write_bytes(b'Content-Type: multipart/mixed; boundary="x"\n\n--x\nContent-Type: text/plain\n\n')
    docs, report = _read(p)
    assert docs == [] and report.skipped and report.skipped[0].reason


EML = ("mixed_docs", "example-docs", "eml")


def test_digest_gives_one_document_per_enclosed_message(shared_data):
    docs = EmailReader().load_data(Path(shared_data, *EML, "mime-multipart-digest.eml"))
    assert [d.text for d in docs] == [
        f"{n} Message\n\nThis is the {n.lower()} message in the digest." for n in ("First", "Second", "Third")
    ]
    assert [d.metadata["email_from"] for d in docs] == ["eve@example.com", "frank@example.com", "grace@example.com"]
    assert docs[2].metadata["email_to"] == "carol@example.com" and "attachment_name" not in docs[0].metadata
    assert [d.id_[-7:] for d in docs] == ["_part_0", "_part_1", "_part_2"]


def test_subject_only_message_is_one_small_document(shared_data):
    (doc,), _ = _read(Path(shared_data, *EML, "mime-no-body.eml"))
    assert doc.text == "Image Only Email" and doc.metadata["attachments"] == ["image.jpg"]
    assert doc.metadata["email_date"] == "Tue, 01 Oct 2024 12:34:56 -0500"
    docs, report = _read(Path(shared_data, *EML, "empty.eml"))
    assert docs == [] and report.skipped[0].reason == "empty"


def test_attached_messages_are_read_and_newlines_normalised(tmp_path):
    p = tmp_path / "fwd.eml"
    p.write_bytes(
        b"From: a@example.com\r\nSubject: Fwd: plans\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n'
        b"--b\r\nContent-Type: text/plain\r\n\r\nSee below.\r\nThanks\r\n"
        b'--b\r\nContent-Type: message/rfc822\r\nContent-Disposition: attachment; filename="plans.eml"\r\n\r\n'
        b"From: b@example.com\r\nSubject: Plans\r\n\r\nWe launch in May.\r\n"
        b"--b\r\nContent-Type: message/rfc822\r\n\r\n"
        b'MIME-Version: 1.0\r\nContent-Type: multipart/encrypted; protocol="application/pgp-encrypted"; boundary=e\r\n'
        b"\r\n--e\r\nContent-Type: application/pgp-encrypted\r\n\r\nVersion: 1\r\n--e--\r\n"
        b"--b--\r\n"
    )
    outer, inner = EmailReader().load_data(p)
    assert outer.text == "Fwd: plans\n\nSee below.\nThanks" and outer.metadata["attachments"] == ["attachment-2.eml"]
    assert inner.text == "Plans\n\nWe launch in May." and inner.metadata["attachment_name"] == "plans.eml"
    assert inner.metadata["email_from"] == "b@example.com"


def test_p7s_signed_message_and_detached_signatures(shared_data, tmp_path):
    (doc,) = EmailReader().load_data(Path(shared_data, *EML, "signed-doc.p7s"))
    assert doc.text == "This is a test" and "attachments" not in doc.metadata  # the signature is not listed
    (via_dir,), _ = _read_with(Path(shared_data, *EML, "signed-doc.p7s"), {".p7s": EmailReader()})
    assert via_dir.text == "This is a test"
    der = tmp_path / "smime.p7s"
    der.write_bytes(b"\x30\x82\x06\x1f\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x07\x02\xa0" + bytes(200))
    pem = tmp_path / "sig.p7s"
    pem.write_text(
        "-----BEGIN PKCS7-----\nMIIGHwYJKoZIhvcNAQcCoIIGEDCCBgwCAQExDzANBglghkgBZQMEAgEFADAL\n-----END PKCS7-----\n"
    )
    for f in (der, pem):
        with pytest.raises(ReaderError) as err:
            EmailReader().load_data(f)
        assert err.value.reason == REASON_SMIME_SIGNATURE == "S/MIME signature (no text)"
    enveloped = tmp_path / "smime.p7m"
    enveloped.write_bytes(b"\x30\x80\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x07\x03" + bytes(100))
    with pytest.raises(ReaderError) as err:
        EmailReader().load_data(enveloped)
    assert err.value.reason == REASON_ENCRYPTED


def _read_with(path, extractor):
    r = SimpleDirectoryReader(input_files=[str(path)], file_extractor=extractor)
    return r.load_data(), r.report


NOT_EMAIL = [
    b"",
    b"Hello world.\nThis is a note.\n",
    b"---\ntitle: Post\ndate: 2024-01-01\nfrom: me\n---\n\n# Post\n",  # front matter
    b"from: a@b.c\nto: d@e.f\nsubject: lower-case keys\ndate: today\n\nbody\n",  # YAML / config keys
    b"Title: My post\nDate: 2010-12-03 10:20\nCategory: Python\nTags: a, b\nAuthors: Me\n\nContent\n",  # Pelican
    b"HTTP/1.1 200 OK\nContent-Type: text/html\nDate: Mon, 1 Jan 2024 00:00:00 GMT\n\n<html>",
    b"Content-Type: text/plain\nDate: Mon, 1 Jan 2024\nSubject: only three, none from mail software\n\nx\n",
    b"Note: From: here on\nTo: do list\n\n",  # one known field, then prose-like keys
    b"From: Alice\nTo: Bob\nThis line is prose, not a header\n\nbody\n",
    b"Name: value\n  continued\nOther: x\n\n",
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    b"# Heading\n\nFrom: the start, we said\nTo: everyone\nSubject: to change\n",
]


@pytest.mark.parametrize("head", NOT_EMAIL)
def test_looks_like_email_rejects_ordinary_text(head):
    assert not looks_like_email(head)


def test_looks_like_email_accepts_raw_messages(shared_data):
    base = Path(shared_data, "mixed_docs", "example-docs")
    for p in (
        base / "fake-email.txt",
        base / "eml" / "fake-email.txt",
        base / "eml" / "fake-email-utf-16-le.eml",
        base / "eml" / "email-replace-mime-encodings-error-2.eml",
    ):  # a head full of Received: lines
        assert looks_like_email(p.read_bytes()[:8192]), p.name
    assert looks_like_email(
        b"From alice@example.com Mon Jan  1 00:00:00 2024\nFrom: alice@example.com\n"
        b"To: bob@example.com\nSubject: mbox\n\nhi\n"
    )
    assert looks_like_email(b"\xef\xbb\xbfFrom: a@b.c\r\nTo: d@e.f\r\nSubject: memo\r\n\r\nbody")
    assert looks_like_email(b"Received: from x\n\tby y; Mon\nReturn-Path: <a@b>\nDelivered-To: c@d\nDKIM-Signatu")
    (doc,), _ = _read_with(base / "fake-email.txt", {".txt": EmailReader()})
    assert doc.text.startswith("Test Email\n\nThis is a test email") and "MIME-Version" not in doc.text


def test_no_shared_text_file_looks_like_email(shared_data):
    checked = 0
    for root, _dirs, files in os.walk(shared_data):
        for name in files:
            if not name.lower().endswith((".txt", ".md", ".rst", ".org", ".csv", ".json", ".py", ".html")):
                continue
            path = Path(root, name)
            with open(path, "rb") as f:
                head = f.read(8192)
            checked += 1
            assert looks_like_email(head) == (name == "fake-email.txt"), path
    assert checked > 300


def test_generic_attachment_with_text_extension_is_read_if_text(tmp_path):
    p = tmp_path / "generic.eml"
    p.write_bytes(
        b'From: a@example.com\nSubject: files\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="b"\n\n'
        b"--b\nContent-Type: text/plain\n\nTwo files.\n"
        b'--b\nContent-Type: application/octet-stream\nContent-Disposition: attachment; filename="a.txt"\n'
        b"Content-Transfer-Encoding: base64\n\nSGVsbG8gZnJvbSBhLnR4dA==\n"
        b'--b\nContent-Type: application/octet-stream\nContent-Disposition: attachment; filename="b.txt"\n'
        b"Content-Transfer-Encoding: base64\n\nAAECAwQFBgcICQAAAAAAAAAAAAAA\n--b--\n"
    )
    body, attachment = EmailReader().load_data(p)
    assert body.text == "files\n\nTwo files." and body.metadata["attachments"] == ["b.txt"]  # binary: listed
    assert attachment.text == "Hello from a.txt" and attachment.metadata["attachment_name"] == "a.txt"
