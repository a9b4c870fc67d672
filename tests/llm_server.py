"""A real LLM server on 127.0.0.1 for tests: the OpenAI-compatible and the Ollama chat APIs.

Usage::

    from llm_server import OpenAICompatibleServer, Fault

    with OpenAICompatibleServer(answer=lambda prompt: "Paris") as srv:
        llm = OpenAILike(model="m", api_base=srv.url)        # srv.url = "http://127.0.0.1:PORT/v1"
        ...
        srv.requests[-1]["prompt"]                              # what the model was asked

Endpoints (``srv.url`` ends in ``/v1``; ``srv.root`` is the bare ``http://127.0.0.1:PORT``):

- ``POST /v1/chat/completions`` and ``POST /v1/completions``: answers ``answer(prompt)``; with
  ``"stream": true`` as Server-Sent Events (``data: {...}`` per piece, then ``data: [DONE]``).
- ``GET /v1/models``.
- ``POST /api/chat``, ``POST /api/generate`` (Ollama; NDJSON stream unless ``"stream": false``
  — Ollama streams by default) and ``POST /api/show`` (context length ``ollama_context_length``).

``prompt`` is the text of the last user message (chat) or the ``prompt`` field (completions).
``answer`` may also be a plain string.  The answer is streamed in pieces of one word plus its
following whitespace (``stream_delay`` seconds apart), so joining the deltas gives it back exactly.

Every request is recorded in :attr:`OpenAICompatibleServer.requests` as a dict:
``{"path", "endpoint", "prompt", "messages", "body", "headers", "fault"}`` (``messages`` is
``None`` for completion requests).

Options: ``api_key`` (then a missing/wrong ``Authorization: Bearer`` gets 401), ``models``
(then any other model gets 404 "model not found"), ``prompt_tokens`` (a function for the
``usage`` numbers; default whitespace words).

Faults (:meth:`OpenAICompatibleServer.inject` or the ``faults=`` argument; each request to an
answering endpoint takes the next one): ``Fault("500")`` / any status (``retry_after="0.05"``
adds a ``Retry-After`` header), ``Fault("malformed")`` (invalid JSON body, or a broken
``data:`` line / NDJSON line when streaming), ``Fault("reset")`` (close the connection without
answering), ``Fault("hang", seconds=1.0)`` (sleep, then answer normally), ``Fault("empty")``
(200 with no choices).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from typing import Any, Callable, Deque, Dict, Iterable, List, Optional, Sequence, Union

from local_http_server import Fault, JSONHandler, LocalHTTPServer  # noqa: F401  (Fault re-exported)

_PIECE = re.compile(r"\s*\S+\s*|\s+")


def split_pieces(text: str) -> List[str]:
    """The pieces the server streams ``text`` in (their concatenation is ``text``)."""
    return _PIECE.findall(text) or [""]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _last_user(messages: Sequence[Dict[str, Any]]) -> str:
    for m in reversed(list(messages or [])):
        if isinstance(m, dict) and m.get("role") == "user":
            return _content_text(m.get("content"))
    return ""


class _Handler(JSONHandler):
    server: Any  # its ``owner`` is the OpenAICompatibleServer

    # -- low level ------------------------------------------------------------------
    def _stream(self, content_type: str, chunks: Iterable[bytes], delay: float) -> None:
        """Chunked transfer encoding, one flush per chunk, ``delay`` seconds apart."""
        try:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i, chunk in enumerate(chunks):
                if delay and i:
                    time.sleep(delay)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    # -- dispatch ---------------------------------------------------------------------
    def do_GET(self) -> None:
        srv = self.server.owner
        path = self.path.split("?", 1)[0]
        srv._record({"path": path, "endpoint": "models", "prompt": None, "messages": None, "body": None,
                     "headers": {k.lower(): v for k, v in self.headers.items()}, "fault": None})
        if path == "/v1/models":
            if not self._authorized():
                return
            ids = list(srv.models or ["test-model"])
            self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in ids]})
        else:
            self._send(404, {"error": {"message": f"no route {path}"}})

    def do_POST(self) -> None:
        srv = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        endpoint = {
            "/v1/chat/completions": "chat",
            "/v1/completions": "completions",
            "/api/chat": "ollama_chat",
            "/api/generate": "ollama_generate",
            "/api/show": "ollama_show",
        }.get(path)
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = None
        messages = body.get("messages") if isinstance(body, dict) and endpoint in ("chat", "ollama_chat") else None
        if isinstance(body, dict):
            prompt = _last_user(messages) if messages is not None else body.get("prompt")
        else:
            prompt = None
        fault = srv._next_fault() if endpoint not in (None, "ollama_show") else None
        srv._record({"path": path, "endpoint": endpoint, "prompt": prompt, "messages": messages, "body": body,
                     "headers": {k.lower(): v for k, v in self.headers.items()},
                     "fault": fault.kind if fault else None})
        if endpoint is None:
            self._send(404, {"error": {"message": f"no route {path}"}})
            return
        if not isinstance(body, dict):
            self._send(400, {"error": {"message": "request body is not a JSON object"}})
            return
        if endpoint in ("chat", "completions") and not self._authorized():
            return
        model = body.get("model")
        if srv.models is not None and model not in srv.models:
            if endpoint.startswith("ollama"):
                self._send(404, {"error": f"model '{model}' not found, try pulling it first"})
            else:
                self._send(
                    404,
                    {
                        "error": {
                            "message": f"The model `{model}` does not exist or you do not have access to it.",
                            "type": "invalid_request_error",
                            "code": "model_not_found",
                        }
                    },
                )
            return
        if endpoint == "ollama_show":
            arch = "llama"
            self._send(200, {"model_info": {"general.architecture": arch,
                                            f"{arch}.context_length": srv.ollama_context_length},
                             "parameters": f"num_ctx {srv.ollama_num_ctx}\n" if srv.ollama_num_ctx else "",
                             "details": {"family": arch}})
            return
        if fault is not None:
            if fault.kind == "reset":
                self._reset()
                return
            if fault.kind == "hang":
                time.sleep(fault.seconds)
            elif fault.kind.isdigit():
                status = int(fault.kind)
                headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else None
                msg = fault.body or f"injected {status}"
                payload = {"error": msg} if endpoint.startswith("ollama") else {"error": {"message": msg}}
                self._send(status, payload, headers=headers)
                return
        text = srv._answer(prompt or "")
        if endpoint.startswith("ollama"):
            self._serve_ollama(endpoint, body, text, fault)
        else:
            self._serve_openai(endpoint, body, text, fault)

    def _authorized(self) -> bool:
        key = self.server.owner.api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._send(401, {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                   "code": "invalid_api_key"}})
        return False

    # -- OpenAI -----------------------------------------------------------------------
    def _serve_openai(self, endpoint: str, body: Dict[str, Any], text: str, fault: Optional[Fault]) -> None:
        srv = self.server.owner
        model = body.get("model")
        created = int(time.time())
        kind = fault.kind if fault else None
        chat = endpoint == "chat"
        prompt_text = json.dumps(body.get("messages")) if chat else str(body.get("prompt"))
        usage = {"prompt_tokens": srv.prompt_tokens(prompt_text), "completion_tokens": srv.prompt_tokens(text)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if not body.get("stream"):
            if kind == "malformed":
                self._send(200, raw=b'{"id": "x", "choices": [{"message": {"content": "tru')
                return
            if kind == "empty":
                self._send(200, {"id": "cmpl-0", "object": "chat.completion", "choices": [], "model": model})
                return
            if chat:
                choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                obj = "chat.completion"
            else:
                choice = {"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}
                obj = "text_completion"
            self._send(200, {"id": "cmpl-0", "object": obj, "created": created, "model": model,
                             "choices": [choice], "usage": usage})
            return

        def events() -> Iterable[bytes]:
            obj = "chat.completion.chunk" if chat else "text_completion"
            if chat:
                first = {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
                yield (
                    b"data: "
                    + json.dumps({"id": "c", "object": obj, "model": model, "choices": [first]}).encode()
                    + b"\n\n"
                )
            for i, piece in enumerate(split_pieces(text)):
                if kind == "malformed" and i == 1:
                    yield b'data: {"choices": [{"delta": {"content": "bro\n\n'
                    continue
                choice = {"index": 0, "delta": {"content": piece}, "finish_reason": None} if chat else \
                    {"index": 0, "text": piece, "finish_reason": None}
                yield (
                    b"data: "
                    + json.dumps({"id": "c", "object": obj, "model": model, "choices": [choice]}).encode()
                    + b"\n\n"
                )
            last = (
                {"index": 0, "delta": {}, "finish_reason": "stop"}
                if chat
                else {"index": 0, "text": "", "finish_reason": "stop"}
            )
            yield (
                b"data: " + json.dumps({"id": "c", "object": obj, "model": model, "choices": [last]}).encode() + b"\n\n"
            )
            if body.get("stream_options", {}).get("include_usage"):
                yield (
                    b"data: "
                    + json.dumps({"id": "c", "object": obj, "model": model, "choices": [], "usage": usage}).encode()
                    + b"\n\n"
                )
            yield b"data: [DONE]\n\n"

        self._stream("text/event-stream", events(), srv.stream_delay)

    # -- Ollama -----------------------------------------------------------------------
    def _serve_ollama(self, endpoint: str, body: Dict[str, Any], text: str, fault: Optional[Fault]) -> None:
        srv = self.server.owner
        model = body.get("model")
        kind = fault.kind if fault else None
        chat = endpoint == "ollama_chat"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

        def piece(content: str, done: bool) -> Dict[str, Any]:
            out: Dict[str, Any] = {"model": model, "created_at": stamp, "done": done}
            if chat:
                out["message"] = {"role": "assistant", "content": content}
            else:
                out["response"] = content
            if done:
                out.update({"done_reason": "stop", "total_duration": 1000, "prompt_eval_count":
                            srv.prompt_tokens(json.dumps(body.get("messages") or body.get("prompt"))),
                            "eval_count": srv.prompt_tokens(text)})
            return out

        if body.get("stream", True) is False:
            if kind == "malformed":
                self._send(200, raw=b'{"model": "x", "message": {"content": "tru')
                return
            self._send(200, piece(text, True))
            return

        def lines() -> Iterable[bytes]:
            for i, p in enumerate(split_pieces(text)):
                if kind == "malformed" and i == 1:
                    yield b'{"message": {"content": "bro\n'
                    continue
                yield json.dumps(piece(p, False)).encode() + b"\n"
            yield json.dumps(piece("", True)).encode() + b"\n"

        self._stream("application/x-ndjson", lines(), srv.stream_delay)


class OpenAICompatibleServer(LocalHTTPServer):
    """Start with ``with OpenAICompatibleServer(answer=...) as srv:`` or :meth:`start` / :meth:`stop`."""

    handler = _Handler

    def __init__(
        self,
        answer: Union[str, Callable[[str], str]] = "This is the test answer.",
        api_key: Optional[str] = None,
        models: Optional[Sequence[str]] = None,
        stream_delay: float = 0.0,
        faults: Sequence[Fault] = (),
        ollama_context_length: int = 8192,
        ollama_num_ctx: Optional[int] = None,
        prompt_tokens: Callable[[str], int] = lambda s: len(str(s).split()),
    ) -> None:
        self.answer = answer
        self.api_key = api_key
        self.models = list(models) if models is not None else None
        self.stream_delay = stream_delay
        self.ollama_context_length = ollama_context_length
        self.ollama_num_ctx = ollama_num_ctx
        self.prompt_tokens = prompt_tokens
        self._faults: Deque[Fault] = deque(faults)
        self._requests: List[Dict[str, Any]] = []
        self._lock = threading.Lock()
        super().__init__()

    def _attach(self, server: Any) -> None:
        server.owner = self

    # -- test API (``root``, ``http://127.0.0.1:PORT``, is the Ollama base URL) ---------
    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` (the OpenAI ``api_base``)."""
        return self.root + "/v1"

    @property
    def requests(self) -> List[Dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    @property
    def prompts(self) -> List[Optional[str]]:
        """The ``prompt`` of every answering request, in order."""
        return [r["prompt"] for r in self.requests if r["endpoint"] not in ("models", "ollama_show")]

    def inject(self, *faults: Fault) -> None:
        with self._lock:
            self._faults.extend(faults)

    def pending_faults(self) -> int:
        with self._lock:
            return len(self._faults)

    def reset(self) -> None:
        with self._lock:
            self._requests.clear()
            self._faults.clear()

    # -- internal ---------------------------------------------------------------------
    def _record(self, item: Dict[str, Any]) -> None:
        with self._lock:
            self._requests.append(item)

    def _next_fault(self) -> Optional[Fault]:
        with self._lock:
            return self._faults.popleft() if self._faults else None

    def _answer(self, prompt: str) -> str:
        return self.answer if isinstance(self.answer, str) else str(self.answer(prompt))
