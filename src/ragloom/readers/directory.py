"""``SimpleDirectoryReader``: a folder (or a list of files) into documents, one reader per format."""

from __future__ import annotations

import codecs
import errno
import fnmatch
import logging
import mimetypes
import os
import signal
import stat
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import (
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from ragloom._optional import available
from ragloom.errors import ReaderError
from ragloom.readers.archive import check_zip_package, member_id, zip_members
from ragloom.readers.base import BaseReader, doc_id_for, file_path_str, fs_path, path_text
from ragloom.readers.csv_reader import CSVReader
from ragloom.readers.docx_reader import DocxReader
from ragloom.readers.email_reader import EmailReader, looks_like_email
from ragloom.readers.msg_reader import MsgReader
from ragloom.readers.html_reader import HTMLReader
from ragloom.readers.json_reader import JSONReader
from ragloom.readers.epub import EpubReader
from ragloom.readers.odf import OdfReader
from ragloom.readers.office import PptxReader, XlsReader, XlsxReader, office_available
from ragloom.readers.pdf import PDFReader
from ragloom.readers.rtf_reader import RTFReader
from ragloom.readers.report import FileRead, FileSkipped, ReadReport
from ragloom.readers.text import REASON_BINARY, REASON_EMPTY, TextReader
from ragloom.schema import Document

logger = logging.getLogger(__name__)

__all__ = [
    "SimpleDirectoryReader",
    "default_file_metadata_func",
    "default_file_extractor",
    "DEFAULT_EXCLUDED_METADATA_KEYS",
    "DEFAULT_EXCLUDED_EMBED_METADATA_KEYS",
    "DEFAULT_MAX_FILE_SIZE",
    "DEFAULT_READ_TIMEOUT",
]

PathLike = Union[str, "os.PathLike[str]"]

#: Default metadata keys hidden from both the embed and the LLM view (so they also stay
#: out of ``Document.hash``): the LLM sees ``file_path`` (and a PDF's ``page_label``).
DEFAULT_EXCLUDED_METADATA_KEYS: Tuple[str, ...] = (
    "file_name",
    "file_type",
    "file_size",
    "creation_date",
    "last_modified_date",
    "last_accessed_date",
)

#: Default metadata keys hidden from the embed view: the above and ``file_path`` and
#: ``archive_member``, so the embedded text of a chunk does not depend on where its file lives
#: and a renamed or moved file re-uses its vectors from the embedding cache.  (LlamaIndex embeds
#: ``file_path``; this is a deliberate difference.)
DEFAULT_EXCLUDED_EMBED_METADATA_KEYS: Tuple[str, ...] = DEFAULT_EXCLUDED_METADATA_KEYS + ("file_path", "archive_member")

_VALID_ERRORS_HINT = "a codec error handler such as 'strict', 'replace', 'ignore', 'backslashreplace'"


def _iso_date(ts: Optional[float]) -> Optional[str]:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d")


def default_file_metadata_func(file_path: str) -> Dict[str, Any]:
    """Default metadata of a file (LlamaIndex keys).

    Returns ``file_path`` (absolute POSIX path), ``file_name``, ``file_type`` (MIME type
    guessed from the extension, or ``None``), ``file_size`` (bytes), ``creation_date``,
    ``last_modified_date``, ``last_accessed_date`` (``YYYY-MM-DD``, UTC; creation is the
    birth time where the OS records it, else the inode change time).

    Raises:
        OSError: the file cannot be stat'ed.
    """
    path = Path(fs_path(file_path))
    st = path.stat()
    birth = getattr(st, "st_birthtime", None)
    return {
        "file_path": file_path_str(path),
        "file_name": path_text(path.name),
        "file_type": mimetypes.guess_type(path.name)[0],
        "file_size": st.st_size,
        "creation_date": _iso_date(birth if birth is not None else st.st_ctime),
        "last_modified_date": _iso_date(st.st_mtime),
        "last_accessed_date": _iso_date(st.st_atime),
    }


def default_file_extractor(encoding: Optional[str] = None, errors: str = "strict") -> Dict[str, BaseReader]:
    """The built-in extension → reader map (lower-case extensions with the dot).

    Files whose extension is not listed are read by :class:`TextReader` (and skipped as
    ``"binary file"`` if they are not text).
    """
    html = HTMLReader(encoding, errors)
    json_reader = JSONReader(None, encoding, errors)
    csv_reader = CSVReader(encoding=encoding, errors=errors)
    return {
        ".pdf": PDFReader(),
        ".docx": DocxReader(),
        ".html": html,
        ".htm": html,
        ".xhtml": html,
        ".json": json_reader,
        ".jsonl": json_reader,
        ".ndjson": json_reader,
        ".csv": csv_reader,
        ".tsv": csv_reader,
        ".eml": EmailReader(),
        ".p7s": EmailReader(),  # a signed message saved whole (a bare signature: reported as such)
        ".p7m": EmailReader(),
        ".rtf": RTFReader(),
        **({".msg": MsgReader()} if available("extract_msg") else {}),
        **({".xls": XlsReader()} if available("xlrd") else {}),
        **({ext: OdfReader() for ext in (".odt", ".ods", ".odp", ".odg", ".ott", ".ots", ".otp")}
           if available("odfdo") else {}),
        **({".epub": EpubReader()} if available("ebooklib") else {}),
        **({".pptx": PptxReader(), ".xlsx": XlsxReader(), ".xlsm": XlsxReader()} if office_available() else {}),
    }


@dataclass
class _Context:
    """Everything needed to read one file (picklable, for worker processes)."""

    extractors: Dict[str, BaseReader]
    fallback: BaseReader
    file_metadata: Optional[Callable[[str], Dict[str, Any]]]
    max_file_size: Optional[int] = None
    read_timeout: Optional[float] = None

    def is_archive(self, path: Path) -> bool:
        """Whether ``path`` is read member by member (a ``.zip`` no ``file_extractor`` claims)."""
        return path.suffix.lower() == ".zip" and ".zip" not in self.extractors

    def reader_for(self, path: Path) -> BaseReader:
        name = path.name.lower()
        suffixes = path.suffixes
        # Longest compound extension first (".tar.gz" before ".gz").
        for i in range(len(suffixes)):
            ext = "".join(suffixes[i:]).lower()
            if ext in self.extractors and name.endswith(ext):
                return self.extractors[ext]
        return self.fallback


#: Binary document formats ragloom has no reader for yet: reported as "unsupported format"
#: rather than "binary file", so users know the file was recognised, not misread.
UNSUPPORTED_FORMATS = {
    ".pptx": "PowerPoint; install ragloom[office] to read it", ".ppt": "PowerPoint 97-2003; convert it to PPTX",
    ".xlsx": "Excel; install ragloom[office] to read it", ".xlsm": "Excel; install ragloom[office] to read it",
    ".xls": "Excel 97-2003; install ragloom[office] to read it", ".doc": "Word 97-2003; convert it to DOCX",
    ".odt": "OpenDocument text; install ragloom[office] to read it",
    ".ods": "OpenDocument spreadsheet; install ragloom[office] to read it",
    ".odp": "OpenDocument presentation; install ragloom[office] to read it",
    ".epub": "EPUB; install ragloom[epub] to read it",
    ".msg": "Outlook message; install ragloom[outlook] to read it",
}

#: Skip reasons of files that hold no text by their kind (by MIME type prefix, from the extension).
MEDIA_REASONS = {
    "image/": "image: no text to read (ragloom does no OCR; run OCR first to index its text)",
    "audio/": "audio: no text to read (transcribe it first to index it)",
    "video/": "video: no text to read (transcribe it first to index it)",
}

#: Skip reason of a file whose size or modification time changed while it was read: what was
#: read may be half old, half new.  Transient: an index keeps what it had, the next run reads it.
REASON_CHANGED = "changed while being read (the next run reads it again)"
#: a path whose symlinks lead back to themselves (``ELOOP``)
REASON_SYMLINK_LOOP = "a symlink loop (the link leads back to itself)"
#: a symlinked folder below the one read: not entered (loops, and files read twice)
REASON_SYMLINKED_FOLDER = "a symlinked folder: not followed (give its path to read it)"
#: a folder below the one read that holds a ragloom index (its database files are no documents)
REASON_INDEX_FOLDER = "a ragloom index folder: not read"


_Skip = Tuple[str, Optional[BaseException]]


#: Default of ``SimpleDirectoryReader(max_file_size=)`` and ``ragloom index --max-file-size``: 100 MiB.
#: A bigger file is skipped unread (a 200 MB text file is about 180,000 chunks: hours of CPU
#: embedding), with a reason naming the way to read it anyway.
DEFAULT_MAX_FILE_SIZE = 100 * 2**20

#: Default of ``SimpleDirectoryReader(read_timeout=)`` and ``ragloom index --read-timeout``:
#: 300 seconds of reading for one file (a 100 MiB text file reads in about 5 s here; the
#: 872-page DOCX of the mixed_docs fixtures in about 10 s).
DEFAULT_READ_TIMEOUT = 300.0
#: The largest ``read_timeout`` accepted: 10^6 s (11.6 days; POSIX timers overflow near 10^8).
MAX_READ_TIMEOUT = 1e6


class _ReadTimeout(BaseException):
    """Raised in the reading thread when a file's read passes ``read_timeout`` (a
    ``BaseException``, so a library's ``except Exception`` cannot swallow it)."""


def _timeout_reason(seconds: float) -> str:
    return (f"read took over the {seconds:g} s limit (raise it with ragloom index --read-timeout SECONDS, "
            "or read_timeout= in Python)")


@contextmanager
def _time_limit(seconds: Optional[float]) -> Iterator[None]:
    """Raise :class:`_ReadTimeout` in this thread after ``seconds`` (POSIX ``SIGALRM`` timer).

    Enforced only in a process's main thread on platforms with ``SIGALRM`` (signals are delivered
    to the main thread); elsewhere — a server's worker thread, Windows — the read is not limited.
    A read blocked inside C code is interrupted when it next returns to Python."""
    if (seconds is None or not hasattr(signal, "SIGALRM")
            or threading.current_thread() is not threading.main_thread()):
        yield
        return

    armed = [True]

    def expire(signum: int, frame: Any) -> None:
        if armed[0]:  # a signal landing during the teardown below is dropped
            raise _ReadTimeout()

    previous = signal.signal(signal.SIGALRM, expire)
    started = time.monotonic()
    outer = (0.0, 0.0)
    try:
        outer = signal.setitimer(signal.ITIMER_REAL, seconds)
        if 0 < outer[0] < seconds:  # an enclosing timer (a caller's, or ours) ends first: keep its deadline
            signal.setitimer(signal.ITIMER_REAL, outer[0])
        yield
    finally:
        try:
            armed[0] = False
        finally:
            left = outer[0] - (time.monotonic() - started)
            # the enclosing timer goes on with what it had left (at once if it is already due)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6) if outer[0] > 0 else 0, outer[1])
            signal.signal(signal.SIGALRM, previous)


def _mb(size: int) -> str:
    if size < 2**20:
        return f"{size / 1024:.1f} KB" if size >= 1024 else f"{size} bytes"
    return f"{size / 2**20:.1f} MB" if size < 10 * 2**20 else f"{size / 2**20:.0f} MB"


def _stat_skip(path: Path, max_size: Optional[int] = None) -> Union[_Skip, os.stat_result]:
    """``(reason, cause)`` when ``path`` is not a non-empty regular file of at most ``max_size``
    bytes, else its ``stat``.  FIFOs, sockets and devices are never opened (``stat`` only)."""
    try:
        st = os.stat(path)
    except FileNotFoundError as exc:
        return "not found (broken link?)", exc
    except PermissionError as exc:
        return "permission denied", exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # not transient: a loop stays a loop
            return REASON_SYMLINK_LOOP, exc
        return f"cannot stat: {exc.strerror or exc}", exc
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file", None
    if st.st_size == 0:
        return REASON_EMPTY, None
    if max_size is not None and st.st_size > max_size:
        return (f"too large: {_mb(st.st_size)} is over the {_mb(max_size)} limit "
                "(raise it with ragloom index --max-file-size MB, or max_file_size= in Python)"), None
    return st


def _load(reader: BaseReader, path: Path, metadata: Optional[Dict[str, Any]]) -> Union[List[Document], _Skip]:
    """The reader's documents for ``path``, or ``(reason, cause)`` when it fails; never raises.
    A zip-based file (DOCX, XLSX, ODF, EPUB …) is first checked against the archive limits
    (:func:`~ragloom.readers.archive.check_zip_package`), since its reader inflates it whole."""
    try:
        with open(path, "rb") as f:
            if f.read(4) == b"PK\x03\x04":
                try:
                    check_zip_package(path)
                except ReaderError as exc:
                    if exc.reason.startswith("zip bomb?"):
                        raise
                    # a damaged package: its reader names the format in its own message
        return list(reader.load_data(path, extra_info=dict(metadata or {})))
    except ReaderError as exc:
        ext = path.suffix.lower()
        if exc.reason == REASON_BINARY and ext in UNSUPPORTED_FORMATS:
            return f"unsupported format ({UNSUPPORTED_FORMATS[ext]})", exc
        if exc.reason == REASON_BINARY:
            kind = mimetypes.guess_type(path.name)[0] or ""
            for prefix, reason in MEDIA_REASONS.items():
                if kind.startswith(prefix):
                    return reason, exc
        return exc.reason, exc
    except PermissionError as exc:
        return "permission denied", exc
    except IsADirectoryError as exc:
        return "not a regular file", exc
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}", exc
    except MemoryError as exc:
        return "too large to read (out of memory)", exc
    except Exception as exc:  # a broken file must never stop the whole read
        return f"corrupt or unreadable: {type(exc).__name__}: {exc}", exc


