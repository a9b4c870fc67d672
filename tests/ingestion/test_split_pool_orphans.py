"""Split-pool workers end when the process that started them is killed (SIGKILL or SIGTERM shut no
pool down: idle workers lived on, holding the parent's stdout open, so a caller reading the output
of a killed ``ragloom index`` never saw end-of-file)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

PARENT = textwrap.dedent("""
    import os, sys
    from ragloom.ingestion.transform import SplitPool
    from ragloom.node_parser import SentenceSplitter
    from ragloom.schema import Document

    pool = SplitPool(2, min_chars=0)
    docs = [Document(text="A sentence about tea. " * 50, id_=f"d{i}") for i in range(4)]
    parts = pool.run(SentenceSplitter(chunk_size=64, chunk_overlap=0), docs, {})
    assert sum(len(out) for _, out in parts) > 4
    print(" ".join(str(p) for p in pool._executor._processes), flush=True)
    sys.stdin.read()  # until killed
""")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_workers_end_when_their_parent_is_killed(sig):
    proc = subprocess.Popen([sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    try:
        line = proc.stdout.readline()
        workers = [int(p) for p in line.split()]
        assert len(workers) == 2, line
        assert all(_alive(p) for p in workers)
        proc.send_signal(sig)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 20
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in workers if _alive(p)], "workers outlived their parent"
        # nothing holds the parent's stdout any more: reading it ends
        assert proc.stdout.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in workers if "workers" in locals() else []:
            if _alive(p):
                os.kill(p, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forkserver start method")
@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_the_parent_watch_works_under_every_start_method(method):
    """Under ``forkserver`` a worker's parent is the fork server, not the pool's process: a watch
    given the pool's pid ended every worker at once (BrokenProcessPool)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from ragloom._system import worker_process_start

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context(method),
                             initializer=worker_process_start) as pool:
        first = pool.submit(os.getpid).result(timeout=60)
        time.sleep(1.2)  # past two checks of the watch
        assert pool.submit(os.getpid).result(timeout=60) == first
