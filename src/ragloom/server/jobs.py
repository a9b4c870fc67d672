"""Ingestion jobs of ``ragloom serve``: a queue run by one worker thread, one job at a time.

Each job is one :meth:`ragloom.service.IndexService.ingest` call (the library's ingestion engine,
incremental and crash-safe); its progress is the engine's
:class:`~ragloom.ingestion.paths.IndexProgress`, copied after every file and every committed batch.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
import uuid
from collections import OrderedDict
from typing import Any, Dict, List, Optional

logger = logging.getLogger(__name__)

__all__ = ["IngestJobs", "MAX_JOBS_KEPT"]

#: finished jobs kept for ``GET /jobs`` (the oldest are forgotten first)
MAX_JOBS_KEPT = 200


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class IngestJobs:
    """A FIFO of ingestion jobs over one :class:`~ragloom.service.IndexService`.

    :meth:`submit` queues ``paths`` and returns the job's id at once; :meth:`get` returns a job as
    ``{"id", "state", "paths", "full", "created_at", "started_at", "finished_at", "progress",
    "errors", "summary", "error"}`` with ``state`` one of ``queued``, ``running``, ``done``,
    ``failed``.  A failed job keeps the batches it committed (the next run continues them).
    """

    def __init__(self, service: Any, within: Optional[List[Any]] = None) -> None:
        self.service = service
        #: folders every file read must lie in, symlinks resolved (``index_paths(within=)``)
        self.within = within
        self._jobs: "OrderedDict[str, Dict[str, Any]]" = OrderedDict()
        self._lock = threading.Lock()
        self._queue: "queue.Queue[Optional[str]]" = queue.Queue()
        self._thread = threading.Thread(target=self._work, name="ragloom-ingest", daemon=True)
        self._thread.start()

    def submit(self, paths: List[str], full: bool = False, display: Optional[List[str]] = None,
               remove_skipped: bool = False) -> Dict[str, Any]:
        """Queue an ingestion of ``paths`` (files and folders; ``full`` re-embeds unchanged files).
        ``display``: how the paths are shown in the job (default: the paths).  ``remove_skipped``: the
        files among ``paths`` that are skipped for good (binary, empty, unreadable …; not a transient
        failure) are deleted after the job (uploads, which nothing else refers to)."""
        job_id = uuid.uuid4().hex[:16]
        job = {
            "id": job_id, "state": "queued", "paths": list(display or paths), "full": bool(full),
            "created_at": _now(), "started_at": None, "finished_at": None,
            "progress": {"files_total": 0, "files_done": 0, "nodes_embedded": 0, "nodes_written": 0,
                         "nodes_reused": 0, "batches": 0, "fraction": 0.0},
            "errors": [], "summary": None, "error": None, "_paths": list(paths), "_remove_skipped": remove_skipped,
        }
        with self._lock:
            self._jobs[job_id] = job
            self._forget_old()
        self._queue.put(job_id)
        return self._public(job)

    def get(self, job_id: str) -> Optional[Dict[str, Any]]:
        with self._lock:
            job = self._jobs.get(job_id)
            return self._public(job) if job is not None else None

    def list(self) -> List[Dict[str, Any]]:
        with self._lock:
            return [self._public(j) for j in reversed(self._jobs.values())]

    def active(self) -> bool:
        """True while a job is queued or running."""
        with self._lock:
            return any(j["state"] in ("queued", "running") for j in self._jobs.values())

    def close(self) -> None:
        """Stop the worker after the current job (queued jobs are dropped)."""
        self._queue.put(None)

    @staticmethod
    def _public(job: Dict[str, Any]) -> Dict[str, Any]:
        out = {k: v for k, v in job.items() if not k.startswith("_")}
        out["progress"] = dict(job["progress"])
        out["errors"] = list(job["errors"])
        return out

    def _forget_old(self) -> None:
        finished = [k for k, j in self._jobs.items() if j["state"] in ("done", "failed")]
        for key in finished[: max(0, len(self._jobs) - MAX_JOBS_KEPT)]:
            del self._jobs[key]

    def _work(self) -> None:
        while True:
            job_id = self._queue.get()
            if job_id is None:
                return
            with self._lock:
                job = self._jobs.get(job_id)
                if job is None:
                    continue
                job["state"], job["started_at"] = "running", _now()
            self._run(job)

    def _run(self, job: Dict[str, Any]) -> None:
        from ragloom.errors import RagloomError

        def on_progress(progress: Any) -> None:
            snapshot = progress.to_dict()
            errors = snapshot.pop("skipped")
            with self._lock:
                job["progress"] = dict(job["progress"], **snapshot)
                job["errors"] = [{"path": e["path"], "reason": e["reason"]} for e in errors]

        try:
            summary = self.service.ingest(job["_paths"], full=job["full"], on_progress=on_progress,
                                          within=self.within).to_dict()
        except (RagloomError, ValueError, OSError) as exc:
            logger.warning("ingestion job %s failed: %s", job["id"], exc)
            with self._lock:
                job["state"], job["error"], job["finished_at"] = "failed", str(exc), _now()
            return
        except Exception:  # a bug: keep the server up, say so in the job, log the traceback
            logger.exception("ingestion job %s failed", job["id"])
            with self._lock:
                job["state"], job["error"], job["finished_at"] = "failed", "internal error (see the server log)", _now()
            return
        if job["_remove_skipped"]:
            _remove_skipped_files(job["_paths"], summary["skipped"])
        with self._lock:
            job["summary"] = summary
            job["errors"] = [{"path": e["path"], "reason": e["reason"]} for e in summary["skipped"]]
            job["progress"] = dict(job["progress"], fraction=1.0, files_done=job["progress"]["files_total"],
                                   nodes_written=summary["nodes_written"], nodes_reused=summary["nodes_reused"])
            job["state"], job["finished_at"] = "done", _now()


def _remove_skipped_files(paths: List[str], skipped: List[Dict[str, Any]]) -> None:
    """Delete the files among ``paths`` that a run skipped for good (``kind`` ``"file"``, not
    transient): an upload that cannot be indexed is not kept."""
    mine = {os.path.realpath(p) for p in paths}
    for entry in skipped:
        if entry.get("kind") != "file" or entry.get("transient"):
            continue
        real = os.path.realpath(entry["path"])
        if real in mine:
            try:
                os.unlink(real)
            except OSError as exc:
                logger.warning("could not remove the skipped upload %s: %s", real, exc)
