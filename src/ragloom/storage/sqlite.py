"""One SQLite database shared by the docstore, the index store and the default vector store.

Why one file: a document's nodes, vectors and hash can then be written in *one*
transaction, so a crash never leaves a document half ingested.  The database is
opened through :mod:`apsw` because the standard library's ``sqlite3`` on many
Pythons (pyenv, macOS) cannot load extensions, and the vector search comes from
the ``sqlite-vec`` extension.

File-backed databases run in WAL mode with ``synchronous=NORMAL``: a committed
transaction survives the process being killed (it may be lost only on power
failure), readers never block the writer, and several processes may share the
file (SQLite's locks serialise writers; a busy timeout makes them wait instead
of failing).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator, List, Optional, Sequence, Tuple, Union, cast

import apsw
import sqlite_vec

logger = logging.getLogger(__name__)

__all__ = ["SQLiteDatabase", "DEFAULT_DB_NAME", "SCHEMA_VERSION"]

#: Name of the database file inside a ``persist_dir``.
DEFAULT_DB_NAME = "ragloom.sqlite"

#: Version of the table layout below; bumped (with a migration in ``_MIGRATIONS``) whenever it changes.
SCHEMA_VERSION = 2

#: ``{version: SQL}`` taking a database from ``version - 1`` to ``version``.
_MIGRATIONS = {
    2: "ALTER TABLE docstore_ref_docs ADD COLUMN indexed_at REAL",
}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER NOT NULL
);

-- docstore: node JSON (tagged with class_name, as BaseNode.to_json writes it)
CREATE TABLE IF NOT EXISTS docstore_nodes (
    node_id TEXT PRIMARY KEY,
    data    TEXT NOT NULL
) WITHOUT ROWID;

-- docstore: per node/document bookkeeping (hash, owning document); may exist without a node row
CREATE TABLE IF NOT EXISTS docstore_meta (
    doc_id     TEXT PRIMARY KEY,
    doc_hash   TEXT,
    ref_doc_id TEXT
);
CREATE INDEX IF NOT EXISTS docstore_meta_ref_doc ON docstore_meta(ref_doc_id);

-- docstore: metadata of each source document (its node ids come from docstore_meta)
CREATE TABLE IF NOT EXISTS docstore_ref_docs (
    ref_doc_id TEXT PRIMARY KEY,
    metadata   TEXT NOT NULL DEFAULT '{}',
    indexed_at REAL  -- seconds since the epoch (UTC) of the last write of its nodes (schema 2)
) WITHOUT ROWID;

-- index store
CREATE TABLE IF NOT EXISTS index_structs (
    index_id TEXT PRIMARY KEY,
    data     TEXT NOT NULL
);

-- index store, docstore-backed indexes (ragloom.indices.base): the fingerprint of each source
-- document an index ingested (per index: two index kinds over the same documents never clash)
CREATE TABLE IF NOT EXISTS index_sources (
    index_id    TEXT NOT NULL,
    ref_doc_id  TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    PRIMARY KEY (index_id, ref_doc_id)
) WITHOUT ROWID;

-- index store: the nodes each docstore-backed index holds (rowid = insertion order)
CREATE TABLE IF NOT EXISTS index_nodes (
    index_id   TEXT NOT NULL,
    node_id    TEXT NOT NULL,
    ref_doc_id TEXT NOT NULL,
    UNIQUE (index_id, node_id)
);
CREATE INDEX IF NOT EXISTS index_nodes_source ON index_nodes(index_id, ref_doc_id);
CREATE INDEX IF NOT EXISTS index_nodes_node ON index_nodes(node_id);

-- index store: key -> node postings of an index (keyword tables)
CREATE TABLE IF NOT EXISTS index_postings (
    index_id TEXT NOT NULL,
    key      TEXT NOT NULL,
    node_id  TEXT NOT NULL,
    PRIMARY KEY (index_id, key, node_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS index_postings_node ON index_postings(index_id, node_id);

-- vector store collections: the dimension is fixed by the first add
CREATE TABLE IF NOT EXISTS vector_collections (
    name      TEXT PRIMARY KEY,
    dimension INTEGER,
    distance  TEXT NOT NULL DEFAULT 'cosine'
) WITHOUT ROWID;
"""


