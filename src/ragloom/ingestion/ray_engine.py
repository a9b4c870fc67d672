"""The ingestion engine on Ray Data: the same plan → transform → write, with the reading, the
transformations and (for a server store) the writing spread over a Ray cluster.

:class:`~ragloom.ingestion.engine.IngestionEngine` decides and records everything, on the driver;
Ray runs the work between.  A run has two passes:

1. **plan.**  Ray tasks read the files with ragloom's readers (the skip report comes back per
   file) and fingerprint each document (:func:`~ragloom.ingestion.engine.source_fingerprint` with
   the driver's configuration digest).  Only ``(doc id, fingerprint, path)`` rows reach the
   driver, which classifies each source against the docstore with
   :meth:`IngestionEngine.classify <ragloom.ingestion.engine.IngestionEngine.classify>`, as a local
   run does.  An unchanged corpus stops here: nothing is parsed or embedded.  (Documents given in
   memory, ``IngestionPipeline(engine="ray").run(documents)``, are planned by
   :meth:`IngestionEngine.plan` directly.)
2. **ingest.**  The files of new and changed documents are read again by tasks; a ``map_batches``
   over documents runs the transformations before the embed model (splitting, junk filter); an
   actor pool runs the embed model and what follows it (the model is loaded once per actor, from its
   constructor arguments; ``num_gpus`` per actor when the cluster has GPUs).  Then:

   * **a server vector store** (Milvus: its own transactions, reachable from every node).  Before
     pass 2 the driver records *pending* fingerprints for the sources it will write
     (:meth:`~ragloom.ingestion.engine.IngestionEngine.mark_pending`) and deletes their old vectors;
     writer actors upsert the new nodes (ids are deterministic, so a retried task overwrites, never
     duplicates); the driver then records each finished batch in the docstore
     (:meth:`~ragloom.ingestion.engine.IngestionEngine.record_written`).  A run killed anywhere
     leaves pending sources that the next run re-does, or deletes when they are gone.
   * **the embedded SQLite store** (one writer, one node): embedded nodes stream back to the driver,
     which writes each batch with :meth:`~ragloom.ingestion.engine.IngestionEngine.write`, one
     transaction, exactly as a local run.

Execution is streaming: nodes and vectors pass through the driver one batch at a time (and, for a
server store, not at all).  What the driver keeps grows with the corpus but is small: per file its
path, per document its id (to find absent ones) and, for documents to ingest, their fingerprint.

Differences from the local engine: no per-node ingestion cache and no embedding cache (each worker
would need the driver's files); a changed document re-embeds all its chunks.  Only whole
:class:`~ragloom.schema.Document` inputs (no pre-split nodes) and the ``UPSERTS`` /
``UPSERTS_AND_DELETE`` strategies.  ``ray`` is imported only here (extra ``ragloom[ray]``).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import re
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Set

from ragloom.ingestion.engine import (
    DocstoreStrategy,
    DocumentFailure,
    FailureKind,
    IngestionEngine,
    IngestionStats,
    Plan,
    SourcePlan,
    _RunState,
    prepare_source,
    source_fingerprint,
    source_id,
    view_hash,
)
from ragloom.ingestion.transform import ProgressCallback
from ragloom.schema import BaseNode, Document

logger = logging.getLogger(__name__)

__all__ = ["RayOptions", "ensure_ray", "run_documents_on_ray", "run_files_on_ray"]

#: Files (plan pass, ingest pass) or documents per Ray task batch.
FILES_PER_TASK = 16
#: Sources per batch the embed actors and writers take, and per docstore transaction.
SOURCES_PER_BATCH = 16
#: CPUs one read/parse task reserves: fractional, so that on a small machine the tasks still get a
#: slot beside the embed actors (with whole CPUs, 2 actors on 2 CPUs starve the reads).
TASK_CPUS = 0.25
#: CPUs one embed actor reserves (the model itself uses the threads it finds).
EMBED_ACTOR_CPUS = 0.5
WRITER_ACTOR_CPUS = 0.1
#: A file that changed between the two passes: its new documents wait for the next run.
REASON_CHANGED = "changed while it was being indexed; the next run indexes it"


@dataclass
class RayOptions:
    """How a run uses Ray.

    Args:
        address: the cluster to join, as ``ray.init(address=...)`` takes it (``"auto"``: the one
            running on this machine, ``"HOST:PORT"``, ``"ray://HOST:10001"``); ``None`` uses the
            cluster this process already joined, else starts a new local one with every CPU.
        num_workers: embed actors (each loads the model once); >= 1.
        num_gpus_per_worker: GPUs per embed actor; ``None``: 1 when the cluster has GPUs, else 0.
        num_writers: writer actors for a server vector store; >= 1.
        files_per_task: files (or documents) per read/parse task; >= 1.

    Raises:
        ValueError: an argument outside the ranges above.
    """

    address: Optional[str] = None
    num_workers: int = 1
    num_gpus_per_worker: Optional[float] = None
    num_writers: int = 1
    files_per_task: int = FILES_PER_TASK

    def __post_init__(self) -> None:
        for name in ("num_workers", "num_writers", "files_per_task"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        gpus = self.num_gpus_per_worker
        if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, (int, float)) or gpus < 0):
            raise ValueError(f"num_gpus_per_worker must be None or a number >= 0, got {gpus!r}")


def ensure_ray(address: Optional[str] = None) -> Any:
    """Import ``ray`` and connect: to ``address``, to the cluster this process already joined, or to
    a new local one (``None``); returns the ``ray`` module.

    Raises:
        MissingDependencyError: (an ``ImportError``) ray is not installed (extra ``ragloom[ray]``).
    """
    from ragloom._optional import require

    # offline by default: Ray's usage statistics (and Ray Data's, which also polls a Prometheus
    # server on localhost:9090 after each run) stay off unless the user turned them on
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_DATA_USAGE_DISABLED", "1")
    ray = require("ray", "ray", "engine=\"ray\" (distributed ingestion)")
    if ray.is_initialized() and address not in (None, "auto") and "://" not in address:
        current = ray.get_runtime_context().gcs_address
        if address != current:
            raise ValueError(f"address {address!r}: this process already joined the Ray cluster at {current}; "
                             "call ray.shutdown() first to join another")
    # Ray's own INFO lines (cluster start, each dataset's plan) only with ragloom's -v
    quiet = logger.getEffectiveLevel() > logging.INFO
    ray_level = logging.ERROR if quiet else logging.INFO
    if quiet:  # and Ray core's own lines (e.g. one per actor pool about its constructor arguments)
        warnings.filterwarnings("ignore", category=UserWarning, module=r"ray\.data\..*")
        os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
    if not ray.is_initialized():
        if address is not None and re.fullmatch(r"[^:/\s]+:\d{1,5}", address):
            _check_reachable(address)
        kwargs: Dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": ray_level}
        if address is None:  # a new cluster of this machine, never one that happens to run here
            kwargs["num_cpus"] = os.cpu_count() or 1
        ray.init(address=address or "local", **kwargs)
    import ray.data

    logging.getLogger("ray.data").setLevel(ray_level)
    ray.data.DataContext.get_current().enable_progress_bars = False
    return ray


#: Seconds to wait for a Ray head given as HOST:PORT to accept a connection (ray.init itself retries
#: for ever against an address where nothing listens).
CONNECT_TIMEOUT = 10.0


def _check_reachable(address: str) -> None:
    import socket

    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as exc:
        raise ConnectionError(f"no Ray cluster answers at {address} ({exc.strerror or exc}); start one with "
                              f"'ray start --head --port {port}' or check the address") from None


# -- rows: one per source (document), the nodes pickled -------------------------------------------
def _dump(obj: Any) -> bytes:
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


#: each column's empty value: Arrow needs one type per column (a column of ``None`` loses it)
_EMPTY: Dict[str, Any] = {"kind": "", "doc_id": "", "fingerprint": "", "doc_hash": "", "path": "", "reason": "",
                          "failure": "", "payload": b"", "junk": b"", "embedded": 0}


def _rows(rows: List[Dict[str, Any]], columns: Sequence[str]) -> Dict[str, List[Any]]:
    return {c: [_EMPTY[c] if r.get(c) is None else r[c] for r in rows] for c in columns}


def _each(batch: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
    keys = list(batch)
    for i in range(len(batch[keys[0]]) if keys else 0):
        yield {k: batch[k][i] for k in keys}


_PLAN_COLUMNS = ("kind", "doc_id", "fingerprint", "doc_hash", "path", "reason", "failure")
_SOURCE_COLUMNS = ("doc_id", "fingerprint", "payload", "failure", "junk", "embedded")


def _plan_task(batch: Dict[str, Any], readers: List[Any], digest: str) -> Dict[str, List[Any]]:
    """Plan pass: read files, fingerprint their documents; rows ``kind`` = ``doc`` / ``read`` / ``skip``."""
    out: List[Dict[str, Any]] = []
    for path, which in zip(batch["path"], batch["reader"], strict=True):
        path, reader = str(path), readers[int(which)]
        docs, skipped = reader.read_resource(path)
        if skipped is not None:
            out.append({"kind": "skip", "path": skipped.path, "reason": skipped.reason})
            continue
        out.append({"kind": "read", "path": path})
        for doc in docs:
            failure = prepare_source(doc.id_, [doc])
            out.append({"kind": "doc", "doc_id": doc.id_, "path": path, "doc_hash": doc.hash,
                        "fingerprint": source_fingerprint(digest, [(None, view_hash(doc))]),
                        "failure": failure.message if failure is not None else None})
    return _rows(out, _PLAN_COLUMNS)


def _load_task(batch: Dict[str, Any], readers: List[Any], digest: str) -> Dict[str, List[Any]]:
    """Ingest pass, files: read again, keep the planned documents (``wanted``: a JSON list of ids
    per file); one row per document."""
    out: List[Dict[str, Any]] = []
    for path, which, wanted_json in zip(batch["path"], batch["reader"], batch["wanted"], strict=True):
        wanted = set(json.loads(str(wanted_json)))
        docs, skipped = readers[int(which)].read_resource(str(path))
        if skipped is not None:  # gone or unreadable since the plan pass: its sources fail this time
            out.extend({"doc_id": d, "failure": f"transient: {skipped.reason}"} for d in sorted(wanted))
            continue
        for doc in docs:
            if doc.id_ not in wanted:
                continue
            failure = prepare_source(doc.id_, [doc])
            out.append({"doc_id": doc.id_, "fingerprint": source_fingerprint(digest, [(None, view_hash(doc))]),
                        "payload": _dump([doc]), "failure": failure.message if failure else None, "embedded": 0})
    return _rows(out, _SOURCE_COLUMNS)


def _transform_rows(batch: Dict[str, Any], steps: List[Any]) -> Dict[str, List[Any]]:
    """Run ``steps`` over the sources of a batch with the engine's failure isolation; the chunks a
    junk filter drops travel with their source's row to the driver."""
    from ragloom.ingestion.junk import JunkFilter

    rows = list(_each(batch))
    plan = Plan(sources=[SourcePlan(str(r["doc_id"]), pickle.loads(r["payload"]), str(r["fingerprint"]), "new")
                         for r in rows if not r["failure"]])
    nodes, failed, counts = IngestionEngine(steps).transform(plan)
    by_source: Dict[str, List[BaseNode]] = {}
    for node in nodes:
        by_source.setdefault(source_id(node), []).append(node)
    failures = {f.doc_id: f.message for f in failed}
    junk: Dict[str, List[Any]] = {}
    for entry in (j for step in steps if isinstance(step, JunkFilter) for j in step.take_dropped()):
        junk.setdefault(str(entry[0]), []).append(entry)
    for i, r in enumerate(rows):
        doc_id = str(r["doc_id"])
        dropped = (pickle.loads(r["junk"]) if r.get("junk") else []) + junk.get(doc_id, [])
        r["junk"] = _dump(dropped) if dropped else None
        r["embedded"] = int(r.get("embedded") or 0) + (counts.embedded if i == 0 else 0)
        if r["failure"]:
            continue
        r["failure"] = failures.get(doc_id)
        r["payload"] = None if r["failure"] else _dump(by_source.get(doc_id, []))
    return _rows(rows, _SOURCE_COLUMNS)


