"""``StorageContext``: the docstore, index store and vector store(s) an index lives in.

By default all three share one SQLite database, in memory or in
``persist_dir/ragloom.sqlite``, so a document's nodes, vectors and hash are
committed together (:meth:`StorageContext.transaction`).
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Union

from ragloom.storage.docstore import BaseDocumentStore, SQLiteDocumentStore
from ragloom.storage.index_store import BaseIndexStore, SQLiteIndexStore
from ragloom.storage.sqlite import DEFAULT_DB_NAME, SQLiteDatabase
from ragloom.vector_stores.types import BasePydanticVectorStore

logger = logging.getLogger(__name__)

__all__ = ["StorageContext", "DEFAULT_PERSIST_DIR", "DEFAULT_VECTOR_STORE"]

DEFAULT_PERSIST_DIR = "./storage"
DEFAULT_VECTOR_STORE = "default"
NAMESPACE_SEP = "__"

PathLike = Union[str, "os.PathLike[str]"]


def _database_of(component: Any) -> Optional[SQLiteDatabase]:
    db = getattr(component, "database", None)
    return db if isinstance(db, SQLiteDatabase) else None


class StorageContext:
    """Where an index's nodes, structs and vectors are kept.

    Build one with :meth:`from_defaults`.  ``vector_stores`` maps namespaces to
    stores; ``vector_store`` is the ``"default"`` one.
    """

    def __init__(
        self,
        docstore: BaseDocumentStore,
        index_store: BaseIndexStore,
        vector_stores: Dict[str, BasePydanticVectorStore],
        database: Optional[SQLiteDatabase] = None,
    ) -> None:
        if DEFAULT_VECTOR_STORE not in vector_stores:
            raise ValueError(f"vector_stores needs a {DEFAULT_VECTOR_STORE!r} entry")
        self.docstore = docstore
        self.index_store = index_store
        self.vector_stores: Dict[str, BasePydanticVectorStore] = dict(vector_stores)
        self._database = database
        # nodes the docstore records by link only (the vector store keeps their text) are read from
        # the default vector store, so docstore.get_node works as in LlamaIndex
        docstore.set_node_source(self._nodes_from_vector_store)

    def _nodes_from_vector_store(self, node_ids: List[str]) -> List[Any]:
        store = self.vector_store
        return list(store.get_nodes(node_ids=node_ids)) if store.stores_text else []

    @classmethod
    def from_defaults(
        cls,
        docstore: Optional[BaseDocumentStore] = None,
        index_store: Optional[BaseIndexStore] = None,
        vector_store: Optional[BasePydanticVectorStore] = None,
        vector_stores: Optional[Dict[str, BasePydanticVectorStore]] = None,
        persist_dir: Optional[PathLike] = None,
        create_if_missing: bool = False,
        fs: Any = None,
    ) -> "StorageContext":
        """Fill in whatever is not given with the SQLite defaults, all on one database.

        * no ``persist_dir``: an in-memory database (or the database of a given SQLite
          component, so everything still lives in one file);
        * ``persist_dir``: ``persist_dir/ragloom.sqlite``, which must exist unless
          ``create_if_missing=True`` (then the directory and database are created).
        """
        if fs is not None:
            raise ValueError("ragloom storage works on the local file system only (fs must be None)")
        if vector_store is not None and vector_stores and DEFAULT_VECTOR_STORE in vector_stores:
            raise ValueError("give vector_store or vector_stores['default'], not both")
        if persist_dir is not None:
            database = cls._open_persist_dir(persist_dir, create_if_missing)
        else:
            given = [_database_of(c) for c in (vector_store, docstore, index_store, *(vector_stores or {}).values())]
            database = next((db for db in given if db is not None), None) or SQLiteDatabase(":memory:")
        stores: Dict[str, BasePydanticVectorStore] = dict(vector_stores or {})
        if vector_store is not None:
            stores[DEFAULT_VECTOR_STORE] = vector_store
        if DEFAULT_VECTOR_STORE not in stores:
            from ragloom.vector_stores.sqlite import (
                SQLiteVectorStore,  # here: vector_stores imports storage
            )

            stores[DEFAULT_VECTOR_STORE] = SQLiteVectorStore(database)
        return cls(
            docstore=docstore if docstore is not None else SQLiteDocumentStore(database),
            index_store=index_store if index_store is not None else SQLiteIndexStore(database),
            vector_stores=stores,
            database=database,
        )

    @staticmethod
    def _open_persist_dir(persist_dir: PathLike, create_if_missing: bool) -> SQLiteDatabase:
        directory = Path(persist_dir)
        path = directory / DEFAULT_DB_NAME
        if not path.is_file():
            if not create_if_missing:
                raise FileNotFoundError(
                    f"no ragloom index in {directory}: {path} does not exist. Build an index and persist it there "
                    f"first (storage_context.persist(persist_dir=...)), or pass create_if_missing=True to start an "
                    f"empty one."
                )
            directory.mkdir(parents=True, exist_ok=True)
        return SQLiteDatabase(path, create=True)

    # -- accessors ------------------------------------------------------------------------
    @property
    def vector_store(self) -> BasePydanticVectorStore:
        return self.vector_stores[DEFAULT_VECTOR_STORE]

    @vector_store.setter
    def vector_store(self, store: BasePydanticVectorStore) -> None:
        self.vector_stores[DEFAULT_VECTOR_STORE] = store

    def add_vector_store(self, vector_store: BasePydanticVectorStore, namespace: str) -> None:
        self.vector_stores[namespace] = vector_store

    @property
    def database(self) -> Optional[SQLiteDatabase]:
        """The SQLite database the default components share."""
        return self._database

    @property
    def persist_dir(self) -> Optional[Path]:
        """Directory of the file-backed database, ``None`` in memory."""
        if self._database is None or self._database.is_memory:
            return None
        return Path(self._database.path).parent

    @contextlib.contextmanager
    def transaction(self) -> Iterator["StorageContext"]:
        """Commit every write made by the block to the shared database at once, or none of them.

        Only stores on the shared database take part; a server vector store commits on its own.
        """
        if self._database is None:
            yield self
            return
        with self._database.transaction():
            yield self

    # -- persistence -------------------------------------------------------------------------
    def persist(self, persist_dir: Optional[PathLike] = None, fs: Any = None, **_: Any) -> None:
        """Make the storage durable in ``persist_dir`` (default: its own directory, else ``./storage``).

        An in-memory database is copied to ``persist_dir/ragloom.sqlite`` with SQLite's
        backup API, atomically; it may be persisted again later.  A file-backed one is
        checkpointed, and copied when ``persist_dir`` names another directory.  Stores
        that do not live in the shared database get their own ``persist`` call with
        LlamaIndex's file names.
        """
        if fs is not None:
            raise ValueError("ragloom storage works on the local file system only (fs must be None)")
        if persist_dir is None:
            persist_dir = self.persist_dir or DEFAULT_PERSIST_DIR
        directory = Path(persist_dir)
        directory.mkdir(parents=True, exist_ok=True)
        if self._database is not None:
            self._database.backup_to(directory / DEFAULT_DB_NAME)
        if _database_of(self.docstore) is not self._database:
            self.docstore.persist(str(directory / "docstore.json"))
        if _database_of(self.index_store) is not self._database:
            self.index_store.persist(str(directory / "index_store.json"))
        for namespace, store in self.vector_stores.items():
            if _database_of(store) is not self._database:
                store.persist(str(directory / f"{namespace}{NAMESPACE_SEP}vector_store.json"))

    def close(self) -> None:
        """Close the shared database (the context is unusable afterwards)."""
        if self._database is not None:
            self._database.close()

    def __repr__(self) -> str:
        where = self._database.path if self._database is not None else "custom stores"
        return f"StorageContext({where})"
