"""``IngestionCache``: the outputs of one transformation for one input node, kept on disk.

Key: :func:`node_transform_key` — sha256 of the input node's identity (id, class,
content hash, templates and metadata exclusions, whether it already has an
embedding; for node parsers also the metadata hidden from both views) and of the
transformation's canonical ``to_config()`` JSON.  Editing
one document therefore changes only that document's keys, and changing one
transformation's configuration changes only that step's keys.

Storage: one SQLite table opened through :mod:`apsw` (WAL, busy timeout), as
:class:`~ragloom.embeddings.cache.EmbeddingCache`: several processes may share
the file; SQLite's lock serialises writers and the busy timeout makes them wait.
Values are the output nodes' tagged JSON (:meth:`BaseNode.to_json`).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union, cast

import apsw
import msgspec

from ragloom.schema import BaseNode, node_from_json

__all__ = ["DEFAULT_CACHE_COLLECTION", "IngestionCache", "node_transform_key", "transformation_digest"]

DEFAULT_CACHE_COLLECTION = "ragloom_cache"
#: File name used by :meth:`IngestionPipeline.persist` inside ``persist_dir``.
DEFAULT_INGESTION_CACHE_NAME = "ingestion_cache.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ingestion_cache (
    collection TEXT NOT NULL,
    key        TEXT NOT NULL,
    nodes      TEXT NOT NULL,
    PRIMARY KEY (collection, key)
) WITHOUT ROWID;
"""
_LOOKUP_CHUNK = 500