class _Transformer:
    """Embed actor: runs its copy of the steps from the embed model on (the model loads once, on the
    first batch).  :meth:`_Driver.ingest` subclasses it with ``steps`` as a class attribute, so the
    actor has no constructor arguments to lose when Ray restarts it."""

    steps: List[Any] = []

    def __call__(self, batch: Dict[str, Any]) -> Dict[str, List[Any]]:
        return _transform_rows(batch, self.steps)


class _Writer:
    """Writer actor: upserts embedded nodes into a server vector store (a class attribute, as
    :class:`_Transformer`'s steps); returns them without vectors."""

    vector_store: Any = None

    def __call__(self, batch: Dict[str, Any]) -> Dict[str, List[Any]]:
        rows = list(_each(batch))
        ok = [r for r in rows if not r["failure"]]
        loaded = {str(r["doc_id"]): pickle.loads(r["payload"]) for r in ok}
        try:
            self.vector_store.add([n for nodes in loaded.values() for n in nodes])
        except ValueError:  # one source's node is refused: write the others, source by source
            for r in ok:
                try:
                    self.vector_store.add(loaded[str(r["doc_id"])])
                except ValueError as exc:
                    r["failure"] = str(exc)
        for r in rows:
            if not r["failure"]:
                nodes = loaded[str(r["doc_id"])]
                for n in nodes:
                    n.embedding = None
                r["payload"] = _dump(nodes)
        return _rows(rows, _SOURCE_COLUMNS)


