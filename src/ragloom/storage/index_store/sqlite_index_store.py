"""The default index store: index structs as JSON in the shared SQLite database (``index_structs``),
and the records of docstore-backed indexes in tables of its own (``index_sources``, ``index_nodes``,
``index_postings``; see :class:`~ragloom.storage.index_store.types.BaseIndexStore`)."""

from __future__ import annotations

import json
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from ragloom.data_structs import IndexStruct
from ragloom.storage.index_store.types import BaseIndexStore
from ragloom.storage.sqlite import SQLiteBacked

__all__ = ["SQLiteIndexStore", "SimpleIndexStore"]


class SQLiteIndexStore(SQLiteBacked, BaseIndexStore):
    """Index store on a :class:`SQLiteDatabase` (in memory unless one is given)."""

    def index_structs(self) -> List[IndexStruct]:
        rows = self._db.execute("SELECT data FROM index_structs ORDER BY rowid")
        return [IndexStruct.from_json(data) for (data,) in rows]

    def add_index_struct(self, index_struct: IndexStruct) -> None:
        """Insert or replace the struct with this ``index_id``."""
        with self._db.transaction():
            self._db.connection.execute(
                "INSERT INTO index_structs(index_id, data) VALUES (?, ?) "
                "ON CONFLICT(index_id) DO UPDATE SET data = excluded.data",
                (index_struct.index_id, index_struct.to_json()),
            )

    def delete_index_struct(self, key: str) -> None:
        """Delete the struct ``key`` and the records of that index (sources, nodes, postings)."""
        with self._db.transaction():
            conn = self._db.connection
            conn.execute("DELETE FROM index_structs WHERE index_id = ?", (key,))
            for table in _RECORD_TABLES:
                conn.execute(f"DELETE FROM {table} WHERE index_id = ?", (key,))

    def rename_index(self, old_id: str, new_id: str) -> None:
        """Move the records of index ``old_id`` (sources, nodes, postings) to ``new_id``; the caller
        stores the struct under its new id.

        Raises:
            ValueError: an index ``new_id`` already has records.
        """
        with self._db.transaction():
            conn = self._db.connection
            for table in _RECORD_TABLES:
                if conn.execute(f"SELECT 1 FROM {table} WHERE index_id = ? LIMIT 1", (new_id,)).fetchall():
                    raise ValueError(f"index_id {new_id!r} is already used in this index store")
            for table in _RECORD_TABLES:
                conn.execute(f"UPDATE {table} SET index_id = ? WHERE index_id = ?", (new_id, old_id))

    def get_index_struct(self, struct_id: Optional[str] = None) -> Optional[IndexStruct]:
        """The struct ``struct_id`` (``None`` if absent); without an id, the only one.

        Without an id and with several structs stored, ``ValueError`` asks for an id.
        """
        if struct_id is None:
            structs = self.index_structs()
            if len(structs) > 1:
                ids = ", ".join(s.index_id for s in structs)
                raise ValueError(f"the index store holds {len(structs)} indexes ({ids}); pass the index_id of one")
            return structs[0] if structs else None
        rows = self._db.execute("SELECT data FROM index_structs WHERE index_id = ?", (struct_id,))
        return IndexStruct.from_json(rows[0][0]) if rows else None


    # -- records of docstore-backed indexes -------------------------------------------------------
    def get_source_hashes(self, index_id: str) -> Dict[str, str]:
        rows = self._db.execute("SELECT ref_doc_id, fingerprint FROM index_sources WHERE index_id = ?", (index_id,))
        return {ref: fp for ref, fp in rows}

    def get_source_hash(self, index_id: str, ref_doc_id: str) -> Optional[str]:
        rows = self._db.execute(
            "SELECT fingerprint FROM index_sources WHERE index_id = ? AND ref_doc_id = ?", (index_id, ref_doc_id)
        )
        return rows[0][0] if rows else None

    def set_source_hashes(self, index_id: str, hashes: Dict[str, str]) -> None:
        with self._db.transaction():
            self._db.connection.executemany(
                "INSERT INTO index_sources(index_id, ref_doc_id, fingerprint) VALUES (?, ?, ?) "
                "ON CONFLICT(index_id, ref_doc_id) DO UPDATE SET fingerprint = excluded.fingerprint",
                [(index_id, ref, fp) for ref, fp in hashes.items()],
            )

    def delete_source_hash(self, index_id: str, ref_doc_id: str) -> None:
        with self._db.transaction():
            self._db.connection.execute(
                "DELETE FROM index_sources WHERE index_id = ? AND ref_doc_id = ?", (index_id, ref_doc_id)
            )

    def add_index_nodes(self, index_id: str, nodes: Sequence[Tuple[str, str]]) -> None:
        with self._db.transaction():
            self._db.connection.executemany(
                "INSERT INTO index_nodes(index_id, node_id, ref_doc_id) VALUES (?, ?, ?) "
                "ON CONFLICT(index_id, node_id) DO UPDATE SET ref_doc_id = excluded.ref_doc_id",
                [(index_id, node_id, ref) for node_id, ref in nodes],
            )

    def get_index_node_ids(self, index_id: str, ref_doc_id: Optional[str] = None) -> List[str]:
        if ref_doc_id is None:
            rows = self._db.execute("SELECT node_id FROM index_nodes WHERE index_id = ? ORDER BY rowid", (index_id,))
        else:
            rows = self._db.execute(
                "SELECT node_id FROM index_nodes WHERE index_id = ? AND ref_doc_id = ? ORDER BY rowid",
                (index_id, ref_doc_id),
            )
        return [r[0] for r in rows]

    def get_index_node_refs(self, index_id: str) -> Dict[str, List[str]]:
        out: Dict[str, List[str]] = {}
        for node_id, ref in self._db.execute(
            "SELECT node_id, ref_doc_id FROM index_nodes WHERE index_id = ? ORDER BY rowid", (index_id,)
        ):
            out.setdefault(ref, []).append(node_id)
        return out

    def count_index_nodes(self, index_id: str) -> int:
        return int(self._db.execute("SELECT count(*) FROM index_nodes WHERE index_id = ?", (index_id,))[0][0])

    def delete_index_nodes(self, index_id: str, node_ids: Sequence[str]) -> None:
        with self._db.transaction():
            conn = self._db.connection
            for part in _chunks(node_ids):
                ids = json.dumps(part)
                conn.execute(
                    "DELETE FROM index_nodes WHERE index_id = ? AND node_id IN (SELECT value FROM json_each(?))",
                    (index_id, ids),
                )
                conn.execute(
                    "DELETE FROM index_postings WHERE index_id = ? AND node_id IN (SELECT value FROM json_each(?))",
                    (index_id, ids),
                )

    def nodes_held_elsewhere(self, index_id: Optional[str], node_ids: Sequence[str]) -> Set[str]:
        held: Set[str] = set()
        for part in _chunks(node_ids):
            held.update(r[0] for r in self._db.execute(
                "SELECT DISTINCT node_id FROM index_nodes WHERE node_id IN (SELECT value FROM json_each(?1)) "
                "AND (?2 IS NULL OR index_id != ?2)",
                (json.dumps(part), index_id),
            ))
        return held

    def add_postings(self, index_id: str, postings: Iterable[Tuple[str, str]]) -> None:
        with self._db.transaction():
            self._db.connection.executemany(
                "INSERT OR IGNORE INTO index_postings(index_id, key, node_id) VALUES (?, ?, ?)",
                [(index_id, key, node_id) for key, node_id in postings],
            )

    def get_postings(self, index_id: str, keys: Sequence[str]) -> Dict[str, List[str]]:
        out: Dict[str, List[str]] = {}
        for part in _chunks(list(dict.fromkeys(keys))):
            for key, node_id in self._db.execute(
                "SELECT key, node_id FROM index_postings WHERE index_id = ? "
                "AND key IN (SELECT value FROM json_each(?)) ORDER BY key, node_id",
                (index_id, json.dumps(part)),
            ):
                out.setdefault(key, []).append(node_id)
        return out

    def get_all_postings(self, index_id: str) -> Dict[str, Set[str]]:
        out: Dict[str, Set[str]] = {}
        for key, node_id in self._db.execute(
            "SELECT key, node_id FROM index_postings WHERE index_id = ? ORDER BY key", (index_id,)
        ):
            out.setdefault(key, set()).add(node_id)
        return out

    def get_node_postings(self, index_id: str, node_ids: Sequence[str]) -> Dict[str, List[str]]:
        out: Dict[str, List[str]] = {}
        for part in _chunks(list(dict.fromkeys(node_ids))):
            for node_id, key in self._db.execute(
                "SELECT node_id, key FROM index_postings WHERE index_id = ? "
                "AND node_id IN (SELECT value FROM json_each(?)) ORDER BY node_id, key",
                (index_id, json.dumps(part)),
            ):
                out.setdefault(node_id, []).append(key)
        return out


_RECORD_TABLES = ("index_sources", "index_nodes", "index_postings")
_CHUNK = 2000


def _chunks(items: Sequence[str]) -> List[List[str]]:
    items = list(items)
    return [items[i : i + _CHUNK] for i in range(0, len(items), _CHUNK)]


#: LlamaIndex's name for the default index store.
SimpleIndexStore = SQLiteIndexStore