def transformation_digest(transformation: Any) -> str:
    """sha256 (hex) of a transformation's canonical ``to_config()`` JSON."""
    to_config = getattr(transformation, "to_config", None)
    config: Mapping[str, Any] = to_config() if callable(to_config) else {"class_name": type(transformation).__name__}
    blob = json.dumps(dict(config), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _node_identity(node: BaseNode, with_hidden: bool = False) -> bytes:
    fields: Dict[str, Any] = {
        "class_name": node.class_name(),
        "id": node.id_,
        "hash": node.hash,  # text + content-bearing metadata
        "excluded_embed": sorted(node.excluded_embed_metadata_keys),
        "excluded_llm": sorted(node.excluded_llm_metadata_keys),
        "metadata_template": node.metadata_template,
        "metadata_separator": node.metadata_separator,
        "text_template": getattr(node, "text_template", None),
        "mimetype": getattr(node, "mimetype", None),
        "ref_doc_id": node.ref_doc_id,
        "has_embedding": node.embedding is not None,
    }
    if with_hidden:
        both = set(node.excluded_embed_metadata_keys) & set(node.excluded_llm_metadata_keys)
        hidden = {k: v for k, v in node.metadata.items() if k in both}
        if hidden:  # absent when empty: the keys of nodes without hidden metadata do not change
            fields["hidden"] = hidden
    return msgspec.json.encode(fields, order="sorted", enc_hook=repr)


def node_transform_key(
    node: BaseNode,
    transformation: Any,
    digest: Optional[str] = None,
    with_hidden: bool = False,
    context: Optional[str] = None,
) -> str:
    """Cache key of ``transformation`` applied to ``node`` (pass ``digest`` to skip recomputing the config's).

    ``with_hidden``: the metadata hidden from both views (not part of ``node.hash``) is part of the
    key too.  For node parsers: their outputs carry that metadata, and some write hidden keys of
    their own (``SentenceWindowNodeParser``'s window), so a cached output cannot be patched up
    with the input's current values.

    ``context``: what else the output depends on besides the node and the configuration (a
    metadata extractor's neighbouring nodes, its document's first nodes, the embed budget: see
    :meth:`ragloom.extractors.BaseExtractor.cache_contexts`); ``None`` adds nothing, so the keys of
    other transformations do not change.
    """
    h = hashlib.sha256()
    h.update(_node_identity(node, with_hidden))
    h.update(b"\x00")
    h.update((digest or transformation_digest(transformation)).encode("ascii"))
    if context is not None:
        h.update(b"\x00")
        h.update(context.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _encode_nodes(nodes: Sequence[BaseNode]) -> str:
    return "[" + ",".join(n.to_json() for n in nodes) + "]"


def _decode_nodes(data: Union[str, bytes]) -> List[BaseNode]:
    return [node_from_json(bytes(raw)) for raw in msgspec.json.decode(data, type=List[msgspec.Raw])]


class IngestionCache:
    """Persistent ``key → list[BaseNode]`` store used by :class:`~ragloom.ingestion.IngestionPipeline`.

    Args:
        cache: ``None`` (in memory), a database file path (created with its parent
            folders), or another :class:`IngestionCache` whose database to share.
        collection: namespace inside the database.
        busy_timeout_ms: how long a writer waits for another process's lock.
    """

    path: str
    _conn: apsw.Connection
    _lock: "threading.RLock"

    def __init__(
        self,
        cache: Union[str, "os.PathLike[str]", "IngestionCache", None] = None,
        collection: str = DEFAULT_CACHE_COLLECTION,
        busy_timeout_ms: int = 30_000,
    ) -> None:
        self.collection = collection
        if isinstance(cache, IngestionCache):
            self.path = cache.path
            self._conn = cache._conn
            self._lock = cache._lock
            self._owns = False
            return
        path = ":memory:" if cache is None or str(cache) in ("", ":memory:") else str(cache)
        if path != ":memory:":
            p = Path(path).expanduser()
            p.parent.mkdir(parents=True, exist_ok=True)
            path = str(p.resolve())
        self.path = path
        self._lock = threading.RLock()
        self._owns = True
        self._conn = apsw.Connection(path)
        self._conn.set_busy_timeout(busy_timeout_ms)
        if path != ":memory:":
            self._conn.execute("PRAGMA journal_mode=WAL").fetchall()
        self._conn.execute("PRAGMA synchronous=NORMAL")
        with self._conn:
            self._conn.execute(_SCHEMA)

    # -- single entries --------------------------------------------------------------------
    def put(self, key: str, nodes: Sequence[BaseNode], collection: Optional[str] = None) -> None:
        self.put_many({key: nodes}, collection=collection)

    def get(self, key: str, collection: Optional[str] = None) -> Optional[List[BaseNode]]:
        """The nodes stored under ``key`` (fresh objects), or ``None``."""
        return self.get_many([key], collection=collection).get(key)

    # -- batches -----------------------------------------------------------------------------
    def put_many(self, entries: Mapping[str, Sequence[BaseNode]], collection: Optional[str] = None) -> None:
        """Store every ``key → nodes`` of ``entries`` in one transaction (existing keys are replaced)."""
        if not entries:
            return
        coll = collection or self.collection
        rows = [(coll, key, _encode_nodes(nodes)) for key, nodes in entries.items()]
        with self._lock, self._conn:
            self._conn.executemany(
                "INSERT INTO ingestion_cache(collection, key, nodes) VALUES (?, ?, ?) "
                "ON CONFLICT(collection, key) DO UPDATE SET nodes = excluded.nodes",
                rows,
            )

    def get_many(self, keys: Sequence[str], collection: Optional[str] = None) -> Dict[str, List[BaseNode]]:
        """``key → nodes`` for the keys found."""
        coll = collection or self.collection
        unique = list(dict.fromkeys(keys))
        found: Dict[str, List[BaseNode]] = {}
        with self._lock:
            for s in range(0, len(unique), _LOOKUP_CHUNK):
                part = unique[s : s + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(part))
                for key, data in self._conn.execute(
                    f"SELECT key, nodes FROM ingestion_cache WHERE collection = ? AND key IN ({marks})",
                    (coll, *part),
                ):
                    found[key] = _decode_nodes(data)
        return found

    # -- housekeeping ----------------------------------------------------------------------
    def clear(self, collection: Optional[str] = None) -> None:
        """Delete the entries of this cache's collection (or of ``collection``)."""
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM ingestion_cache WHERE collection = ?", (collection or self.collection,))

    def __len__(self) -> int:
        with self._lock:
            rows = self._conn.execute(
                "SELECT count(*) FROM ingestion_cache WHERE collection = ?", (self.collection,)
            ).fetchall()
            return int(cast(int, rows[0][0]))

    def persist(self, persist_path: Union[str, "os.PathLike[str]"], fs: Any = None) -> None:
        """Copy the cache database to ``persist_path`` (no-op when that is its own file)."""
        if fs is not None:
            raise ValueError("ragloom works on the local file system only (fs must be None)")
        target = Path(persist_path).expanduser().resolve()
        target.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            if self.path != ":memory:" and Path(self.path) == target:
                self._conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
                return
            dest = apsw.Connection(str(target))
            try:
                dest.set_busy_timeout(30_000)
                with dest.backup("main", self._conn, "main") as b:
                    b.step(-1)
            finally:
                dest.close()

    @classmethod
    def from_persist_path(
        cls, persist_path: Union[str, "os.PathLike[str]"], collection: str = DEFAULT_CACHE_COLLECTION
    ) -> "IngestionCache":
        """Open the cache file ``persist_path`` (``FileNotFoundError`` if it is missing)."""
        if not Path(persist_path).is_file():
            raise FileNotFoundError(f"no ingestion cache at {persist_path}")
        return cls(persist_path, collection=collection)

    def close(self) -> None:
        if self._owns:
            with self._lock:
                self._conn.close()

    def __repr__(self) -> str:
        return f"IngestionCache({self.path!r}, collection={self.collection!r})"
