"""The default index store: index structs as JSON in the shared SQLite database (``index_structs``)."""

from __future__ import annotations

from typing import List, Optional

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
        with self._db.transaction():
            self._db.connection.execute("DELETE FROM index_structs WHERE index_id = ?", (key,))

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


#: LlamaIndex's name for the default index store.
SimpleIndexStore = SQLiteIndexStore
