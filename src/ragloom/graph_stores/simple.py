"""``SimpleGraphStore``: LlamaIndex's triplet store, kept in the shared SQLite database."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

import numpy as np

from ragloom.graph_stores._tables import check_namespace, ensure_tables, stack, to_blob, top_k_cosine
from ragloom.graph_stores.types import DEFAULT_PERSIST_FNAME, GraphStore, entity_key
from ragloom.storage.sqlite import DEFAULT_DB_NAME, SQLiteDatabase

logger = logging.getLogger(__name__)

__all__ = ["SimpleGraphStore", "DEFAULT_REL_MAP_LIMIT", "triplet_key"]

#: LlamaIndex's default cap on the triplets :meth:`SimpleGraphStore.get_rel_map` returns
DEFAULT_REL_MAP_LIMIT = 30

Triple = Tuple[str, str, str]


def triplet_key(subj: str, rel: str, obj: str) -> str:
    """The key a triplet's vector is stored under (the :func:`entity_key` of each part)."""
    return "\x1f".join((entity_key(subj), entity_key(rel), entity_key(obj)))


def _clean(part: Any, name: str) -> str:
    if not isinstance(part, str) or not part.strip():
        raise ValueError(f"{name} must be a non-empty str, got {part!r}")
    return part.strip()


