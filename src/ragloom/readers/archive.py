"""ZIP archives, member by member, through the standard library's :mod:`zipfile`, with limits
against zip bombs.

:func:`zip_members` checks an archive's central directory against the limits below before any
member is decompressed, then extracts one member at a time into a temporary folder (each read
bounded by the size the member declares), so a caller can hand the file to the reader of its
extension and delete it afterwards.  Nested archives are listed, not opened.

Limits (all checked before decompressing, then enforced while decompressing):

- :data:`ZIP_MAX_MEMBERS` (10,000) files in an archive: more and the whole archive is skipped;
- ``max_member_size`` bytes (the directory reader passes its ``max_file_size``) per member;
- :data:`ZIP_MAX_RATIO` (100:1) expansion for a member over 1 MiB: DEFLATE tops out near 1032:1
  on pathological input, real documents compress 2-20:1, and the classic bombs use 1000:1 and more;
- :data:`ZIP_MAX_TOTAL` (1 GiB) of decompressed bytes per archive: the remaining members are skipped;
- a member that decompresses to more bytes than its header declares is cut off and skipped.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterator, Optional, Union

from ragloom.errors import ReaderError
from ragloom.readers.base import file_path_str

__all__ = ["ZIP_MAX_MEMBERS", "ZIP_MAX_RATIO", "ZIP_MAX_TOTAL", "ZipMember", "check_zip_package", "declared_entries",
           "member_id", "zip_members"]

#: Most files (directories not counted) an archive may hold.
ZIP_MAX_MEMBERS = 10_000
#: Highest decompressed/compressed size ratio accepted for a member over 1 MiB.
ZIP_MAX_RATIO = 100
#: Most decompressed bytes read from one archive: 1 GiB.
ZIP_MAX_TOTAL = 2**30

_RATIO_FLOOR = 2**20
_ARCHIVE_EXTS = (".zip", ".jar", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".rar")
_CHUNK = 2**16


@dataclass(frozen=True)
class ZipMember:
    """One member of an archive: ``name`` (its path inside the archive, POSIX) and either
    ``file`` (an extracted copy, deleted once the iteration moves on) or ``skipped`` (why not)."""

    name: str
    file: Optional[Path] = None
    skipped: Optional[str] = None


def _mb(size: int) -> str:
    return f"{size / 2**20:.1f} MB"


def _precheck(info: zipfile.ZipInfo, max_member_size: Optional[int]) -> Optional[str]:
    """Why ``info`` is not extracted, judged from its header alone, or ``None``."""
    if info.flag_bits & 0x1:
        return "encrypted archive member"
    if info.filename.lower().endswith(_ARCHIVE_EXTS):
        return "nested archive (not opened: extract it to index its files)"
    if max_member_size is not None and info.file_size > max_member_size:
        return (f"too large: {_mb(info.file_size)} is over the {_mb(max_member_size)} limit "
                "(raise it with ragloom index --max-file-size MB, or max_file_size= in Python)")
    if info.file_size > _RATIO_FLOOR and info.file_size > ZIP_MAX_RATIO * max(info.compress_size, 1):
        ratio = info.file_size // max(info.compress_size, 1)
        return f"compression ratio {ratio}:1 is over {ZIP_MAX_RATIO}:1 (zip bomb?)"
    return None


def _extract(zf: zipfile.ZipFile, info: zipfile.ZipInfo, dest: Path) -> Union[int, str]:
    """Copy ``info`` to ``dest``; the number of bytes written, or why it was cut off."""
    written = 0
    with zf.open(info) as src, open(dest, "wb") as out:
        while True:
            block = src.read(_CHUNK)
            if not block:
                return written
            written += len(block)
            if written > info.file_size:
                return "decompresses to more than its header declares (zip bomb?)"
            out.write(block)


def _suffix(name: str) -> str:
    """The member's extension (lower case, at most 16 characters of ``[A-Za-z0-9.]``), for
    choosing its reader; never part of a path outside the temporary folder."""
    suffixes = "".join(PurePosixPath(name).suffixes[-2:])
    return suffixes if len(suffixes) <= 16 and suffixes.replace(".", "").isalnum() else ""


def declared_entries(file: "os.PathLike[str] | str") -> Optional[int]:
    """The number of entries a ZIP file's end-of-central-directory record declares (ZIP64 too),
    read from its last 64 KiB without parsing the directory; ``None`` when there is no such record."""
    try:
        with open(file, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - (2**16 + 22)))
            tail = f.read()
            at = tail.rfind(b"PK\x05\x06")
            if at < 0 or at + 22 > len(tail):
                return None
            count = int.from_bytes(tail[at + 10 : at + 12], "little")
            if count != 0xFFFF or at < 20 or tail[at - 20 : at - 16] != b"PK\x06\x07":
                return count
            f.seek(int.from_bytes(tail[at - 12 : at - 4], "little"))  # the ZIP64 end record
            record = f.read(56)
            if record[:4] != b"PK\x06\x06":
                return None
            return int.from_bytes(record[32:40], "little")
    except OSError:
        return None


def _open(file: "os.PathLike[str] | str", path: str) -> zipfile.ZipFile:
    """The archive, after checking its declared entry count (a directory of millions of entries
    would take gigabytes to parse).

    Raises:
        ReaderError: ``"corrupt ZIP: ..."`` or ``"zip bomb? ..."``.
    """
    declared = declared_entries(file)
    if declared is not None and declared > ZIP_MAX_MEMBERS:
        raise ReaderError(path, f"zip bomb? {declared:,} files, over the {ZIP_MAX_MEMBERS:,} limit "
                                f"(extract it to index its files)")
    try:
        return zipfile.ZipFile(os.fspath(file))
    except Exception as exc:  # BadZipFile, a name that is not UTF-8, a truncated directory …
        raise ReaderError(path, f"corrupt ZIP: {type(exc).__name__}: {exc}", exc) from exc


def check_zip_package(file: "os.PathLike[str] | str", max_total: int = ZIP_MAX_TOTAL) -> None:
    """Refuse a zip-based document (DOCX, XLSX, PPTX, ODF, EPUB …) that would expand past the limits
    of :func:`zip_members` when its reader decompresses it: more than :data:`ZIP_MAX_MEMBERS` parts,
    a part over 1 MiB expanding more than :data:`ZIP_MAX_RATIO`:1, or more than ``max_total`` bytes
    declared in all.  ``zipfile`` (which the readers use) stops each part at its declared size, so
    the declared sizes bound what a reader can inflate.

    Raises:
        ReaderError: ``"zip bomb? ..."`` or ``"corrupt ZIP: ..."``.
    """
    path = file_path_str(file)
    with _open(file, path) as zf:
        infos = zf.infolist()
        if len(infos) > ZIP_MAX_MEMBERS:
            raise ReaderError(path, f"zip bomb? {len(infos):,} parts, over the {ZIP_MAX_MEMBERS:,} limit")
        total = 0
        for info in infos:
            total += info.file_size
            if info.file_size > _RATIO_FLOOR and info.file_size > ZIP_MAX_RATIO * max(info.compress_size, 1):
                ratio = info.file_size // max(info.compress_size, 1)
                raise ReaderError(path, f"zip bomb? part {info.filename} expands {ratio}:1, over {ZIP_MAX_RATIO}:1")
            if total > max_total:
                raise ReaderError(path, f"zip bomb? its parts expand to over {_mb(max_total)}")


def zip_members(file: "os.PathLike[str] | str", max_member_size: Optional[int] = None) -> Iterator[ZipMember]:
    """The files of a ZIP archive, in archive order, each extracted on its own (see the module
    docstring for the limits).  Directory entries and macOS resource forks (``__MACOSX/``) are
    left out; a name given twice is read once (its first entry).  Each yielded ``file`` exists
    until the next member is requested.

    Raises:
        ReaderError: the file is not a readable ZIP archive (``"corrupt ZIP: ..."``), or holds
            more than :data:`ZIP_MAX_MEMBERS` files (``"zip bomb? ..."``).
        ValueError: ``max_member_size`` is not a positive int or ``None``.
    """
    if max_member_size is not None and (not isinstance(max_member_size, int) or max_member_size <= 0):
        raise ValueError(f"max_member_size must be a positive int (bytes) or None; got {max_member_size!r}")
    path = file_path_str(file)
    zf = _open(file, path)
    tmp: Optional[Path] = None
    try:
        tmp = Path(tempfile.mkdtemp(prefix="ragloom-zip-"))
        infos = [i for i in zf.infolist() if not i.is_dir() and not i.filename.startswith("__MACOSX/")]
        if len(infos) > ZIP_MAX_MEMBERS:
            raise ReaderError(path, f"zip bomb? {len(infos):,} files, over the {ZIP_MAX_MEMBERS:,} limit "
                                    f"(extract it to index its files)")
        total = 0
        seen = set()
        for number, info in enumerate(infos):
            if info.filename in seen:
                yield ZipMember(info.filename, skipped="a second entry of the same name (the first one is read)")
                continue
            seen.add(info.filename)
            reason = _precheck(info, max_member_size)
            if reason is None and total + info.file_size > ZIP_MAX_TOTAL:
                reason = f"the archive's first {_mb(ZIP_MAX_TOTAL)} were read already (zip bomb?)"
            if reason is not None:
                yield ZipMember(info.filename, skipped=reason)
                continue
            total += info.file_size  # counted whether or not it extracts cleanly
            dest = tmp / f"member-{number}{_suffix(info.filename)}"
            try:
                got: Union[int, str] = _extract(zf, info, dest)
            except Exception as exc:  # zlib.error, lzma.LZMAError, BadZipFile (CRC), OSError …
                got = f"corrupt archive member: {type(exc).__name__}: {exc}"
            if isinstance(got, str):
                dest.unlink(missing_ok=True)
                yield ZipMember(info.filename, skipped=got)
                continue
            try:
                yield ZipMember(info.filename, file=dest)
            finally:
                dest.unlink(missing_ok=True)
    except OSError as exc:  # the temporary folder
        raise ReaderError(path, f"cannot read: {exc.strerror or exc}", exc) from exc
    finally:
        zf.close()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def member_id(archive_id: str, name: str) -> str:
    """The document id of member ``name`` of the archive whose id is ``archive_id``:
    ``f"{archive_id}!/{name}"`` (the ``!/`` separator of Java's jar URLs)."""
    return f"{archive_id}!/{name}"
