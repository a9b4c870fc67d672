"""An approximate-nearest-neighbour tier beside SQLite: faiss IVF (SQ8 or PQ fast scan), kept exact by a log.

SQLite stays the single source of truth; the ANN is a derived cache that may be missing, stale or
foreign, and then costs speed, never correctness.

* **Change log.** Once :func:`ensure_log` ran on a collection, triggers on ``vs_<c>_nodes`` append
  ``(seq, node_rowid)`` to ``vs_<c>_changes`` for every inserted, updated or deleted node, inside the
  writing transaction (``seq`` is AUTOINCREMENT, so it never goes back, even after pruning).  The
  database's identity is a random ``uuid`` in ``vs_<c>_ann_meta``.
* **Generations.** :func:`build` reads every vector in one snapshot (covering changes up to ``seq``),
  trains an IVF index (4-bit PQ fast scan from :data:`PQ_MIN_NODES` vectors, else 8-bit scalar
  quantization; inner product
  over L2-normalised vectors: cosine) and writes a folder ``<db file>-ann/<c>-<uuid>-<seq>/`` holding
  ``index.faiss`` (ids = positions), ``vectors.npy`` (the normalised float32 vectors, for the exact
  rerank; read row by row with ``pread``) and ``rowids.npy``.  It is built under a temporary name and renamed into
  place, so a killed build leaves no generation behind; then the log is pruned up to ``seq``.
* **Queries** (:meth:`AnnSearcher.search`) run in one read snapshot: the newest generation of this
  database's uuid with ``seq`` not beyond the database's is used; rows changed after its ``seq`` are
  dropped from the ANN candidates and scored exactly from SQLite instead; the candidates are
  re-ranked exactly with their float vectors.  Too many changed rows (more than
  :data:`MAX_CHANGED_FRACTION` of the generation) or a missing, foreign or unreadable generation
  answer ``None``: the caller searches exactly.
* **Filters.** A filter the metadata index counted (:mod:`ragloom.vector_stores.metadata_index`:
  at most 5% of the rows), or one matching under :data:`SELECTIVE_FRACTION` of a sample of
  :data:`FILTER_SAMPLE` rows, is answered exactly: every matching row is scored, with the generation's
  float vectors (rows changed since it: from SQLite), which costs about 2.5 µs a row instead of a scan
  of every vector.  A broader filter searches the ANN with oversampling (candidates / fraction) and
  post-filters the candidates in SQL.

Parameters (:data:`NLIST_PER_SQRT`, :data:`NPROBE_FRACTION`, :data:`RERANK`) were chosen by
``benchmarks/query_latency.py`` (recall@10 against exact search; ``benchmarks/results/``).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import tempfile
import threading
import uuid as uuid_mod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import numpy as np

if TYPE_CHECKING:
    from ragloom.vector_stores.metadata_index import FilterPlan

logger = logging.getLogger(__name__)

__all__ = ["AnnSearcher", "build", "describe", "ensure_log", "ANN_MIN_NODES"]

#: Stores with fewer nodes are searched exactly (an exact scan of 100,000 × 384 costs about as much
#: as the ANN's fixed overheads); ``SQLiteVectorStore(ann_threshold=...)`` changes it.
ANN_MIN_NODES = 100_000
#: A one-shot reader (``ragloom query``: ``resident=False``) searches a generation of fewer nodes
#: exactly: importing faiss and opening the generation cost it more (about 0.25 s measured) than an
#: exact scan of 100,000 × 384 (about 0.12–0.18 s).  Resident readers (``ragloom serve``) always use it.
COLD_MIN_NODES = 300_000
#: Inverted lists per square root of the number of vectors (faiss's guideline: about sqrt(N)).
NLIST_PER_SQRT = 1.0
#: Stores of at least this many vectors (and a dimension divisible by 8) are coded with 4-bit product
#: quantization read by faiss's SIMD "fast scan" (``IVF…,PQ<dim/4>x4fs``: 1 byte per 8 dimensions);
#: smaller ones with 8-bit scalar quantization, whose 50 re-ranked candidates cost less to read than
#: PQ's 1,000 (``benchmarks/results/ann_search_mixture.txt``: at 100k SQ8 1.7 ms for recall@10 0.98,
#: PQ 4.8 ms for 0.983; at 1M PQ 6.7 ms for 0.997, SQ8 13 ms for 0.975).
PQ_MIN_NODES = 250_000
#: Inverted lists probed per query: this fraction of the lists (PQ / SQ8), at least :data:`MIN_NPROBE`
#: (capped by the number of lists).  A fixed count would probe a shrinking share as the store grows.
NPROBE_FRACTION = {"pq": 0.2, "sq8": 0.1}
MIN_NPROBE = 32
#: ANN candidates re-ranked exactly with their float vectors (at least ``2 * k``): PQ's 4-bit codes
#: rank coarsely, so more of its candidates are re-ranked.
RERANK = {"pq": 1000, "sq8": 50}
#: Training vectors per inverted list (faiss warns below 39).
TRAIN_PER_LIST = 64
#: Rows changed since the generation, as a fraction of it, beyond which queries go exact and
#: :func:`needs_build` says rebuild.
MAX_CHANGED_FRACTION = 0.05
#: Rows sampled to estimate a filter's selectivity.
FILTER_SAMPLE = 2000
#: Filters matching fewer than this fraction of rows use the exact SQL pre-filter.
SELECTIVE_FRACTION = 0.05
#: Most ANN candidates fetched for a post-filtered query.
MAX_FILTER_CANDIDATES = 20_000
#: Rows of a selective filter scored at a time (6 MB of 384-d float vectors).
_SCORE_BLOCK = 4096
_FORMAT = 1
_GEN_RE = re.compile(r"^(?P<c>[A-Za-z0-9_]+)-(?P<uuid>[0-9a-f]{32})-(?P<seq>[0-9]{15})$")


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """``matrix`` (n, dim) with every row scaled to unit L2 norm, as float32 (all-zero rows stay zero,
    so they score 0 against everything)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(matrix / norms, dtype=np.float32)


