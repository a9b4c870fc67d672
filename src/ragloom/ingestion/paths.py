"""Index files and folders into an index directory: what ``ragloom index`` does, as one library call.

:func:`index_paths` opens (or creates) the index, reads the paths lazily in batches, and runs the
ingestion engine over them with ``UPSERTS_AND_DELETE`` scoped to the given paths.  All the policy
is here, not in the CLI: the default node parser for the index's embed model, the embed model the
index records, which stored documents count as deleted (files gone below the indexed paths, or
now without indexable text; files that failed for a transient reason keep their nodes), the
summary.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

from ragloom.errors import EmptiedFolderError, PathNotFoundError
from ragloom.schema import Document, MetadataMode
from ragloom.readers.base import escaped_path, file_path_str, fs_path, path_text
from ragloom.ingestion.junk import JunkFilter
from ragloom.readers.directory import DEFAULT_MAX_FILE_SIZE, DEFAULT_READ_TIMEOUT
from ragloom.readers.report import FileSkipped

logger = logging.getLogger(__name__)

__all__ = ["FILES_PER_BATCH", "CHARS_PER_BATCH", "IndexProgress", "IndexSummary", "index_paths", "open_index"]

#: A batch (split, embedded and committed in one transaction) closes at this many files or this
#: many characters of text, whichever comes first, which bounds memory.
FILES_PER_BATCH = 32
CHARS_PER_BATCH = 1_000_000
#: Seconds between two attempts to take a locked index (``wait=True``).
LOCK_POLL_SECONDS = 0.2
#: The node parser ``ragloom index`` uses by default (see :func:`~ragloom.settings.default_node_parser`):
#: ``"auto"`` routes each file by its type.  Measured against ``"sentence"`` before it became the default
#: (README, "Retrieval quality"): the default hybrid search does not lose on any benchmark set, and
#: Markdown sections rank the right FastAPI page first where sentence chunks did not.
DEFAULT_PARSER = "auto"
#: File name of the index database inside an index directory.
INDEX_DB_NAME = "ragloom.sqlite"

PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class IndexSummary:
    """What :func:`index_paths` did.  ``documents``: ``read``, ``added``, ``updated``, ``unchanged``,
    ``deleted``, ``in_index``; ``skipped``: ``[{"path", "reason", "transient", "kind"}]`` (``kind``:
    ``"file"`` not read, ``"member"`` of an archive not read, ``"folder"`` not entered, or ``"document"``
    that could not be split); ``nodes_written`` (stored this run),
    ``nodes_embedded`` (of those, computed by the model), ``nodes_reused`` (vectors from the
    embedding cache), ``tokens_embedded`` (tokens of the nodes written, embedded metadata included,
    in the model's tokenizer), ``nodes_total``, ``batches`` (transactions), ``seconds`` (wall).
    ``chunk_size`` bounds every node; ``chunk_overlap`` applies to sentence-split files (with
    ``parser="auto"`` the Markdown, HTML, JSON and code parsers cut at their structure without
    overlap)."""

    index_dir: str
    files_total: int
    files_read: int
    skipped: List[Dict[str, Any]]
    documents: Dict[str, Optional[int]]
    nodes_written: int
    nodes_embedded: int
    nodes_reused: int
    tokens_embedded: int
    nodes_total: Optional[int]
    batches: int
    chunk_size: int
    chunk_overlap: int
    rechunked: bool
    embed_model: str
    embed_cache: Optional[Dict[str, int]]
    seconds: float
    parser: str = DEFAULT_PARSER
    #: chunks left out as junk, per file: ``[{"path", "chunks", "kinds": {kind: count}}]``
    junk: List[Dict[str, Any]] = field(default_factory=list)
    #: the quantized variant of ``embed_model`` the vectors are in (``"int8"``), ``None`` for full precision
    embed_quantize: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        fields = asdict(self)
        fields.pop("extra")
        out: Dict[str, Any] = {}
        for key, value in fields.items():
            if key != "embed_quantize":
                out[key] = value
            if key == "embed_model":  # the variant beside the model's name
                out["embed_quantize"] = self.embed_quantize
        out.update(self.extra)
        return out


@dataclass
class IndexProgress:
    """How far an :func:`index_paths` run is, passed to its ``on_progress`` after every file read
    and every committed batch: ``files_total``, ``files_done`` (read or skipped), ``nodes_embedded``
    (nodes through the embed model or its cache so far), ``nodes_written`` (nodes committed),
    ``batches`` (transactions committed), ``skipped`` (as :class:`IndexSummary`'s, so far)."""

    files_total: int = 0
    files_done: int = 0
    nodes_embedded: int = 0
    nodes_written: int = 0
    batches: int = 0
    skipped: List[Dict[str, Any]] = field(default_factory=list)

    @property
    def fraction(self) -> float:
        """Files done over files total (0..1; 1 for an empty run)."""
        return 1.0 if not self.files_total else min(1.0, self.files_done / self.files_total)

    def to_dict(self) -> Dict[str, Any]:
        out = asdict(self)
        out["fraction"] = round(self.fraction, 4)
        return out


def canonical_path(path: PathLike) -> str:
    """``path`` with symlinks resolved, as POSIX text (:func:`~ragloom.readers.base.path_text`): the id of
    a file's document whatever spelling reached it."""
    raw = fs_path(path) if isinstance(path, str) else os.fspath(path)
    return path_text(Path(os.path.realpath(raw)).as_posix())


#: In an index directory whose vectors live in a server store: the store's spec (JSON).
VECTOR_STORE_FILE = "vector_store.json"


def parse_vector_store(spec: str) -> Dict[str, str]:
    """``"milvus://HOST:PORT/COLLECTION"`` → ``{"kind": "milvus", "uri": "http://HOST:PORT",
    "collection_name": COLLECTION}`` (``milvus+https://`` for TLS).

    Raises:
        ValueError: another form.
    """
    m = re.fullmatch(r"milvus(\+https)?://([^/:\s]+:\d{1,5})/([A-Za-z_][A-Za-z0-9_]{0,254})", spec or "")
    if m is None:
        raise ValueError(f"vector_store (--vector-store) must look like milvus://HOST:PORT/COLLECTION (or "
                         f"milvus+https://...; COLLECTION: letters, digits, _), got {spec!r}")
    scheme = "https" if m.group(1) else "http"
    return {"kind": "milvus", "uri": f"{scheme}://{m.group(2)}", "collection_name": m.group(3)}


def _recorded_vector_store(index_dir: Path, spec: Optional[str], create: bool) -> Any:
    """The server vector store ``index_dir`` records (recording ``spec`` in a new index), or ``None``.
    The Milvus token, if any, comes from the ``MILVUS_TOKEN`` environment variable (never recorded)."""
    path = index_dir / VECTOR_STORE_FILE
    recorded = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    if spec is not None:
        wanted = parse_vector_store(spec)
        if recorded is None and (index_dir / INDEX_DB_NAME).exists():
            raise ValueError(f"the index in {index_dir} keeps its vectors in its own SQLite store; "
                             f"vector_store {spec!r} needs a new --index-dir")
        if recorded is not None and recorded != wanted:
            raise ValueError(f"the index in {index_dir} keeps its vectors in {recorded['kind']} collection "
                             f"{recorded['collection_name']!r} at {recorded['uri']}, not {spec!r}")
        store = _connect(wanted)
        if recorded is None and create:  # recorded once the store answered
            index_dir.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(wanted), encoding="utf-8")
        return store
    return None if recorded is None else _connect(recorded)


def _connect(spec: Dict[str, str]) -> Any:
    """A :class:`~ragloom.vector_stores.MilvusVectorStore` for a :func:`parse_vector_store` spec.

    Raises:
        ConnectionError: the server does not answer (the message names it).
    """
    from ragloom.vector_stores.milvus import MilvusVectorStore

    try:
        return MilvusVectorStore(uri=spec["uri"], collection_name=spec["collection_name"],
                                 token=os.environ.get("MILVUS_TOKEN", ""))
    except (ValueError, ImportError):
        raise
    except Exception as exc:  # pymilvus raises its own MilvusException (and grpc errors) for a dead server
        raise ConnectionError(f"cannot reach Milvus at {spec['uri']} (collection {spec['collection_name']!r}): "
                              f"{exc}") from exc


def open_index(index_dir: PathLike, create: bool = True, embed_model: Any = None,
               vector_store: Optional[str] = None) -> Any:
    """The :class:`~ragloom.indices.VectorStoreIndex` persisted in ``index_dir`` (a new one if there is
    none and ``create``), with the embed model it records.

    ``embed_model``: ``None`` / ``"default"`` — the recorded model (the bundled one for a new index);
    anything else (a :func:`~ragloom.embeddings.resolve_embed_model` spec or instance) must be the
    recorded model.  ``vector_store``: ``None`` (the recorded store: the index's own SQLite one,
    or the server store it was created with) or a :func:`parse_vector_store` spec, recorded in a
    new index (:data:`VECTOR_STORE_FILE`) and checked against an existing one; the docstore stays
    in ``index_dir``.

    Raises:
        ValueError: ``embed_model`` differs from the model the index was built with; ``vector_store``
            malformed or not the store of the existing index.
        FileNotFoundError: no index in ``index_dir`` and not ``create``.
        ConnectionError: the recorded (or given) Milvus server does not answer.
    """
    from ragloom.embeddings import resolve_embed_model
    from ragloom.embeddings.cache import attach_query_cache
    from ragloom.indices import VectorStoreIndex, load_index_from_storage
    from ragloom.storage import StorageContext
    from ragloom.storage.storage_context import holds_index

    if not create and not holds_index(index_dir):
        raise FileNotFoundError(f"no index in {index_dir}: run 'ragloom index PATH' first")
    server_store = _recorded_vector_store(Path(index_dir), vector_store, create)
    sc = StorageContext.from_defaults(persist_dir=str(index_dir), create_if_missing=create, vector_store=server_store)
    explicit = None if embed_model in (None, "default") else resolve_embed_model(embed_model)
    structs = list(sc.index_store.index_structs())
    if structs:
        index = load_index_from_storage(sc, index_id=_vector_index_id(Path(index_dir), structs), embed_model=explicit)
    else:
        index = VectorStoreIndex(storage_context=sc, embed_model=explicit or resolve_embed_model("default"))
    attach_query_cache(index.embed_model, Path(index_dir))
    return index


def _vector_index_id(index_dir: Path, structs: Sequence[Any]) -> str:
    """The id of the one :class:`~ragloom.indices.VectorStoreIndex` among the index structs of
    ``index_dir``: the CLI and the server work on it, beside any other index kinds saved there from
    Python (``SummaryIndex``, keyword tables … sharing the storage context).

    Raises:
        ValueError: no vector index is stored (the folder holds only other kinds), or several are.
    """
    from ragloom.data_structs import IndexDict
    from ragloom.indices.loading import index_class_for

    vector = [s.index_id for s in structs if isinstance(s, IndexDict)]
    if len(vector) == 1:
        return vector[0]
    load_hint = (f"open it in Python: load_index_from_storage(StorageContext.from_defaults(persist_dir="
                 f"{str(index_dir)!r}), index_id=...)")
    if not vector:
        kinds = ", ".join(sorted({index_class_for(s).__name__ for s in structs}))
        raise ValueError(
            f"{index_dir} holds a {kinds} and no VectorStoreIndex; ragloom's commands and server work on a "
            f"VectorStoreIndex (the kind 'ragloom index' builds); {load_hint}"
        )
    raise ValueError(
        f"{index_dir} holds several VectorStoreIndexes ({', '.join(sorted(vector))}); ragloom's commands and "
        f"server need a folder with one; {load_hint}"
    )


def _readers(paths: Sequence[Path], recursive: bool, required_exts: Optional[List[str]],
             exclude: Optional[List[str]], include_hidden: bool, within: Optional[Sequence[PathLike]],
             limits: Optional[Dict[str, Any]] = None,
             index_dir: Optional[Path] = None) -> Tuple[List[Any], List[List[str]]]:
    """``(readers, listing)``: one reader for the files among ``paths`` and one per folder, and the
    files each will read (:meth:`~ragloom.readers.SimpleDirectoryReader.list_resources`); ``limits``:
    the ``max_file_size`` / ``read_timeout`` arguments of ``SimpleDirectoryReader``.  Every file is
    read once: a folder given twice, a folder inside another one given (the files the outer one
    does not read, such as those an exclude pattern relative to it leaves out, are read as named
    files) and a file a folder given reads are left out.  A folder that holds ``index_dir`` (an index
    kept beside the documents it indexes) is read without it: its database, lock and journal files
    are not documents."""
    from ragloom.readers import SimpleDirectoryReader

    limits = limits or {}
    own = index_dir.resolve() if index_dir is not None else None
    folders: List[Any] = []
    folder_lists: List[List[str]] = []
    # every file a folder reader reads, by real path when several paths are given (a symlink in one
    # folder to a file another one reads is that file: each reader drops such pairs only among its own)
    key = canonical_path if len(paths) > 1 else (lambda f: f)
    listed: Set[str] = set()
    rest: List[str] = []  # files of a folder inside another one given that the outer folder does not read
    # (a folder given twice: once; outer folders first, so that one inside them is seen to be read there)
    for p in sorted(dict.fromkeys(p for p in paths if p.is_dir()), key=lambda d: len(d.parts)):
        skip = [own] if own is not None and own.is_relative_to(p.resolve()) and own != p.resolve() else None
        reader = SimpleDirectoryReader(
            input_dir=str(p), recursive=recursive, required_exts=required_exts, exclude=exclude,
            exclude_hidden=not include_hidden, within=within, skip_dirs=skip, **limits,
        )
        order = reader.list_resources()
        keys = [key(f) for f in order]
        mine = set(keys)
        if mine & listed:  # a folder inside another one given: its files are read there, and those
            # that folder's filters left out (an --exclude pattern relative to it) are read as files
            rest.extend(f for f, k in zip(order, keys, strict=True) if k not in listed)
            listed |= mine
            continue
        listed |= mine
        folders.append(reader)
        folder_lists.append(order)
    # a file given that a folder given also reads is read once, there (a hidden file, or one the
    # folder's filters leave out, is still read because it was named)
    files = [str(p) for p in dict.fromkeys(p for p in paths if p.is_file()) if key(file_path_str(p)) not in listed]
    named = set(files)
    files.extend(f for f in dict.fromkeys(rest) if f not in named)
    if not files:
        return folders, folder_lists
    reader = SimpleDirectoryReader(input_files=files, within=within, **limits)
    return [reader, *folders], [reader.list_resources(), *folder_lists]


def acquire_lock(index_dir: PathLike, wait: bool, on_wait: Optional[Callable[[Optional[int]], None]] = None) -> Any:
    """Take the writer lock of ``index_dir`` (:class:`~ragloom.storage.lock.IndexLock`) and return it.

    With ``wait``, polls every :data:`LOCK_POLL_SECONDS` until the holder exits, calling
    ``on_wait(pid)`` once first.

    Raises:
        IndexLockedError: the lock is held and not ``wait``.
    """
    from ragloom.errors import IndexLockedError
    from ragloom.storage.lock import IndexLock

    lock = IndexLock(index_dir)
    told = False
    while True:
        try:
            lock.acquire()
            return lock
        except IndexLockedError as exc:
            if not wait:
                raise
            if not told and on_wait is not None:
                on_wait(exc.pid)
            told = True
            time.sleep(LOCK_POLL_SECONDS)


def _check_batching(files_per_batch: int) -> None:
    if not isinstance(files_per_batch, int) or isinstance(files_per_batch, bool) or files_per_batch < 1:
        raise ValueError(f"files_per_batch must be an integer >= 1, got {files_per_batch!r}")


def index_paths(
    paths: Sequence[PathLike],
    index_dir: PathLike,
    *,
    chunk_size: Optional[int] = None,
    chunk_overlap: Optional[int] = None,
    required_exts: Optional[List[str]] = None,
    exclude: Optional[List[str]] = None,
    recursive: bool = True,
    full: bool = False,
    embed_model: Any = "default",
    show_progress: bool = True,
    include_hidden: bool = False,
    files_per_batch: int = FILES_PER_BATCH,
    wait: bool = False,
    on_wait: Optional[Callable[[Optional[int]], None]] = None,
    parser: Optional[str] = None,
    on_progress: Optional[Callable[[IndexProgress], None]] = None,
    within: Optional[Sequence[PathLike]] = None,
    max_file_size: Optional[int] = DEFAULT_MAX_FILE_SIZE,
    read_timeout: Optional[float] = DEFAULT_READ_TIMEOUT,
    keep_junk: bool = False,
    engine: str = "local",
    ray_address: Optional[str] = None,
    num_workers: Optional[int] = None,
    vector_store: Optional[str] = None,
) -> IndexSummary:
    """Index ``paths`` (files and folders) into ``index_dir`` incrementally; returns an :class:`IndexSummary`.

    The ingestion engine (:mod:`ragloom.ingestion.engine`) runs with ``UPSERTS_AND_DELETE``, the
    index's embed model with its persistent embedding cache (``index_dir/embed_cache.sqlite``) and
    :func:`~ragloom.settings.default_node_parser`:

    - Files are read lazily in batches of ``files_per_batch`` files or :data:`CHARS_PER_BATCH`
      characters; each batch commits in one SQLite transaction.  A run killed at any point keeps
      every committed batch; the next run skips those documents and redoes the rest.
    - A document is skipped when its fingerprint (text, content metadata and the chunking and
      embedding configuration) matches the stored one, so a changed ``chunk_size`` re-chunks.
      What is not given is an existing index's own, as last built: ``chunk_size``, ``chunk_overlap``
      (unless only ``chunk_size`` is given: then its default, ``chunk_size // 8``) and ``parser``; a
      new index gets the embed model's defaults and :data:`DEFAULT_PARSER`.
    - Documents of files deleted below the indexed ``paths``, or now without indexable text, are
      removed (all of them for a path that no longer exists: a deleted folder given again, with a
      warning); files that failed for a transient reason (:attr:`FileSkipped.transient
      <ragloom.readers.report.FileSkipped.transient>`) keep their documents.
    - A document that cannot be split is listed in ``skipped`` and the run goes on.
    - One writer at a time (:func:`acquire_lock`).
    - ``within``: read only files whose real path lies below these folders (see
      ``SimpleDirectoryReader(within=)``); others are skipped and reported.
    - ``on_progress(progress)`` is called with an :class:`IndexProgress` after every file read and
      every committed batch (the same object, updated; copy what you keep).
    - ``parser``: ``"sentence"`` or ``"auto"`` (route by file type), see
      :func:`~ragloom.settings.default_node_parser`.
    - ``max_file_size``: files larger than this many bytes are skipped unread and reported
      (default 100 MiB; ``None``: any size), as ``SimpleDirectoryReader(max_file_size=)``.
    - ``read_timeout``: a file whose read takes longer than this many seconds is skipped and
      reported (default 300; ``None``: no limit), as ``SimpleDirectoryReader(read_timeout=)``.
    - Chunks that are mostly base64, hex or control words (:func:`~ragloom.ingestion.junk.junk_kind`)
      are left out and listed per file in ``junk`` (``[{"path", "chunks", "kinds"}]``), unless
      ``keep_junk``.
    - ``engine="ray"``: files are read, split, embedded (and, into a server store, written) on a
      Ray cluster (:mod:`ragloom.ingestion.ray_engine`): ``ray_address`` as ``ray.init(address=)``
      takes it (``None``: a local cluster), ``num_workers`` embed actors (default 1).  The run is
      incremental and crash-safe as the local one; the embedding cache is not used.
    - ``engine="local"``: ``num_workers`` processes (default: the cores this process may use,
      :func:`~ragloom._system.available_cpus`) split the batches that hold over
      :data:`~ragloom.ingestion.transform.POOL_MIN_CHARS` characters of new or changed text; the
      processes start on the first such batch and serve the whole run, and the nodes, their ids
      and order are those of one process.
    - ``vector_store``: ``"milvus://HOST:PORT/COLLECTION"`` keeps the vectors (and chunk text) in
      that Milvus collection and the docstore in ``index_dir``; recorded, so later runs and queries
      on ``index_dir`` use it (:func:`open_index`).

    Raises:
        ValueError: bad ``chunk_size`` / ``chunk_overlap`` (checked before anything is created) or
            ``files_per_batch``; an ``embed_model`` other than the index's; ``engine`` not ``"local"``
            or ``"ray"``; ``num_workers`` < 1; ``vector_store`` malformed or not the index's.
        IndexLockedError: another process holds the index and not ``wait``.
        PathNotFoundError: (a ``FileNotFoundError``) a path does not exist and the index holds no
            document from it, or cannot be reached (a broken link, a folder above it that cannot be
            listed); checked before anything is written.
        EmptiedFolderError: documents would leave the index because the folder that held their
            files is now empty (an unmounted drive or share looks like that); checked before
            anything is written (:meth:`_Scope.check_emptied_folders`).
    """
    from ragloom.embeddings import resolve_embed_model
    from ragloom.settings import default_node_parser

    _check_batching(files_per_batch)
    if engine not in ("local", "ray"):
        raise ValueError(f"engine must be 'local' or 'ray', got {engine!r}")
    if num_workers is not None and (isinstance(num_workers, bool) or not isinstance(num_workers, int)
                                    or num_workers < 1):
        raise ValueError(f"num_workers must be None or an integer >= 1, got {num_workers!r}")
    if vector_store is not None:
        parse_vector_store(vector_store)
    if engine != "ray" and ray_address is not None:
        raise ValueError("ray_address (--address) needs engine='ray' (--engine ray)")
    if not (Path(index_dir) / INDEX_DB_NAME).exists():  # validate before creating anything
        for p in paths:
            if not os.path.exists(p):
                raise PathNotFoundError(errno.ENOENT, "no such file or folder", str(p))
        default_node_parser(resolve_embed_model(embed_model or "default"), chunk_size, chunk_overlap,
                            parser or DEFAULT_PARSER)
    lock = acquire_lock(index_dir, wait, on_wait)
    try:
        return _index_locked(
            [Path(canonical_path(p)) for p in paths], Path(index_dir), chunk_size, chunk_overlap, required_exts,
            exclude, recursive, full, embed_model, show_progress, include_hidden, files_per_batch, parser,
            on_progress, within, {"max_file_size": max_file_size, "read_timeout": read_timeout}, keep_junk,
            _Distribution(engine, ray_address, num_workers),
            vector_store,
        )
    finally:
        lock.release()


#: The fewest tokens of text a chunk must hold: a smaller ``chunk_size`` makes ``ragloom index``
#: refuse to start.  (The file path is not embedded; a document whose own embedded metadata, such
#: as a long Markdown title, leaves no room is skipped alone, with its reason.)
MIN_TEXT_TOKENS = 16


def _check_room_for_text(splitter: Any) -> None:
    """Raise ``ValueError`` before any file is read when ``splitter.chunk_size`` is under
    :data:`MIN_TEXT_TOKENS` tokens."""
    size = splitter.chunk_size
    if size and size < MIN_TEXT_TOKENS:
        raise ValueError(f"chunk_size {size} (--chunk-size) leaves under {MIN_TEXT_TOKENS} tokens of text per "
                         f"chunk; use --chunk-size 64 or more")


@dataclass
class _Distribution:
    """Where an :func:`index_paths` run does its work: ``engine``, Ray's address, embed actors."""

    engine: str = "local"
    address: Optional[str] = None
    num_workers: Optional[int] = None


def _absent(path: str) -> bool:
    """Whether the file ``path`` no longer exists (``ENOENT``, a broken link included); one that cannot
    be reached (a folder above it without permission) is not absent: its documents stay."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def _gone(path: Path) -> bool:
    """Whether ``path`` was deleted: it does not exist (``ENOENT``, not even as a broken link) in a
    folder that does and can be listed.  A path that cannot be reached (a folder without permission
    above it, a broken link) is not gone: its documents stay."""
    try:
        os.lstat(path)
        return False
    except FileNotFoundError:
        parent = path.parent
        return parent.is_dir() and os.access(parent, os.R_OK | os.X_OK)
    except OSError:
        return False


def _empty_folder(folder: str) -> bool:
    """Whether the folder ``folder`` can be listed and holds no entry at all (hidden ones included)."""
    try:
        with os.scandir(fs_path(folder)) as entries:
            return next(entries, None) is None
    except OSError:
        return False


class _Scope:
    """Which stored documents a run may delete: below the indexed paths, and gone or without text."""

    def __init__(self, paths: Sequence[Path], docstore: Any) -> None:
        self.paths = list(paths)
        self._gone_paths = [p for p in paths if _gone(p)]  # deleted folders or files given again
        # a file given scopes itself, a folder what lies below it; a gone path both ways: its
        # documents are removed
        self.files = {str(p) for p in paths if p.is_file()} | {str(p) for p in self._gone_paths}
        self.folders = [str(p) + "/" for p in paths if p.is_dir()] + [str(p) + "/" for p in self._gone_paths]
        self.docstore = docstore
        self.read: Set[str] = set()
        self.gone: Set[str] = set()  # present but without indexable text now
        self._paths: Optional[Dict[str, str]] = None

    def file_of(self, doc_id: str) -> str:
        """The file a stored document came from: its ``file_path`` metadata, else its id."""
        if self._paths is None:
            infos = self.docstore.get_all_ref_doc_info() or {}
            self._paths = {
                ref: str(info.metadata["file_path"]) for ref, info in infos.items() if "file_path" in info.metadata
            }
        return self._paths.get(doc_id, doc_id)

    def holds_from(self, path: Path) -> int:
        """How many stored documents came from ``path`` (a file) or from below it (a folder)."""
        self.file_of("")  # loads the paths
        assert self._paths is not None
        root = str(path)
        return sum(1 for f in self._paths.values() if f == root or f.startswith(root + "/"))

    def check_gone_paths(self) -> None:
        """Warn about each path given that no longer exists and whose documents will leave the index.

        Raises:
            PathNotFoundError: such a path that no stored document came from (a typo)."""
        for p in self.paths:
            if os.path.exists(p):
                continue
            if p not in self._gone_paths:
                raise PathNotFoundError(errno.ENOENT, "cannot be reached (a broken link, or a folder that cannot be "
                                        "listed); nothing was removed", str(p))
            held = self.holds_from(p)
            if not held:
                raise PathNotFoundError(errno.ENOENT, "no such file or folder, and the index holds nothing from it",
                                        str(p))
            logger.warning("%s no longer exists: its %d document%s leave%s the index", display_path(str(p)), held,
                           "" if held == 1 else "s", "s" if held == 1 else "")

    def check_emptied_folders(self, listed: Collection[str]) -> None:
        """Refuse to remove documents whose files are absent because a folder holding them is empty.

        A drive or network share that is not mounted leaves its mount point behind, empty: every
        document from below it looks deleted (and a path given below the mount point looks gone).
        For each stored document in scope that ``listed`` (the files the readers will read) does not
        hold and whose file is absent, the nearest folder above the file that still exists is found;
        when that folder holds nothing at all, the run stops before anything is written.  A folder
        deleted with its files, or files deleted from a folder that keeps other entries, leave the
        index as before.

        Raises:
            EmptiedFolderError: naming the first such folder and the documents held from below it."""
        self.file_of("")  # loads the paths
        assert self._paths is not None
        emptied: Set[str] = set()
        verdict: Dict[str, bool] = {}  # folder -> whether it exists and is empty
        for path in self._paths.values():
            if path in listed or not self._covers(path) or not _absent(fs_path(path)):
                continue
            folder = os.path.dirname(path)
            while folder not in verdict and not os.path.isdir(fs_path(folder)) and folder != os.path.dirname(folder):
                folder = os.path.dirname(folder)
            if folder not in verdict:
                verdict[folder] = _empty_folder(folder)
            if verdict[folder]:
                emptied.add(folder)
        if emptied:
            folder = min(emptied)
            raise EmptiedFolderError(display_path(folder), self.holds_from(Path(folder)))

    def _covers(self, path: str) -> bool:
        """Whether the document of the file ``path`` is in scope: a file given, or below a folder given."""
        return path in self.files or any(path.startswith(r) for r in self.folders)

    def __call__(self, doc_id: str) -> bool:
        path = self.file_of(doc_id)
        if not self._covers(path):
            return False
        return path in self.gone or path in self.read or _absent(fs_path(path))


#: the node parser class each ``parser`` choice records (see :func:`~ragloom.settings.default_node_parser`)
_PARSER_CLASSES = {"SimpleFileNodeParser": "auto", "SentenceSplitter": "sentence"}


def _recorded_chunking(recorded: Optional[Dict[str, Any]]) -> Tuple[Optional[int], Optional[int], Optional[str]]:
    """``(chunk_size, chunk_overlap, parser)`` of the splitter an index was last built with, from
    the configuration :func:`index_paths` records (its first step that has a ``chunk_size``), or
    ``None`` for each it does not show (a new index: all three)."""
    if not recorded:
        return None, None, None
    steps = recorded.get("transformations") or [recorded]
    for step in steps:
        if isinstance(step, dict) and isinstance(step.get("chunk_size"), int):
            overlap = step.get("chunk_overlap")
            return (step["chunk_size"], overlap if isinstance(overlap, int) else None,
                    _PARSER_CLASSES.get(str(step.get("class_name"))))
    return None, None, None


def _index_locked(paths: List[Path], index_dir: Path, chunk_size: Optional[int], chunk_overlap: Optional[int],
                  required_exts: Optional[List[str]], exclude: Optional[List[str]], recursive: bool, full: bool,
                  embed_model: Any, show_progress: bool, include_hidden: bool,
                  files_per_batch: int, parser: Optional[str],
                  report: Optional[Callable[[IndexProgress], None]],
                  within: Optional[Sequence[PathLike]] = None,
                  limits: Optional[Dict[str, Any]] = None, keep_junk: bool = False,
                  where: Optional[_Distribution] = None, vector_store: Optional[str] = None) -> IndexSummary:
    from ragloom.ingestion import DocstoreStrategy, FailureKind, IngestionPipeline
    from ragloom._system import available_cpus
    from ragloom.ingestion.transform import SplitPool
    from ragloom.settings import default_node_parser

    dist = where or _Distribution()
    t0 = time.perf_counter()
    index = open_index(index_dir, create=True, embed_model=embed_model, vector_store=vector_store)
    model = index.embed_model
    if model.embed_cache is None:  # persistent, shared by every run over this index
        from ragloom.embeddings.cache import DEFAULT_CACHE_NAME

        model.embed_cache = index_dir / DEFAULT_CACHE_NAME
    # what is not given is the index's own, as last built: the chunk size, the overlap too when the
    # size is not given either (a new size alone gets its default overlap), and the parser
    own_size, own_overlap, own_parser = _recorded_chunking(index.index_struct.node_parser)
    limit = model.max_text_tokens
    if own_size is not None and limit is not None and own_size > limit:  # (recorded by a Python-API build)
        own_size = own_overlap = None
    if chunk_size is None:
        chunk_size = own_size
        if chunk_overlap is None:
            chunk_overlap = own_overlap
    if parser is None:
        parser = own_parser or DEFAULT_PARSER
    splitter = default_node_parser(model, chunk_size, chunk_overlap, parser)
    tokenizer = model.get_tokenizer()
    # the cache's counters before this run: a server runs many jobs on one model and cache
    cache_before = model.embed_cache.stats() if model.embed_cache is not None else {}

    # Indexes written before fingerprints held the configuration recorded it in the index struct:
    # a differing record means a re-chunk (fingerprints detect it by themselves from then on).
    struct = index.index_struct
    junk = None if keep_junk else JunkFilter()
    # recorded so that load_index_from_storage rebuilds the same steps (and fingerprints) for a refresh
    config: Dict[str, Any] = (dict(splitter.to_config(), fingerprinted=True) if junk is None else
                              {"transformations": [splitter.to_config(), junk.to_config()], "fingerprinted": True})
    recorded = dict(struct.node_parser or {})
    legacy = bool(recorded) and not recorded.get("fingerprinted")
    rechunk = bool(recorded) and recorded != config
    if rechunk:
        logger.info("chunking configuration changed: re-chunking every document")

    pipeline = IngestionPipeline(
        transformations=[splitter, model] if junk is None else [splitter, junk, model],
        docstore=index.docstore,
        vector_store=index.vector_store,
        docstore_strategy=DocstoreStrategy.UPSERTS_AND_DELETE,
        # The docstore's fingerprints skip unchanged documents and the embed model's text-keyed
        # embed_cache catches unchanged chunks of changed ones (and work of a killed run); a
        # per-node IngestionCache would store every vector a second time.
        disable_cache=True,
    )

    # one walk of the folders for everything below
    readers, listing = _readers(paths, recursive, required_exts, exclude, include_hidden, within, limits,
                                Path(index_dir))
    listed = [p for files in listing for p in files]
    _check_room_for_text(splitter)
    scope = _Scope(paths, index.docstore)
    scope.check_emptied_folders(set(listed))
    scope.check_gone_paths()
    feed = _Feed(readers, scope, files_per_batch, show_progress and sys.stderr.isatty(), tokenizer, report,
                 files_total=len(listed))
    logger.info("indexing %d files into %s", feed.progress.files_total, index_dir)
    if not feed.progress.files_total:
        logger.warning("no files to index under %s (check the paths, required_exts / --ext and exclude / --exclude)",
                       ", ".join(display_path(str(p)) for p in paths))
    force = full or (rechunk and legacy)
    try:
        if dist.engine == "ray":
            from ragloom.ingestion.ray_engine import FileEvents, RayOptions, run_files_on_ray

            stats = run_files_on_ray(
                pipeline.engine(store_doc_text=False), readers,
                RayOptions(address=dist.address, num_workers=dist.num_workers or 1, files_per_task=files_per_batch),
                listing=listing, force=force, delete_scope=scope, progress_callback=feed.on_event,
                events=FileEvents(read=feed.note_read, skipped=feed.note_skipped))
        else:
            workers = dist.num_workers or available_cpus()
            # batches with over POOL_MIN_CHARS of text to split go to worker processes kept for the run
            pool = SplitPool(workers) if workers > 1 else None
            try:
                stats = pipeline.run_batches(feed.batches(), force=force, delete_scope=scope,
                                             progress_callback=feed.on_event, store_doc_text=False, pool=pool,
                                             # the documents are read here and dropped after their batch
                                             compact_embeddings=True)
            except BaseException:  # an error or Ctrl-C: the workers' queued parts are not waited for
                if pool is not None:
                    pool.close(cancel=True)
                raise
            if pool is not None:
                pool.close()
    finally:
        feed.close()
    skipped = feed.progress.skipped
    total_files = feed.progress.files_total
    for failure in stats.failed:
        failed_path = failure.source_path or failure.doc_id
        transient = failure.kind == FailureKind.TRANSIENT
        skipped.append({"path": display_path(failed_path),
                        "reason": failure.message if transient else f"cannot be split: {failure.message}",
                        "transient": transient, "kind": "document"})

    junk_files: Dict[str, Dict[str, Any]] = {}
    for ref, path, kind in junk.dropped if junk is not None else []:
        entry = junk_files.setdefault(path or ref or "?", {"path": display_path(path or ref or "?"), "chunks": 0,
                                                            "kinds": {}})
        entry["chunks"] += 1
        entry["kinds"][kind] = entry["kinds"].get(kind, 0) + 1

    if struct.node_parser != config:
        struct.node_parser = config
        index.storage_context.index_store.add_index_struct(struct)
    # the approximate-nearest-neighbour index, once the store is big enough (still under the lock)
    ann = index.vector_store.optimize()

    return IndexSummary(
        index_dir=str(index_dir),
        files_total=total_files,
        files_read=len(scope.read),
        skipped=skipped,
        documents={"read": stats.documents, "added": stats.added, "updated": stats.updated,
                   "unchanged": stats.unchanged, "deleted": stats.deleted,
                   "in_index": stats.documents_in_docstore},
        nodes_written=stats.nodes_written,
        nodes_embedded=stats.nodes_embedded,
        nodes_reused=stats.nodes_reused,
        tokens_embedded=feed.tokens,
        nodes_total=index.vector_store.count(),
        batches=stats.batches,
        chunk_size=splitter.chunk_size,
        chunk_overlap=splitter.chunk_overlap,
        rechunked=rechunk,
        embed_model=model.model_name,
        embed_quantize=model.to_config().get("quantize"),
        embed_cache=({k: v - cache_before.get(k, 0) for k, v in model.embed_cache.stats().items()}
                     if model.embed_cache is not None else None),
        seconds=round(time.perf_counter() - t0, 3),
        parser=parser,
        junk=list(junk_files.values()),
        extra=_extra_summary(ann, dist, index_dir, index),
    )


def _extra_summary(ann: Dict[str, Any], where: _Distribution, index_dir: Path, index: Any) -> Dict[str, Any]:
    extra: Dict[str, Any] = {"ann": ann} if ann else {}
    if where.engine == "ray":
        extra.update(engine="ray", ray_workers=where.num_workers or 1)
    recorded = index_dir / VECTOR_STORE_FILE
    if recorded.is_file():
        spec = json.loads(recorded.read_text(encoding="utf-8"))
        extra["vector_store"] = f"{spec['kind']} collection {spec['collection_name']} at {spec['uri']}"
        # a server store can be changed behind the docstore's back (a dropped collection)
        infos = index.docstore.get_all_ref_doc_info() or {}
        expected = sum(len(info.node_ids) for info in infos.values())
        have = index.vector_store.count()
        if have < expected:
            extra["warning"] = (f"the {spec['kind']} collection holds {have} nodes but the index records {expected}: "
                                "it was changed outside ragloom; run 'ragloom index --full' on the same paths to "
                                "rebuild it")
            logger.warning("%s", extra["warning"])
    return extra


def optimize_index(index_dir: PathLike, force: bool = True, wait: bool = False,
                   on_wait: Optional[Callable[[Optional[int]], None]] = None) -> Dict[str, Any]:
    """``ragloom optimize``: bring the index's derived search structures up to date (today the
    approximate-nearest-neighbour index of the SQLite store,
    :meth:`~ragloom.vector_stores.sqlite.SQLiteVectorStore.optimize`), holding the writer lock.

    Args:
        force: rebuild even if the store thinks it is current (default: yes, as a user asking for
            it expects).
        wait / on_wait: as :func:`index_paths`.

    Returns:
        ``{"index_dir", "nodes", **what the store did}``.

    Raises:
        FileNotFoundError: no index in ``index_dir``.
        IndexLockedError: another process holds the index and not ``wait``.
    """
    if not (Path(index_dir) / INDEX_DB_NAME).exists():
        raise FileNotFoundError(f"no index in {index_dir}: run 'ragloom index PATH' first")
    lock = acquire_lock(index_dir, wait, on_wait)
    try:
        from ragloom.storage import StorageContext

        store = StorageContext.from_defaults(persist_dir=str(index_dir), create_if_missing=False).vector_store
        return {"index_dir": str(index_dir), "nodes": store.count(), **store.optimize(force=force)}
    finally:
        lock.release()


#: A batch with at least this many characters to split sets the embedding bar to "Splitting …".
SPLIT_NOTE_CHARS = 2_000_000


class _Feed:
    """Reads the files of an :func:`index_paths` run batch by batch, keeping its progress (the bars
    and :class:`IndexProgress`), its deletion scope and the count of tokens written."""

    def __init__(self, readers: List[Any], scope: _Scope, files_per_batch: int, show_progress: bool,
                 tokenizer: Any, report: Optional[Callable[[IndexProgress], None]], files_total: int) -> None:
        from tqdm.auto import tqdm

        self.readers = readers
        self.scope = scope
        self.files_per_batch = files_per_batch
        self.tokenizer = tokenizer
        self.report = report
        self.tokens = 0
        self._transient = 0
        self.progress = IndexProgress(files_total=files_total)
        self.bar_files = tqdm(total=self.progress.files_total, desc="Reading  ", unit="file", position=0,
                              disable=not show_progress)
        # the number of nodes is known only batch by batch, so this bar counts (with a rate) instead
        # of showing a percentage that would jump back each time a batch adds to the total
        self.bar_embed = tqdm(total=None, desc="Embedding", unit="node", position=1, disable=not show_progress)
        self._tell()

    def _tell(self) -> None:
        if self.report is not None:
            self.report(self.progress)

    def batches(self) -> Iterator[List[Document]]:
        """Documents in batches of ``files_per_batch`` files or :data:`CHARS_PER_BATCH` characters."""
        progress = self.progress
        for reader in self.readers:
            batch: List[Document] = []
            files_in_batch = chars_in_batch = 0
            for docs in reader.iter_data():
                self.bar_files.update(1)
                progress.files_done += 1
                self._tell()
                batch.extend(docs)
                files_in_batch += 1
                chars_in_batch += sum(len(d.text) for d in docs)
                if files_in_batch >= self.files_per_batch or chars_in_batch >= CHARS_PER_BATCH:
                    yield batch
                    batch, files_in_batch, chars_in_batch = [], 0, 0
            if batch:
                yield batch
            self._account(reader.report)
        self.bar_files.update(self.bar_files.total - self.bar_files.n)

    def _account(self, read_report: Any) -> None:
        """Record what a reader read and skipped (skipped files count as done)."""
        self.scope.read.update(canonical_path(f.path) for f in read_report.read)
        for s in read_report.skipped:
            self._skipped(s)
        for s in read_report.members_skipped:  # listed for the user; the archive itself was read
            self.progress.skipped.append({"path": display_path(s.path), "reason": s.reason, "transient": False,
                                          "kind": "member"})
        self.progress.files_done = len(self.scope.read) + len(self.scope.gone) + self._transient
        self._tell()

    def _skipped(self, s: FileSkipped) -> None:
        folder = os.path.isdir(fs_path(s.path))  # a folder the listing did not enter: listed, but no file done
        self.progress.skipped.append({"path": display_path(s.path), "reason": s.reason, "transient": s.transient,
                                      "kind": "folder" if folder else "file"})
        if folder:
            return
        if s.transient:
            self._transient += 1
        else:
            self.scope.gone.add(canonical_path(s.path))

    def note_read(self, path: str) -> None:
        """One file read elsewhere (a distributed run's plan pass)."""
        self.scope.read.add(canonical_path(path))
        self._file_done()

    def note_skipped(self, path: str, reason: str) -> None:
        """One file skipped elsewhere, with the reason its reader gave."""
        self._skipped(FileSkipped(path, reason))
        self._file_done()

    def _file_done(self) -> None:
        self.bar_files.update(1)
        self.progress.files_done += 1
        self._tell()

    def on_event(self, event: str, payload: Any) -> None:
        """The engine's progress callback (``"splitting"``: characters; ``"embedding"``,
        ``"embedded"``: counts; ``"committed"``: the nodes)."""
        if event == "splitting":
            if payload >= SPLIT_NOTE_CHARS:  # a long split shows no other sign of life
                self.bar_embed.set_description_str(f"Splitting {payload / 1e6:.0f} MB of text")
                logger.info("splitting %.1f MB of text", payload / 1e6)
        elif event == "embedding":
            self.bar_embed.set_description_str("Embedding")
        elif event == "embedded":
            self.bar_embed.update(payload)
            self.progress.nodes_embedded += int(payload)
            self._tell()
        elif event == "committed":
            self.progress.batches += 1
            self.progress.nodes_written += len(payload or [])
            if self.tokenizer is not None and payload:
                self.tokens += int(sum(self.tokenizer.count_batch([n.get_content(MetadataMode.EMBED)
                                                                   for n in payload])))
                logger.info("committed a batch of %d nodes", len(payload))
            self._tell()

    def close(self) -> None:
        self.bar_files.close()
        self.bar_embed.close()


def display_path(path: str) -> str:
    """``path`` relative to the working directory when it lies below it, else as stored; bytes of a
    name that is not UTF-8 shown as ``\\xNN`` (:func:`~ragloom.readers.base.escaped_path`)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return escaped_path(path)
    return escaped_path(path if rel.startswith("..") else rel)
