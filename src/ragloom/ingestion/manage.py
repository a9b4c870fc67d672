"""Looking after index directories: what ``ragloom list`` and ``ragloom remove`` do, as library calls.

- :func:`list_indexes` finds the index directories below some folders (as LEANN's ``leann list``
  discovers the indexes of a project) and describes each without loading a model.
- :func:`remove_paths` takes the documents of files and folders out of an index, through
  :meth:`VectorStoreIndex.delete_ref_doc <ragloom.indices.VectorStoreIndex.delete_ref_doc>` in one
  transaction, under the index's writer lock.

Policy lives here; ``ragloom/cli/manage.py`` only parses arguments and prints.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from ragloom.ingestion.paths import (
    INDEX_DB_NAME,
    VECTOR_STORE_FILE,
    acquire_lock,
    canonical_path,
    display_path,
    open_index,
)

logger = logging.getLogger(__name__)

__all__ = ["list_indexes", "describe_index", "find_index_dirs", "remove_paths", "documents_under",
           "DEFAULT_MAX_DEPTH", "SKIPPED_DIR_NAMES"]

PathLike = Union[str, "os.PathLike[str]"]

#: How deep :func:`find_index_dirs` descends below each root (the root is depth 0).
DEFAULT_MAX_DEPTH = 3
#: Folders never searched for indexes (with every hidden folder): they are large and hold none.
SKIPPED_DIR_NAMES = frozenset({"node_modules", "__pycache__", "site-packages", "venv", "env"})


def _iso(ts: Optional[float]) -> Optional[str]:
    return None if ts is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def find_index_dirs(roots: Sequence[PathLike], max_depth: int = DEFAULT_MAX_DEPTH) -> List[Path]:
    """The index directories (folders holding ``ragloom.sqlite``) at or below ``roots``, at most
    ``max_depth`` levels down, sorted; hidden folders and :data:`SKIPPED_DIR_NAMES` are not entered
    (a root itself always is), nor the inside of an index directory.

    Raises:
        ValueError: ``max_depth`` < 0.
        FileNotFoundError: a root is not a folder.
    """
    if not isinstance(max_depth, int) or isinstance(max_depth, bool) or max_depth < 0:
        raise ValueError(f"max_depth must be an integer >= 0, got {max_depth!r}")
    found: List[Path] = []
    for root in roots:
        top = Path(root)
        if not top.is_dir():
            raise FileNotFoundError(f"{top} is not a folder")
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            here = Path(dirpath)
            depth = len(here.relative_to(top).parts)
            if INDEX_DB_NAME in filenames:
                found.append(here)
                dirnames[:] = []
                continue
            if depth >= max_depth:
                dirnames[:] = []
                continue
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIPPED_DIR_NAMES)
    return sorted(set(found), key=str)


def _dir_bytes(directory: Path) -> int:
    size = 0
    for dirpath, _dirs, files in os.walk(directory):
        for name in files:
            try:
                size += os.path.getsize(os.path.join(dirpath, name))
            except OSError:  # removed meanwhile (a WAL checkpoint)
                pass
    return size


def _updated_at(directory: Path) -> Optional[float]:
    times = []
    for name in (INDEX_DB_NAME, INDEX_DB_NAME + "-wal"):
        try:
            times.append((directory / name).stat().st_mtime)
        except OSError:
            pass
    return max(times) if times else None


def _documents_and_nodes(storage_context: Any, structs: Sequence[Any], server_store: bool) -> Tuple[int, int]:
    """``(source documents, nodes)``.  Nodes: the most any index of the directory holds (indexes in one
    directory usually hold the same nodes): a vector index its vector store's count (the docstore's
    links when the vectors are in a server store), a docstore-backed index (``SummaryIndex``, keyword,
    tree, graph) the nodes its index-store records hold."""
    from ragloom.data_structs import IndexDict

    total, rows = storage_context.docstore.list_ref_docs(offset=0, limit=None if server_store else 1)
    counts = [storage_context.index_store.count_index_nodes(s.index_id)
              for s in structs if not isinstance(s, IndexDict)]
    if any(isinstance(s, IndexDict) for s in structs) or not counts:
        counts.append(sum(r.node_count for r in rows) if server_store else storage_context.vector_store.count())
    return total, max(counts)


def describe_index(index_dir: PathLike) -> Dict[str, Any]:
    """One index directory as ``ragloom list`` shows it, read without loading any model or
    contacting a server:

    ``{"index_dir", "indexes": [index ids], "types": [struct types], "documents", "nodes",
    "embed_model", "embed_class", "quantize", "dimension", "vector_store" ("sqlite", or the recorded
    server store), "bytes" (every file in the directory), "updated_at" (ISO 8601 UTC of the last
    write), "error"}``; ``error`` is ``None``, or why the directory could not be read (the other
    fields are then ``None`` where unknown).  ``nodes``: the most nodes any of its indexes holds
    (docstore-backed indexes counted from their records); ``dimension``: the length of the vectors
    in the SQLite vector store (``None`` while it is empty), the recorded model's for a server store.
    """
    from ragloom.data_structs import IndexDict
    from ragloom.storage import StorageContext

    directory = Path(index_dir)
    out: Dict[str, Any] = {"index_dir": str(directory), "indexes": [], "types": [], "documents": None,
                           "nodes": None, "embed_model": None, "embed_class": None, "quantize": None,
                           "dimension": None, "vector_store": "sqlite", "bytes": _dir_bytes(directory),
                           "updated_at": _iso(_updated_at(directory)), "error": None}
    recorded = directory / VECTOR_STORE_FILE
    try:
        if recorded.is_file():
            spec = json.loads(recorded.read_text(encoding="utf-8"))
            out["vector_store"] = f"{spec['kind']} collection {spec['collection_name']} at {spec['uri']}"
        sc = StorageContext.from_defaults(persist_dir=str(directory))
        try:
            structs = list(sc.index_store.index_structs())
            out["indexes"] = [s.index_id for s in structs]
            out["types"] = sorted({type(s).__name__ for s in structs})
            identity = next((dict(s.embed_model) for s in structs if isinstance(s, IndexDict) and s.embed_model), {})
            # the dimension of the vectors stored, not the one the model's name suggests (an
            # OpenAI-compatible server may serve another model under that name); a server store's
            # is not asked for (no network here): the recorded model identity's then
            dimension = identity.get("dimension") if recorded.is_file() else sc.vector_store.dimension
            out.update(embed_model=identity.get("model_name"), embed_class=identity.get("class_name"),
                       quantize=identity.get("quantize"), dimension=dimension)
            out["documents"], out["nodes"] = _documents_and_nodes(sc, structs, recorded.is_file())
        finally:
            sc.close()
    except Exception as exc:  # one unreadable directory must not hide the others
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def list_indexes(roots: Sequence[PathLike] = (".",), max_depth: int = DEFAULT_MAX_DEPTH) -> Dict[str, Any]:
    """``ragloom list``: every index directory below ``roots`` (:func:`find_index_dirs`), described
    by :func:`describe_index`.

    Returns:
        ``{"roots": [...], "max_depth", "indexes": [describe_index(...) ...]}``.

    Raises:
        ValueError: ``max_depth`` < 0.  FileNotFoundError: a root is not a folder.
    """
    dirs = find_index_dirs(roots, max_depth)
    return {"roots": [str(r) for r in roots], "max_depth": max_depth,
            "indexes": [describe_index(d) for d in dirs]}


# -- remove ---------------------------------------------------------------------------------------
def _targets(paths: Sequence[PathLike]) -> List[Tuple[str, List[str]]]:
    """Each path as given, with the spellings a stored ``file_path`` may have: canonical (symlinks
    resolved, as ``ragloom index`` stores it) and absolute (as other tools, e.g. LlamaIndex's reader,
    store it)."""
    out = []
    for p in paths:
        raw = os.fspath(p)
        forms = {canonical_path(raw), Path(os.path.abspath(raw)).as_posix()}
        out.append((raw, sorted(f.rstrip("/") or "/" for f in forms)))
    return out


def _below(file_path: str, forms: Sequence[str]) -> bool:
    return any(file_path == f or file_path.startswith(f + "/") or (f == "/" and file_path.startswith("/"))
               for f in forms)


def documents_under(docstore: Any, paths: Sequence[PathLike]) -> Iterator[Tuple[str, str, int, str]]:
    """``(path as given, document id, nodes, file path)`` of every stored source document whose file
    (its ``file_path`` metadata, else its id) is one of ``paths`` or lies below one of them."""
    targets = _targets(paths)
    infos = docstore.get_all_ref_doc_info() or {}
    for doc_id, info in sorted(infos.items()):
        file_path = str(info.metadata.get("file_path") or doc_id)
        for raw, forms in targets:
            if _below(file_path, forms):
                yield raw, doc_id, len(info.node_ids), file_path
                break


def remove_paths(paths: Sequence[PathLike], index_dir: PathLike, *, wait: bool = False,
                 on_wait: Optional[Callable[[Optional[int]], None]] = None,
                 dry_run: bool = False) -> Dict[str, Any]:
    """``ragloom remove``: take the documents of files and folders ``paths`` out of the index in
    ``index_dir``.

    A document goes when its file (``file_path`` metadata, else its id) is one of ``paths`` or lies
    below one; the paths need not exist any more (a file deleted since).  Its nodes, vectors, keyword
    rows and recorded fingerprint go in one transaction (``VectorStoreIndex.delete_ref_doc`` for each,
    inside ``storage_context.transaction()``), under the writer lock.  The files themselves are not
    touched, and a later ``ragloom index`` of a folder holding them adds them again (use
    ``--exclude`` there to keep them out).

    Args:
        paths: files and folders.
        index_dir: the index directory.
        wait / on_wait: as :func:`~ragloom.ingestion.paths.index_paths` (wait for another writer).
        dry_run: only report what would be removed; nothing is written.

    Returns:
        ``{"index_dir", "dry_run", "documents_removed", "nodes_removed", "removed": [{"id",
        "source", "nodes", "path"}], "not_found": [paths with no document], "documents_left",
        "nodes_left"}``.  ``documents_left`` / ``nodes_left`` count what the index holds after the
        removal, also for a dry run (what the real run would leave: the counts now less the
        documents and nodes it would remove).

    Raises:
        FileNotFoundError: no index in ``index_dir``.
        ValueError: no paths.
        IndexLockedError: another process writes the index and not ``wait``.
    """
    if not paths:
        raise ValueError("paths must name at least one file or folder whose documents to remove")
    if not (Path(index_dir) / INDEX_DB_NAME).exists():
        raise FileNotFoundError(f"no index in {index_dir}: run 'ragloom index PATH' first")
    lock = acquire_lock(index_dir, wait, on_wait)
    try:
        index = open_index(index_dir, create=False)
        found = list(documents_under(index.docstore, paths))
        if found and not dry_run:
            with index.storage_context.transaction():
                for _raw, doc_id, _nodes, _file in found:
                    index.delete_ref_doc(doc_id, delete_from_docstore=True)
            index.vector_store.optimize()
        matched = {raw for raw, *_ in found}
        nodes_removed = sum(n for _r, _d, n, _f in found)
        documents_left, _ = index.docstore.list_ref_docs(offset=0, limit=1)
        nodes_left = index.vector_store.count()
        if dry_run:  # nothing was deleted: what the real run would leave
            documents_left, nodes_left = max(0, documents_left - len(found)), max(0, nodes_left - nodes_removed)
        return {
            "index_dir": str(index_dir),
            "dry_run": dry_run,
            "documents_removed": len(found),
            "nodes_removed": nodes_removed,
            "removed": [{"id": doc_id, "source": display_path(file_path), "nodes": n, "path": raw}
                        for raw, doc_id, n, file_path in found],
            "not_found": [os.fspath(p) for p in paths if os.fspath(p) not in matched],
            "documents_left": documents_left,
            "nodes_left": nodes_left,
        }
    finally:
        lock.release()