def _names(collection: str) -> Tuple[str, str]:
    return f"vs_{collection}_changes", f"vs_{collection}_ann_meta"


def ensure_log(conn: Any, collection: str, nodes: str) -> str:
    """Create the change log, its triggers and the database uuid of ``collection`` if missing (call
    inside a write transaction); return the uuid."""
    changes, meta = _names(collection)
    conn.execute(
        f'CREATE TABLE IF NOT EXISTS "{changes}" (seq INTEGER PRIMARY KEY AUTOINCREMENT, node_rowid INTEGER NOT NULL)'
    )
    conn.execute(f'CREATE TABLE IF NOT EXISTS "{meta}" (key TEXT PRIMARY KEY, value TEXT NOT NULL)')
    for event, row in (("INSERT", "NEW"), ("DELETE", "OLD"), ("UPDATE", "NEW")):
        conn.execute(
            f'CREATE TRIGGER IF NOT EXISTS "{changes}_{event.lower()}" AFTER {event} ON "{nodes}" '
            f'BEGIN INSERT INTO "{changes}"(node_rowid) VALUES ({row}.id); END'
        )
    found = conn.execute(f'SELECT value FROM "{meta}" WHERE key = \'uuid\'').fetchall()
    if found:
        return str(found[0][0])
    value = uuid_mod.uuid4().hex
    conn.execute(f'INSERT INTO "{meta}"(key, value) VALUES (\'uuid\', ?)', (value,))
    return value


def _has_log(conn: Any, collection: str) -> bool:
    changes, _ = _names(collection)
    return bool(conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (changes,)).fetchall())


def _uuid(conn: Any, collection: str) -> Optional[str]:
    _, meta = _names(collection)
    try:
        rows = conn.execute(f'SELECT value FROM "{meta}" WHERE key = \'uuid\'').fetchall()
    except Exception:  # no table: no ANN was ever built here
        return None
    return str(rows[0][0]) if rows else None


def _seq(conn: Any, collection: str) -> int:
    """The last change number ever given (AUTOINCREMENT's counter survives pruning)."""
    changes, _ = _names(collection)
    rows = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (changes,)).fetchall()
    return int(rows[0][0]) if rows else 0


def _changes_count(conn: Any, collection: str, seq: int) -> int:
    """Log entries after ``seq`` (an upper bound of the rows changed; a range scan of the key)."""
    changes, _ = _names(collection)
    return int(conn.execute(f'SELECT count(*) FROM "{changes}" WHERE seq > ?', (seq,)).fetchall()[0][0])