def _finish(docs: List[Document], assign: bool, id_of: Callable[[Optional[int]], str]) -> List[Document]:
    """``docs`` without empty ones, with the default hidden metadata keys, and (when ``assign``)
    the ids ``id_of(part)`` (``part`` ``None`` for a file's only document)."""
    docs = [d for d in docs if d.get_content().strip()]
    for i, doc in enumerate(docs):
        if assign:
            doc.id_ = id_of(None if len(docs) == 1 else i)
        doc.excluded_embed_metadata_keys = _merge(doc.excluded_embed_metadata_keys,
                                                  DEFAULT_EXCLUDED_EMBED_METADATA_KEYS)
        doc.excluded_llm_metadata_keys = _merge(doc.excluded_llm_metadata_keys, DEFAULT_EXCLUDED_METADATA_KEYS)
    return docs


def _member_ids(archive_id: str, name: str) -> Callable[[Optional[int]], str]:
    """The id of part ``part`` of archive member ``name`` (``None``: its only document)."""
    return lambda part: member_id(archive_id, name if part is None else f"{name}_part_{part}")


#: ``(member name, reason)`` for each member of an archive that was not read.
_MemberSkips = List[Tuple[str, str]]


def _load_zip(path: Path, ctx: _Context, metadata: Optional[Dict[str, Any]],
              skipped: _MemberSkips) -> Union[List[Document], _Skip]:
    """The documents of a ZIP archive's members, each read by the reader of its extension under its
    own ``read_timeout`` (ids ``f"{archive id}!/{member}"``, metadata ``archive_member`` and a hidden
    ``extension``); members not read are appended to ``skipped``.  ``(reason, cause)`` when nothing
    is read, or when a member failed for a transient reason (the index then keeps what it had)."""
    archive_id = doc_id_for(path)
    docs: List[Document] = []
    try:
        for member in zip_members(path, ctx.max_file_size):
            if member.file is None:
                skipped.append((member.name, member.skipped or ""))
                continue
            reader = ctx.reader_for(Path(member.name))
            suffix = Path(member.name).suffix.lower()
            meta = {**(metadata or {}), "archive_member": member.name, "extension": suffix}
            try:
                with _time_limit(ctx.read_timeout):
                    loaded = _load(reader, member.file, meta)
            except _ReadTimeout:
                loaded = (_timeout_reason(ctx.read_timeout or 0), None)
            if isinstance(loaded, tuple):
                reason = loaded[0].replace(member.file.as_posix(), member.name)  # not the temporary copy's name
                if FileSkipped(member.name, reason).transient:
                    return f"{reason} (archive member {member.name})", loaded[1]
                skipped.append((member.name, reason))
                continue
            # ids always assigned: a reader's own would name the temporary copy
            got = _finish(loaded, True, _member_ids(archive_id, member.name))
            for doc in got:
                doc.excluded_embed_metadata_keys = _merge(doc.excluded_embed_metadata_keys, ["extension"])
                doc.excluded_llm_metadata_keys = _merge(doc.excluded_llm_metadata_keys, ["extension"])
            if not got:
                skipped.append((member.name, REASON_EMPTY))
            docs.extend(got)
    except ReaderError as exc:
        return exc.reason, exc
    if not docs:
        listed = "; ".join(f"{n}: {r}" for n, r in skipped[:3]) + ("; …" if len(skipped) > 3 else "")
        return "no readable file in the archive" + (f" ({listed})" if skipped else ""), None
    return docs


