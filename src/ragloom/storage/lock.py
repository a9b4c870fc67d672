"""An advisory, per-index-directory writer lock: one ``ragloom index`` at a time.

SQLite already serialises writes, so two writers never corrupt an index; the lock stops
a second run from embedding the same files again in parallel and tells the user who holds
the index.  It is an ``fcntl`` lock on ``<index dir>/.ragloom.lock`` holding the owner's pid,
released by the kernel when the process exits — also when it is killed, so a crashed run
never leaves a stale lock behind.  On platforms without ``fcntl`` it is a no-op.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional, Union

from ragloom.errors import IndexLockedError

LOCK_NAME = ".ragloom.lock"


class IndexLock:
    """``with IndexLock(index_dir):`` — exclusive writer lock on ``index_dir``.

    Raises:
        IndexLockedError: another process holds the lock (``.pid`` is its process id when known).
    """

    def __init__(self, index_dir: Union[str, "os.PathLike[str]"]) -> None:
        self.path = Path(index_dir) / LOCK_NAME
        self._fh: Any = None

    def acquire(self) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+", encoding="ascii")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            holder = fh.read().strip()
            fh.close()
            pid: Optional[int] = int(holder) if holder.isdigit() else None
            err = IndexLockedError(
                f"index {self.path.parent} is locked by pid {pid if pid is not None else '?'} "
                "(another 'ragloom index' is writing it); wait for it to finish"
            )
            err.pid = pid
            raise err from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._fh = fh

    def release(self) -> None:
        if self._fh is not None:
            try:
                self._fh.truncate(0)  # no holder any more (see :func:`writer_pid`)
            except OSError:
                pass
            self._fh.close()  # closing the descriptor drops the flock
            self._fh = None

    def __enter__(self) -> "IndexLock":
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def writer_pid(index_dir: Union[str, "os.PathLike[str]"]) -> Optional[int]:
    """The pid of the process that holds the writer lock of ``index_dir`` as far as a reader can tell
    without taking the lock (taking it, even briefly, could make a starting writer fail): the pid
    the lock file names, when that process is alive and is not this one; ``None`` otherwise.  A
    holder that exits normally empties the file; one that was killed leaves its pid, whose process
    is gone (a pid reused since then is the one case this answers wrongly)."""
    try:
        holder = (Path(index_dir) / LOCK_NAME).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if os.name != "posix" or not holder.isdigit() or int(holder) == os.getpid():
        return None  # (on Windows os.kill(pid, 0) would end that process)
    pid = int(holder)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # alive, another user's
        return pid
    except OSError:
        return None
    return pid
