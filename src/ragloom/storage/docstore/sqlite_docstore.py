"""The default docstore: nodes, hashes and source-document info in the shared SQLite database.

Tables (created by :class:`~ragloom.storage.sqlite.SQLiteDatabase`):
``docstore_nodes(node_id, data)`` holds each node's tagged JSON;
``docstore_meta(doc_id, doc_hash, ref_doc_id)`` holds each node's or document's
hash and owning document (a row may exist without a node, e.g. a document whose
hash was recorded but whose text is not stored); ``docstore_ref_docs(ref_doc_id,
metadata)`` holds each source document's metadata.  A document's node ids are
the ``docstore_meta`` rows pointing at it, in insertion order.
"""

from __future__ import annotations

import json
import time
from typing import Any, Dict, List, Optional, Sequence, cast

import msgspec

from ragloom.schema import BaseNode, node_from_json
from ragloom.storage.docstore.types import BaseDocumentStore, RefDocInfo, RefDocSummary
from ragloom.storage.sqlite import SQLiteBacked

__all__ = ["SQLiteDocumentStore", "SimpleDocumentStore"]

_CHUNK = 2000


class SQLiteDocumentStore(SQLiteBacked, BaseDocumentStore):
    """Document store on a :class:`SQLiteDatabase` (in memory unless one is given)."""

    # -- nodes ---------------------------------------------------------------------------
    @property
    def docs(self) -> Dict[str, BaseNode]:
        """Every stored node (and document) by id, as LlamaIndex's ``docstore.docs``: the nodes this
        store keeps with their text, then those it records by link only, read from the node source
        (:meth:`BaseDocumentStore.set_node_source`: the vector store of a ``StorageContext``) as
        :meth:`get_node` reads them.  So after ``VectorStoreIndex.from_documents(...)`` it holds
        every node of :meth:`get_all_ref_doc_info`.

        It loads every node into memory (LlamaIndex's semantics): for a large store read nodes by id
        with :meth:`get_node` / :meth:`get_nodes` (ids from :meth:`get_ref_doc_info`) instead.
        """
        source = self._node_source
        with self._db.snapshot():  # one consistent view of both tables
            conn = self._db.connection
            rows = conn.execute("SELECT node_id, data FROM docstore_nodes").fetchall()
            # ids recorded by link only (source documents' fingerprints too: the source has no such node)
            linked = [] if source is None else [r[0] for r in conn.execute(
                "SELECT doc_id FROM docstore_meta WHERE doc_id NOT IN (SELECT node_id FROM docstore_nodes) "
                "ORDER BY rowid"
            )]
        out = {cast(str, node_id): node_from_json(cast(str, data)) for node_id, data in rows}
        for start in range(0, len(linked), _CHUNK):
            assert source is not None
            out.update((n.node_id, n) for n in source(linked[start : start + _CHUNK]))
        return out

    def add_documents(
        self,
        nodes: Sequence[BaseNode],
        allow_update: bool = True,
        batch_size: Optional[int] = None,
        store_text: bool = True,
    ) -> None:
        """Store nodes (and their hashes and source-document links) in one transaction.

        With ``allow_update=False`` an id already present raises ``ValueError`` and
        nothing is written.  ``store_text=False`` records only hashes and links.
        """
        if not nodes:
            return
        chunk = batch_size or _CHUNK
        now = time.time()
        with self._db.transaction():
            conn = self._db.connection
            if not allow_update:
                ids = [n.node_id for n in nodes]
                for start in range(0, len(ids), chunk):
                    found = conn.execute(
                        "SELECT node_id FROM docstore_nodes WHERE node_id IN (SELECT value FROM json_each(?)) LIMIT 1",
                        (json.dumps(ids[start : start + chunk]),),
                    ).fetchall()
                    if found:
                        raise ValueError(
                            f"node_id {found[0][0]} already exists. Set allow_update to True to overwrite."
                        )
                if len(set(ids)) != len(ids):
                    dup = next(i for i in ids if ids.count(i) > 1)
                    raise ValueError(f"node_id {dup} is given twice. Set allow_update to True to overwrite.")
            previous_refs: set = set()
            for start in range(0, len(nodes), chunk):
                part = nodes[start : start + chunk]
                previous_refs.update(
                    r[0]
                    for r in conn.execute(
                        "SELECT DISTINCT ref_doc_id FROM docstore_meta "
                        "WHERE ref_doc_id IS NOT NULL AND doc_id IN (SELECT value FROM json_each(?))",
                        (json.dumps([n.node_id for n in part]),),
                    )
                )
                if store_text:
                    conn.executemany(
                        "INSERT INTO docstore_nodes(node_id, data) VALUES (?, ?) "
                        "ON CONFLICT(node_id) DO UPDATE SET data = excluded.data",
                        [(n.node_id, n.to_json()) for n in part],
                    )
                refs = [(n, n.ref_doc_id) for n in part]
                conn.executemany(
                    "INSERT INTO docstore_meta(doc_id, doc_hash, ref_doc_id) VALUES (?, ?, ?) "
                    "ON CONFLICT(doc_id) DO UPDATE SET doc_hash = excluded.doc_hash, ref_doc_id = excluded.ref_doc_id",
                    [(n.node_id, n.hash, ref) for n, ref in refs],
                )
                conn.executemany(
                    "INSERT INTO docstore_ref_docs(ref_doc_id, metadata, indexed_at) VALUES (?, ?, ?) "
                    "ON CONFLICT(ref_doc_id) DO UPDATE SET indexed_at = excluded.indexed_at, metadata = "
                    "CASE WHEN docstore_ref_docs.metadata = '{}' THEN excluded.metadata "
                    "ELSE docstore_ref_docs.metadata END",
                    [
                        (ref, msgspec.json.encode(n.metadata or {}).decode("utf-8"), now)
                        for n, ref in refs
                        if ref is not None
                    ],
                )
            self._drop_empty_ref_docs(previous_refs)

    def get_document(self, doc_id: str, raise_error: bool = True) -> Optional[BaseNode]:
        rows = self._db.execute("SELECT data FROM docstore_nodes WHERE node_id = ?", (doc_id,))
        if not rows:
            linked = self._from_node_source([doc_id])
            if linked:
                return linked[0]
            if raise_error:
                raise ValueError(f"doc_id {doc_id} not found.")
            return None
        return node_from_json(rows[0][0])

    def get_nodes(self, node_ids: List[str], raise_error: bool = True) -> List[BaseNode]:
        """Nodes in the order of ``node_ids`` (missing ones raise ``ValueError``, or are skipped)."""
        found: Dict[str, BaseNode] = {}
        for start in range(0, len(node_ids), _CHUNK):
            rows = self._db.execute(
                "SELECT node_id, data FROM docstore_nodes WHERE node_id IN (SELECT value FROM json_each(?))",
                (json.dumps(list(node_ids[start : start + _CHUNK])),),
            )
            found.update((node_id, node_from_json(data)) for node_id, data in rows)
        missing = [i for i in node_ids if i not in found]
        if missing:
            found.update((n.node_id, n) for n in self._from_node_source(missing))
        out = []
        for node_id in node_ids:
            node = found.get(node_id)
            if node is None:
                if raise_error:
                    raise ValueError(f"doc_id {node_id} not found.")
                continue
            out.append(node)
        return out

    def _from_node_source(self, node_ids: List[str]) -> List[BaseNode]:
        """The nodes among ``node_ids`` that are recorded here by link only, read from the node
        source (see :meth:`BaseDocumentStore.set_node_source`)."""
        if self._node_source is None:
            return []
        linked: List[str] = []
        for start in range(0, len(node_ids), _CHUNK):
            linked += [r[0] for r in self._db.execute(
                "SELECT doc_id FROM docstore_meta WHERE doc_id IN (SELECT value FROM json_each(?))",
                (json.dumps(list(node_ids[start : start + _CHUNK])),),
            )]
        return self._node_source(linked) if linked else []

    def document_exists(self, doc_id: str) -> bool:
        return bool(self._db.execute("SELECT 1 FROM docstore_nodes WHERE node_id = ?", (doc_id,)))

    def delete_document(self, doc_id: str, raise_error: bool = True) -> None:
        """Delete one node/document, its hash and its place in its source document's node list."""
        with self._db.transaction():
            conn = self._db.connection
            conn.execute("DELETE FROM docstore_nodes WHERE node_id = ?", (doc_id,))
            deleted = conn.changes()
            refs = [r[0] for r in conn.execute("SELECT ref_doc_id FROM docstore_meta WHERE doc_id = ?", (doc_id,))]
            conn.execute("DELETE FROM docstore_meta WHERE doc_id = ?", (doc_id,))
            deleted += conn.changes()
            if not deleted:
                if raise_error:
                    raise ValueError(f"doc_id {doc_id} not found.")
                return
            self._drop_empty_ref_docs(r for r in refs if r is not None)

    def _drop_empty_ref_docs(self, ref_doc_ids: Any) -> None:
        """Forget the source documents among ``ref_doc_ids`` that no longer have any node."""
        ids = list(ref_doc_ids)
        if ids:
            self._db.connection.execute(
                "DELETE FROM docstore_ref_docs WHERE ref_doc_id IN (SELECT value FROM json_each(?)) AND NOT EXISTS "
                "(SELECT 1 FROM docstore_meta m WHERE m.ref_doc_id = docstore_ref_docs.ref_doc_id)",
                (json.dumps(ids),),
            )

    # -- source documents --------------------------------------------------------------
    def get_ref_doc_info(self, ref_doc_id: str) -> Optional[RefDocInfo]:
        with self._db.snapshot():  # one consistent view of both tables
            rows = self._db.connection.execute(
                "SELECT metadata FROM docstore_ref_docs WHERE ref_doc_id = ?", (ref_doc_id,)
            ).fetchall()
            if not rows:
                return None
            node_ids = [
                r[0]
                for r in self._db.connection.execute(
                    "SELECT doc_id FROM docstore_meta WHERE ref_doc_id = ? ORDER BY rowid", (ref_doc_id,)
                )
            ]
        return RefDocInfo(node_ids=node_ids, metadata=json.loads(str(rows[0][0])))

    def get_all_ref_doc_info(self) -> Dict[str, RefDocInfo]:
        with self._db.snapshot():
            conn = self._db.connection
            out = {ref: RefDocInfo(node_ids=[], metadata=json.loads(meta)) for ref, meta in conn.execute(
                "SELECT ref_doc_id, metadata FROM docstore_ref_docs"
            )}
            for doc_id, ref in conn.execute(
                "SELECT doc_id, ref_doc_id FROM docstore_meta WHERE ref_doc_id IS NOT NULL ORDER BY rowid"
            ):
                info = out.get(ref)
                if info is not None:
                    info.node_ids.append(doc_id)
        return out

    def list_ref_docs(self, offset: int = 0, limit: Optional[int] = None,
                      path_contains: Optional[str] = None) -> "tuple[int, List[RefDocSummary]]":
        where, params = "", []
        if path_contains:
            where = "WHERE instr(ragloom_casefold(json_extract(r.metadata, '$.file_path')), ?) > 0"
            params = [path_contains.casefold()]
        with self._db.snapshot():
            conn = self._db.connection
            total = cast(int, conn.execute(f"SELECT count(*) FROM docstore_ref_docs AS r {where}",
                                           params).fetchall()[0][0])
            rows = conn.execute(
                "SELECT r.ref_doc_id, r.metadata, r.indexed_at, "
                "(SELECT count(*) FROM docstore_meta AS m WHERE m.ref_doc_id = r.ref_doc_id), "
                "(SELECT doc_hash FROM docstore_meta AS h WHERE h.doc_id = r.ref_doc_id) "
                f"FROM docstore_ref_docs AS r {where} ORDER BY r.ref_doc_id LIMIT ? OFFSET ?",
                [*params, -1 if limit is None else limit, offset],
            ).fetchall()
        return total, [
            RefDocSummary(ref_doc_id=cast(str, ref), metadata=json.loads(cast(str, meta)), node_count=cast(int, count),
                          doc_hash=cast(Optional[str], doc_hash), indexed_at=cast(Optional[float], indexed_at))
            for ref, meta, indexed_at, count, doc_hash in rows
        ]

    def ref_doc_counts(self, key: str) -> Dict[str, int]:
        rows = self._db.execute(
            "SELECT json_extract(metadata, ?), count(*) FROM docstore_ref_docs "
            "WHERE json_type(metadata, ?) = 'text' GROUP BY 1 ORDER BY 2 DESC",
            (f'$."{key}"', f'$."{key}"'),
        )
        return {str(value): int(count) for value, count in rows}

    def ref_doc_exists(self, ref_doc_id: str) -> bool:
        return bool(self._db.execute("SELECT 1 FROM docstore_ref_docs WHERE ref_doc_id = ?", (ref_doc_id,)))

    def delete_ref_doc(self, ref_doc_id: str, raise_error: bool = True) -> None:
        """Delete a source document's nodes, its info, and its own entry and hash.

        Nodes that the node guard (:meth:`BaseDocumentStore.set_node_guard`) reports as held by an
        index are kept, with the document's info while it has any."""
        with self._db.transaction():
            conn = self._db.connection
            if not self.ref_doc_exists(ref_doc_id):
                if raise_error:
                    raise ValueError(f"ref_doc_id {ref_doc_id} not found.")
                return
            if self._node_guard is not None and self._delete_unguarded(ref_doc_id):
                return
            conn.execute(
                "DELETE FROM docstore_nodes WHERE node_id IN (SELECT doc_id FROM docstore_meta WHERE ref_doc_id = ?)",
                (ref_doc_id,),
            )
            conn.execute("DELETE FROM docstore_meta WHERE ref_doc_id = ?", (ref_doc_id,))
            conn.execute("DELETE FROM docstore_ref_docs WHERE ref_doc_id = ?", (ref_doc_id,))
            conn.execute("DELETE FROM docstore_meta WHERE doc_id = ?", (ref_doc_id,))
            conn.execute("DELETE FROM docstore_nodes WHERE node_id = ?", (ref_doc_id,))

    def _delete_unguarded(self, ref_doc_id: str) -> bool:
        """:meth:`delete_ref_doc` when the guard holds some of its nodes: delete the others and the
        document's own entry and hash; ``True`` if that was the case (``False``: nothing is held)."""
        assert self._node_guard is not None
        conn = self._db.connection
        node_ids = [r[0] for r in conn.execute("SELECT doc_id FROM docstore_meta WHERE ref_doc_id = ?",
                                               (ref_doc_id,))]
        held = self._node_guard(node_ids) if node_ids else set()
        if not held:
            return False
        for start in range(0, len(node_ids), _CHUNK):
            gone = json.dumps([n for n in node_ids[start : start + _CHUNK] if n not in held])
            conn.execute("DELETE FROM docstore_nodes WHERE node_id IN (SELECT value FROM json_each(?))", (gone,))
            conn.execute("DELETE FROM docstore_meta WHERE doc_id IN (SELECT value FROM json_each(?))", (gone,))
        conn.execute("DELETE FROM docstore_meta WHERE doc_id = ?", (ref_doc_id,))
        conn.execute("DELETE FROM docstore_nodes WHERE node_id = ?", (ref_doc_id,))
        return True

    # -- hashes ---------------------------------------------------------------------------
    def set_document_hash(self, doc_id: str, doc_hash: str) -> None:
        self.set_document_hashes({doc_id: doc_hash})

    def set_document_hashes(self, doc_hashes: Dict[str, str]) -> None:
        with self._db.transaction():
            self._db.connection.executemany(
                "INSERT INTO docstore_meta(doc_id, doc_hash) VALUES (?, ?) "
                "ON CONFLICT(doc_id) DO UPDATE SET doc_hash = excluded.doc_hash",
                list(doc_hashes.items()),
            )

    def get_document_hash(self, doc_id: str) -> Optional[str]:
        rows = self._db.execute("SELECT doc_hash FROM docstore_meta WHERE doc_id = ?", (doc_id,))
        return rows[0][0] if rows else None

    def get_source_document_hashes(self) -> Dict[str, str]:
        """``{doc_id: hash}`` of the rows that belong to no other document (source documents)."""
        rows = self._db.execute(
            "SELECT doc_id, doc_hash FROM docstore_meta WHERE doc_hash IS NOT NULL AND ref_doc_id IS NULL"
        )
        return {doc_id: doc_hash for doc_id, doc_hash in rows}

    def get_all_document_hashes(self) -> Dict[str, str]:
        rows = self._db.execute("SELECT doc_hash, doc_id FROM docstore_meta WHERE doc_hash IS NOT NULL ORDER BY rowid")
        return {doc_hash: doc_id for doc_hash, doc_id in rows}


#: LlamaIndex's name for the default docstore.
SimpleDocumentStore = SQLiteDocumentStore