# -- the driver --------------------------------------------------------------------------------
@dataclass
class _Todo:
    fingerprint: str
    status: str
    path: Optional[str] = None


class _Driver:
    """One distributed run: the engine (on the driver) plus the Ray stages between its decisions."""

    def __init__(self, engine: IngestionEngine, options: RayOptions, progress_callback: Optional[ProgressCallback],
                 collect: Optional[List[BaseNode]] = None) -> None:
        if engine.strategy == DocstoreStrategy.DUPLICATES_ONLY:
            raise ValueError("engine='ray' supports docstore_strategy UPSERTS and UPSERTS_AND_DELETE, "
                             "not DUPLICATES_ONLY")
        self.engine = engine
        self.options = options
        self.progress_callback = progress_callback
        self.collect = collect
        self.run = _RunState()
        self.ray = ensure_ray(options.address)
        steps = engine.transformations
        from ragloom.embeddings.base import BaseEmbedding
        from ragloom.ingestion.junk import JunkFilter

        first = next((i for i, t in enumerate(steps) if isinstance(t, BaseEmbedding)), len(steps))
        self.pre, self.post = steps[:first], steps[first:]
        #: junk entries the workers' filters dropped, handed to the driver's JunkFilter
        self.junk_steps = [t for t in self.pre if isinstance(t, JunkFilter)]
        vs = engine.vector_store
        self.worker_writes = vs is not None and not engine.atomic

    # plan results ---------------------------------------------------------------------------
    def classify(self, doc_id: str, fingerprint: str, doc_hash: Optional[str], force: bool) -> Optional[str]:
        """Status of a planned source (``None``: unchanged), counting it in the run's stats."""
        run = self.run
        stats = run.stats
        if doc_id in run.seen:
            return None
        run.seen.add(doc_id)
        stats.documents += 1
        if self.engine.docstore is None:
            return "new"
        status = self.engine.classify(doc_id, fingerprint, doc_hash, force)
        if status in ("unchanged", "rehash"):
            stats.unchanged += 1
            if status == "rehash":
                self.engine.set_fingerprints({doc_id: fingerprint})
            return None
        return status

    def take_plan_row(self, row: Dict[str, Any], force: bool, events: Optional["FileEvents"],
                      todo: Dict[str, _Todo]) -> None:
        """One row of the plan pass: a file read or skipped (told to ``events``), or a document,
        classified (and added to ``todo`` when it is new or changed)."""
        kind, path = row["kind"], str(row["path"])
        if kind == "read":
            if events is not None:
                events.read(path)
            return
        if kind == "skip":
            if events is not None:
                events.skipped(path, str(row["reason"]))
            return
        doc_id = str(row["doc_id"])
        if row["failure"]:  # metadata that cannot be stored: the source fails, its old nodes go
            if doc_id not in self.run.seen:
                self.run.seen.add(doc_id)
                self.run.stats.documents += 1
                self.fail(doc_id, str(row["failure"]), path)
                with self.engine._transaction():
                    self.engine._delete([doc_id])
            return
        status = self.classify(doc_id, str(row["fingerprint"]), str(row["doc_hash"]), force)
        if status is not None:
            todo[doc_id] = _Todo(str(row["fingerprint"]), status, path)

    def fail(self, doc_id: str, message: str, path: Optional[str] = None) -> None:
        transient = message.startswith("transient: ")
        self.run.stats.failed.append(DocumentFailure(
            doc_id, message[len("transient: "):] if transient else message,
            kind=FailureKind.TRANSIENT if transient else FailureKind.PERMANENT, source_path=path))
        self.run.failed_sources.add(doc_id)

    # the ingest pass ------------------------------------------------------------------------
    def ingest(self, dataset: Any, todo: Dict[str, _Todo]) -> None:
        """Parse, embed and write the sources of ``dataset`` (rows of :data:`_SOURCE_COLUMNS`)."""
        engine, ray = self.engine, self.ray
        if not todo:
            return
        if self.worker_writes:
            engine.mark_pending({d: t.fingerprint for d, t in todo.items()})
            engine.delete_vectors([d for d, t in todo.items() if t.status != "new"])
        if self.pre:
            dataset = dataset.map_batches(_transform_rows, fn_args=(self.pre,), batch_size=SOURCES_PER_BATCH,
                                          num_cpus=TASK_CPUS, batch_format="default")
        if self.post:
            resources = ray.cluster_resources()
            workers = self.options.num_workers
            gpus = self.options.num_gpus_per_worker
            if gpus is None:  # one GPU per actor, or a fair share when there are more actors than GPUs
                gpus = min(1.0, resources.get("GPU", 0) / workers)
            # the actors' CPUs leave room for the read tasks (and writers), however many actors were asked
            # for: with whole CPUs, N actors on N CPUs starve the reads and the run waits for ever
            spare = resources.get("CPU", 1) - 2 * TASK_CPUS - WRITER_ACTOR_CPUS * self.options.num_writers
            actor_cpus = max(0.01, min(EMBED_ACTOR_CPUS, spare / workers))
            dataset = dataset.map_batches(
                type("_Transformer", (_Transformer,), {"steps": self.post}), batch_size=SOURCES_PER_BATCH,
                compute=ray.data.ActorPoolStrategy(size=workers), num_cpus=actor_cpus,
                num_gpus=gpus, batch_format="default")
        if self.worker_writes:
            dataset = dataset.map_batches(
                type("_Writer", (_Writer,), {"vector_store": engine.vector_store}), batch_size=SOURCES_PER_BATCH,
                compute=ray.data.ActorPoolStrategy(size=self.options.num_writers), num_cpus=WRITER_ACTOR_CPUS,
                batch_format="default")
        done: Set[str] = set()
        for batch in dataset.iter_batches(batch_size=SOURCES_PER_BATCH, batch_format="default"):
            done.update(self._commit(list(_each(batch)), todo))
        lost = [d for d in todo if d not in done]  # its file no longer holds it (changed since the plan pass)
        for doc_id in lost:
            self.fail(doc_id, "transient: " + REASON_CHANGED, todo[doc_id].path)
        if lost:
            self._settle([], [], lost)

    def _commit(self, rows: List[Dict[str, Any]], todo: Dict[str, _Todo]) -> List[str]:
        """Record one batch of finished sources (write it, for the driver-written SQLite store);
        returns the ids of the sources it settled."""
        stats = self.run.stats
        ok: List[SourcePlan] = []
        nodes: List[BaseNode] = []
        delete: List[str] = []
        for r in rows:
            doc_id = str(r["doc_id"])
            stats.nodes_embedded += int(r.get("embedded") or 0)
            if r.get("junk"):
                for step in self.junk_steps:
                    step.dropped.extend(pickle.loads(r["junk"]))
            planned = todo.get(doc_id)
            if planned is None:
                continue
            delete.append(doc_id)  # old nodes of a changed source; leftovers of a killed run
            if r["failure"]:
                self.fail(doc_id, str(r["failure"]), planned.path)
                continue
            source_nodes = pickle.loads(r["payload"])
            ok.append(SourcePlan(doc_id, [], str(r["fingerprint"]), planned.status))
            nodes.extend(source_nodes)
        if not delete:
            return delete
        if self.progress_callback is not None:
            self.progress_callback("embedded", len(nodes))
        self._settle(ok, nodes, delete)
        stats.batches += 1
        stats.added += sum(1 for s in ok if s.status == "new")
        stats.updated += sum(1 for s in ok if s.status == "changed")
        stats.nodes_written += len(nodes)
        if self.collect is not None:
            self.collect.extend(nodes)
        if self.progress_callback is not None:
            self.progress_callback("committed", nodes)
        return delete

    def _settle(self, ok: List[SourcePlan], nodes: List[BaseNode], delete: List[str]) -> None:
        """Record ``ok`` sources with their ``nodes`` and forget ``delete``: the docstore side only
        when writer actors put the nodes in the vector store, else :meth:`IngestionEngine.write`."""
        if self.worker_writes:
            self.engine.record_written(ok, nodes, delete)
        elif self.engine.docstore is not None or self.engine.vector_store is not None:
            self.engine.write(ok, nodes, delete)

    def finish(self, delete_absent: bool, delete_scope: Optional[Callable[[str], bool]],
               raise_on_error: bool) -> IngestionStats:
        return self.engine._finish(self.run, delete_absent, delete_scope, raise_on_error)


