"""``StorageContext``: the docstore, index store and vector store(s) an index lives in.

By default all three share one SQLite database, in memory or in
``persist_dir/ragloom.sqlite``, so a document's nodes, vectors and hash are
committed together (:meth:`StorageContext.transaction`).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Set, Union

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


def holds_index(persist_dir: Union[str, "os.PathLike[str]"]) -> bool:
    """Whether ``persist_dir`` holds a ragloom index to read: a non-empty database file (an empty
    one is no index either: a read must not turn it into one).

    Raises:
        OSError: the folder cannot be looked into (permission denied), as ``Path.is_file`` does."""
    try:
        st = os.stat(Path(persist_dir) / DEFAULT_DB_NAME)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return False
        raise
    return stat.S_ISREG(st.st_mode) and st.st_size > 0


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
        graph_store: Any = None,
        property_graph_store: Any = None,
    ) -> None:
        if DEFAULT_VECTOR_STORE not in vector_stores:
            raise ValueError(f"vector_stores needs a {DEFAULT_VECTOR_STORE!r} entry")
        self.docstore = docstore
        self.index_store = index_store
        self.vector_stores: Dict[str, BasePydanticVectorStore] = dict(vector_stores)
        self._database = database
        # graph stores (KnowledgeGraphIndex, PropertyGraphIndex): made on first use, on the shared database
        self._graph_store = graph_store
        self._property_graph_store = property_graph_store
        # nodes the docstore records by link only (the vector store keeps their text) are read from
        # the default vector store, so docstore.get_node works as in LlamaIndex
        docstore.set_node_source(self._nodes_from_vector_store)
        # nodes a docstore-backed index (SummaryIndex, keyword tables ...) holds survive another index
        # replacing their document (e.g. a VectorStoreIndex re-ingesting it with another splitter)
        docstore.set_node_guard(self._nodes_held_by_indexes)

    def _nodes_from_vector_store(self, node_ids: List[str]) -> List[Any]:
        store = self.vector_store
        return list(store.get_nodes(node_ids=node_ids)) if store.stores_text else []

    def _nodes_held_by_indexes(self, node_ids: List[str]) -> Set[str]:
        return self.index_store.nodes_held_elsewhere(None, node_ids)

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
        graph_store: Any = None,
        property_graph_store: Any = None,
    ) -> "StorageContext":
        """Fill in whatever is not given with the SQLite defaults, all on one database.

        * no ``persist_dir``: an in-memory database (or the database of a given SQLite
          component, so everything still lives in one file);
        * ``persist_dir``: ``persist_dir/ragloom.sqlite``, which must exist unless
          ``create_if_missing=True`` (then the directory and database are created).  A LlamaIndex
          storage folder (``docstore.json`` …, no ``ragloom.sqlite``) is not opened as one: the
          ``FileNotFoundError`` says to import it with :meth:`from_llamaindex`.

        ``graph_store`` / ``property_graph_store``: default a
        :class:`~ragloom.graph_stores.SimpleGraphStore` / ``SimplePropertyGraphStore`` on the same
        database, made when first used.
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
            graph_store=graph_store,
            property_graph_store=property_graph_store,
        )

    @classmethod
    def from_llamaindex(
        cls,
        persist_dir: PathLike,
        embed_model: Any = None,
        index_dir: Optional[PathLike] = None,
        index_id: Optional[str] = None,
        verify: bool = True,
    ) -> "StorageContext":
        """A storage context holding the ``VectorStoreIndex`` of a LlamaIndex storage folder, its
        vectors kept (nothing re-embedded): then ``load_index_from_storage(sc)`` as in LlamaIndex.

        ``persist_dir`` is the folder LlamaIndex's ``storage_context.persist()`` wrote;
        ``embed_model`` the model that made its vectors (``None``: the bundled all-MiniLM-L6-v2 in
        fp32, accepted only for 384-dimensional vectors), checked by dimension and, with ``verify``,
        by embedding a few stored nodes again; ``index_dir``: a ragloom index directory to import
        into (created if missing), default in memory (``persist()`` it to keep it).  See
        :mod:`ragloom.storage.llamaindex_import` (the import goes through the ingestion engine).

        Raises:
            FileNotFoundError: a LlamaIndex file is missing.  ValueError: not a ``VectorStoreIndex``,
                its vectors are not in the folder, or the embed model does not match them.
        """
        from ragloom.storage.llamaindex_import import import_llamaindex, import_llamaindex_dir

        if index_dir is not None:
            import_llamaindex_dir(persist_dir, index_dir, embed_model=embed_model, index_id=index_id, verify=verify)
            return cls.from_defaults(persist_dir=index_dir)
        storage_context = cls.from_defaults()
        import_llamaindex(persist_dir, storage_context, embed_model=embed_model, index_id=index_id, verify=verify)
        return storage_context

    @staticmethod
    def _open_persist_dir(persist_dir: PathLike, create_if_missing: bool) -> SQLiteDatabase:
        directory = Path(persist_dir)
        path = directory / DEFAULT_DB_NAME
        if not (path.is_file() if create_if_missing else holds_index(directory)):
            if not create_if_missing:
                _refuse_llamaindex_dir(directory)
                state = "is an empty file" if path.is_file() else "does not exist"
                raise FileNotFoundError(
                    f"no ragloom index in {directory}: {path} {state}. Build an index and persist it there "
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

    @property
    def graph_store(self) -> Any:
        """The triplet store (:class:`~ragloom.graph_stores.SimpleGraphStore` on the shared database
        unless another was given; made on first use, so its tables exist only where it was used)."""
        if self._graph_store is None:
            from ragloom.graph_stores.simple import SimpleGraphStore

            self._graph_store = SimpleGraphStore(database=self._database)
        return self._graph_store

    @graph_store.setter
    def graph_store(self, store: Any) -> None:
        self._graph_store = store

    @property
    def property_graph_store(self) -> Any:
        """The property graph store (:class:`~ragloom.graph_stores.SimplePropertyGraphStore` on the
        shared database unless another was given; made on first use)."""
        if self._property_graph_store is None:
            from ragloom.graph_stores.simple_labelled import SimplePropertyGraphStore

            self._property_graph_store = SimplePropertyGraphStore(database=self._database)
        return self._property_graph_store

    @property_graph_store.setter
    def property_graph_store(self, store: Any) -> None:
        self._property_graph_store = store

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
        for name, graph in (("graph_store", self._graph_store), ("property_graph_store", self._property_graph_store)):
            if graph is not None and _database_of(graph) is not self._database:
                graph.persist(str(directory / f"{name}.json"))

    def close(self) -> None:
        """Close the shared database (the context is unusable afterwards)."""
        if self._database is not None:
            self._database.close()

    def __repr__(self) -> str:
        where = self._database.path if self._database is not None else "custom stores"
        return f"StorageContext({where})"


def _refuse_llamaindex_dir(directory: Path) -> None:
    """``FileNotFoundError`` pointing to the import when ``directory`` holds LlamaIndex's storage files
    (its ``docstore.json``, ``index_store.json`` or vector store JSON) rather than a ragloom index."""
    from ragloom.storage.llamaindex_import import LEGACY_VECTOR_STORE_FILE, LLAMAINDEX_FILES

    present = [name for name in (*LLAMAINDEX_FILES, LEGACY_VECTOR_STORE_FILE) if (directory / name).is_file()]
    if present:
        raise FileNotFoundError(
            f"{directory} is a LlamaIndex storage folder ({', '.join(present)}), not a ragloom index: use "
            f"StorageContext.from_llamaindex(persist_dir, embed_model=...) to load it (its vectors are kept), or "
            f"`ragloom import-llamaindex {directory}` to turn it into a ragloom index directory"
        )
