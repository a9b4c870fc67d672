"""A persistent embedding cache: re-embedding the same text with the same model costs a lookup.

Vectors are stored in one SQLite database (opened with :mod:`apsw`, as the rest of
ragloom; WAL mode, so readers never block the writer and several processes can share
the file — SQLite's lock serialises writers, a busy timeout makes them wait).

Key: ``(namespace, sha256(text))`` where ``namespace`` is the sha256 of the canonical
JSON of the model's :meth:`~ragloom.embeddings.base.BaseEmbedding.cache_identity` —
provider class, model name, dimension, normalisation, document instruction and
anything else that changes the vector (e.g. truncation length).  The text itself is
not stored.  Vectors are float32 bytes.

The cache never expires entries; delete the file to empty it, or call :meth:`clear`.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence, Union

import apsw
import numpy as np

__all__ = ["EmbeddingCache", "attach_query_cache", "namespace_of", "text_hash", "DEFAULT_CACHE_NAME"]

#: File name ``ragloom index`` uses inside ``--index-dir``.
DEFAULT_CACHE_NAME = "embed_cache.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embed_cache_namespaces (
    namespace TEXT PRIMARY KEY,
    identity  TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS embed_cache (
    namespace TEXT NOT NULL,
    text_hash BLOB NOT NULL,
    vector    BLOB NOT NULL,
    PRIMARY KEY (namespace, text_hash)
) WITHOUT ROWID;
"""

#: Host parameters per ``IN (...)`` lookup (SQLite's default limit is 32766).
_LOOKUP_CHUNK = 500


def namespace_of(identity: Mapping[str, Any]) -> str:
    """Stable hex digest of a model's cache identity (canonical JSON, sorted keys)."""
    blob = json.dumps(dict(identity), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def text_hash(text: str) -> bytes:
    """sha256 of the UTF-8 text (32 raw bytes)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class EmbeddingCache:
    """Persistent ``(model identity, text) → vector`` store.

    Args:
        path: database file (created, with missing parent folders) or ``":memory:"``.
        busy_timeout_ms: how long a writer waits for another process's lock.

    ``hits`` / ``misses`` count lookups through this object since it was opened
    (or since :meth:`reset_counters`).  Safe to share between threads and models.
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"] = ":memory:", busy_timeout_ms: int = 30_000) -> None:
        self.path = str(path)
        if self.path not in (":memory:", ""):
            p = Path(self.path).expanduser()
            p.parent.mkdir(parents=True, exist_ok=True)
            self.path = str(p.resolve())
        self._lock = threading.RLock()
        self._conn = apsw.Connection(self.path)
        self._conn.set_busy_timeout(busy_timeout_ms)
        if self.path not in (":memory:", ""):
            self._conn.execute("PRAGMA journal_mode=WAL").fetchall()
        self._conn.execute("PRAGMA synchronous=NORMAL")
        with self._conn:
            self._conn.execute(_SCHEMA)
        self._known_ns: set = set()
        self.hits = 0
        self.misses = 0
        self.writes = 0

    # -- lookups -----------------------------------------------------------------------
    def get_many(self, namespace: str, hashes: Sequence[bytes]) -> Dict[bytes, np.ndarray]:
        """Vectors found for ``hashes`` (missing ones absent); updates the counters."""
        found: Dict[bytes, np.ndarray] = {}
        unique = list(dict.fromkeys(hashes))
        with self._lock:
            for s in range(0, len(unique), _LOOKUP_CHUNK):
                part = unique[s : s + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(part))
                rows = self._conn.execute(
                    f"SELECT text_hash, vector FROM embed_cache WHERE namespace = ? AND text_hash IN ({marks})",
                    (namespace, *part),
                )
                for h, blob in rows:
                    found[bytes(h)] = np.frombuffer(blob, dtype=np.float32)
            hit = sum(1 for h in hashes if h in found)
            self.hits += hit
            self.misses += len(hashes) - hit
        return found

    def get(self, identity: Mapping[str, Any], text: str) -> Optional[np.ndarray]:
        """The cached vector of ``text`` under a model identity, or ``None``."""
        h = text_hash(text)
        return self.get_many(namespace_of(identity), [h]).get(h)

    # -- writes ------------------------------------------------------------------------
    def put_many(self, namespace: str, hashes: Sequence[bytes], vectors: np.ndarray,
                 identity: Optional[Mapping[str, Any]] = None) -> None:
        """Store ``vectors[i]`` under ``hashes[i]`` (existing entries are kept) in one transaction."""
        arr = np.ascontiguousarray(vectors, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(hashes):
            raise ValueError(f"put_many needs one vector per hash, got {arr.shape} for {len(hashes)} hashes")
        rows = [(namespace, h, arr[i].tobytes()) for i, h in enumerate(hashes)]
        with self._lock, self._conn:  # BEGIN … COMMIT (rolls back on error)
            if namespace not in self._known_ns:
                self._conn.execute(
                    "INSERT OR IGNORE INTO embed_cache_namespaces(namespace, identity) VALUES (?, ?)",
                    (namespace, json.dumps(dict(identity), sort_keys=True, default=str) if identity else "{}"),
                )
                self._known_ns.add(namespace)
            self._conn.executemany(
                "INSERT OR IGNORE INTO embed_cache(namespace, text_hash, vector) VALUES (?, ?, ?)", rows
            )
            self.writes += len(rows)

    def put(self, identity: Mapping[str, Any], text: str, vector: Sequence[float]) -> None:
        self.put_many(namespace_of(identity), [text_hash(text)], np.asarray([vector], dtype=np.float32), identity)

    # -- housekeeping ------------------------------------------------------------------
    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM embed_cache").fetchall()[0][0])

    def count(self, namespace: Optional[str] = None) -> int:
        """Entries stored (for one namespace, or all)."""
        if namespace is None:
            return len(self)
        with self._lock:
            rows = self._conn.execute("SELECT count(*) FROM embed_cache WHERE namespace = ?", (namespace,)).fetchall()
            return int(rows[0][0])

    def clear(self, namespace: Optional[str] = None) -> None:
        """Delete all entries (or those of one namespace)."""
        with self._lock, self._conn:
            if namespace is None:
                self._conn.execute("DELETE FROM embed_cache; DELETE FROM embed_cache_namespaces;")
                self._known_ns.clear()
            else:
                self._conn.execute("DELETE FROM embed_cache WHERE namespace = ?", (namespace,))

    def stats(self) -> Dict[str, int]:
        """``{"hits", "misses", "writes"}`` of this object."""
        return {"hits": self.hits, "misses": self.misses, "writes": self.writes}

    def reset_counters(self) -> None:
        self.hits = self.misses = self.writes = 0

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> "EmbeddingCache":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"EmbeddingCache({self.path!r}, hits={self.hits}, misses={self.misses})"


def attach_query_cache(model: Any, index_dir: Union[str, "os.PathLike[str]"]) -> None:
    """Repeated queries cost a lookup: give ``model`` (a
    :class:`~ragloom.embeddings.base.BaseEmbedding`) the query cache ``index_dir/embed_cache.sqlite``
    (its own namespace), unless it has one or the folder cannot be written (then it goes without)."""
    if model.query_cache is not None:
        return
    try:
        # a query waits at most a second for a writer's transaction before it skips the cache
        model.query_cache = EmbeddingCache(Path(index_dir) / DEFAULT_CACHE_NAME, busy_timeout_ms=1000)
    except Exception as exc:  # apsw.Error / OSError: a read-only folder, a full disk
        import logging

        logging.getLogger(__name__).info("no query cache in %s: %s", index_dir, exc)