def run_documents_on_ray(
    engine: IngestionEngine,
    batches: Iterable[Sequence[BaseNode]],
    options: Optional[RayOptions] = None,
    *,
    force: bool = False,
    delete_absent: bool = False,
    delete_scope: Optional[Callable[[str], bool]] = None,
    raise_on_error: bool = False,
    progress_callback: Optional[ProgressCallback] = None,
    collect: Optional[List[BaseNode]] = None,
) -> IngestionStats:
    """Ingest batches of in-memory documents with ``engine`` on Ray: each batch is planned on the
    driver (:meth:`IngestionEngine.plan`), then parsed, embedded and written by Ray (one Ray
    execution per batch).  Arguments as :meth:`IngestionEngine.run
    <ragloom.ingestion.engine.IngestionEngine.run>`.

    Raises:
        ValueError: an input that is not a :class:`~ragloom.schema.Document`; ``DUPLICATES_ONLY``.
        IngestionError: with ``raise_on_error``, some documents failed (the others are written).
        MissingDependencyError: ray is not installed (``ragloom[ray]``).
    """
    driver = _Driver(engine, options or RayOptions(), progress_callback, collect)
    for batch in batches:
        documents = list(batch)
        bad = next((n for n in documents if not isinstance(n, Document)), None)
        if bad is not None:
            raise ValueError(f"engine='ray' ingests whole Documents; got a {type(bad).__name__} ({bad.id_}). "
                             "Pass the documents, or run pre-split nodes with the local engine")
        plan = engine.plan(documents, force=force)
        driver.run.count_planned(plan)
        engine.set_fingerprints(plan.rehash)
        if plan.failed:  # bad metadata: their old nodes go too
            with engine._transaction():
                engine._delete([f.doc_id for f in plan.failed])
        items = [{"doc_id": s.doc_id, "fingerprint": s.fingerprint, "payload": _dump(s.inputs), "failure": "",
                  "junk": b"", "embedded": 0} for s in plan.sources]
        if items:
            blocks = _blocks(len(items), driver.options)
            driver.ingest(driver.ray.data.from_items(items, override_num_blocks=blocks),
                          {s.doc_id: _Todo(s.fingerprint, s.status) for s in plan.sources})
    return driver.finish(delete_absent, delete_scope, raise_on_error)


