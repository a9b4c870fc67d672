"""ZIP archives read member by member (ragloom.readers.archive), per-file read time limits, and
files that change while they are read."""

from __future__ import annotations

import os
import time
import zipfile
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from ragloom.readers import SimpleDirectoryReader
from ragloom.readers.archive import ZIP_MAX_RATIO, zip_members
from ragloom.readers.base import BaseReader, make_document
from ragloom.readers.directory import REASON_CHANGED
from ragloom.schema import Document


def _zip(path: Path, members: Dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _read(*files: Path, **kw: Any):
    r = SimpleDirectoryReader(input_files=[str(f) for f in files], **kw)
    docs = r.load_data()
    return docs, r.report


def test_members_read_by_their_own_readers_with_member_ids(tmp_path: Path, shared_data: str) -> None:
    html = Path(shared_data, "mixed_docs", "example-docs", "fake-html.html").read_bytes()
    z = _zip(tmp_path / "bundle.zip", {
        "notes/tides.md": b"# Tides\n\nThe harbour floods at the spring tide.\n",
        "page.html": html,
        "rows.csv": b"port,tonnes\nRotterdam,440\n",
        "notes/empty.txt": b"   \n",
        "photo.jpg": b"\xff\xd8\xff\xe0" + bytes(range(256)) * 8,
        "inner.zip": b"PK\x05\x06" + b"\x00" * 18,
        "__MACOSX/._page.html": b"\x00\x05\x16\x07",
        "dir/": b"",
    })
    docs, report = _read(z)
    zid = z.as_posix()
    by_member = {d.metadata["archive_member"]: d for d in docs}
    assert set(by_member) == {"notes/tides.md", "page.html", "rows.csv"}
    assert by_member["notes/tides.md"].id_ == f"{zid}!/notes/tides.md"
    assert "spring tide" in by_member["notes/tides.md"].text
    assert "<" not in by_member["page.html"].text and by_member["page.html"].text.strip()  # HTML reader, not raw
    assert all(d.metadata["file_path"] == zid for d in docs)
    # the member name, like the path, is shown to the LLM and not embedded
    assert "tides.md" in by_member["notes/tides.md"].get_content("llm")
    assert "tides.md" not in by_member["notes/tides.md"].get_content("embed")
    assert [r.path for r in report.read] == [zid] and report.skipped == []
    skipped = {s.path: s.reason for s in report.members_skipped}
    assert skipped[f"{zid}!/notes/empty.txt"] == "empty"
    assert skipped[f"{zid}!/photo.jpg"].startswith("image: no text to read")
    assert skipped[f"{zid}!/inner.zip"].startswith("nested archive")
    assert len(skipped) == 3
    # the same archive read again gives the same ids and text
    again, _ = _read(z)
    assert [(d.id_, d.text) for d in again] == [(d.id_, d.text) for d in docs]


def test_shared_fixture_zip(shared_data: str) -> None:
    docs, report = _read(Path(shared_data, "mixed_docs", "example-docs", "simple.zip"))
    assert sorted(d.metadata["archive_member"] for d in docs) == ["ideas-page.html", "stanley-cups.csv"]
    assert any("Stanley" in d.text for d in docs) and report.members_skipped == []


def test_zip_bomb_member_refused_before_decompressing(tmp_path: Path) -> None:
    big = 64 * 2**20  # 64 MiB of zeros deflate to about 64 KB: ratio about 1000:1
    z = tmp_path / "bomb.zip"
    with zipfile.ZipFile(z, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open("zeros.txt", "w") as out:
            block = b"\0" * 2**20
            for _ in range(big // len(block)):
                out.write(block)
        zf.writestr("readme.txt", "A small honest member.")
    assert z.stat().st_size < 2**20
    docs, report = _read(z)
    assert [d.metadata["archive_member"] for d in docs] == ["readme.txt"]
    [why] = report.members_skipped
    assert why.path.endswith("!/zeros.txt") and f"over {ZIP_MAX_RATIO}:1 (zip bomb?)" in why.reason


def test_member_that_lies_about_its_size_is_cut_off(tmp_path: Path) -> None:
    z = _zip(tmp_path / "liar.zip", {"a.txt": b"word " * 4000}, compression=zipfile.ZIP_STORED)
    raw = bytearray(z.read_bytes())
    # declare 10 bytes in both the local header (offset 22) and the central directory (offset 24)
    for sig, off in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = raw.index(sig) + off
        raw[at:at + 4] = (10).to_bytes(4, "little")
    z.write_bytes(bytes(raw))
    members = list(zip_members(z))
    assert [(m.name, m.file) for m in members] == [("a.txt", None)]
    assert "zip bomb?" in (members[0].skipped or "") or "corrupt" in (members[0].skipped or "")


def test_too_many_members_and_oversized_and_encrypted_members(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ragloom.readers.archive as archive

    monkeypatch.setattr(archive, "ZIP_MAX_MEMBERS", 5)
    many = _zip(tmp_path / "many.zip", {f"f{i}.txt": b"text" for i in range(6)})
    docs, report = _read(many)
    assert docs == [] and report.skipped[0].reason.startswith("zip bomb? 6 files, over the 5 limit")

    z = _zip(tmp_path / "mixed.zip", {"big.txt": b"x " * 3000, "secret.txt": b"hidden", "ok.txt": b"fine text"})
    raw = bytearray(z.read_bytes())
    name = b"secret.txt"
    for sig, flag_off, name_off in ((b"PK\x03\x04", 6, 30), (b"PK\x01\x02", 8, 46)):
        at = 0
        while True:
            at = raw.index(sig, at)
            if raw[at + name_off:at + name_off + len(name)] == name:
                raw[at + flag_off] |= 0x1  # the "encrypted" flag bit
                break
            at += 4
    z.write_bytes(bytes(raw))
    docs, report = _read(z, max_file_size=4096)
    assert [d.metadata["archive_member"] for d in docs] == ["ok.txt"]
    reasons = {s.path.rsplit("!/", 1)[1]: s.reason for s in report.members_skipped}
    assert reasons["secret.txt"] == "encrypted archive member"
    assert reasons["big.txt"].startswith("too large")


def test_corrupt_and_empty_archives_are_skipped_with_reasons(tmp_path: Path) -> None:
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK\x03\x04 this is not an archive")
    only_images = _zip(tmp_path / "pics.zip", {"a.png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4})
    docs, report = _read(bad, only_images)
    reasons = {Path(s.path).name: s.reason for s in report.skipped}
    assert docs == [] and reasons["bad.zip"].startswith("corrupt ZIP")
    assert reasons["pics.zip"].startswith("no readable file in the archive (a.png: image")


class _SlowReader(BaseReader):
    """Sleeps ``seconds`` before reading (a stand-in for a parser stuck on a hostile file)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        time.sleep(self.seconds)
        return [make_document(Path(file).read_text(), file, extra_info)]


def test_read_timeout_skips_a_slow_file_and_goes_on(tmp_path: Path) -> None:
    (tmp_path / "slow.slow").write_text("never read")
    (tmp_path / "fast.txt").write_text("read at once")
    t0 = time.monotonic()
    docs, report = _read(tmp_path / "slow.slow", tmp_path / "fast.txt", read_timeout=0.5,
                         file_extractor={".slow": _SlowReader(30)})
    assert time.monotonic() - t0 < 10
    assert [d.text for d in docs] == ["read at once"]
    [skip] = report.skipped
    assert skip.reason.startswith("read took over the 0.5 s limit (raise it with ragloom index --read-timeout")
    assert skip.transient  # an index keeps what it had for the file
    # no timer left behind: a later slow call in this thread is not interrupted
    docs, _ = _read(tmp_path / "slow.slow", read_timeout=None, file_extractor={".slow": _SlowReader(0.7)})
    assert [d.text for d in docs] == ["never read"]
    with pytest.raises(ValueError, match="read_timeout"):
        SimpleDirectoryReader(input_files=[str(tmp_path / "fast.txt")], read_timeout=0)


class _GrowingReader(BaseReader):
    """Appends to the file while reading it (a log being written, a download in progress)."""

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        text = Path(file).read_text()
        with open(file, "a") as f:
            f.write("more lines arrive\n")
        return [make_document(text, file, extra_info)]


def test_file_changing_while_read_is_skipped_for_the_next_run(tmp_path: Path) -> None:
    f = tmp_path / "log.grow"
    f.write_text("first line\n")
    docs, report = _read(f, file_extractor={".grow": _GrowingReader()})
    assert docs == [] and report.skipped[0].reason == REASON_CHANGED and report.skipped[0].transient
    os.utime(f)
    docs, report = _read(f)  # settled: read normally
    assert docs[0].text == "first line\nmore lines arrive\n" and report.skipped == []


def test_a_member_with_a_damaged_deflate_stream_is_skipped_alone(tmp_path: Path) -> None:
    z = _zip(tmp_path / "damaged.zip", {"bad.txt": b"harbour " * 5000, "good.txt": b"The tide is high."})
    raw = bytearray(z.read_bytes())
    at = raw.index(b"PK\x03\x04") + 30 + len("bad.txt")  # the first member's compressed data
    raw[at:at + 40] = b"\xff" * 40
    z.write_bytes(bytes(raw))
    docs, report = _read(z)
    assert [d.metadata["archive_member"] for d in docs] == ["good.txt"]
    [bad] = report.members_skipped
    assert bad.path.endswith("!/bad.txt") and bad.reason.startswith("corrupt archive member")
    assert "archive_skipped" not in docs[0].metadata  # the report holds it, not every chunk
    assert docs[0].metadata["extension"] == ".txt" and "extension" in docs[0].excluded_embed_metadata_keys


def test_zip_based_documents_are_held_to_the_archive_limits(tmp_path: Path) -> None:
    """A DOCX (or ODT, EPUB …) is a zip its reader inflates whole: a 1000:1 part is refused first."""
    bomb = tmp_path / "report.docx"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        with zf.open("word/document.xml", "w") as out:
            for _ in range(32):
                out.write(b" " * 2**20)
    docs, report = _read(bomb)
    assert docs == [] and report.skipped[0].reason.startswith("zip bomb? part word/document.xml expands")


def test_read_timeout_range_and_an_enclosing_timer_keeps_its_deadline(tmp_path: Path) -> None:
    import signal

    f = tmp_path / "a.txt"
    f.write_text("text")
    for bad in (float("inf"), 1e20, -1, True):
        with pytest.raises(ValueError, match=r"read_timeout must be a number of seconds in \(0, 1e\+06\]"):
            SimpleDirectoryReader(input_files=[str(f)], read_timeout=bad)
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(True))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30)
        docs, _ = _read(f, read_timeout=5)
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert docs and 25 < left <= 30  # the caller's timer runs on, not cancelled or reset
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert not fired
