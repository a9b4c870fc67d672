"""Facts about the machine that several layers size their work by."""

from __future__ import annotations

import os

__all__ = ["available_cpus"]


def available_cpus() -> int:
    """The CPU cores this process may run on: ``len(os.sched_getaffinity(0))`` (a container's or
    ``taskset``'s limit), else ``os.cpu_count()`` (macOS, Windows); at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)
