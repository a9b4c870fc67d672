"""``SimplePropertyGraphStore``: LlamaIndex's in-memory property graph, kept in the shared SQLite database."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

import numpy as np

from ragloom.graph_stores._tables import check_namespace, ensure_tables, from_blob, to_blob, top_k_cosine
from ragloom.graph_stores.types import (
    KG_SOURCE_REL,
    TRIPLET_SOURCE_KEY,
    EntityNode,
    LabelledNode,
    PropertyGraphStore,
    Relation,
    Triplet,
    entity_key,
)
from ragloom.storage.sqlite import SQLiteDatabase

logger = logging.getLogger(__name__)

__all__ = ["SimplePropertyGraphStore"]

_ROW = "r.subj, r.rel, r.obj, r.properties, r.rowid"


def _keys(names: Optional[Sequence[str]]) -> List[str]:
    return [entity_key(n) for n in names or [] if isinstance(n, str) and n.strip()]


def _matches(props: Dict[str, Any], wanted: Optional[dict]) -> bool:
    return not wanted or all(props.get(k) == v for k, v in wanted.items())


class SimplePropertyGraphStore(PropertyGraphStore):
    """Entities and relations in SQLite (LlamaIndex's ``SimplePropertyGraphStore``, the subset
    :class:`~ragloom.indices.property_graph.PropertyGraphIndex` uses).

    Entities are :class:`~ragloom.graph_stores.types.EntityNode` s keyed by name
    (:func:`~ragloom.graph_stores.types.entity_key`: case-insensitive, NFKC), with a label,
    JSON properties and an optional embedding (float32).  Relations are ``(subject, label, object)``
    rows with JSON properties; the ``triplet_source_id`` property names the text chunk a relation was
    extracted from, so :meth:`delete_sources` can remove what a re-indexed chunk no longer says.
    Entity vectors are searched here (:meth:`vector_query`, exact cosine over the stored vectors:
    ``supports_vector_queries`` is ``True``; LlamaIndex's simple store keeps no vectors and puts them
    in the default vector store instead).

    Text chunks are not stored here (LlamaIndex's ``upsert_llama_nodes``): they live in the docstore,
    written by the ingestion engine, and :meth:`get_llama_nodes` reads them through the node source
    the index sets (:meth:`set_node_source`).

    Args:
        database: the SQLite database to live in (a StorageContext passes its own); default in memory.
        namespace: which graph of the database this object reads and writes.

    Raises:
        ValueError: bad ``namespace``.
    """

    supports_structured_queries = False
    supports_vector_queries = True

    def __init__(self, database: Optional[SQLiteDatabase] = None, namespace: str = "property_graph_store") -> None:
        self._db = database if database is not None else SQLiteDatabase(":memory:")
        self.namespace = check_namespace(namespace)
        self._node_source: Optional[Callable[[List[str]], List[Any]]] = None
        ensure_tables(self._db)

    @property
    def database(self) -> SQLiteDatabase:
        return self._db

    @property
    def client(self) -> Any:
        return None

    def set_node_source(self, source: Optional[Callable[[List[str]], List[Any]]]) -> None:
        """Where :meth:`get_llama_nodes` reads text chunks (``PropertyGraphIndex`` sets its docstore)."""
        self._node_source = source

    # -- entities ------------------------------------------------------------------------------
    def _entity_rows(self, keys: Optional[List[str]]) -> List[tuple]:
        if keys is None:
            return self._db.execute(
                "SELECT name_key, name, label, properties, embedding FROM graph_entities WHERE namespace = ? "
                "ORDER BY rowid", (self.namespace,))
        return self._db.execute(
            "SELECT name_key, name, label, properties, embedding FROM graph_entities WHERE namespace = ? "
            "AND name_key IN (SELECT value FROM json_each(?)) ORDER BY rowid", (self.namespace, json.dumps(keys)))

    @staticmethod
    def _entity(row: tuple, with_embedding: bool = False) -> EntityNode:
        _, name, label, props, emb = row
        embedding = from_blob(emb).tolist() if with_embedding and emb is not None else None
        return EntityNode(name=str(name), label=str(label), properties=json.loads(props), embedding=embedding)

    def get(self, properties: Optional[dict] = None, ids: Optional[List[str]] = None) -> List[LabelledNode]:
        """Entities named in ``ids`` (matched by key) and/or having these ``properties``; with
        neither, every entity.  In write order."""
        rows = self._entity_rows(_keys(ids) if ids is not None else None)
        nodes = [self._entity(r) for r in rows]
        return [n for n in nodes if _matches(n.properties, properties)]

    def upsert_nodes(self, nodes: Sequence[LabelledNode]) -> None:
        """Add or update entities: a known name keeps its first spelling and label, its properties are
        merged (new values win) and its embedding replaced when one is given.

        Raises:
            ValueError: a node that is not an :class:`EntityNode` with a non-empty name.
        """
        rows = []
        for node in nodes:
            if not isinstance(node, EntityNode) or not node.name.strip():
                raise ValueError(f"upsert_nodes takes EntityNode s with a name, got {node!r}")
            rows.append((node, entity_key(node.name)))
        if not rows:
            return
        with self._db.transaction():
            conn = self._db.connection
            for node, key in rows:
                found = conn.execute("SELECT properties FROM graph_entities WHERE namespace = ? AND name_key = ?",
                                     (self.namespace, key)).fetchall()
                props = {**(json.loads(str(found[0][0])) if found else {}), **node.properties}
                blob = to_blob(node.embedding) if node.embedding is not None else None
                conn.execute(
                    "INSERT INTO graph_entities(namespace, name_key, name, label, properties, embedding) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(namespace, name_key) DO UPDATE SET "
                    "properties = excluded.properties, embedding = coalesce(excluded.embedding, embedding)",
                    (self.namespace, key, node.name.strip(), node.label, json.dumps(props, ensure_ascii=False), blob),
                )

    def entities_without_embedding(self) -> List[EntityNode]:
        """Entities that have no vector yet (to embed), in write order."""
        rows = self._db.execute(
            "SELECT name_key, name, label, properties, embedding FROM graph_entities WHERE namespace = ? "
            "AND embedding IS NULL ORDER BY rowid", (self.namespace,))
        return [self._entity(r) for r in rows]

    def clear_embeddings(self) -> None:
        """Forget every entity vector (the index's embed model changed)."""
        with self._db.transaction():
            self._db.connection.execute("UPDATE graph_entities SET embedding = NULL WHERE namespace = ?",
                                        (self.namespace,))

    # -- relations -----------------------------------------------------------------------------------
    def upsert_relations(self, relations: Sequence[Relation]) -> None:
        """Add relations; their ends become entities when not known yet.  A relation already stored for
        the same source (same subject, label and object keys) keeps its first spelling.

        Raises:
            ValueError: a relation with an empty label or end.
        """
        rows = []
        for rel in relations:
            if not (rel.label.strip() and rel.source_id.strip() and rel.target_id.strip()):
                raise ValueError(f"a relation needs a label, source_id and target_id, got {rel!r}")
            source = str(rel.properties.get(TRIPLET_SOURCE_KEY, "") or "")
            rows.append((self.namespace, entity_key(rel.source_id), entity_key(rel.label), entity_key(rel.target_id),
                         source, rel.source_id.strip(), rel.label.strip(), rel.target_id.strip(),
                         json.dumps(rel.properties, ensure_ascii=False)))
        if not rows:
            return
        with self._db.transaction():
            conn = self._db.connection
            ends = {(r[1], r[5]) for r in rows} | {(r[3], r[7]) for r in rows}
            conn.executemany(
                "INSERT OR IGNORE INTO graph_entities(namespace, name_key, name, label) VALUES (?, ?, ?, 'entity')",
                [(self.namespace, key, name) for key, name in sorted(ends)],
            )
            conn.executemany(
                "INSERT OR IGNORE INTO graph_triplets(namespace, subj_key, rel_key, obj_key, source, subj, rel, obj, "
                "properties) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def _triplet_rows(self, where: str, params: List[Any]) -> List[tuple]:
        return self._db.execute(
            f"SELECT {_ROW} FROM graph_triplets r WHERE r.namespace = ? AND ({where}) ORDER BY r.rowid",
            [self.namespace, *params])

    def _to_triplets(self, rows: List[tuple]) -> List[Triplet]:
        keys = sorted({entity_key(r[0]) for r in rows} | {entity_key(r[2]) for r in rows})
        entities = {str(r[0]): self._entity(r) for r in self._entity_rows(keys)} if keys else {}
        out: List[Triplet] = []
        seen: Set[Tuple[str, str, str]] = set()
        for subj, rel, obj, props, _ in rows:
            ident = (entity_key(subj), entity_key(rel), entity_key(obj))
            if ident in seen:  # the same relation from several chunks: once
                continue
            seen.add(ident)
            s = entities.get(ident[0]) or EntityNode(name=str(subj))
            o = entities.get(ident[2]) or EntityNode(name=str(obj))
            out.append((s, Relation(label=str(rel), source_id=s.id, target_id=o.id,
                                    properties=json.loads(props) if props else {}), o))
        return out

    def get_triplets(
        self,
        entity_names: Optional[List[str]] = None,
        relation_names: Optional[List[str]] = None,
        properties: Optional[dict] = None,
        ids: Optional[List[str]] = None,
    ) -> List[Triplet]:
        """Triplets whose subject or object is one of ``entity_names`` / ``ids`` (names), whose label is
        one of ``relation_names``, and whose relation has ``properties``; each once, in write order.
        With no filter at all, ``[]`` (as LlamaIndex)."""
        if not entity_names and not relation_names and not properties and not ids:
            return []
        where, params = ["1"], []
        names = _keys([*(entity_names or []), *(ids or [])])
        if entity_names or ids:
            where.append("(r.subj_key IN (SELECT value FROM json_each(?)) "
                         "OR r.obj_key IN (SELECT value FROM json_each(?)))")
            params += [json.dumps(names), json.dumps(names)]
        if relation_names:
            where.append("r.rel_key IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(_keys(relation_names)))
        triplets = self._to_triplets(self._triplet_rows(" AND ".join(where), params))
        return [t for t in triplets if _matches(t[1].properties, properties)]

    def get_rel_map(self, graph_nodes: List[LabelledNode], depth: int = 2, limit: int = 30,
                    ignore_rels: Optional[List[str]] = None) -> List[Triplet]:
        """Triplets within ``depth`` hops of ``graph_nodes``, following relations either way, nearest
        first, at most ``limit``; relations labelled in ``ignore_rels`` (default ``["SOURCE"]``) are
        skipped.

        Raises:
            ValueError: ``depth`` < 0 or ``limit`` < 1.
        """
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
            raise ValueError(f"depth must be an int >= 0 (hops), got {depth!r}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be an int >= 1 (triplets), got {limit!r}")
        ignored = {entity_key(r) for r in (ignore_rels if ignore_rels is not None else [KG_SOURCE_REL])}
        frontier = {entity_key(str(n.id)) for n in graph_nodes if isinstance(n, EntityNode)}
        visited = set(frontier)
        out: List[Triplet] = []
        seen: Set[Tuple[str, str, str]] = set()
        with self._db.snapshot():
            for _ in range(depth):
                if not frontier or len(out) >= limit:
                    break
                nxt: Set[str] = set()
                for s, r, o in self.get_triplets(ids=sorted(frontier)):
                    ident = (entity_key(s.id), entity_key(r.label), entity_key(o.id))
                    if ident in seen or ident[1] in ignored:
                        continue
                    seen.add(ident)
                    out.append((s, r, o))
                    nxt.update(k for k in (ident[0], ident[2]) if k not in visited)
                    if len(out) >= limit:
                        break
                visited |= nxt
                frontier = nxt
        return out[:limit]

    # -- deleting -------------------------------------------------------------------------------------
    def delete(
        self,
        entity_names: Optional[List[str]] = None,
        relation_names: Optional[List[str]] = None,
        properties: Optional[dict] = None,
        ids: Optional[List[str]] = None,
    ) -> None:
        """Remove the entities named in ``entity_names`` / ``ids`` with every relation touching them,
        the relations labelled in ``relation_names``, and the entities and relations having
        ``properties``."""
        with self._db.transaction():
            conn = self._db.connection
            names = _keys([*(entity_names or []), *(ids or [])])
            if names:
                arg = json.dumps(names)
                conn.execute("DELETE FROM graph_triplets WHERE namespace = ? AND (subj_key IN (SELECT value FROM "
                             "json_each(?)) OR obj_key IN (SELECT value FROM json_each(?)))",
                             (self.namespace, arg, arg))
                conn.execute("DELETE FROM graph_entities WHERE namespace = ? AND name_key IN (SELECT value FROM "
                             "json_each(?))", (self.namespace, arg))
            if relation_names:
                conn.execute("DELETE FROM graph_triplets WHERE namespace = ? AND rel_key IN (SELECT value FROM "
                             "json_each(?))", (self.namespace, json.dumps(_keys(relation_names))))
            if properties:
                self._delete_by_properties(properties)

    def _delete_by_properties(self, properties: dict) -> None:
        conn = self._db.connection
        rows = conn.execute("SELECT rowid, properties FROM graph_triplets WHERE namespace = ?",
                            (self.namespace,)).fetchall()
        gone = [r[0] for r in rows if r[1] and _matches(json.loads(str(r[1])), properties)]
        conn.executemany("DELETE FROM graph_triplets WHERE rowid = ?", [(g,) for g in gone])
        rows = conn.execute("SELECT name_key, properties FROM graph_entities WHERE namespace = ?",
                            (self.namespace,)).fetchall()
        keys = [r[0] for r in rows if _matches(json.loads(str(r[1])), properties)]
        conn.executemany("DELETE FROM graph_entities WHERE namespace = ? AND name_key = ?",
                         [(self.namespace, k) for k in keys])

    def delete_sources(self, source_ids: Sequence[str]) -> None:
        """Remove the relations extracted from chunks ``source_ids``, then the entities those chunks
        wrote last that no remaining relation uses."""
        ids = [s for s in source_ids if s]
        if not ids:
            return
        arg = json.dumps(ids)
        with self._db.transaction():
            conn = self._db.connection
            conn.execute("DELETE FROM graph_triplets WHERE namespace = ? "
                         "AND source IN (SELECT value FROM json_each(?))", (self.namespace, arg))
            conn.execute(
                "DELETE FROM graph_entities WHERE namespace = ? "
                f"AND json_extract(properties, '$.{TRIPLET_SOURCE_KEY}') IN (SELECT value FROM json_each(?)) "
                "AND NOT EXISTS (SELECT 1 FROM graph_triplets t WHERE t.namespace = graph_entities.namespace "
                "AND (t.subj_key = graph_entities.name_key OR t.obj_key = graph_entities.name_key))",
                (self.namespace, arg),
            )

    # -- vectors and chunks -------------------------------------------------------------------------------
    def vector_query(self, query: Any, **kwargs: Any) -> Tuple[List[LabelledNode], List[float]]:
        """The ``query.similarity_top_k`` entities whose vectors are closest to ``query.query_embedding``
        (cosine; vectors of another dimension are skipped), and their similarities, best first."""
        if query.query_embedding is None:
            return [], []
        dim = len(query.query_embedding)
        rows = [r for r in self._db.execute(
            "SELECT name_key, name, label, properties, embedding FROM graph_entities WHERE namespace = ? "
            "AND embedding IS NOT NULL ORDER BY rowid", (self.namespace,)) if len(r[4]) == 4 * dim]
        if not rows:
            return [], []
        matrix = np.vstack([from_blob(r[4]) for r in rows])
        best = top_k_cosine(query.query_embedding, matrix, int(query.similarity_top_k))
        return [self._entity(rows[i]) for i, _ in best], [s for _, s in best]

    def get_llama_nodes(self, node_ids: List[str]) -> List[Any]:
        """The text chunks with these ids (through the node source; ``[]`` without one), in order,
        missing ones skipped."""
        if self._node_source is None or not node_ids:
            return []
        return list(self._node_source(list(dict.fromkeys(node_ids))))

    def persist(self, persist_path: Union[str, "os.PathLike[str]"] = "", fs: Any = None) -> None:
        """Write entities and relations as JSON to ``persist_path`` (with no path: checkpoint the
        database; a StorageContext persists its shared database itself)."""
        if fs is not None:
            raise ValueError("ragloom graph stores work on the local file system only (fs must be None)")
        if not persist_path:
            self._db.checkpoint()
            return
        data = {
            "nodes": [{"name": n.id, "label": n.label, "properties": n.properties} for n in self.get()],
            "relations": [{"label": str(r), "source_id": r.source_id, "target_id": r.target_id,
                           "properties": r.properties}
                          for r in (t[1] for t in self._to_triplets(self._triplet_rows("1", [])))],
        }
        path = Path(persist_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")

    def __repr__(self) -> str:
        return f"SimplePropertyGraphStore({self._db.path!r}, namespace={self.namespace!r})"
