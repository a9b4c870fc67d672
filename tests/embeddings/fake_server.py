"""A real HTTP server on 127.0.0.1 that speaks the OpenAI, Ollama and Gemini embedding APIs.

Vectors are derived from each input text (:func:`fake_vector`), so tests can check every
vector's identity and position.  Faults are injected per endpoint from a queue
(:meth:`FakeEmbeddingServer.inject`): each request to that endpoint takes the next fault,
if any.  Every request is recorded (:attr:`FakeEmbeddingServer.requests`), and the
largest number of requests in flight at once is tracked.

Endpoints (keys for ``inject``):
    ``openai``       POST /v1/embeddings
    ``ollama``       POST /api/embed
    ``ollama_show``  POST /api/show
    ``gemini``       POST /v1beta/models/{model}:batchEmbedContents

Faults:
    ``Fault("429", retry_after="0.05")`` (seconds, or an HTTP-date string), ``Fault("500")``,
    ``Fault("400")`` (any status), ``Fault("hang", seconds=1.0)`` (sleep, then answer
    normally — the client will have timed out), ``Fault("malformed")`` (invalid JSON),
    ``Fault("short")`` (one vector too few), ``Fault("shuffle")`` (OpenAI: data in reverse
    order with correct ``index`` — *not* a fault for a correct client), ``Fault("bad_index")``
    (OpenAI: duplicate index), ``Fault("reset")`` (close the connection without answering).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, List, Optional

import numpy as np
from local_http_server import Fault, JSONHandler, LocalHTTPServer  # noqa: F401  (Fault re-exported)

DIM = 8


def fake_vector(text: str, dim: int = DIM) -> List[float]:
    """The deterministic unit vector the server returns for ``text``."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    v /= np.linalg.norm(v)
    return [float(x) for x in v]


@dataclass
class Recorded:
    endpoint: str
    path: str
    headers: Dict[str, str]
    body: Any
    fault: Optional[str]
    started: float
    finished: float = 0.0