def _blocks(n: int, options: RayOptions) -> int:
    """Blocks of an ingest pass over ``n`` files or documents: one per ``files_per_task`` (each block
    is committed as it finishes, as a local batch is), and at least two per embed actor so that every
    actor has work; at most 4096 (Ray's per-block overhead)."""
    per_task = -(-n // options.files_per_task)
    return max(1, min(n, 4096, max(per_task, 2 * options.num_workers)))


@dataclass
class FileEvents:
    """Callbacks of :func:`run_files_on_ray` for the caller's report: ``read(path)`` per file read,
    ``skipped(path, reason)`` per file skipped (both in the plan pass)."""

    read: Callable[[str], None]
    skipped: Callable[[str, str], None]


def run_files_on_ray(
    engine: IngestionEngine,
    readers: Sequence[Any],
    options: Optional[RayOptions] = None,
    *,
    listing: Optional[Sequence[Sequence[str]]] = None,
    force: bool = False,
    delete_scope: Optional[Callable[[str], bool]] = None,
    raise_on_error: bool = False,
    progress_callback: Optional[ProgressCallback] = None,
    events: Optional[FileEvents] = None,
) -> IngestionStats:
    """Read the files that ``readers`` (:class:`~ragloom.readers.SimpleDirectoryReader`) list and
    ingest them with ``engine`` on Ray, reading in Ray tasks (see the module doc).  Absent sources
    are deleted as :meth:`IngestionEngine.run` does with ``delete_absent=True``.  ``listing``: each
    reader's ``list_resources()`` when the caller has it already (the folders are not walked again).

    Raises:
        ValueError: ``DUPLICATES_ONLY``.
        IngestionError: with ``raise_on_error``, some documents failed (the others are written).
        MissingDependencyError: ray is not installed (``ragloom[ray]``).
    """
    options = options or RayOptions()
    driver = _Driver(engine, options, progress_callback)
    ray = driver.ray
    if listing is None:
        listing = [r.list_resources() for r in readers]
    if events is not None:  # unlistable folders, links out of `within`: reported as a local read does
        for skipped in (s for r in readers for s in r.listing_skipped):
            events.skipped(skipped.path, skipped.reason)
    items: List[Dict[str, Any]] = [{"path": p, "reader": i} for i, files in enumerate(listing) for p in files]
    todo: Dict[str, _Todo] = {}
    if items:
        blocks = max(2, min(len(items) // options.files_per_task + 1, 256))
        planned = ray.data.from_items(items, override_num_blocks=blocks).map_batches(
            _plan_task, fn_args=(list(readers), engine.config_digest()), batch_size=options.files_per_task,
            num_cpus=TASK_CPUS, batch_format="default")
        for batch in planned.iter_batches(batch_size=256, batch_format="default"):
            for row in _each(batch):
                driver.take_plan_row(row, force, events, todo)
        wanted: Dict[str, List[str]] = {}
        for doc_id, planned_source in todo.items():
            wanted.setdefault(str(planned_source.path), []).append(doc_id)
        if wanted:
            which = {str(item["path"]): int(item["reader"]) for item in items}
            files = [{"path": p, "reader": which[p], "wanted": json.dumps(ids)} for p, ids in sorted(wanted.items())]
            del items, wanted
            blocks = _blocks(len(files), options)
            load = ray.data.from_items(files, override_num_blocks=blocks).map_batches(
                _load_task, fn_args=(list(readers), engine.config_digest()), batch_size=options.files_per_task,
                num_cpus=TASK_CPUS, batch_format="default")
            driver.ingest(load, todo)
    return driver.finish(True, delete_scope, raise_on_error)
