"""The graph stores' tables in the shared SQLite database (created on first use, ``IF NOT EXISTS``).

* ``graph_triplets``: one row per (triplet, source node).  ``*_key`` columns hold
  :func:`~ragloom.graph_stores.types.entity_key` of each part (what matching and de-duplication use),
  the plain columns the spelling of that row; ``source`` is the node the triplet was extracted from
  (``''`` for one added by hand); ``properties`` is a property-graph relation's JSON.  The rowid is
  the write order.
* ``graph_vectors``: embeddings of triplet texts per embed model (``KnowledgeGraphIndex(include_embeddings=True)``),
  float32 bytes.
* ``graph_entities``: property-graph entities (name, label, JSON properties, float32 embedding).

Every table has a ``namespace`` column: each store object owns one namespace (the triplet store
``"graph_store"``, the property graph ``"property_graph_store"`` by default), so both kinds of graph
live in one file without seeing each other.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from ragloom.storage.sqlite import SQLiteDatabase

_SCHEMA = """
CREATE TABLE IF NOT EXISTS graph_triplets (
    namespace  TEXT NOT NULL,
    subj_key   TEXT NOT NULL,
    rel_key    TEXT NOT NULL,
    obj_key    TEXT NOT NULL,
    source     TEXT NOT NULL,
    subj       TEXT NOT NULL,
    rel        TEXT NOT NULL,
    obj        TEXT NOT NULL,
    properties TEXT,
    UNIQUE (namespace, subj_key, rel_key, obj_key, source)
);
CREATE INDEX IF NOT EXISTS graph_triplets_obj ON graph_triplets(namespace, obj_key);
CREATE INDEX IF NOT EXISTS graph_triplets_source ON graph_triplets(namespace, source);

CREATE TABLE IF NOT EXISTS graph_vectors (
    namespace TEXT NOT NULL,
    model     TEXT NOT NULL,
    item_key  TEXT NOT NULL,
    vector    BLOB NOT NULL,
    PRIMARY KEY (namespace, model, item_key)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS graph_entities (
    namespace  TEXT NOT NULL,
    name_key   TEXT NOT NULL,
    name       TEXT NOT NULL,
    label      TEXT NOT NULL,
    properties TEXT NOT NULL DEFAULT '{}',
    embedding  BLOB,
    PRIMARY KEY (namespace, name_key)
);
"""

_TABLES = ("graph_triplets", "graph_vectors", "graph_entities")


def ensure_tables(db: SQLiteDatabase) -> None:
    """Create the graph tables in ``db`` when one is missing (no write transaction otherwise)."""
    rows = db.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN (?, ?, ?)", _TABLES
    )
    if int(rows[0][0]) == len(_TABLES):
        return
    with db.transaction():
        db.connection.execute(_SCHEMA)


def check_namespace(namespace: str) -> str:
    """``namespace`` if it is a non-empty ``str``.

    Raises:
        ValueError: otherwise.
    """
    if not isinstance(namespace, str) or not namespace:
        raise ValueError(f"namespace must be a non-empty str, got {namespace!r}")
    return namespace


def to_blob(vector: Sequence[float]) -> bytes:
    """``vector`` as float32 bytes."""
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


def top_k_cosine(query: Sequence[float], matrix: np.ndarray, k: int) -> List[tuple]:
    """``[(row, cosine similarity)]`` of the ``k`` rows of ``matrix`` closest to ``query``, best
    first (ties: lower row first).  Rows or a query of zero norm score 0."""
    if matrix.size == 0 or k < 1:
        return []
    q = np.asarray(query, dtype=np.float32)
    qn = float(np.linalg.norm(q))
    norms = np.linalg.norm(matrix, axis=1)
    denom = np.where(norms * qn > 0, norms * qn, 1.0)
    sims = (matrix @ q) / denom
    order = sorted(range(len(sims)), key=lambda i: (-float(sims[i]), i))[:k]
    return [(i, float(sims[i])) for i in order]


def stack(blobs: Sequence[bytes], dimension: Optional[int] = None) -> np.ndarray:
    """Float32 rows from ``blobs`` (those of another ``dimension`` must be filtered by the caller)."""
    if not blobs:
        return np.zeros((0, dimension or 0), dtype=np.float32)
    return np.vstack([from_blob(b) for b in blobs])