@dataclass
class _State:
    dim: int = DIM
    delay: float = 0.0
    ollama_context_length: int = 8192
    ollama_num_ctx: Optional[int] = None
    ollama_arch: str = "bert"
    openai_max_model_len: Optional[int] = None
    openai_model_id: str = ""
    faults: Dict[str, Deque[Fault]] = field(default_factory=lambda: defaultdict(deque))
    requests: List[Recorded] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(JSONHandler):
    server: Any  # its ``state`` is the server's _State

    # -- helpers ---------------------------------------------------------------------
    def _endpoint(self) -> Optional[str]:
        p = self.path.split("?", 1)[0]
        if p == "/v1/embeddings":
            return "openai"
        if p == "/api/embed":
            return "ollama"
        if p == "/api/show":
            return "ollama_show"
        if p.startswith("/v1beta/models/") and p.endswith(":batchEmbedContents"):
            return "gemini"
        return None

    # -- dispatch ------------------------------------------------------------------
    def do_GET(self) -> None:
        st = self.server.state
        with st.lock:
            st.requests.append(Recorded("get", self.path, {k.lower(): v for k, v in self.headers.items()}, None,
                                        None, time.monotonic(), time.monotonic()))
        if self.path == "/v1/models" and st.openai_max_model_len:
            self._send(200, {"object": "list", "data": [{"id": st.openai_model_id, "object": "model",
                                                          "max_model_len": st.openai_max_model_len}]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        st = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        endpoint = self._endpoint()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with st.lock:
            fault = st.faults[endpoint].popleft() if endpoint and st.faults[endpoint] else None
            rec = Recorded(endpoint or "?", self.path, {k.lower(): v for k, v in self.headers.items()}, body,
                           fault.kind if fault else None, time.monotonic())
            st.requests.append(rec)
            st.in_flight += 1
            st.max_in_flight = max(st.max_in_flight, st.in_flight)
        try:
            if st.delay and endpoint != "ollama_show":
                time.sleep(st.delay)
            self._serve(endpoint, body, fault)
        finally:
            with st.lock:
                st.in_flight -= 1
                rec.finished = time.monotonic()

    def _serve(self, endpoint: Optional[str], body: Any, fault: Optional[Fault]) -> None:
        if endpoint is None:
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        if fault is not None and self._serve_fault(fault):
            return
        kind = fault.kind if fault else None
        if endpoint == "ollama_show":
            self._serve_ollama_show()
        elif endpoint == "openai":
            self._serve_openai(body, kind)
        elif endpoint == "ollama":
            self._serve_ollama(body, kind)
        elif endpoint == "gemini":
            self._serve_gemini(body, kind)

    def _serve_fault(self, fault: Fault) -> bool:
        """Act out ``fault``; True when that was the whole response ("hang" only delays it)."""
        k = fault.kind
        if k == "reset":
            self._reset()
            return True
        if k == "hang":
            time.sleep(fault.seconds)
        elif k == "malformed":
            self._send(200, raw=b'{"data": [{"embedding": [0.1, 0.2')
            return True
        elif k.isdigit():
            status = int(k)
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else None
            self._send(status, {"error": {"message": fault.body or f"injected {status}"}}, headers=headers)
            return True
        return False

    def _serve_ollama_show(self) -> None:
        st = self.server.state
        info: Dict[str, Any] = {
            "general.architecture": st.ollama_arch,
            f"{st.ollama_arch}.context_length": st.ollama_context_length,
            f"{st.ollama_arch}.embedding_length": st.dim,
        }
        params = f"num_ctx {st.ollama_num_ctx}\n" if st.ollama_num_ctx else ""
        self._send(200, {"model_info": info, "parameters": params, "details": {"family": st.ollama_arch}})

    def _serve_openai(self, body: Any, kind: Optional[str]) -> None:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        dim = body.get("dimensions") or self.server.state.dim
        data = [{"object": "embedding", "index": i, "embedding": fake_vector(t, dim)} for i, t in enumerate(texts)]
        if kind == "short":
            data = data[:-1]
        elif kind == "shuffle":
            data = data[::-1]
        elif kind == "bad_index" and len(data) > 1:
            data[1]["index"] = 0
        self._send(200, {"object": "list", "data": data, "model": body.get("model"), "usage": {"prompt_tokens": 0}})

    def _serve_ollama(self, body: Any, kind: Optional[str]) -> None:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vecs = [fake_vector(t, body.get("dimensions") or self.server.state.dim) for t in texts]
        if kind == "short":
            vecs = vecs[:-1]
        self._send(200, {"model": body.get("model"), "embeddings": vecs})

    def _serve_gemini(self, body: Any, kind: Optional[str]) -> None:
        if not self.headers.get("x-goog-api-key"):
            self._send(403, {"error": {"message": "missing API key"}})
            return
        out = []
        for req in body["requests"]:
            text = "".join(p.get("text", "") for p in req["content"]["parts"])
            out.append({"values": fake_vector(text, req.get("outputDimensionality") or self.server.state.dim)})
        if kind == "short":
            out = out[:-1]
        self._send(200, {"embeddings": out})


class FakeEmbeddingServer(LocalHTTPServer):
    """Start with ``with FakeEmbeddingServer() as srv:`` or :meth:`start`/:meth:`stop`."""

    handler = _Handler

    def __init__(self, dim: int = DIM, delay: float = 0.0, ollama_context_length: int = 8192,
                 ollama_num_ctx: Optional[int] = None) -> None:
        self.state = _State(dim=dim, delay=delay, ollama_context_length=ollama_context_length,
                            ollama_num_ctx=ollama_num_ctx)
        super().__init__()

    def _attach(self, server: Any) -> None:
        server.state = self.state

    # -- test API ----------------------------------------------------------------------
    @property
    def url(self) -> str:
        return self.root

    def inject(self, endpoint: str, *faults: Fault) -> None:
        with self.state.lock:
            self.state.faults[endpoint].extend(faults)

    def pending_faults(self, endpoint: str) -> int:
        with self.state.lock:
            return len(self.state.faults[endpoint])

    def requests_to(self, endpoint: str) -> List[Recorded]:
        with self.state.lock:
            return [r for r in self.state.requests if r.endpoint == endpoint]

    @property
    def requests(self) -> List[Recorded]:
        with self.state.lock:
            return list(self.state.requests)

    @property
    def max_in_flight(self) -> int:
        return self.state.max_in_flight

    def reset(self) -> None:
        with self.state.lock:
            self.state.requests.clear()
            self.state.faults.clear()
            self.state.max_in_flight = 0