def _refuse_foreign(conn: apsw.Connection, path: str) -> None:
    """Raise ``ValueError`` when the database ``conn`` opened holds tables but not ragloom's
    ``schema_version``: someone else's SQLite file (an index directory's ``ragloom.sqlite`` replaced
    by another program's, a path given by mistake), which ragloom must neither read as an empty
    index nor write its tables into.  Checked before anything is written (not even the WAL switch)."""
    names = [str(r[0]) for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")]
    if names and "schema_version" not in names:
        shown = ", ".join(sorted(names)[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        raise ValueError(
            f"{path} is a SQLite database that ragloom did not create (it holds the tables {shown}); "
            "ragloom keeps an index in a file of its own: choose another index directory or path"
        )


class SQLiteDatabase:
    """A connection to one ragloom SQLite database (a file, or ``":memory:"``).

    * loads ``sqlite-vec`` and creates the schema (tables above plus
      ``schema_version``) if missing;
    * :meth:`transaction` is a nestable context manager: the outermost level runs
      ``BEGIN IMMEDIATE … COMMIT`` (taking the write lock up front, so two
      processes never deadlock upgrading a read lock), inner levels are savepoints;
      an exception rolls back exactly its own level;
    * :meth:`backup_to` copies the whole database to another file atomically.

    The object may be shared by threads: a re-entrant lock serialises
    transactions (statements outside a transaction are atomic on their own).
    """

    def __init__(
        self,
        path: Union[str, "os.PathLike[str]"] = ":memory:",
        *,
        create: bool = True,
        busy_timeout_ms: int = 30_000,
    ) -> None:
        self._path = str(path)
        self.is_memory = self._path == ":memory:" or self._path == ""
        if not self.is_memory:
            p = Path(self._path)
            if not p.exists() and not create:
                raise FileNotFoundError(f"no ragloom database at {p}")
            if not p.parent.is_dir():
                raise FileNotFoundError(f"directory {p.parent} does not exist")
            self._path = str(p.resolve())
        self._lock = threading.RLock()
        self._depth = 0
        self._commits = 0  # transactions this object committed (see change_token)
        self._closed = False
        conn: Optional[apsw.Connection] = None
        try:
            conn = apsw.Connection(self._path)
            conn.set_busy_timeout(busy_timeout_ms)  # (before the first read: another process may hold the file)
            _refuse_foreign(conn, self._path)
            self._conn = self._connect(conn, busy_timeout_ms)
            self._create_schema()
        except (apsw.NotADBError, apsw.CorruptError) as exc:
            if conn is not None:
                conn.close()
            raise ValueError(f"{self._path} is not a ragloom (SQLite) database: {exc}") from exc
        except (apsw.ReadOnlyError, apsw.CantOpenError, apsw.PermissionsError) as exc:
            # a WAL database is read through its -shm file, which SQLite must be able to create or write
            if conn is not None:
                conn.close()
            raise self._read_only(exc) from exc
        except BaseException:
            if conn is not None:
                conn.close()
            raise

    def _read_only(self, exc: BaseException) -> PermissionError:
        """The error for a database this process cannot write (another user's index, a read-only share)."""
        return PermissionError(
            errno.EACCES, f"cannot open the index read-write ({exc}); ragloom needs write access to the "
            "index directory and its files, also to query (SQLite's write-ahead log); copy it somewhere writable",
            self._path)

    # -- connection -------------------------------------------------------------------
    @staticmethod
    def _connect(conn: apsw.Connection, busy_timeout_ms: int) -> apsw.Connection:
        """``conn`` set up: sqlite-vec loaded, busy timeout, WAL (a file), foreign keys, functions."""
        path = conn.filename or ":memory:"
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
        conn.set_busy_timeout(busy_timeout_ms)
        if path != ":memory:":
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchall()[0][0]
            if str(mode).lower() != "wal":  # e.g. a network file system
                logger.warning("SQLite could not switch %s to WAL (journal_mode=%s)", path, mode)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.create_scalar_function("ragloom_casefold", cast(Any, _casefold), 1, deterministic=True)
        return conn

    def _create_schema(self) -> None:
        with self.transaction():
            self._conn.execute(_SCHEMA)
            rows = self._conn.execute("SELECT version FROM schema_version").fetchall()
            if not rows:
                self._conn.execute("INSERT INTO schema_version(version) VALUES (?)", (SCHEMA_VERSION,))
                return
            version = int(cast(Any, rows[0][0]))
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"{self._path} was written by a newer ragloom (schema version {rows[0][0]}, "
                    f"this version reads up to {SCHEMA_VERSION}); upgrade ragloom"
                )
            for target in range(version + 1, SCHEMA_VERSION + 1):
                self._conn.execute(_MIGRATIONS[target])
                logger.info("migrated %s to schema version %d", self._path, target)
            if version < SCHEMA_VERSION:
                self._conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))

    @property
    def path(self) -> str:
        """Absolute file path, or ``":memory:"``."""
        return self._path

    @property
    def connection(self) -> apsw.Connection:
        if self._closed:
            raise RuntimeError("the database is closed")
        return self._conn

    @property
    def schema_version(self) -> int:
        return int(cast(Any, self.connection.execute("SELECT version FROM schema_version").fetchall()[0][0]))

    def close(self) -> None:
        """Close the connection (a file-backed WAL database is checkpointed by SQLite)."""
        with self._lock:
            if not self._closed:
                self._conn.close()
                self._closed = True

    def __enter__(self) -> "SQLiteDatabase":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteDatabase({self._path!r})"

    # -- statements -------------------------------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] | dict = ()) -> List[Tuple[Any, ...]]:
        """Run one statement (or several, without parameters) and return all rows."""
        with self._lock:
            return self.connection.execute(sql, params).fetchall()

    def executemany(self, sql: str, seq: Iterable[Sequence[Any]]) -> List[Tuple[Any, ...]]:
        with self._lock:
            return self.connection.executemany(sql, seq).fetchall()

    def change_token(self) -> Tuple[int, int]:
        """A value that differs whenever the database may have changed since it was last read:
        SQLite's ``PRAGMA data_version`` (another connection committed) and the number of
        transactions this object committed.  Read it inside :meth:`snapshot` to tie it to the
        state the snapshot reads."""
        with self._lock:
            version = self.connection.execute("PRAGMA data_version").fetchall()[0][0]
            return int(cast(Any, version)), self._commits

    # -- transactions -----------------------------------------------------------------
    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    @contextlib.contextmanager
    def transaction(self) -> Iterator["SQLiteDatabase"]:
        """Run the block atomically; nest freely (inner blocks are savepoints).

        Raises:
            PermissionError: the database cannot be written by this process (read-only files or folder).
        """
        with self._lock:
            conn = self.connection
            if self._depth == 0:
                try:
                    conn.execute("BEGIN IMMEDIATE")
                except apsw.ReadOnlyError as exc:
                    raise self._read_only(exc) from exc
                self._depth = 1
                try:
                    yield self
                except BaseException as exc:
                    self._depth = 0
                    if not conn.get_autocommit():
                        conn.execute("ROLLBACK")
                    if isinstance(exc, apsw.ReadOnlyError):  # a write in a database this process cannot write
                        raise self._read_only(exc) from exc
                    raise
                else:
                    self._depth = 0
                    conn.execute("COMMIT")
                    self._commits += 1
            else:
                self._depth += 1
                name = f"ragloom_sp{self._depth}"
                conn.execute(f"SAVEPOINT {name}")
                try:
                    yield self
                except BaseException:
                    conn.execute(f"ROLLBACK TO {name}")
                    conn.execute(f"RELEASE {name}")
                    raise
                else:
                    conn.execute(f"RELEASE {name}")
                finally:
                    self._depth -= 1

    @contextlib.contextmanager
    def snapshot(self) -> Iterator["SQLiteDatabase"]:
        """Read several statements from one consistent state without taking the write lock.

        Inside :meth:`transaction` (or another snapshot) it adds nothing.
        """
        with self._lock:
            conn = self.connection
            if self._depth or not conn.get_autocommit():
                yield self
                return
            conn.execute("BEGIN DEFERRED")
            self._depth = 1
            try:
                yield self
            finally:
                self._depth = 0
                if not conn.get_autocommit():
                    conn.execute("COMMIT")

    # -- durability and copies ------------------------------------------------------------
    def checkpoint(self) -> None:
        """Move the WAL into the main file (no-op for an in-memory database)."""
        if self.is_memory:
            return
        with self._lock:
            if self._depth == 0:
                self.connection.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)

    def backup_to(self, path: Union[str, "os.PathLike[str]"]) -> Path:
        """Copy the whole database to ``path`` atomically and return its absolute path.

        A new file is written beside the target under a temporary name, then renamed
        over it.  An existing ragloom database at ``path`` is instead overwritten
        through SQLite's backup API inside the target's own transaction, so processes
        that have it open see either the old or the new content, never a mix, and no
        stale ``-wal`` file can be applied to a replaced file.
        """
        target = Path(path).resolve()
        if not self.is_memory and target == Path(self._path):
            self.checkpoint()
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            if self._depth:
                raise RuntimeError("cannot back up the database inside an open transaction")
            if target.exists():
                dest = self._connect(apsw.Connection(str(target)), 30_000)
                try:
                    with dest.backup("main", self.connection, "main") as b:
                        b.step(-1)
                finally:
                    dest.close()
                return target
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            os.close(fd)
            try:
                dest = apsw.Connection(tmp)
                try:
                    with dest.backup("main", self.connection, "main") as b:
                        b.step(-1)
                    dest.execute("PRAGMA journal_mode=DELETE")
                finally:
                    dest.close()
                _fsync_file(tmp)
                os.replace(tmp, target)
                _fsync_dir(target.parent)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(tmp)
                raise
        return target