_EMAIL = EmailReader()

#: The OOXML extension of a zip package, by the folder its main part lives in.
_OOXML_PARTS = {"word/": ".docx", "ppt/": ".pptx", "xl/": ".xlsx"}


def _sniff_ooxml(path: Path, ctx: _Context) -> Optional[BaseReader]:
    """The reader of the OOXML format a legacy-named file (``.doc``, ``.ppt``, ``.xls``) really is
    (a zip package holding ``word/``, ``ppt/`` or ``xl/``), or ``None``."""
    import zipfile

    try:
        with open(path, "rb") as f:
            if f.read(4) != b"PK\x03\x04":
                return None
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    except Exception:  # OSError, BadZipFile, a name that is not UTF-8 …: not a package then
        return None
    for folder, ext in _OOXML_PARTS.items():
        if any(n.startswith(folder) for n in names) and ext in ctx.extractors:
            return ctx.extractors[ext]
    return None


def _sniff_email(path: Path) -> bool:
    """Whether a file without a reader of its own (``.txt``, no extension …) is a raw e-mail message
    (:func:`~ragloom.readers.email_reader.looks_like_email` on its first 8 KiB)."""
    try:
        with open(path, "rb") as f:
            return looks_like_email(f.read(8192))
    except OSError:
        return False


