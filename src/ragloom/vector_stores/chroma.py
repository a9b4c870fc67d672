"""``ChromaVectorStore``: nodes in a Chroma collection (local ``PersistentClient`` or a Chroma server).

LlamaIndex users import it from ``llama_index.vector_stores.chroma``; here it is
``ragloom.vector_stores.chroma`` (extra ``ragloom[chroma]``).  Typical use::

    client = chromadb.PersistentClient("./chroma_db")
    collection = client.get_or_create_collection("quickstart")
    vector_store = ChromaVectorStore(chroma_collection=collection)
    storage_context = StorageContext.from_defaults(vector_store=vector_store)
    index = VectorStoreIndex.from_documents(docs, storage_context=storage_context, embed_model=...)

**Rows.**  One Chroma record per node: id = node id, embedding, document = node text, and
metadata = the node's metadata flattened for Chroma (see
:func:`ragloom.vector_stores.utils.flat_metadata_value`: ``None`` and empty lists left out,
dicts and mixed lists as JSON text) plus ``_node_content`` (the node as JSON, without
embedding and text), ``_node_type``, the source document's id under ``document_id``, ``doc_id``
and ``ref_doc_id``, and ``_ragloom_keys`` (the stored keys).
Nodes come back exactly as they were written, from ``_node_content``; the flattened copy is
only for filters.

**LlamaIndex's collections.**  The record layout is the one LlamaIndex's ``ChromaVectorStore``
writes (the same ``_node_content`` fields, ``_node_type``, ``document_id`` / ``doc_id`` /
``ref_doc_id``), so a collection LlamaIndex wrote opens here
(``VectorStoreIndex.from_vector_store(ChromaVectorStore(chroma_collection=...))``) and one written
here opens in LlamaIndex; either side can delete the other's documents.  LlamaIndex writes no
``_ragloom_keys``, so on its records ``!=`` and ``nin`` filters match nothing (they need the
key to exist).  A node without a source document gets none of the three id keys here
(LlamaIndex writes the text ``"None"``).  :meth:`ChromaVectorStore.validate_nodes` rejects values that cannot be
stored (objects, NaN, integers beyond 64 bits, reserved keys) before anything is embedded.

**Writes** go in batches of Chroma's maximum batch size (asked from the client; 5461 in chromadb
1.5).  Adding a node id that exists replaces the record (delete, then add: Chroma's upsert
would merge the old metadata keys into the new record).  A failed write of several batches
may leave the earlier batches written.

**Scores** are cosine similarity for collections created with ``{"hnsw:space": "cosine"}``
(``1 - distance``) and for ``"ip"`` (``1 - distance`` = the inner product).  For Chroma's default
``"l2"`` space (squared Euclidean distance) the score is ``1 - distance / 2``, which equals the
cosine similarity for unit-length embeddings (ragloom's local models emit unit vectors).

**Several processes writing one persistent directory.**  Chroma's local mode is not
process-safe: a writer keeps the collection's HNSW index in memory and flushes it over the
one on disk, so two processes writing the same directory lose vectors silently (measured in
the project's vector-store notes; ``get(include=["embeddings"])`` then fails).  A lock alone does
not help, because a process that loaded the index *before* taking the lock still holds a
stale copy.  So, for a ``PersistentClient`` collection, this store:

* takes an exclusive ``fcntl`` lock on ``<persist dir>/.ragloom-chroma.lock`` for every write
  (``add``, ``delete``, ``delete_nodes``, ``clear``) — waiting up to ``lock_timeout`` seconds —
  through :class:`ragloom.storage.lock.IndexLock`;
* does all its reads and writes through its *own* Chroma bindings for the directory (not the
  client the collection came from), and, under the lock, re-opens them whenever the
  directory's SQLite file changed since this store last wrote or read it (another process
  wrote).  Re-opening costs about 20 ms plus reloading the collection's index on the next query.

Writes made directly through the ``chromadb`` client, outside ragloom, take no lock and are
not safe to run beside another writer.  Chroma servers (``chromadb.HttpClient``) and in-memory
clients serialise writes themselves; no lock is taken for them.

**Filters** compile to Chroma ``where`` clauses, following ragloom's filter semantics (a node
without the key never matches, ``!=`` and ``nin`` included).  Chroma cannot evaluate some of
them; those raise :class:`~ragloom.vector_stores.utils.UnsupportedFilterError` rather than
return wrong matches:

* ``text_match`` (case-insensitive substring of a metadata string);
* ``>``, ``<``, ``>=``, ``<=`` against a string or a bool (Chroma orders numbers only).

``contains`` matches an element of a list-valued field; Chroma has no substring test on a
string-valued metadata field, so there ``contains`` matches nothing.

Query modes: ``default`` (dense) only; ``hybrid``/``text_search``/``mmr`` raise ``ValueError``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from ragloom._optional import require
from ragloom.errors import IndexLockedError
from ragloom.schema import BaseNode, MetadataMode
from ragloom.storage.lock import IndexLock
from ragloom.vector_stores.types import (
    BasePydanticVectorStore,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryResult,
)
from ragloom.vector_stores.filters import check_filter_scalar
from ragloom.vector_stores.utils import (
    UnsupportedFilterError,
    check_default_query,
    check_embeddings,
    check_ref_doc_keys,
    combine_clauses,
    compile_filter_tree,
    dedupe_last,
    metadata_dict_to_node,
    node_to_metadata_dict,
    same_kind_groups,
    validate_node_metadata,
)

logger = logging.getLogger(__name__)

__all__ = ["ChromaVectorStore", "where_from_filters", "CHROMA_LOCK_NAME"]

#: Lock file in a persistent Chroma directory (not ``.ragloom.lock``, the ``ragloom index`` lock).
CHROMA_LOCK_NAME = ".ragloom-chroma.lock"
#: Used when the client cannot say (chromadb 1.5's local maximum; measured in the vector-store notes).
FALLBACK_MAX_BATCH_SIZE = 5461
_RUST_API = "chromadb.api.rust.RustBindingsAPI"

# ---------------------------------------------------------------------------- where clauses
_TRUE = object()  # matches everything
_FALSE = object()  # matches nothing
_Where = Union[Dict[str, Any], object]
_CMP = {FilterOperator.GT: "$gt", FilterOperator.LT: "$lt", FilterOperator.GTE: "$gte", FilterOperator.LTE: "$lte"}


def _exists(key: str) -> Dict[str, Any]:
    return {"_ragloom_keys": {"$contains": key}}


def _join(kept: List[_Where], condition: FilterCondition) -> _Where:
    return {"$and" if condition == FilterCondition.AND else "$or": kept}


def _combine(parts: List[_Where], condition: FilterCondition) -> _Where:
    return combine_clauses(parts, condition, _TRUE, _FALSE, _join)


def _compile_one(f: MetadataFilter) -> _Where:
    op, key = FilterOperator(f.operator), f.key
    if key == "_ragloom_keys" or key.startswith("$"):
        raise ValueError(f"metadata filter key {key!r} cannot be filtered on in Chroma")
    if op == FilterOperator.EQ:
        return {key: {"$eq": check_filter_scalar(f, f.value)}}
    if op == FilterOperator.NE:
        return {"$and": [_exists(key), {key: {"$ne": check_filter_scalar(f, f.value)}}]}
    if op in _CMP:
        value = check_filter_scalar(f, f.value)
        if isinstance(value, (str, bool)):
            raise UnsupportedFilterError(
                f"Chroma cannot order {type(value).__name__} values: filter {key!r} {op.value} {value!r} "
                "(Chroma's $gt/$lt/$gte/$lte take numbers only); store a number or filter on equality"
            )
        return {key: {_CMP[op]: value}}
    if op == FilterOperator.IN:
        groups = same_kind_groups(f, list(f.value))
        return _combine([{key: {"$in": g}} for g in groups], FilterCondition.OR) if groups else _FALSE
    if op == FilterOperator.NIN:
        groups = same_kind_groups(f, list(f.value))
        return _combine([_exists(key)] + [{key: {"$nin": g}} for g in groups], FilterCondition.AND)
    if op == FilterOperator.CONTAINS:
        return {key: {"$contains": check_filter_scalar(f, f.value)}}
    if op == FilterOperator.TEXT_MATCH:
        raise UnsupportedFilterError(
            f"Chroma cannot evaluate text_match (case-insensitive substring) on metadata field {key!r}; "
            "use == / in on exact values, or a store that supports it (SQLiteVectorStore)"
        )
    if op in (FilterOperator.ANY, FilterOperator.ALL):  # a list holds one of / all of the values
        parts: List[_Where] = [{key: {"$contains": check_filter_scalar(f, v)}} for v in f.value]
        return _combine(parts, FilterCondition.OR if op == FilterOperator.ANY else FilterCondition.AND)
    if op == FilterOperator.IS_EMPTY:
        raise UnsupportedFilterError(
            f"Chroma cannot evaluate is_empty on metadata field {key!r} (it stores no null and no empty list); "
            "use a store that supports it (SQLiteVectorStore)"
        )
    raise ValueError(f"unsupported filter operator {op!r}")


def where_from_filters(
    filters: Optional[MetadataFilters] = None, doc_ids: Optional[Sequence[str]] = None
) -> Tuple[Optional[Dict[str, Any]], bool]:
    """Compile ragloom filters (and a ``ref_doc_id`` restriction) to a Chroma ``where`` clause.

    Returns ``(where, matches_nothing)``: ``where`` is ``None`` when nothing restricts;
    ``matches_nothing`` is ``True`` when the filters can match no record (e.g. ``in []``).

    Raises:
        UnsupportedFilterError: an operator Chroma cannot evaluate (see the module docs).
        ValueError: a malformed filter value.
    """
    parts: List[_Where] = []
    if filters is not None:
        parts.append(compile_filter_tree(filters, _compile_one, _TRUE, _FALSE, _join))
    if doc_ids is not None:
        ids = [str(d) for d in doc_ids]
        parts.append({"ref_doc_id": {"$in": ids}} if ids else _FALSE)
    where = _combine(parts, FilterCondition.AND)
    if where is _FALSE:
        return None, True
    if where is _TRUE:
        return None, False
    return where, False  # type: ignore[return-value]


# ---------------------------------------------------------------------------- the store
def _import_chromadb() -> Any:
    return require("chromadb", "chroma", "ChromaVectorStore")


class _DirLock(IndexLock):
    """:class:`IndexLock` on ``<dir>/.ragloom-chroma.lock`` (a different file from ``ragloom index``'s)."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.path = Path(directory) / CHROMA_LOCK_NAME


def _space_of(collection: Any) -> str:
    cfg: Any = {}
    try:
        cfg = collection.configuration or {}
    except Exception:  # older clients / foreign objects
        cfg = {}
    for part in ("hnsw", "spann"):
        sub = cfg.get(part) if isinstance(cfg, dict) else None
        if isinstance(sub, dict) and sub.get("space"):
            return str(sub["space"])
    meta = getattr(collection, "metadata", None) or {}
    return str(meta.get("hnsw:space", "l2"))


class ChromaVectorStore(BasePydanticVectorStore):
    """Nodes in a Chroma collection.

    Args:
        chroma_collection: a ``chromadb`` collection (from ``PersistentClient``, ``HttpClient``
            or ``EphemeralClient``).  When ``None``, ``collection_name`` and ``persist_dir`` (local)
            or ``host`` (server) open one with ``get_or_create_collection``.
        host, port, ssl, headers: a Chroma server, when no collection is given.
        persist_dir: a local Chroma directory, when no collection is given.
        collection_name: the collection to open or create, when no collection is given.
        collection_kwargs: extra ``get_or_create_collection`` arguments (e.g. ``metadata={"hnsw:space": "cosine"}``).
        batch_size: records per Chroma write; default and maximum: the client's
            ``get_max_batch_size()`` (5461 for chromadb 1.5 local).
        lock_timeout: seconds a write waits for another process's write lock on a persistent
            directory; > 0.

    Raises:
        ValueError: neither a collection nor enough to open one; ``batch_size`` outside
            ``[1, max batch size]``; ``lock_timeout`` <= 0.
        MissingDependencyError: (an ``ImportError``) chromadb is not installed (extra ``ragloom[chroma]``).
    """

    stores_text: bool = True
    is_embedding_query: bool = True
    flat_metadata: bool = True
    supports_hybrid: bool = False

    def __init__(
        self,
        chroma_collection: Any = None,
        host: Optional[str] = None,
        port: Optional[Union[int, str]] = None,
        ssl: bool = False,
        headers: Optional[Dict[str, str]] = None,
        persist_dir: Optional[Union[str, Path]] = None,
        collection_name: Optional[str] = None,
        collection_kwargs: Optional[Dict[str, Any]] = None,
        batch_size: Optional[int] = None,
        lock_timeout: float = 600.0,
        **kwargs: Any,
    ) -> None:
        if chroma_collection is None:
            chromadb = _import_chromadb()
            if not collection_name:
                raise ValueError(
                    "ChromaVectorStore needs chroma_collection, or collection_name with persist_dir or host"
                )
            if persist_dir is not None:
                client = chromadb.PersistentClient(path=str(persist_dir))
            elif host is not None:
                client = chromadb.HttpClient(host=host, port=int(port or 8000), ssl=ssl, headers=headers)
            else:
                raise ValueError("ChromaVectorStore: give persist_dir (local) or host (server) with collection_name")
            chroma_collection = client.get_or_create_collection(collection_name, **(collection_kwargs or {}))
        if not isinstance(lock_timeout, (int, float)) or isinstance(lock_timeout, bool) or not lock_timeout > 0:
            raise ValueError(f"lock_timeout must be a number of seconds > 0, got {lock_timeout!r}")
        self._collection = chroma_collection
        self.lock_timeout = float(lock_timeout)
        api = getattr(chroma_collection, "_client", None)
        try:
            max_batch = int(api.get_max_batch_size()) if api is not None else FALLBACK_MAX_BATCH_SIZE
        except Exception:
            max_batch = FALLBACK_MAX_BATCH_SIZE
        if max_batch <= 0:
            max_batch = FALLBACK_MAX_BATCH_SIZE
        if batch_size is None:
            batch_size = max_batch
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or not 1 <= batch_size <= max_batch:
            raise ValueError(
                f"batch_size must be an int in [1, {max_batch}] (the client's maximum), got {batch_size!r}"
            )
        self.batch_size = batch_size
        self.space = _space_of(chroma_collection)
        settings = getattr(getattr(api, "_system", None), "settings", None)
        self._persistent = bool(
            settings is not None
            and getattr(settings, "is_persistent", False)
            and getattr(settings, "chroma_api_impl", None) == _RUST_API
        )
        # a copy: chromadb's client constructors mutate the settings object they are given
        self._settings = settings.model_copy(deep=True) if hasattr(settings, "model_copy") else settings
        self._path: Optional[Path] = Path(settings.persist_directory).resolve() if self._persistent else None
        self._mutex = threading.RLock()
        self._lock_depth = 0
        self._private_system: Any = None
        self._private_collection: Any = None
        self._synced_key: Any = None
        self._dim: Optional[int] = None

    # -- construction (LlamaIndex names) ------------------------------------------------
    @classmethod
    def from_collection(cls, collection: Any, **kwargs: Any) -> "ChromaVectorStore":
        return cls(chroma_collection=collection, **kwargs)

    @classmethod
    def from_params(
        cls,
        collection_name: str,
        host: Optional[str] = None,
        port: Optional[Union[int, str]] = None,
        ssl: bool = False,
        headers: Optional[Dict[str, str]] = None,
        persist_dir: Optional[Union[str, Path]] = None,
        collection_kwargs: Optional[Dict[str, Any]] = None,
        **kwargs: Any,
    ) -> "ChromaVectorStore":
        return cls(
            host=host, port=port, ssl=ssl, headers=headers, persist_dir=persist_dir,
            collection_name=collection_name, collection_kwargs=collection_kwargs, **kwargs,
        )

    # -- properties ---------------------------------------------------------------------
    @property
    def client(self) -> Any:
        """The Chroma collection given (or opened) at construction."""
        return self._collection

    @property
    def persist_dir(self) -> Optional[Path]:
        """The local Chroma directory (``None`` for servers and in-memory clients)."""
        return self._path

    @property
    def lock_path(self) -> Optional[Path]:
        """The write-lock file (``None`` when no lock is taken)."""
        return None if self._path is None else self._path / CHROMA_LOCK_NAME

    def count(self) -> int:
        return int(self._read(lambda c: c.count()))

    def __len__(self) -> int:
        return self.count()

    # -- the process-safety machinery -------------------------------------------------------
    def _state_key(self) -> Tuple[Any, ...]:
        assert self._path is not None
        key = []
        for name in ("chroma.sqlite3", "chroma.sqlite3-wal"):
            try:
                st = (self._path / name).stat()
                key.append((st.st_ino, st.st_mtime_ns, st.st_size))
            except FileNotFoundError:
                key.append(None)
        return tuple(key)

    @contextlib.contextmanager
    def _dir_lock(self) -> Iterator[None]:
        if self._lock_depth:
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
            return
        assert self._path is not None
        lock = _DirLock(self._path)
        deadline = time.monotonic() + self.lock_timeout
        while True:
            try:
                lock.acquire()
                break
            except IndexLockedError as exc:
                if time.monotonic() >= deadline:
                    pid = getattr(exc, "pid", None)
                    err = IndexLockedError(
                        f"Chroma directory {self._path} is being written by pid {pid if pid is not None else '?'}; "
                        f"waited {self.lock_timeout:g} s (lock file {lock.path})"
                    )
                    err.pid = pid  # type: ignore[attr-defined]
                    raise err from None
                time.sleep(0.05)
        self._lock_depth = 1
        try:
            yield
        finally:
            self._lock_depth = 0
            lock.release()

    def _close_private(self) -> None:
        system, self._private_system, self._private_collection = self._private_system, None, None
        self._synced_key = None
        if system is not None:
            try:
                system.stop()
            except Exception:  # pragma: no cover - best effort
                logger.debug("stopping private Chroma bindings failed", exc_info=True)

    def _open_private(self) -> Any:
        """Fresh Chroma bindings on the directory (call under the lock): nothing cached from before."""
        from chromadb.api import ServerAPI
        from chromadb.api.models.Collection import Collection
        from chromadb.config import System

        self._close_private()
        system = System(self._settings)
        api = system.instance(ServerAPI)
        system.start()
        model = self._collection._model
        fresh = api.get_collection(model.name, tenant=model.tenant, database=model.database)
        self._private_system = system
        self._private_collection = Collection(client=api, model=fresh, embedding_function=None)
        return self._private_collection

    def _write(self, fn: Callable[[Any], Any]) -> Any:
        with self._mutex:
            if not self._persistent:
                return fn(self._collection)
            with self._dir_lock():
                if self._private_collection is None or self._state_key() != self._synced_key:
                    self._open_private()
                try:
                    result = fn(self._private_collection)
                except BaseException:
                    self._close_private()  # unknown state: re-open next time
                    raise
                self._synced_key = self._state_key()
                return result

    def _read(self, fn: Callable[[Any], Any]) -> Any:
        with self._mutex:
            if not self._persistent:
                return fn(self._collection)
            if self._private_collection is not None and self._state_key() == self._synced_key:
                try:
                    return fn(self._private_collection)
                except (ValueError, UnsupportedFilterError):
                    raise
                except Exception:
                    logger.debug("Chroma read failed on cached bindings; re-opening", exc_info=True)
            with self._dir_lock():
                self._open_private()
                result = fn(self._private_collection)
                self._synced_key = self._state_key()
                return result

    def close(self) -> None:
        """Release this store's own Chroma bindings (the given client stays open)."""
        with self._mutex:
            self._close_private()

    # -- helpers ----------------------------------------------------------------------------
    def _dimension(self, collection: Any) -> Optional[int]:
        if self._dim is not None:
            return self._dim
        dim = getattr(getattr(collection, "_model", None), "dimension", None)
        if dim is None:
            peek = collection.get(limit=1, include=["embeddings"])
            embs = peek.get("embeddings")
            if embs is not None and len(embs):
                dim = len(embs[0])
        if dim is not None and collection.count() > 0:
            self._dim = int(dim)
        return None if dim is None else int(dim)

    def _similarity(self, distance: float) -> float:
        if self.space == "l2":
            return 1.0 - float(distance) / 2.0
        return 1.0 - float(distance)

    def _nodes_from(self, ids: Sequence[str], metadatas: Any, documents: Any, embeddings: Any = None) -> List[BaseNode]:
        out = []
        for i, node_id in enumerate(ids):
            meta = metadatas[i] if metadatas is not None else None
            text = documents[i] if documents is not None else None
            node = metadata_dict_to_node(meta or {}, text=text, node_id=node_id)
            if embeddings is not None and len(embeddings) > i and embeddings[i] is not None:
                node.embedding = np.asarray(embeddings[i], dtype=np.float32).tolist()
            out.append(node)
        return out

    # -- writes -----------------------------------------------------------------------------
    def validate_nodes(self, nodes: Sequence[BaseNode]) -> None:
        """Reject nodes whose metadata Chroma cannot store (see
        :func:`~ragloom.vector_stores.utils.validate_node_metadata` and
        :func:`~ragloom.vector_stores.utils.check_ref_doc_keys`), before any embedding.

        Raises:
            ValueError: naming the node id and the offending key.
        """
        for node in nodes:
            validate_node_metadata(node)
            check_ref_doc_keys(node)

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> List[str]:
        """Add nodes (replacing records with the same id) in batches of ``batch_size``; return their ids.

        Raises:
            ValueError: a node without an embedding, with one of another dimension than the
                collection's (or the first node's), or with metadata Chroma cannot store — the
                message names the node; nothing is written.
            IndexLockedError: another process held the directory's write lock for ``lock_timeout`` s.
        """
        if not nodes:
            return []
        batch = dedupe_last(nodes)
        self.validate_nodes(batch)
        matrix = check_embeddings(batch, None)
        ids = [n.node_id for n in batch]
        metadatas = [node_to_metadata_dict(n, remove_text=True, flat_metadata=True) for n in batch]
        documents = [n.get_content(MetadataMode.NONE) for n in batch]
        bs = self.batch_size

        def write(coll: Any) -> None:
            dim = self._dimension(coll)
            if dim is not None and matrix.shape[1] != dim:
                raise ValueError(
                    f"node {batch[0].node_id}: embedding has dimension {matrix.shape[1]}, "
                    f"but this Chroma collection holds {dim}-dimensional vectors"
                )
            for start in range(0, len(ids), bs):
                chunk = ids[start : start + bs]
                existing = coll.get(ids=chunk, include=[])["ids"]
                if existing:
                    coll.delete(ids=list(existing))
            for start in range(0, len(ids), bs):
                end = start + bs
                coll.add(
                    ids=ids[start:end],
                    embeddings=matrix[start:end],
                    metadatas=metadatas[start:end],
                    documents=documents[start:end],
                )
            self._dim = int(matrix.shape[1])

        self._write(write)
        return [n.node_id for n in nodes]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node of the document ``ref_doc_id`` (none: no error)."""
        self._write(lambda c: c.delete(where={"ref_doc_id": {"$eq": str(ref_doc_id)}}))

    def delete_nodes(
        self,
        node_ids: Optional[List[str]] = None,
        filters: Optional[MetadataFilters] = None,
        **delete_kwargs: Any,
    ) -> None:
        """Delete nodes by id and/or metadata filter (both: nodes matching both).

        Raises:
            ValueError: neither ``node_ids`` nor ``filters`` (use :meth:`clear`).
            UnsupportedFilterError: a filter Chroma cannot evaluate.
        """
        if node_ids is None and filters is None:
            raise ValueError("delete_nodes needs node_ids or filters (use clear() to delete everything)")
        where, nothing = where_from_filters(filters)
        if nothing or (node_ids is not None and not node_ids):
            return

        def write(coll: Any) -> None:
            if node_ids is None and where is None:
                targets = coll.get(include=[])["ids"]
            else:
                targets = coll.get(ids=list(node_ids) if node_ids is not None else None, where=where, include=[])["ids"]
            for start in range(0, len(targets), self.batch_size):
                coll.delete(ids=targets[start : start + self.batch_size])

        self._write(write)

    def clear(self) -> None:
        """Delete every record of the collection (the collection itself, and the dimension Chroma
        recorded for it, stay)."""

        def write(coll: Any) -> None:
            ids = coll.get(include=[])["ids"]
            for start in range(0, len(ids), self.batch_size):
                coll.delete(ids=ids[start : start + self.batch_size])

        self._write(write)
        self._dim = None

    # -- reads ------------------------------------------------------------------------------
    def get_nodes(
        self,
        node_ids: Optional[List[str]] = None,
        filters: Optional[MetadataFilters] = None,
    ) -> List[BaseNode]:
        """Nodes (with embeddings) by id and/or filter; all nodes when neither is given.

        With ``node_ids`` the result follows their order, skipping unknown ids.

        Raises:
            UnsupportedFilterError: a filter Chroma cannot evaluate.
        """
        where, nothing = where_from_filters(filters)
        if nothing or (node_ids is not None and not node_ids):
            return []
        ids_arg = list(dict.fromkeys(node_ids)) if node_ids is not None else None
        res = self._read(
            lambda c: c.get(ids=ids_arg, where=where, include=["metadatas", "documents", "embeddings"])
        )
        nodes = self._nodes_from(res["ids"], res.get("metadatas"), res.get("documents"), res.get("embeddings"))
        if ids_arg is not None:
            by_id = {n.node_id: n for n in nodes}
            return [by_id[i] for i in ids_arg if i in by_id]
        return nodes

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The ``similarity_top_k`` nearest nodes, best first (scores: see the module docs).

        ``filters``, ``doc_ids`` and ``node_ids`` restrict the search inside Chroma (the top k
        of the matching records, not a filtered top k).

        Raises:
            ValueError: a mode other than ``default``; no query embedding; one of the wrong dimension.
            UnsupportedFilterError: a filter Chroma cannot evaluate.
        """
        check_default_query(query, "ChromaVectorStore")
        q = np.asarray(query.query_embedding, dtype=np.float32).reshape(-1)
        k = int(query.similarity_top_k)
        empty = VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
        where, nothing = where_from_filters(query.filters, query.doc_ids)
        if k <= 0 or nothing or (query.node_ids is not None and not query.node_ids):
            return empty

        def run(coll: Any) -> Any:
            dim = self._dimension(coll)
            if dim is not None and q.shape[0] != dim:
                raise ValueError(
                    f"query embedding has dimension {q.shape[0]}, "
                    f"but this Chroma collection holds {dim}-dimensional vectors"
                )
            if dim is None:
                return None
            return coll.query(
                query_embeddings=[q],
                n_results=k,
                where=where,
                ids=list(query.node_ids) if query.node_ids is not None else None,
                include=["metadatas", "documents", "distances"],
            )

        res = self._read(run)
        if res is None or not res["ids"]:
            return empty
        ids = list(res["ids"][0])
        nodes = self._nodes_from(ids, (res.get("metadatas") or [None])[0], (res.get("documents") or [None])[0])
        sims = [self._similarity(d) for d in res["distances"][0]]
        return VectorStoreQueryResult(nodes=nodes, similarities=sims, ids=ids)

    def persist(self, persist_path: str, fs: Any = None) -> None:
        """No-op: Chroma persists every write itself."""
        return None