def _casefold(value: Any) -> Any:
    return value.casefold() if isinstance(value, str) else value


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(str(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on directories
        pass
    finally:
        os.close(fd)


def open_database(path: Optional[Union[str, "os.PathLike[str]"]] = None, **kwargs: Any) -> SQLiteDatabase:
    """Open ``path`` (a file) or a fresh in-memory database when ``path`` is ``None``."""
    return SQLiteDatabase(":memory:" if path is None else path, **kwargs)


class SQLiteBacked:
    """Mixin of the stores that live in a :class:`SQLiteDatabase` (docstore, index store).

    Gives them a constructor taking the shared database (in memory when ``None``),
    ``from_persist_path`` / ``from_persist_dir`` (``FileNotFoundError`` when the file is
    missing), ``database`` and ``persist``.
    """

    def __init__(self, database: Optional[SQLiteDatabase] = None) -> None:
        self._db = database if database is not None else SQLiteDatabase(":memory:")

    @classmethod
    def from_persist_path(cls, persist_path: Union[str, "os.PathLike[str]"]) -> Any:
        """Open the ragloom database file ``persist_path`` (it must exist)."""
        path = Path(persist_path)
        if not path.is_file():
            raise FileNotFoundError(f"no ragloom database at {path}")
        return cls(SQLiteDatabase(path, create=False))

    @classmethod
    def from_persist_dir(cls, persist_dir: Union[str, "os.PathLike[str]"] = "./storage") -> Any:
        """Open ``persist_dir/ragloom.sqlite`` (it must exist)."""
        return cls.from_persist_path(Path(persist_dir) / DEFAULT_DB_NAME)

    @property
    def database(self) -> SQLiteDatabase:
        return self._db

    def persist(self, persist_path: Union[str, "os.PathLike[str]"] = "", fs: Any = None) -> None:
        """Write the whole database to ``persist_path`` (a file, or a directory → ``ragloom.sqlite``);
        with no path, checkpoint the database's own file."""
        if not persist_path:
            self._db.checkpoint()
            return
        path = Path(persist_path)
        if path.is_dir():
            path = path / DEFAULT_DB_NAME
        self._db.backup_to(path)
