"""Outlook .msg through extract-msg (ragloom[office]): the same documents as the .eml reader."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from ragloom.errors import ReaderError
from ragloom.readers import SimpleDirectoryReader
from ragloom.readers.email_reader import REASON_ENCRYPTED, EmailReader, build_email_documents
from ragloom.readers.msg_reader import MsgReader, _message_parts

pytestmark = pytest.mark.requires_extra("outlook")


@pytest.fixture
def docs_dir(shared_data):
    return Path(shared_data, "mixed_docs", "example-docs")


def _open_fds_to(path: Path) -> list:
    fd_dir = Path("/proc/self/fd")
    if not fd_dir.is_dir():
        return []
    out = []
    for fd in os.listdir(fd_dir):
        try:
            if os.readlink(fd_dir / fd) == str(path.resolve()):
                out.append(fd)
        except OSError:
            pass
    return out


def test_msg_reads_like_the_same_eml(docs_dir):
    (msg,) = MsgReader().load_data(docs_dir / "fake-email.msg")
    (eml,) = EmailReader().load_data(docs_dir / "eml" / "fake-email.eml")
    assert (
        msg.text
        == eml.text
        == (
            "Test Email\n\nThis is a test email to use for unit tests.\n\nImportant points:\n\n"
            "   - Roses are red\n   - Violets are blue"
        )
    )
    assert msg.metadata["email_from"] == eml.metadata["email_from"] == "Matthew Robinson <mrobinson@unstructured.io>"
    assert msg.metadata["email_date"] == eml.metadata["email_date"] == "Fri, 16 Dec 2022 17:04:16 -0500"
    assert msg.metadata["email_subject"] == "Test Email"
    assert msg.excluded_embed_metadata_keys == eml.excluded_embed_metadata_keys
    assert "email_from" in msg.excluded_llm_metadata_keys and "email_subject" not in msg.excluded_llm_metadata_keys
    assert msg.id_ == str(Path(os.path.realpath(docs_dir / "fake-email.msg")).as_posix())


def test_msg_attachment_and_cc(docs_dir):
    body, attachment = MsgReader().load_data(docs_dir / "fake-email-attachment.msg")
    assert body.text.startswith("Fake email with attachment\n\nHello!") and "Here's the attachments!" in body.text
    assert "attachments" not in body.metadata  # the only attachment is text: read, not listed
    assert attachment.text == "Hey this is a fake attachment!"
    assert attachment.metadata == {
        "attachment_name": "fake-attachment.txt",
        "email_subject": "Fake email with attachment",
    }
    assert body.id_.endswith("_part_0") and attachment.id_.endswith("_part_1")
    (cc,) = MsgReader().load_data(docs_dir / "fake-email-with-cc-and-bcc.msg")
    assert (
        cc.text
        == "Fake email with cc and bcc recipients\n\nThis is a test email. Please ignore.\n\nAll the best,\nJohn"
    )
    assert cc.metadata["email_cc"] == "steve@unstructured.io"
    assert cc.metadata["email_to"] == "John Jennings <john-ctr@unstructured.io>"
    assert "email_cc" in cc.excluded_embed_metadata_keys


def test_encrypted_and_corrupt_msg(docs_dir, tmp_path, caplog):
    with pytest.raises(ReaderError) as err:
        MsgReader().load_data(docs_dir / "fake-encrypted.msg")
    assert err.value.reason == REASON_ENCRYPTED == "encrypted e-mail (S/MIME or OpenPGP): no readable text"
    garbage = tmp_path / "garbage.msg"
    garbage.write_bytes(bytes(range(256)) * 20)
    with caplog.at_level(logging.WARNING):
        with pytest.raises(ReaderError) as err:
            MsgReader().load_data(garbage)
    assert err.value.reason.startswith("corrupt Outlook message: ")
    assert not [r for r in caplog.records if r.name.startswith("extract_msg")]  # its log noise is silenced
    with pytest.raises(ReaderError) as err:  # an OLE2 file that is no Outlook item
        MsgReader().load_data(docs_dir / "fake.doc")
    assert err.value.reason.startswith("corrupt Outlook message: ")


def test_msg_files_are_closed(docs_dir, tmp_path):
    for name in ("fake-email-attachment.msg", "fake-encrypted.msg"):
        copy = tmp_path / name
        copy.write_bytes((docs_dir / name).read_bytes())
        try:
            MsgReader().load_data(copy)
        except ReaderError:
            pass
        assert _open_fds_to(copy) == [], name


def test_msg_through_the_directory_reader(docs_dir, tmp_path):
    bad = tmp_path / "bad.msg"
    bad.write_bytes(b"not an outlook file at all" * 10)
    files = [str(docs_dir / n) for n in ("fake-email.msg", "fake-email-attachment.msg", "fake-encrypted.msg")]
    r = SimpleDirectoryReader(input_files=files + [str(bad)], file_extractor={".msg": MsgReader()})
    docs = r.load_data()
    by_id = {d.id_.rsplit("/", 1)[-1]: d for d in docs}
    assert sorted(by_id) == ["fake-email-attachment.msg_part_0", "fake-email-attachment.msg_part_1", "fake-email.msg"]
    assert by_id["fake-email.msg"].text.startswith("Test Email\n\nThis is a test email")
    assert by_id["fake-email.msg"].metadata["file_name"] == "fake-email.msg"
    assert "email_from" in by_id["fake-email.msg"].excluded_embed_metadata_keys
    assert by_id["fake-email-attachment.msg_part_1"].text == "Hey this is a fake attachment!"
    reasons = {Path(s.path).name: s.reason for s in r.report.skipped}
    assert reasons["fake-encrypted.msg"] == REASON_ENCRYPTED
    assert reasons["bad.msg"].startswith("corrupt Outlook message")


def _att(kind, name, data, mimetype=None):
    return SimpleNamespace(type=kind, name=name, data=data, mimetype=mimetype)


def test_attached_messages_rtf_body_and_attachment_types(tmp_path):
    """Attached Outlook items and .eml files become their own documents (stand-in objects: the shared
    fixtures have none)."""
    from extract_msg.enums import AttachmentType

    inner = SimpleNamespace(
        subject="Quarterly numbers",
        sender='"Ann" <ann@example.com>',
        to="bob@example.com",
        cc=None,
        date=None,
        header=None,
        classType="IPM.Note",
        body="Revenue grew 12%.\r\n",
        htmlBody=None,
        rtfBody=None,
        attachments=[],
    )
    eml = b"From: carl@example.com\nSubject: Forwarded note\nMIME-Version: 1.0\n\nThe forwarded text.\n"
    outer = SimpleNamespace(
        subject="Fwd: reports",
        sender="dora@example.com",
        to="eve@example.com",
        cc=None,
        date=None,
        header=None,
        classType="IPM.Note",
        body="",
        htmlBody=None,
        rtfBody=b"{\\rtf1\\ansi {\\b See} the attached reports.\\par}",
        attachments=[
            _att(AttachmentType.MSG, "Quarterly numbers.msg", inner),
            _att(AttachmentType.DATA, "note.eml", eml, "message/rfc822"),
            _att(AttachmentType.DATA, "notes.txt", "Plain notes ünïcode".encode("utf-8"), "application/octet-stream"),
            _att(AttachmentType.DATA, "chart.png", b"\x89PNG\r\n\x1a\n\x00\x00", None),
            _att(AttachmentType.DATA, "smime.p7s", b"\x30\x82", "application/pkcs7-signature"),
            _att(AttachmentType.WEB, "link", None),
        ],
    )
    docs = build_email_documents(_message_parts(outer), tmp_path / "x.msg")
    assert [d.text for d in docs] == [
        "Fwd: reports\n\nSee the attached reports.",
        "Quarterly numbers\n\nRevenue grew 12%.",
        "Forwarded note\n\nThe forwarded text.",
        "Plain notes ünïcode",
    ]
    assert docs[0].metadata["attachments"] == ["chart.png", "link"]
    assert docs[1].metadata["attachment_name"] == "Quarterly numbers.msg"
    assert docs[1].metadata["email_from"] == "Ann <ann@example.com>"
    assert docs[2].metadata["email_from"] == "carl@example.com" and docs[2].metadata["attachment_name"] == "note.eml"
    assert docs[3].metadata == {"attachment_name": "notes.txt", "email_subject": "Fwd: reports"}
    assert [d.id_.rsplit("_", 1)[-1] for d in docs] == ["0", "1", "2", "3"]
