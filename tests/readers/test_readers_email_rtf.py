"""E-mail and RTF read as text (issue 15: both were indexed as raw MIME / control words)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ragloom.readers import SimpleDirectoryReader

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
        "unstructured_logo.png"]
    assert "email_from" in msg.excluded_embed_metadata_keys and "email_subject" not in msg.excluded_embed_metadata_keys
    body, attachment = _read(eml / "fake-email-attachment.eml")[0]
    assert "Here's the attachments!" in body.text
    assert attachment.text == "Hey this is a fake attachment!" and attachment.metadata["attachment_name"] == (
        "fake-attachment.txt")
    assert body.id_.endswith("_part_0") and attachment.id_.endswith("_part_1")
    for name in ("fake-email-utf-16.eml", "fake-email-utf-16-be.eml", "fake-email-utf-16-le.eml",
                 "fake-email-b64.eml"):
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
    p.write_bytes(b"Content-Type: multipart/mixed; boundary=\"x\"\n\n--x\nContent-Type: text/plain\n\n")
    docs, report = _read(p)
    assert docs == [] and report.skipped and report.skipped[0].reason