class _Outcome(NamedTuple):
    """What reading one file gave: its ``docs``, or why not (``reason``, ``cause``); and the
    ``members_skipped`` of an archive (``(name, reason)``)."""

    docs: List[Document]
    reason: Optional[str] = None
    cause: Optional[BaseException] = None
    members_skipped: _MemberSkips = []


def _pick_reader(path: Path, ctx: _Context) -> BaseReader:
    """The reader of ``path``: by extension, except a mail message saved as text and an OOXML
    package named ``.doc``/``.ppt``/``.xls``, which are recognised by their content."""
    reader = ctx.reader_for(path)
    if reader is ctx.fallback and _sniff_email(path):
        return _EMAIL
    if path.suffix.lower() in (".doc", ".ppt", ".xls"):
        return _sniff_ooxml(path, ctx) or reader
    return reader


def _read_one(path: Path, ctx: _Context) -> _Outcome:
    """Read one file (see :class:`_Outcome`); never raises."""
    spath = file_path_str(path)
    before = _stat_skip(path, ctx.max_file_size)
    if not isinstance(before, os.stat_result):
        return _Outcome([], before[0], before[1])
    try:
        metadata = ctx.file_metadata(spath) if ctx.file_metadata is not None else default_file_metadata_func(spath)
    except PermissionError as exc:
        return _Outcome([], "permission denied", exc)
    except Exception as exc:
        return _Outcome([], f"file_metadata failed: {type(exc).__name__}: {exc}", exc)
    skipped: _MemberSkips = []
    reader = ctx.fallback
    try:
        if ctx.is_archive(path):  # each member under its own time limit
            loaded = _load_zip(path, ctx, metadata, skipped)
        else:
            with _time_limit(ctx.read_timeout):
                reader = _pick_reader(path, ctx)
                loaded = _load(reader, path, metadata)
    except _ReadTimeout:
        return _Outcome([], _timeout_reason(ctx.read_timeout or 0))
    if isinstance(loaded, tuple):
        return _Outcome([], loaded[0], loaded[1])
    try:
        after: Optional[os.stat_result] = os.stat(path)
    except OSError:
        after = None
    if after is None or (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        return _Outcome([], REASON_CHANGED)
    if ctx.is_archive(path):
        return _Outcome(loaded, members_skipped=skipped)
    docs = _finish(loaded, not getattr(reader, "assigns_ids", False), lambda part: doc_id_for(path, part))
    if not docs:
        return _Outcome([], REASON_EMPTY)
    return _Outcome(docs)


def _merge(existing: Sequence[str], extra: Sequence[str]) -> List[str]:
    out = list(existing)
    out.extend(k for k in extra if k not in out)
    return out


def _read_one_for_pool(args: Tuple[Path, _Context]) -> _Outcome:
    path, ctx = args
    out = _read_one(path, ctx)
    # an exception may not pickle: its text travels instead
    return out._replace(cause=None if out.cause is None else RuntimeError(f"{type(out.cause).__name__}: {out.cause}"))


def _check_codec_args(errors: Any, encoding: Optional[str]) -> None:
    """``ValueError`` unless ``errors`` names a codec error handler and ``encoding`` (if given) a codec."""
    if not isinstance(errors, str):
        raise ValueError(f"errors must be {_VALID_ERRORS_HINT}; got {errors!r}")
    try:
        codecs.lookup_error(errors)
    except LookupError:
        raise ValueError(f"errors must be {_VALID_ERRORS_HINT}; got {errors!r}") from None
    if encoding is not None:
        try:
            codecs.lookup(encoding)
        except (LookupError, TypeError):
            raise ValueError(f"encoding {encoding!r} is not a known codec") from None


def _check_selection_args(
    exclude: Optional[Sequence[str]],
    required_exts: Optional[Sequence[str]],
    file_extractor: Optional[Mapping[str, BaseReader]],
    file_metadata: Optional[Callable[[str], Dict[str, Any]]],
) -> None:
    """``ValueError`` for a malformed ``exclude``/``required_exts``/``file_extractor``/``file_metadata``."""
    if exclude is not None and not all(isinstance(p, str) for p in exclude):
        raise ValueError("exclude must be a list of glob pattern strings")
    if required_exts is not None and not all(isinstance(e, str) and e.strip(".") for e in required_exts):
        raise ValueError("required_exts must be a list of extensions such as ['.md', '.txt']")
    if file_extractor is not None:
        for ext, rdr in file_extractor.items():
            if not isinstance(ext, str) or not callable(getattr(rdr, "load_data", None)):
                raise ValueError(
                    "file_extractor must map extensions such as '.pdf' to readers with load_data(file, extra_info)"
                )
    if file_metadata is not None and not callable(file_metadata):
        raise ValueError("file_metadata must be a callable path -> dict")


def _existing_dir(input_dir: PathLike) -> Path:
    """``input_dir`` as an absolute path; ``FileNotFoundError``/``NotADirectoryError`` otherwise."""
    d = Path(os.path.abspath(os.fspath(input_dir)))
    if not d.exists():
        raise FileNotFoundError(f"input_dir does not exist: {d}")
    if not d.is_dir():
        raise NotADirectoryError(f"input_dir is not a directory: {d}")
    return d


def _unentered_folder(path: str) -> Optional[str]:
    """Why a recursive listing does not enter the folder ``path`` (reported as skipped), or ``None``:
    a symlink (``os.walk`` does not follow it), or a folder holding another ragloom index."""
    from ragloom.storage.storage_context import holds_index

    if os.path.islink(path):
        return REASON_SYMLINKED_FOLDER
    try:
        if holds_index(path):
            return REASON_INDEX_FOLDER
    except OSError:  # a folder that cannot be looked into: the walk reports it (permission denied)
        pass
    return None


def _one_path_per_file(files: List[Path]) -> List[Path]:
    """``files`` (in order) with one path per file: of the paths that lead to the same file (a symlink
    and its target, or two symlinks to one file), the file's own path is kept, else the first.  A
    document's id is its file's real path, so reading both would read one document twice.  Costs one
    ``lstat`` per file, and resolves paths only when one of them is a symlink."""
    links = [os.path.islink(f) for f in files]
    if not any(links):
        return files
    real_dirs: Dict[Path, str] = {}

    def real(f: Path, link: bool) -> str:
        if link:
            return os.path.realpath(f)
        d = real_dirs.get(f.parent)
        if d is None:
            d = real_dirs[f.parent] = os.path.realpath(f.parent)
        return os.path.join(d, f.name)

    chosen: Dict[str, int] = {}
    for i, (f, link) in enumerate(zip(files, links, strict=True)):
        key = real(f, link)
        j = chosen.get(key)
        if j is None or (links[j] and not link):
            chosen[key] = i
        if j is not None:
            kept, dropped = (f, files[j]) if chosen[key] == i else (files[j], f)
            logger.debug("reading %s once, as %s (%s leads to it)", key, file_path_str(kept), file_path_str(dropped))
    kept = sorted(chosen.values())
    return [files[i] for i in kept]


class SimpleDirectoryReader:
    """Read a folder of files (or a list of files) into :class:`~ragloom.schema.Document` s.

    Args:
        input_dir: folder to read.  Exactly one of ``input_dir`` and ``input_files``.
        input_files: files to read (``exclude``, ``exclude_hidden``, ``required_exts`` and
            ``recursive`` apply to ``input_dir`` listings only).
        exclude: glob patterns relative to ``input_dir`` (``"*.tmp"``, ``"drafts/*"``,
            ``"**/build/**"``).  A pattern without ``/`` matches a name at any depth; a
            pattern that matches a folder excludes everything under it.
        exclude_hidden: skip files and folders whose name starts with ``.``.
        skip_dirs: folders below ``input_dir`` not to enter, compared by real path (ragloom's own;
            ``ragloom index`` keeps an index folder kept inside the folder it reads out this way).
            Any other folder below ``input_dir`` that holds a ragloom index (a ``ragloom.sqlite``) is
            not entered either, and is reported as skipped (:data:`REASON_INDEX_FOLDER`).
        errors: codec error handler for text decoding (``"strict"``, ``"replace"``,
            ``"ignore"`` …).  With ``"strict"`` an undecodable file is skipped.
        recursive: descend into sub-folders (symlinked folders are not followed: each is reported as
            skipped, :data:`REASON_SYMLINKED_FOLDER`).
        encoding: ``None`` (default) detects each file's encoding (BOM → UTF-8 →
            charset-normalizer; GBK family read as GB18030).  A codec name forces it.
        filename_as_id: accepted for LlamaIndex compatibility; ids are always what
            ``filename_as_id=True`` asks for, whatever its value: the file's absolute POSIX path
            (symlinks resolved) for a file that gives one document, ``f"{path}_part_{i}"`` for
            a file that gives several (PDF pages, JSONL records, slides; ``i`` counts from 0),
            ``f"{archive}!/{member}"`` for a ZIP member.  Differences from LlamaIndex: with
            ``False`` LlamaIndex gives random ids (ragloom keeps path ids, so re-reading a
            folder finds the same documents); with ``True`` it writes the path as given
            (possibly relative) and adds ``_part_0`` even to a file with one document when a
            format reader (Markdown, PDF …) read it.
        required_exts: only read files with these extensions (``[".md", ".txt"]``; case
            insensitive; a missing leading dot is added).
        file_extractor: extension → :class:`~ragloom.readers.base.BaseReader` overriding or
            adding to :func:`default_file_extractor` (e.g. ``{".pdf": MyPDFReader()}``).
        num_files_limit: read at most this many files (after sorting), > 0.
        file_metadata: callable ``path (str) -> dict`` replacing
            :func:`default_file_metadata_func`.
        raise_on_error: raise :class:`ragloom.errors.ReaderError` for the first file that
            cannot be read, instead of skipping it.
        show_progress: default for ``load_data``/``iter_data``'s progress bar.
        within: read only files whose real path (every symlink resolved) lies below one of
            these folders; a file elsewhere (a symlink pointing out) is skipped and reported.
            ``None`` (default): no confinement.  ``ragloom serve`` passes its ``--allow-root``
            folders.  (Not in LlamaIndex.)
        max_file_size: skip (and report) files larger than this many bytes, unread; default
            :data:`DEFAULT_MAX_FILE_SIZE` (100 MiB), ``None`` for no limit.  (Not in LlamaIndex,
            which reads any size.)
        read_timeout: skip (and report) a file whose read takes longer than this many seconds;
            default :data:`DEFAULT_READ_TIMEOUT` (300 s), ``None`` for no limit.  Enforced in a
            process's main thread on POSIX only (a ``SIGALRM`` timer); reads in other threads are
            not limited.  (Not in LlamaIndex.)

    ZIP archives (``.zip``, unless ``file_extractor`` maps it) are read member by member, each
    member by the reader of its extension, within the limits of :mod:`ragloom.readers.archive`;
    members that are not read are listed in :attr:`report` as ``"ARCHIVE!/MEMBER"``.  A file
    whose size or modification time changes while it is read is skipped (``REASON_CHANGED``).

    Every skipped file (binary, empty or whitespace-only, encrypted or scanned PDF,
    permission denied, corrupt …) is logged and listed in :attr:`report` with its reason.
    Files are read in sorted order of their absolute POSIX path.  A file reached by several paths (a
    symlink beside its target, two symlinks to one file) is read once, by its own path when that is
    listed (ids are real paths, so both would be one document read twice).

    Raises:
        ValueError: both or neither of ``input_dir``/``input_files``; ``num_files_limit``
            or ``max_file_size`` not a positive int; ``read_timeout`` not in (0, 1e6] seconds;
            unknown ``errors`` handler or ``encoding``; bad
            ``exclude``/``required_exts``/``file_extractor``.
        FileNotFoundError: ``input_dir`` or one of ``input_files`` does not exist.
        NotADirectoryError: ``input_dir`` is not a folder.
    """

    def __init__(
        self,
        input_dir: Optional[PathLike] = None,
        input_files: Optional[Sequence[PathLike]] = None,
        exclude: Optional[Sequence[str]] = None,
        exclude_hidden: bool = True,
        errors: str = "strict",
        recursive: bool = False,
        encoding: Optional[str] = None,
        filename_as_id: bool = False,
        required_exts: Optional[Sequence[str]] = None,
        file_extractor: Optional[Mapping[str, BaseReader]] = None,
        num_files_limit: Optional[int] = None,
        file_metadata: Optional[Callable[[str], Dict[str, Any]]] = None,
        raise_on_error: bool = False,
        show_progress: bool = False,
        within: Optional[Sequence[PathLike]] = None,
        max_file_size: Optional[int] = DEFAULT_MAX_FILE_SIZE,
        read_timeout: Optional[float] = DEFAULT_READ_TIMEOUT,
        skip_dirs: Optional[Sequence[PathLike]] = None,
    ) -> None:
        if (input_dir is None) == (input_files is None):
            raise ValueError("give exactly one of input_dir and input_files")
        _check_codec_args(errors, encoding)
        if num_files_limit is not None and (
            isinstance(num_files_limit, bool) or not isinstance(num_files_limit, int) or num_files_limit <= 0
        ):
            raise ValueError(f"num_files_limit must be a positive int or None; got {num_files_limit!r}")
        if max_file_size is not None and (
            isinstance(max_file_size, bool) or not isinstance(max_file_size, int) or max_file_size <= 0
        ):
            raise ValueError(f"max_file_size must be a positive int (bytes) or None; got {max_file_size!r}")
        if read_timeout is not None and (
            isinstance(read_timeout, bool) or not isinstance(read_timeout, (int, float))
            or not 0 < read_timeout <= MAX_READ_TIMEOUT
        ):
            raise ValueError(f"read_timeout must be a number of seconds in (0, {MAX_READ_TIMEOUT:g}] or None; "
                             f"got {read_timeout!r}")
        if isinstance(exclude, str):
            exclude = [exclude]
        if isinstance(required_exts, str):
            required_exts = [required_exts]
        _check_selection_args(exclude, required_exts, file_extractor, file_metadata)

        self.input_dir: Optional[Path] = None
        self.input_files: List[Path] = []
        if input_dir is not None:
            self.input_dir = _existing_dir(input_dir)
        else:
            assert input_files is not None
            if isinstance(input_files, (str, os.PathLike)):
                input_files = [input_files]
            for f in input_files:
                p = Path(os.path.abspath(os.fspath(f)))
                if not os.path.lexists(p):
                    raise FileNotFoundError(f"input_files: file does not exist: {p}")
                self.input_files.append(p)

        self.exclude: List[str] = list(exclude or [])
        self.exclude_hidden = exclude_hidden
        #: real paths of folders the listing does not enter (see ``skip_dirs``)
        self.skip_dirs = {os.path.realpath(os.fspath(d)) for d in skip_dirs or ()}
        self.errors = errors
        self.recursive = recursive
        self.encoding = encoding
        self.filename_as_id = filename_as_id
        self.required_exts: Optional[List[str]] = (
            None if required_exts is None else [("." + e.lstrip(".")).lower() for e in required_exts]
        )
        self.num_files_limit = num_files_limit
        self.max_file_size = max_file_size
        self.file_metadata = file_metadata
        self.raise_on_error = raise_on_error
        self.show_progress = show_progress
        extractors = default_file_extractor(encoding, errors)
        for ext, rdr in (file_extractor or {}).items():
            extractors[("." + ext.lstrip(".")).lower()] = rdr
        self.file_extractor: Dict[str, BaseReader] = extractors
        self.read_timeout = None if read_timeout is None else float(read_timeout)
        self._ctx = _Context(extractors, TextReader(encoding, errors), file_metadata, max_file_size, self.read_timeout)
        self._report = ReadReport()
        self._listing_skips: List[FileSkipped] = []
        self.within: Optional[List[Path]] = (
            None if within is None else [Path(os.path.realpath(os.fspath(w))) for w in within]
        )

    # -- listing ------------------------------------------------------------------------
    def _is_excluded(self, rel: str) -> bool:
        pure = PurePosixPath(rel)
        for pat in self.exclude:
            p = pat.replace("\\", "/")
            p_stripped = p[3:] if p.startswith("**/") else p
            if not p:
                continue
            if pure.match(p) or fnmatch.fnmatchcase(rel, p) or fnmatch.fnmatchcase(rel, p_stripped):
                return True
        return False

    def _confined(self, files: List[Path]) -> List[Path]:
        """``files`` without those whose real path lies outside :attr:`within` (reported as skipped)."""
        if self.within is None:
            return files
        kept = []
        for f in files:
            real = Path(os.path.realpath(f))
            if any(real == w or w in real.parents for w in self.within):
                kept.append(f)
                continue
            reason = "outside the allowed folders (a symlink pointing out of them): not read"
            logger.warning("skipping %s: %s", file_path_str(f), reason)
            self._listing_skips.append(FileSkipped(file_path_str(f), reason))
        return kept

    def _list_files(self) -> List[Path]:
        self._listing_skips = []
        files = self._confined(_one_path_per_file(self._list_all_files()))
        return files[: self.num_files_limit] if self.num_files_limit else files

    def _list_all_files(self) -> List[Path]:
        if self.input_dir is None:
            return sorted(set(self.input_files), key=lambda p: p.as_posix())
        root = self.input_dir
        found: List[Path] = []

        def onerror(err: OSError) -> None:
            path = file_path_str(err.filename) if err.filename else root.as_posix()
            reason = "permission denied" if isinstance(err, PermissionError) else f"cannot list: {err.strerror}"
            logger.warning("skipping %s: %s", path, reason)
            self._listing_skips.append(FileSkipped(path, reason))

        for dirpath, dirnames, filenames in os.walk(root, onerror=onerror, followlinks=False):
            rel_dir = Path(dirpath).relative_to(root).as_posix()
            rel_dir = "" if rel_dir == "." else rel_dir + "/"
            keep = []
            for d in sorted(dirnames):
                if self.exclude_hidden and d.startswith("."):
                    continue
                if self.skip_dirs and os.path.realpath(os.path.join(dirpath, d)) in self.skip_dirs:
                    continue
                if self.exclude and self._is_excluded(rel_dir + d):
                    continue
                if self.recursive:
                    why = _unentered_folder(os.path.join(dirpath, d))
                    if why is not None:
                        sub = file_path_str(Path(dirpath) / d)
                        logger.info("skipping %s: %s", sub, why)
                        self._listing_skips.append(FileSkipped(sub, why))
                        continue
                keep.append(d)
            dirnames[:] = keep if self.recursive else []
            for name in filenames:
                if self.exclude_hidden and name.startswith("."):
                    continue
                rel = rel_dir + name
                if self.exclude and self._is_excluded(rel):
                    continue
                if self.required_exts is not None and Path(name).suffix.lower() not in self.required_exts:
                    continue
                found.append(Path(dirpath) / name)
        found.sort(key=lambda p: p.as_posix())
        return found

    def list_resources(self) -> List[str]:
        """Absolute POSIX paths of the files a read would visit, in reading order."""
        return [file_path_str(p) for p in self._list_files()]

    @property
    def listing_skipped(self) -> List[FileSkipped]:
        """What the last listing (:meth:`list_resources`, or a read) left out and a read reports as
        skipped: unlistable folders, files outside :attr:`within`."""
        return list(self._listing_skips)

    def get_resource_info(self, resource_id: str) -> Dict[str, Any]:
        """Metadata of one file (``file_metadata`` or the default), without reading it."""
        if self.file_metadata is not None:
            return dict(self.file_metadata(resource_id))
        return default_file_metadata_func(resource_id)

    def load_resource(self, resource_id: str) -> List[Document]:
        """Read one file with this reader's settings (``[]`` if skipped, unless ``raise_on_error``)."""
        out = _read_one(Path(fs_path(resource_id)), self._ctx)
        if out.reason is not None:
            self._skip(file_path_str(resource_id), out.reason, out.cause)
        for name, why in out.members_skipped:
            logger.warning("skipping %s!/%s: %s", file_path_str(resource_id), name, why)
        return out.docs

    def read_resource(self, resource_id: str) -> Tuple[List[Document], Optional[FileSkipped]]:
        """Read one file with this reader's settings: ``(documents, None)``, or ``([], why)`` with
        the :class:`~ragloom.readers.report.FileSkipped` a read would report (neither logged nor
        raised: for callers that keep their own report, such as a distributed run)."""
        out = _read_one(Path(fs_path(resource_id)), self._ctx)
        return (out.docs, None) if out.reason is None else ([], FileSkipped(file_path_str(resource_id), out.reason))

    # -- reading ------------------------------------------------------------------------
    @property
    def report(self) -> ReadReport:
        """The :class:`ReadReport` of the last ``load_data``/``iter_data`` (empty before one);
        filled as ``iter_data`` proceeds."""
        return self._report

    def _skip(self, path: str, reason: str, cause: Optional[BaseException]) -> None:
        if self.raise_on_error:
            raise ReaderError(path, reason, cause)
        if cause is not None and not isinstance(cause, ReaderError):
            logger.warning("skipping %s: %s", path, reason, exc_info=logger.isEnabledFor(logging.DEBUG))
        else:
            logger.warning("skipping %s: %s", path, reason)

    def _record(self, report: ReadReport, path: Path, out: _Outcome) -> None:
        spath = file_path_str(path)
        if out.reason is not None:
            report.skipped.append(FileSkipped(spath, out.reason))
            self._skip(spath, out.reason, out.cause)
            return
        report.read.append(FileRead(spath, len(out.docs), sum(len(d.text) for d in out.docs)))
        logger.debug("read %s: %d documents", spath, len(out.docs))
        for name, why in out.members_skipped:
            report.members_skipped.append(FileSkipped(f"{spath}!/{name}", why))
            logger.warning("skipping %s!/%s: %s", spath, name, why)

    def _start(self) -> Tuple[List[Path], ReadReport]:
        report = ReadReport()
        self._report = report
        files = self._list_files()
        report.skipped.extend(self._listing_skips)
        return files, report

    def iter_data(self, show_progress: bool = False) -> Iterator[List[Document]]:
        """Lazily read file by file, yielding each read file's documents (``list[Document]``,
        non-empty).  Skipped files yield nothing; see :attr:`report`.

        Raises:
            ReaderError: only with ``raise_on_error=True``, for the first unreadable file.
        """
        from tqdm.auto import tqdm

        files, report = self._start()
        t0 = time.perf_counter()
        bar = tqdm(files, desc="Loading files", unit="file", disable=not (show_progress or self.show_progress))
        try:
            for path in bar:
                out = _read_one(path, self._ctx)
                report.elapsed_s = time.perf_counter() - t0
                self._record(report, path, out)
                if out.docs:
                    yield out.docs
        finally:
            bar.close()
            report.elapsed_s = time.perf_counter() - t0

    def load_data(self, show_progress: bool = False, num_workers: Optional[int] = None) -> List[Document]:
        """Read all files; return their documents in file order (``list[Document]``).

        Args:
            show_progress: show a tqdm bar over files (also on if the constructor said so).
            num_workers: > 1 reads files in that many worker processes (order is kept;
                ``file_extractor`` readers and ``file_metadata`` must then be picklable).

        Raises:
            ReaderError: only with ``raise_on_error=True``, for the first unreadable file.
            ValueError: ``num_workers`` is not a positive int.
        """
        if num_workers is not None and (
            isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1
        ):
            raise ValueError(f"num_workers must be a positive int or None; got {num_workers!r}")
        if not num_workers or num_workers == 1:
            return [d for docs in self.iter_data(show_progress=show_progress) for d in docs]

        from concurrent.futures import ProcessPoolExecutor

        from tqdm.auto import tqdm

        files, report = self._start()
        t0 = time.perf_counter()
        out: List[Document] = []
        show = show_progress or self.show_progress
        from ragloom._system import worker_process_start

        with ProcessPoolExecutor(max_workers=min(num_workers, max(1, len(files))),
                                 initializer=worker_process_start) as pool:
            results = pool.map(_read_one_for_pool, [(p, self._ctx) for p in files])
            for path, got in tqdm(
                zip(files, results, strict=True), total=len(files), desc="Loading files", unit="file", disable=not show
            ):
                self._record(report, path, got)
                out.extend(got.docs)
        report.elapsed_s = time.perf_counter() - t0
        return out

    @staticmethod
    def load_file(
        input_file: PathLike,
        file_metadata: Optional[Callable[[str], Dict[str, Any]]] = None,
        file_extractor: Optional[Mapping[str, BaseReader]] = None,
        filename_as_id: bool = False,
        encoding: Optional[str] = None,
        errors: str = "strict",
        raise_on_error: bool = False,
    ) -> List[Document]:
        """Read one file with the default readers (plus ``file_extractor``).

        Returns its documents, or ``[]`` if it cannot be read (logged).

        Raises:
            ReaderError: with ``raise_on_error=True`` when the file cannot be read.
        """
        extractors = default_file_extractor(encoding, errors)
        for ext, rdr in (file_extractor or {}).items():
            extractors[("." + ext.lstrip(".")).lower()] = rdr
        ctx = _Context(extractors, TextReader(encoding, errors), file_metadata)
        path = Path(os.path.abspath(os.fspath(input_file)))
        docs, reason, cause, _ = _read_one(path, ctx)
        if reason is not None:
            if raise_on_error:
                raise ReaderError(file_path_str(path), reason, cause)
            logger.warning("skipping %s: %s", file_path_str(path), reason)
        return docs
