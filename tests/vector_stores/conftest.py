"""Real vector-store servers for the adapter tests, started once per test session.

* ``milvus_server``: the Milvus 2.3.5 standalone server shipped in the PyPI package ``milvus``
  (``milvus-server``, embedded etcd and RocksMQ, data in a temporary directory), on free
  ports; yields its ``http://127.0.0.1:PORT`` URI.
* ``chroma_server``: ``chroma run`` (in the ``chromadb`` wheel) on a free port; yields
  ``(host, port)``.

Each waits for readiness with a bounded timeout and is stopped at the end of the session.
A server that does not come up makes the test **fail** with the tail of its logs — never
skip — so CI cannot go green without having run the server tests.  The packages themselves
are required: ``pip install 'ragloom[chroma,milvus]'``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

MILVUS_START_TIMEOUT = 180.0
CHROMA_START_TIMEOUT = 60.0
_MILVUS_PORT_OPTIONS = (
    "proxy-port", "etcd-port", "root-coord-port", "proxy-internal-port", "query-coord-port",
    "query-node-port", "index-coord-port", "index-node-port", "data-coord-port", "data-node-port",
)


def free_ports(n: int) -> List[int]:
    """``n`` distinct TCP ports free on 127.0.0.1 right now."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"<{path}: {exc}>"
    return f"--- {path} (last {lines} lines) ---\n" + "\n".join(text.splitlines()[-lines:])


def _stop_group(proc: subprocess.Popen, first: int = signal.SIGINT, grace: float = 15.0) -> None:
    """Stop the process group this fixture started (by its own pgid), politely first."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, first)
        proc.wait(timeout=grace)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the server child, if the wrapper left it behind
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover
        pass


def _bin(name: str) -> str:
    exe = Path(sys.executable).with_name(name)
    if exe.exists():
        return str(exe)
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name!r} is not installed; pip install 'ragloom[chroma,milvus]'")
    return found


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("milvus")
    data = base / "data"
    ports = free_ports(len(_MILVUS_PORT_OPTIONS) + 1)
    etcd_port, peer_port = ports[1], ports[-1]
    # the embedded etcd listens on 2379/2380 unless told otherwise: give it our own ports
    etcd_conf = base / "embed-etcd.yaml"
    etcd_conf.write_text(
        f"listen-client-urls: http://127.0.0.1:{etcd_port}\n"
        f"advertise-client-urls: http://127.0.0.1:{etcd_port}\n"
        f"listen-peer-urls: http://127.0.0.1:{peer_port}\n"
        f"initial-advertise-peer-urls: http://127.0.0.1:{peer_port}\n"
        f"initial-cluster: default=http://127.0.0.1:{peer_port}\n",
        encoding="utf-8",
    )
    cmd = [_bin("milvus-server"), "--data", str(data)]
    for opt, port in zip(_MILVUS_PORT_OPTIONS, ports[: len(_MILVUS_PORT_OPTIONS)], strict=True):
        cmd += [f"--{opt}", str(port)]
    # shorter internal tick/poll intervals (defaults 200/1000/500 ms): "Strong" reads wait for the
    # next time tick, and loading a new collection waits for the query coordinator's checks
    for extra in ("proxy.timeTickInterval=50", "queryCoord.checkInterval=100", "queryCoord.distPullInterval=100"):
        cmd += ["--extra-config", extra]
    out_path = base / "milvus-server.out"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "ETCD_CONFIG_PATH": str(etcd_conf)}
    with open(out_path, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def logs() -> str:
        parts = [_tail(out_path)]
        for name in ("milvus-stdout.log", "milvus-stderr.log"):
            parts.append(_tail(data / "logs" / name))
        return "\n".join(parts)

    t0 = time.monotonic()
    try:
        # the wrapper prints its banner (ending "Ctrl+C to exit") once /healthz answers OK
        while "Ctrl+C to exit" not in out_path.read_text(encoding="utf-8", errors="replace"):
            if proc.poll() is not None:
                pytest.fail(f"milvus-server exited with {proc.returncode} before it was ready\n{logs()}")
            if time.monotonic() - t0 > MILVUS_START_TIMEOUT:
                pytest.fail(f"milvus-server not ready after {MILVUS_START_TIMEOUT:g} s\n{logs()}")
            time.sleep(0.2)
        # the wrapper moves to the next free port if one was taken meanwhile: read the real one
        config = (data / "configs" / "milvus.yaml").read_text(encoding="utf-8")
        match = re.search(r"^proxy:\n(?:(?:[ #].*)?\n)*?  port: (\d+)", config, re.M)
        if match is None:
            pytest.fail(f"cannot find the proxy port in {data / 'configs' / 'milvus.yaml'}\n{logs()}")
        uri = f"http://127.0.0.1:{match.group(1)}"
        from pymilvus import MilvusClient

        last: Exception = RuntimeError("not tried")
        while time.monotonic() - t0 < MILVUS_START_TIMEOUT:
            try:
                client = MilvusClient(uri=uri, timeout=10)
                client.list_collections()
                client.close()
                break
            except Exception as exc:  # noqa: BLE001 - any failure means "not ready yet"
                last = exc
                time.sleep(0.5)
        else:
            pytest.fail(f"Milvus at {uri} does not answer: {last}\n{logs()}")
        print(f"\n[milvus] standalone 2.3.5 ready at {uri} in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        yield uri
    finally:
        _stop_group(proc)


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tuple[str, int]]:
    import httpx

    base = tmp_path_factory.mktemp("chroma_server")
    (port,) = free_ports(1)
    out_path = base / "chroma.out"
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    cmd = [_bin("chroma"), "run", "--path", str(base / "data"), "--host", "127.0.0.1", "--port", str(port)]
    with open(out_path, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    t0 = time.monotonic()
    try:
        last: Exception = RuntimeError("not tried")
        while True:
            if proc.poll() is not None:
                pytest.fail(f"chroma run exited with {proc.returncode} before it was ready\n{_tail(out_path)}")
            if time.monotonic() - t0 > CHROMA_START_TIMEOUT:
                pytest.fail(f"chroma server not ready after {CHROMA_START_TIMEOUT:g} s: {last}\n{_tail(out_path)}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError as exc:
                last = exc
            time.sleep(0.2)
        print(f"\n[chroma] server ready at 127.0.0.1:{port} in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        yield "127.0.0.1", port
    finally:
        _stop_group(proc, first=signal.SIGTERM)