def _changed_since(conn: Any, collection: str, seq: int, limit: Optional[int] = None) -> Optional[np.ndarray]:
    """Distinct rows changed after ``seq``; ``None`` when the log holds more than ``limit`` entries
    after it (checked first, so a huge backlog is not read on every query)."""
    if limit is not None and _changes_count(conn, collection, seq) > limit:
        return None
    changes, _ = _names(collection)
    rows = conn.execute(f'SELECT DISTINCT node_rowid FROM "{changes}" WHERE seq > ?', (seq,)).fetchall()
    return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))


def ann_dir(db_path: str) -> Path:
    """The folder of a database file's ANN generations."""
    return Path(db_path + "-ann")


@dataclass
class Generation:
    """One built ANN: covers the database ``uuid`` up to change ``seq``; ``kind`` ``"pq"`` or ``"sq8"``."""

    path: Path
    uuid: str
    seq: int
    index: Any
    vectors: "RowFile"
    rowids: np.ndarray
    kind: str = "sq8"

    @property
    def n(self) -> int:
        return int(self.rowids.shape[0])

    def positions(self, rowids: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """``(positions, found)``: where each of ``rowids`` is in this generation, and whether it is
        (``positions`` is meaningful only where ``found``).  Built in row-id order, so a binary search."""
        if not self.n:
            return np.zeros(len(rowids), dtype=np.int64), np.zeros(len(rowids), dtype=bool)
        pos = np.minimum(np.searchsorted(self.rowids, rowids), self.n - 1)
        return pos, self.rowids[pos] == rowids


def _generations(root: Path, collection: str, uuid: str) -> List[Tuple[int, Path]]:
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    out = []
    for e in entries:
        m = _GEN_RE.match(e.name)
        if m and m.group("c") == collection and m.group("uuid") == uuid and e.is_dir():
            out.append((int(m.group("seq")), Path(e.path)))
    return sorted(out, reverse=True)


def _load(path: Path, uuid: str, seq: int) -> Generation:
    import faiss

    meta = json.loads((path / "meta.json").read_text())
    if meta.get("format") != _FORMAT:
        raise ValueError(f"ANN generation {path} has format {meta.get('format')}, not {_FORMAT}")
    kind = str(meta.get("kind", "sq8"))
    if kind == "pq":  # small (dim/8 bytes a vector): read whole; fast-scan lists are not mapped
        index = faiss.read_index(str(path / "index.faiss"))
    else:
        index = faiss.read_index(str(path / "index.faiss"), faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY)
    nlist = int(faiss.extract_index_ivf(index).nlist)
    faiss.extract_index_ivf(index).nprobe = min(nlist, max(MIN_NPROBE, int(math.ceil(NPROBE_FRACTION[kind] * nlist))))
    vectors = RowFile(path / "vectors.npy")
    rowids = np.load(path / "rowids.npy")
    if vectors.shape[0] != rowids.shape[0] or index.ntotal != rowids.shape[0] or \
            (len(rowids) > 1 and not bool(np.all(rowids[1:] > rowids[:-1]))):
        raise ValueError(f"ANN generation {path} is inconsistent")
    return Generation(path, uuid, seq, index, vectors, rowids, kind)


class RowFile:
    """The rows of a 2-d float32 ``.npy`` file, read with ``pread`` (not memory-mapped).

    The re-rank reads about a thousand scattered rows per query; through a memory map, page-cache
    large folios map megabytes around each row into the process (1.1 GB of resident memory after one
    query at 1M rows, measured), while ``pread`` copies only the rows (1.5 KB each at 384-d).
    """

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read_header(fh)
            self.offset = fh.tell()
        if fortran or len(shape) != 2 or np.dtype(dtype) != np.float32:
            raise ValueError(f"{path}: not a C-ordered 2-d float32 array")
        self.shape = (int(shape[0]), int(shape[1]))
        self.row_bytes = 4 * self.shape[1]
        self._fd = os.open(path, os.O_RDONLY)
        size = os.fstat(self._fd).st_size
        if size < self.offset + self.row_bytes * self.shape[0]:
            os.close(self._fd)
            raise ValueError(f"{path} is truncated")

    def rows(self, positions: np.ndarray) -> np.ndarray:
        """``(len(positions), dim)`` float32, in the order of ``positions``."""
        out = np.empty((len(positions), self.shape[1]), dtype=np.float32)
        if not len(positions):
            return out
        view = memoryview(out).cast("B")  # read straight into the rows (about 2.5 µs a row, half of a copy)
        size, offset, fd = self.row_bytes, self.offset, self._fd
        for i, p in enumerate(positions.tolist()):
            if os.preadv(fd, [view[i * size:(i + 1) * size]], offset + p * size) != size:
                raise ValueError(f"short read of row {p} from an ANN generation")
        return out

    def __del__(self) -> None:
        try:
            os.close(self._fd)
        except (OSError, AttributeError):
            pass


def _meta_nodes(path: Path) -> int:
    try:
        return int(json.loads((path / "meta.json").read_text())["nodes"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def needs_build(conn: Any, collection: str, db_path: str, count: int, threshold: int) -> bool:
    """Whether :func:`build` should run: at least ``threshold`` nodes and no generation, or more than
    :data:`MAX_CHANGED_FRACTION` of the newest one changed since."""
    if count == 0:
        return False
    uuid = _uuid(conn, collection) if _has_log(conn, collection) else None
    gens = _generations(ann_dir(db_path), collection, uuid) if uuid is not None else []
    if not gens:  # none yet: only from the threshold on
        return count >= max(1, threshold)
    # a generation exists (perhaps built by ragloom optimize below the threshold): keep it fresh
    seq = gens[0][0]
    if seq > _seq(conn, collection):
        return True
    return _changed_since(conn, collection, seq, int(MAX_CHANGED_FRACTION * max(count, 1))) is None


def describe(db: Any, collection: str, nonempty: bool, resident: bool) -> Dict[str, Any]:
    """What a collection's newest generation is, read from its ``meta.json`` and the change log in one
    snapshot (loads no faiss index): ``{"kind", "nodes_covered", "seq", "changed_since",
    "built_at", "stale", "used_for_queries"}``, with ``kind`` ``None`` (and the rest ``None``/0/False)
    when there is none.  ``changed_since``: distinct rows written after it; ``stale``: more than
    :data:`MAX_CHANGED_FRACTION` of it changed (queries go exact, the next :func:`needs_build` says
    rebuild); ``used_for_queries``: a dense query by this reader (``resident``: a long-running one)
    would take its candidates now."""
    out: Dict[str, Any] = {"kind": None, "nodes_covered": 0, "seq": None, "changed_since": 0, "built_at": None,
                           "stale": False, "used_for_queries": False}
    if db.is_memory:
        return out
    with db.snapshot():
        conn = db.connection
        uuid = _uuid(conn, collection) if _has_log(conn, collection) else None
        if uuid is None:
            return out
        seq_now = _seq(conn, collection)
        for seq, path in _generations(ann_dir(db.path), collection, uuid):
            if seq > seq_now:
                continue
            try:
                meta = json.loads((path / "meta.json").read_text())
            except (OSError, ValueError):
                continue
            if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
                continue
            changes, _ = _names(collection)
            changed = int(conn.execute(f'SELECT count(DISTINCT node_rowid) FROM "{changes}" WHERE seq > ?',
                                       (seq,)).fetchall()[0][0])
            nodes = int(meta.get("nodes", 0))
            built_at = meta.get("built_at")
            if built_at is None:  # generations written before built_at was recorded
                try:
                    built_at = round((path / "meta.json").stat().st_mtime, 3)
                except OSError:
                    built_at = None
            stale = changed > int(MAX_CHANGED_FRACTION * max(nodes, 1))
            out.update(kind=str(meta.get("kind", "sq8")), nodes_covered=nodes, seq=seq, changed_since=changed,
                       built_at=built_at, stale=stale,
                       used_for_queries=nonempty and not stale and (resident or nodes >= COLD_MIN_NODES))
            return out
    return out


def build(db: Any, collection: str, nodes: str, vectors_table: str, dim: int) -> Dict[str, Any]:
    """Build a new generation from the committed vectors, then prune the log it covers.

    Call it while holding the index's writer lock (``ragloom index`` and ``ragloom optimize`` do):
    two concurrent builds are safe (the newer generation wins) but wasteful.

    Returns:
        ``{"nodes", "nlist", "seq", "path", "seconds"}``.

    Raises:
        ValueError: an in-memory database (the ANN lives in files beside the database).
    """
    import time

    import faiss

    if db.is_memory:
        raise ValueError("the ANN index needs a database file (it is written beside it)")
    t0 = time.perf_counter()
    if not db.execute(f'SELECT 1 FROM "{vectors_table}" LIMIT 1'):
        return {"nodes": 0, "nlist": 0, "seq": None, "path": None, "seconds": 0.0}
    with db.transaction():
        uuid = ensure_log(db.connection, collection, nodes)
    with db.snapshot():
        conn = db.connection
        conn.execute(f'SELECT 1 FROM "{nodes}" LIMIT 1').fetchall()
        seq = _seq(conn, collection)
        rowids_l: List[int] = []
        chunks: List[bytes] = []
        for rowid, blob in conn.execute(f'SELECT rowid, embedding FROM "{vectors_table}" ORDER BY rowid'):
            rowids_l.append(rowid)
            chunks.append(bytes(blob))
    n = len(rowids_l)
    rowids = np.asarray(rowids_l, dtype=np.int64)
    matrix = np.frombuffer(b"".join(chunks), dtype=np.float32).reshape(n, dim).copy()
    del chunks
    matrix = normalise_rows(matrix)
    nlist = max(1, min(n, int(round(NLIST_PER_SQRT * math.sqrt(max(n, 1))))))
    kind = "pq" if n >= PQ_MIN_NODES and dim % 8 == 0 else "sq8"
    if kind == "pq":
        index = faiss.index_factory(dim, f"IVF{nlist},PQ{dim // 4}x4fs", faiss.METRIC_INNER_PRODUCT)
    else:
        index = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(dim), dim, nlist, faiss.ScalarQuantizer.QT_8bit,
                                              faiss.METRIC_INNER_PRODUCT)
    # small stores: no "please provide more points" on stderr
    faiss.extract_index_ivf(index).cp.min_points_per_centroid = 1
    rng = np.random.default_rng(seq)
    sample = matrix if n <= TRAIN_PER_LIST * nlist else matrix[rng.choice(n, TRAIN_PER_LIST * nlist, replace=False)]
    index.train(sample)
    index.add_with_ids(matrix, np.arange(n, dtype=np.int64))

    root = ann_dir(db.path)
    root.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{collection}-build-", dir=root))
    work.chmod(0o755)  # readable like the database file (mkdtemp's folders are private)
    try:
        faiss.write_index(index, str(work / "index.faiss"))
        np.save(work / "vectors.npy", matrix)
        np.save(work / "rowids.npy", rowids)
        (work / "meta.json").write_text(json.dumps(
            {"format": _FORMAT, "uuid": uuid, "seq": seq, "nodes": n, "dim": dim, "nlist": nlist, "kind": kind,
             "faiss": faiss.__version__, "built_at": round(time.time(), 3)}))
        target = root / f"{collection}-{uuid}-{seq:015d}"
        if target.exists():  # the same state, built before (perhaps differently): the new build wins
            shutil.rmtree(target, ignore_errors=True)  # readers keep the files they mapped
        os.rename(work, target)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    changes, _ = _names(collection)
    with db.transaction():
        db.connection.execute(f'DELETE FROM "{changes}" WHERE seq <= ?', (seq,))
    _remove_old(root, collection, uuid, seq)
    return {"nodes": n, "nlist": nlist, "kind": kind, "seq": seq, "path": str(target),
            "seconds": round(time.perf_counter() - t0, 3)}


#: A temporary build folder older than this is a killed build's leftover.
_DEAD_BUILD_SECONDS = 3600


def _remove_old(root: Path, collection: str, uuid: str, seq: int) -> None:
    """Older generations of this database, generations of a database this file replaced, and
    leftovers of killed builds.  Readers that mapped a removed generation keep their open files."""
    import time

    for p in root.iterdir():
        m = _GEN_RE.match(p.name)
        if m and m.group("c") == collection and (m.group("uuid") != uuid or int(m.group("seq")) < seq):
            shutil.rmtree(p, ignore_errors=True)
        elif p.name.startswith(f".{collection}-build-"):
            try:
                if time.time() - p.stat().st_mtime > _DEAD_BUILD_SECONDS:
                    shutil.rmtree(p, ignore_errors=True)
            except OSError:
                pass


class AnnSearcher:
    """Searches one collection's newest usable generation (reloaded when the database changes)."""

    def __init__(self, collection: str, nodes: str, vectors_table: str) -> None:
        self.collection = collection
        self.nodes = nodes
        self.vectors_table = vectors_table
        self._gen: Optional[Generation] = None
        self._token: Any = None
        self._lock = threading.Lock()
        self._warned = False

    def _generation(self, db: Any, seq_now: int, resident: bool) -> Optional[Generation]:
        token = db.change_token()
        with self._lock:
            if token == self._token and (self._gen is None or self._gen.seq <= seq_now):
                return self._gen
            self._token = token
            uuid = _uuid(db.connection, self.collection) if _has_log(db.connection, self.collection) else None
            if uuid is None:
                self._gen = None
                return None
            for seq, path in _generations(ann_dir(db.path), self.collection, uuid):
                if seq > seq_now:  # built from a state this snapshot does not see yet
                    continue
                if self._gen is not None and self._gen.path == path:
                    return self._gen
                if not resident and self._gen is None and _meta_nodes(path) < COLD_MIN_NODES:
                    self._token = None  # decided for this query only
                    return None
                try:
                    self._gen = _load(path, uuid, seq)
                    return self._gen
                except Exception as exc:  # removed meanwhile, or damaged: try an older one
                    logger.info("ANN generation %s unusable: %s", path, exc)
            self._gen = None
            return None

    def search(self, db: Any, query: np.ndarray, k: int, restriction: "FilterPlan",
               dim: int, resident: bool = True) -> Optional[List[Tuple[str, str, float]]]:
        """``(node_id, node_json, cosine)`` of the ``k`` best rows, or ``None`` when the exact search
        must answer (no usable generation, too many changes, or a one-shot reader — ``resident=False``
        — and a generation under :data:`COLD_MIN_NODES` nodes).

        ``restriction`` (filters, ids) is applied exactly: a selective one (at most
        :data:`SELECTIVE_FRACTION` of the rows, as counted by the metadata index or estimated from a
        sample) scores every matching row with the generation's float vectors (rows changed since it
        was built: from SQLite), so its answer is the exact search's; a broader one searches the ANN
        with oversampling and filters the candidates in SQL."""
        if db.is_memory:
            return None
        where, params = restriction.where, restriction.params
        norm = float(np.linalg.norm(query))
        q = np.ascontiguousarray((query / norm if norm else query).reshape(1, -1), dtype=np.float32)
        with db.snapshot():
            conn = db.connection
            conn.execute(f'SELECT 1 FROM "{self.nodes}" LIMIT 1').fetchall()
            if not _has_log(conn, self.collection):
                return None
            seq_now = _seq(conn, self.collection)
            gen = self._generation(db, seq_now, resident)
            if gen is None or gen.vectors.shape[1] != dim:
                return None
            changed = _changed_since(conn, self.collection, gen.seq, int(MAX_CHANGED_FRACTION * max(gen.n, 1)))
            if changed is None:
                if not self._warned:
                    logger.info("ANN index is stale (over %d%% of the rows changed): exact search until the next "
                                "'ragloom index' or 'ragloom optimize'", round(MAX_CHANGED_FRACTION * 100))
                    self._warned = True
                return None
            want = max(RERANK[gen.kind], 2 * k)
            if where != "1":
                fraction = 0.0 if restriction.rows is not None else self._selectivity(conn, gen, where, params)
                if fraction < SELECTIVE_FRACTION:
                    return self._exact(conn, gen, changed, q[0], k, restriction, dim)
                want = min(MAX_FILTER_CANDIDATES, int(math.ceil(want / fraction * 1.5)))
            _, pos = gen.index.search(q, min(want, gen.n))
            pos = pos[0][pos[0] >= 0]
            rows = gen.rowids[pos]
            keep = ~np.isin(rows, changed) if len(changed) else np.ones(len(rows), dtype=bool)
            cand_rows = rows[keep]
            cand_vecs = gen.vectors.rows(pos[keep])
            if len(changed):
                extra_rows, extra_vecs = self._vectors_of(conn, changed, dim)
                cand_rows = np.concatenate([cand_rows, extra_rows])
                cand_vecs = np.concatenate([cand_vecs, extra_vecs])
            if where != "1" and len(cand_rows):
                allowed = self._matching(conn, cand_rows, where, params)
                mask = np.isin(cand_rows, allowed)
                cand_rows, cand_vecs = cand_rows[mask], cand_vecs[mask]
                if len(cand_rows) < k:
                    return None  # the filter ate the oversampled candidates: exact
            return self._best(conn, cand_rows, cand_vecs @ q[0], k)

    def _exact(self, conn: Any, gen: Generation, changed: np.ndarray, q: np.ndarray, k: int,
               restriction: "FilterPlan", dim: int) -> List[Tuple[str, str, float]]:
        """The exact top ``k`` of the rows ``restriction`` selects, all of them scored: unchanged rows
        with the generation's vectors (read by position, :data:`_SCORE_BLOCK` rows at a time), changed or
        newer rows with SQLite's."""
        found = conn.execute(restriction.ids_sql, restriction.ids_params).fetchall()
        ids = np.unique(np.fromiter((r[0] for r in found), dtype=np.int64, count=len(found)))
        pos, in_gen = gen.positions(ids)
        if len(changed):
            in_gen &= ~np.isin(ids, changed)
        rows, pos = ids[in_gen], pos[in_gen]
        best_rows, best_sims = [np.empty(0, dtype=np.int64)], [np.empty(0, dtype=np.float32)]
        for start in range(0, len(rows), _SCORE_BLOCK):  # bounded memory: a 5% filter at 1M is 50,000 rows
            sims = gen.vectors.rows(pos[start:start + _SCORE_BLOCK]) @ q
            keep = np.argpartition(-sims, k - 1)[:k] if len(sims) > k else slice(None)
            best_rows.append(rows[start:start + _SCORE_BLOCK][keep])
            best_sims.append(sims[keep])
        if not in_gen.all():
            extra_rows, extra_vecs = self._vectors_of(conn, ids[~in_gen], dim)
            best_rows.append(extra_rows)
            best_sims.append(extra_vecs @ q)
        return self._best(conn, np.concatenate(best_rows), np.concatenate(best_sims), k)

    def _best(self, conn: Any, cand_rows: np.ndarray, sims: np.ndarray, k: int) -> List[Tuple[str, str, float]]:
        """``(node_id, node_json, cosine)`` of the ``k`` best candidates (by ``sims``), best first."""
        if not len(cand_rows):
            return []
        top = np.argsort(-sims, kind="stable")[:k]
        wanted = [int(r) for r in cand_rows[top]]
        found = {
            rowid: (node_id, data)
            for rowid, node_id, data in conn.execute(
                f'SELECT n.id, n.node_id, n.node FROM json_each(?) AS j JOIN "{self.nodes}" AS n ON n.id = j.value',
                (json.dumps(wanted),),
            )
        }
        return [(*found[r], float(sims[i])) for r, i in zip(wanted, top, strict=True) if r in found]

    def _vectors_of(self, conn: Any, rowids: np.ndarray, dim: int) -> Tuple[np.ndarray, np.ndarray]:
        """Normalised vectors of the rows of ``rowids`` that still exist."""
        rows = conn.execute(
            f'SELECT v.rowid, v.embedding FROM json_each(?) AS j JOIN "{self.vectors_table}" AS v '
            "ON v.rowid = j.value",
            (json.dumps([int(r) for r in rowids]),),
        ).fetchall()
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        vecs = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype=np.float32).reshape(len(rows), dim)
        return ids, normalise_rows(vecs)

    def _matching(self, conn: Any, rowids: np.ndarray, where: str, params: List[Any]) -> np.ndarray:
        rows = conn.execute(
            f'SELECT n.id FROM "{self.nodes}" AS n WHERE n.id IN (SELECT value FROM json_each(?)) AND ({where})',
            [json.dumps([int(r) for r in rowids]), *params],
        ).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def _selectivity(self, conn: Any, gen: Generation, where: str, params: List[Any]) -> float:
        """Fraction of a fixed sample of the generation's rows that the filter matches."""
        n = gen.n
        if n == 0:
            return 0.0
        step = max(1, n // FILTER_SAMPLE)
        sample = gen.rowids[::step][:FILTER_SAMPLE]
        return len(self._matching(conn, sample, where, params)) / max(1, len(sample))
