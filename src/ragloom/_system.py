"""Facts about the machine that several layers size their work by."""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

__all__ = ["available_cpus", "children_ignore_sigint", "worker_process_start"]


def available_cpus() -> int:
    """The CPU cores this process may run on: ``len(os.sched_getaffinity(0))`` (a container's or
    ``taskset``'s limit), else ``os.cpu_count()`` (macOS, Windows); at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


#: how often a worker process checks that the process that started it is still there (seconds)
PARENT_CHECK_SECONDS = 0.5


@contextlib.contextmanager
def children_ignore_sigint() -> Iterator[None]:
    """Start worker processes inside this block so that they ignore Ctrl-C from birth.

    :func:`worker_process_start` runs only after a spawned worker has imported ragloom (about a
    second); a Ctrl-C in that time killed the workers with a ``KeyboardInterrupt`` traceback each and
    left the pool broken, and its shutdown hung.  A disposition of ``SIG_IGN`` is inherited across
    ``fork`` and ``exec``, and Python then installs no ``KeyboardInterrupt`` handler, so SIGINT is
    ignored here (main thread only: elsewhere Python delivers no signal anyway) while the block
    starts processes, and restored after it; a Ctrl-C in those milliseconds is lost."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def worker_process_start() -> None:
    """Initializer of ragloom's worker processes (``ProcessPoolExecutor(initializer=...)``):

    - Ctrl-C reaches the whole process group and the parent alone handles it (it stops the run and
      shuts the pool down); workers would otherwise each print a traceback.
    - A daemon thread ends the worker (``os._exit``) once its parent is gone: a parent killed by
      SIGKILL or SIGTERM shuts no pool down, and its idle workers (and multiprocessing's resource
      tracker, which waits for them) lived on, holding the parent's stdout open, so a caller reading
      it never saw end-of-file.  The parent is the one the worker has when it starts (the pool's
      process under ``fork`` and ``spawn``, the fork server under ``forkserver``); checked every
      :data:`PARENT_CHECK_SECONDS`: ``os.getppid`` changes when a POSIX process is re-parented (on
      Windows it never does, and the watch never fires)."""
    import signal
    import threading
    import time

    signal.signal(signal.SIGINT, signal.SIG_IGN)

    parent_pid = os.getppid()

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="ragloom-parent-watch", daemon=True).start()