class SimpleGraphStore(GraphStore):
    """Triplets ``(subject, relation, object)`` in SQLite (LlamaIndex's ``SimpleGraphStore``).

    Args:
        data: triplets to start with, in LlamaIndex's persisted shape
            ``{"graph_dict": {subj: [[rel, obj], ...]}}``.
        fs: must be ``None`` (local storage only).
        database: the :class:`~ragloom.storage.sqlite.SQLiteDatabase` to live in (a
            :class:`~ragloom.storage.StorageContext` passes its own, so triplets commit with the
            nodes they were extracted from); default a new in-memory one.
        namespace: which graph of the database this object reads and writes.

    Differences from LlamaIndex: names are matched by :func:`~ragloom.graph_stores.types.entity_key`
    (case-insensitive, NFKC) and a triplet is stored once per spelling-insensitive key; each triplet
    records the nodes it was extracted from (:meth:`upsert_triplets`), so re-indexing a changed
    document removes what only its old text supported (:meth:`delete_sources`); :meth:`get_rel_map`
    never repeats a triplet within one subject's paths (cycles end there).

    Raises:
        ValueError: ``fs`` is given, bad ``namespace``, or ``data`` of another shape.
    """

    def __init__(
        self,
        data: Optional[Mapping[str, Any]] = None,
        fs: Any = None,
        database: Optional[SQLiteDatabase] = None,
        namespace: str = "graph_store",
    ) -> None:
        if fs is not None:
            raise ValueError("ragloom graph stores work on the local file system only (fs must be None)")
        self._db = database if database is not None else SQLiteDatabase(":memory:")
        self.namespace = check_namespace(namespace)
        ensure_tables(self._db)
        if data is not None:
            self._load_dict(data)

    # -- construction and persistence ------------------------------------------------------
    @classmethod
    def from_dict(cls, save_dict: Mapping[str, Any]) -> "SimpleGraphStore":
        """An in-memory store holding ``save_dict`` (``{"graph_dict": {subj: [[rel, obj], ...]}}``)."""
        return cls(data=save_dict)

    def to_dict(self) -> Dict[str, Any]:
        """``{"graph_dict": {subj: [[rel, obj], ...]}}`` (LlamaIndex's persisted shape)."""
        graph: Dict[str, List[List[str]]] = {}
        for subj, rel, obj in self.get_all_triplets():
            graph.setdefault(subj, []).append([rel, obj])
        return {"graph_dict": graph}

    def _load_dict(self, data: Mapping[str, Any]) -> None:
        graph = data.get("graph_dict") if isinstance(data, Mapping) else None
        if not isinstance(graph, Mapping):
            raise ValueError("data must look like {'graph_dict': {subject: [[relation, object], ...]}}")
        with self._db.transaction():
            for subj, pairs in graph.items():
                self.upsert_triplets((subj, rel, obj) for rel, obj in pairs)

    @classmethod
    def from_persist_path(cls, persist_path: Union[str, "os.PathLike[str]"], fs: Any = None) -> "SimpleGraphStore":
        """Open ``persist_path``: a ragloom database file (the store then lives in it), or a JSON file
        written by :meth:`persist` or LlamaIndex (loaded into memory).  A missing file gives an empty
        in-memory store, as in LlamaIndex (with a warning)."""
        path = Path(persist_path)
        if not path.is_file():
            logger.warning("no graph store at %s; starting an empty one", path)
            return cls(fs=fs)
        with path.open("rb") as f:
            head = f.read(16)
        if head.startswith(b"SQLite format 3"):
            return cls(database=SQLiteDatabase(path, create=False), fs=fs)
        return cls(data=json.loads(path.read_text(encoding="utf-8")), fs=fs)

    @classmethod
    def from_persist_dir(cls, persist_dir: Union[str, "os.PathLike[str]"] = "./storage", fs: Any = None
                         ) -> "SimpleGraphStore":
        """``persist_dir/ragloom.sqlite`` when it exists, else ``persist_dir/graph_store.json``."""
        directory = Path(persist_dir)
        db = directory / DEFAULT_DB_NAME
        return cls.from_persist_path(db if db.is_file() else directory / DEFAULT_PERSIST_FNAME, fs=fs)

    def persist(self, persist_path: Union[str, "os.PathLike[str]"] = "", fs: Any = None) -> None:
        """Write the triplets to ``persist_path`` as LlamaIndex's JSON (sources and vectors are not
        part of that format).  With no path: checkpoint the database (a
        :class:`~ragloom.storage.StorageContext` persists its shared database itself)."""
        if fs is not None:
            raise ValueError("ragloom graph stores work on the local file system only (fs must be None)")
        if not persist_path:
            self._db.checkpoint()
            return
        path = Path(persist_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), ensure_ascii=False), encoding="utf-8")

    @property
    def database(self) -> SQLiteDatabase:
        """The SQLite database the triplets live in."""
        return self._db

    # -- reads ---------------------------------------------------------------------------------
    def _out_edges(self, subj_key: str) -> List[Triple]:
        rows = self._db.execute(
            "SELECT subj, rel, obj, min(rowid) FROM graph_triplets WHERE namespace = ? AND subj_key = ? "
            "GROUP BY rel_key, obj_key ORDER BY min(rowid)",
            (self.namespace, subj_key),
        )
        return [(str(s), str(r), str(o)) for s, r, o, _ in rows]

    def get(self, subj: str) -> List[List[str]]:
        """``[[relation, object], ...]`` of the triplets whose subject matches ``subj`` (by
        :func:`entity_key`), in write order."""
        return [[r, o] for _, r, o in self._out_edges(entity_key(subj))]

    def get_all_triplets(self) -> List[Triple]:
        rows = self._db.execute(
            "SELECT subj, rel, obj, min(rowid) FROM graph_triplets WHERE namespace = ? "
            "GROUP BY subj_key, rel_key, obj_key ORDER BY min(rowid)",
            (self.namespace,),
        )
        return [(str(s), str(r), str(o)) for s, r, o, _ in rows]

    def get_subjects(self) -> List[str]:
        """Every subject once (first spelling), in write order."""
        rows = self._db.execute(
            "SELECT subj, min(rowid) FROM graph_triplets WHERE namespace = ? GROUP BY subj_key ORDER BY min(rowid)",
            (self.namespace,),
        )
        return [str(r[0]) for r in rows]

    def get_rel_map(
        self, subjs: Optional[List[str]] = None, depth: int = 2, limit: int = DEFAULT_REL_MAP_LIMIT
    ) -> Dict[str, List[List[str]]]:
        """Paths from each subject, depth first: ``{subj: [[s, r, o], ...]}``.

        Each ``[s, r, o]`` is one hop; a hop from ``o`` follows it when ``depth`` allows (``depth=2``:
        the subject's triplets and their objects' triplets).  Every subject given is a key (with
        ``[]`` when it has no triplet); ``None``: every subject.  At most ``limit`` triplets in all,
        taken in subject order (LlamaIndex's truncation).

        Raises:
            ValueError: ``depth`` < 0 or ``limit`` < 1.
        """
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
            raise ValueError(f"depth must be an int >= 0 (hops), got {depth!r}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be an int >= 1 (triplets), got {limit!r}")
        with self._db.snapshot():
            subjects = self.get_subjects() if subjs is None else list(subjs)
            out: Dict[str, List[List[str]]] = {}
            total = 0
            for subj in subjects:
                if subj in out:
                    continue
                paths = self._paths(subj, depth, limit - total)
                out[subj] = paths
                total += len(paths)
                if total >= limit:
                    break
        return out

    def _paths(self, subj: str, depth: int, budget: int) -> List[List[str]]:
        found: List[List[str]] = []
        seen: Set[Tuple[str, str, str]] = set()
        cache: Dict[str, List[Triple]] = {}

        def walk(key: str, left: int) -> None:
            if left == 0:
                return
            edges = cache.get(key)
            if edges is None:
                edges = cache[key] = self._out_edges(key)
            for s, r, o in edges:
                if len(found) >= budget:
                    return
                ident = (entity_key(s), entity_key(r), entity_key(o))
                if ident in seen:
                    continue
                seen.add(ident)
                found.append([s, r, o])
                walk(ident[2], left - 1)

        walk(entity_key(subj), depth)
        return found

    # -- writes ----------------------------------------------------------------------------------
    def upsert_triplet(self, subj: str, rel: str, obj: str) -> None:
        """Add ``(subj, rel, obj)`` by hand (kept until :meth:`delete`).

        Raises:
            ValueError: a part is not a non-empty string.
        """
        self.upsert_triplets([(subj, rel, obj)])

    def upsert_triplets(self, triplets: Iterable[Tuple[str, str, str]], source_id: str = "") -> None:
        """Add ``triplets`` as supported by node ``source_id`` (``""``: by hand), in one transaction.
        A triplet already stored (same keys) keeps its first spelling.

        Raises:
            ValueError: a part is not a non-empty string.
        """
        rows = []
        for subj, rel, obj in triplets:
            s, r, o = _clean(subj, "subject"), _clean(rel, "relation"), _clean(obj, "object")
            rows.append((self.namespace, entity_key(s), entity_key(r), entity_key(o), source_id, s, r, o))
        if not rows:
            return
        with self._db.transaction():
            self._db.connection.executemany(
                "INSERT OR IGNORE INTO graph_triplets(namespace, subj_key, rel_key, obj_key, source, subj, rel, obj) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def delete(self, subj: str, rel: str, obj: str) -> None:
        """Remove the triplet matching ``(subj, rel, obj)`` (every source of it) and its vectors."""
        key = (entity_key(subj), entity_key(rel), entity_key(obj))
        with self._db.transaction():
            self._db.connection.execute(
                "DELETE FROM graph_triplets WHERE namespace = ? AND subj_key = ? AND rel_key = ? AND obj_key = ?",
                (self.namespace, *key),
            )
            self._db.connection.execute(
                "DELETE FROM graph_vectors WHERE namespace = ? AND item_key = ?", (self.namespace, "\x1f".join(key))
            )

    def delete_sources(self, source_ids: Sequence[str]) -> None:
        """Drop the support of nodes ``source_ids``; triplets no other source (nor a hand insert)
        supports are removed with their vectors."""
        ids = [s for s in source_ids if s]
        if not ids:
            return
        with self._db.transaction():
            conn = self._db.connection
            conn.execute(
                "DELETE FROM graph_triplets WHERE namespace = ? AND source IN (SELECT value FROM json_each(?))",
                (self.namespace, json.dumps(ids)),
            )
            conn.execute(
                "DELETE FROM graph_vectors WHERE namespace = ? AND NOT EXISTS (SELECT 1 FROM graph_triplets t "
                "WHERE t.namespace = graph_vectors.namespace AND "
                "t.subj_key || char(31) || t.rel_key || char(31) || t.obj_key = graph_vectors.item_key)",
                (self.namespace,),
            )

    def triplets_of_source(self, source_id: str) -> List[Triple]:
        """The triplets node ``source_id`` supports, in write order."""
        rows = self._db.execute(
            "SELECT subj, rel, obj FROM graph_triplets WHERE namespace = ? AND source = ? ORDER BY rowid",
            (self.namespace, source_id),
        )
        return [(str(s), str(r), str(o)) for s, r, o in rows]

    # -- triplet vectors (KnowledgeGraphIndex include_embeddings) -------------------------------------
    def missing_embeddings(self, model: str) -> List[Triple]:
        """Triplets without a vector of embed model ``model``, in write order."""
        rows = self._db.execute(
            "SELECT subj, rel, obj, min(rowid) FROM graph_triplets t WHERE namespace = ? AND NOT EXISTS ("
            "SELECT 1 FROM graph_vectors v WHERE v.namespace = t.namespace AND v.model = ? AND "
            "v.item_key = t.subj_key || char(31) || t.rel_key || char(31) || t.obj_key) "
            "GROUP BY subj_key, rel_key, obj_key ORDER BY min(rowid)",
            (self.namespace, model),
        )
        return [(str(s), str(r), str(o)) for s, r, o, _ in rows]

    def set_embeddings(self, model: str, items: Sequence[Tuple[Triple, Sequence[float]]]) -> None:
        """Store each ``(triplet, vector)`` of embed model ``model`` (float32)."""
        if not items:
            return
        with self._db.transaction():
            self._db.connection.executemany(
                "INSERT OR REPLACE INTO graph_vectors(namespace, model, item_key, vector) VALUES (?, ?, ?, ?)",
                [(self.namespace, model, triplet_key(*t), to_blob(v)) for t, v in items],
            )

    def query_embeddings(self, model: str, query_embedding: Sequence[float], top_k: int) -> List[Tuple[Triple, float]]:
        """The ``top_k`` triplets whose vectors (of ``model``) are closest to ``query_embedding`` by
        cosine similarity, best first, with it."""
        with self._db.snapshot():
            vectors = {
                str(k): bytes(v) for k, v in self._db.execute(
                    "SELECT item_key, vector FROM graph_vectors WHERE namespace = ? AND model = ?",
                    (self.namespace, model),
                )
            }
            triplets = [t for t in self.get_all_triplets() if triplet_key(*t) in vectors]
        dim = len(query_embedding)
        triplets = [t for t in triplets if len(vectors[triplet_key(*t)]) == 4 * dim]
        matrix = stack([vectors[triplet_key(*t)] for t in triplets], dim) if triplets else np.zeros((0, dim))
        return [(triplets[i], s) for i, s in top_k_cosine(query_embedding, matrix, top_k)]

    def __repr__(self) -> str:
        return f"SimpleGraphStore({self._db.path!r}, namespace={self.namespace!r})"
