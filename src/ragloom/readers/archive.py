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

__all__ = ["ZIP_MAX_MEMBERS", "ZIP_MAX_RATIO", "ZIP_MAX_TOTAL", "ZipMember", "member_id", "zip_members"]

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
        return f"too large: {_mb(info.file_size)} is over the {_mb(max_member_size)} limit"
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


def zip_members(file: "os.PathLike[str] | str", max_member_size: Optional[int] = None) -> Iterator[ZipMember]:
    """The files of a ZIP archive, in archive order, each extracted on its own (see the module
    docstring for the limits).  Directory entries and macOS resource forks (``__MACOSX/``) are
    left out.  Each yielded ``file`` exists until the next member is requested.

    Raises:
        ReaderError: the file is not a readable ZIP archive (``"corrupt ZIP: ..."``), or holds
            more than :data:`ZIP_MAX_MEMBERS` files (``"zip bomb? ..."``).
    """
    path = file_path_str(file)
    try:
        zf = zipfile.ZipFile(os.fspath(file))
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as exc:
        raise ReaderError(path, f"corrupt ZIP: {type(exc).__name__}: {exc}", exc) from exc
    tmp = Path(tempfile.mkdtemp(prefix="ragloom-zip-"))
    try:
        infos = [i for i in zf.infolist() if not i.is_dir() and not i.filename.startswith("__MACOSX/")]
        if len(infos) > ZIP_MAX_MEMBERS:
            raise ReaderError(path, f"zip bomb? {len(infos):,} files, over the {ZIP_MAX_MEMBERS:,} limit")
        total = 0
        for number, info in enumerate(infos):
            reason = _precheck(info, max_member_size)
            if reason is None and total + info.file_size > ZIP_MAX_TOTAL:
                reason = f"the archive's first {_mb(ZIP_MAX_TOTAL)} were read already (zip bomb?)"
            if reason is not None:
                yield ZipMember(info.filename, skipped=reason)
                continue
            dest = tmp / f"member-{number}{_suffix(info.filename)}"
            try:
                got: Union[int, str] = _extract(zf, info, dest)
            except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, RuntimeError) as exc:
                got = f"corrupt archive member: {type(exc).__name__}: {exc}"
            if isinstance(got, str):
                dest.unlink(missing_ok=True)
                yield ZipMember(info.filename, skipped=got)
                continue
            total += got
            try:
                yield ZipMember(info.filename, file=dest)
            finally:
                dest.unlink(missing_ok=True)
    finally:
        zf.close()
        shutil.rmtree(tmp, ignore_errors=True)


def member_id(archive_id: str, name: str) -> str:
    """The document id of member ``name`` of the archive whose id is ``archive_id``:
    ``f"{archive_id}!/{name}"`` (the ``!/`` separator of Java's jar URLs)."""
    return f"{archive_id}!/{name}"
