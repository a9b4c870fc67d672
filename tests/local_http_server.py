"""Plumbing shared by the test HTTP servers on 127.0.0.1 (``llm_server.py``,
``embeddings/fake_server.py``): the injected-fault record, a quiet JSON request handler with
a connection-reset helper, and a threaded server with ``start``/``stop``/``with`` lifecycle.
"""

from __future__ import annotations

import json
import socket
import struct
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Optional, Type, TypeVar

__all__ = ["Fault", "JSONHandler", "LocalHTTPServer"]


@dataclass
class Fault:
    """One injected fault: ``kind`` is an HTTP status (``"500"``), ``"reset"``, ``"hang"``
    (sleep ``seconds`` first), ``"malformed"`` or a server-specific kind; ``retry_after`` adds a
    ``Retry-After`` header; ``body`` replaces the error message."""

    kind: str
    retry_after: Optional[str] = None
    seconds: float = 0.0
    body: Optional[str] = None


class JSONHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 handler that logs nothing, ignores clients that went away, and sends JSON."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def finish(self) -> None:
        try:
            super().finish()
        except (OSError, ValueError):
            pass

    def _send(self, status: int, payload: Any = None, raw: Optional[bytes] = None,
              headers: Optional[Dict[str, str]] = None) -> None:
        """``payload`` as JSON (or the bytes ``raw``) with ``status`` and extra ``headers``."""
        body = raw if raw is not None else json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _reset(self) -> None:
        """Close the connection with a TCP reset, without answering."""
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (the CLI under test closing its keep-alive connection) is no
        server error: stay quiet, so a test that checks captured output for a traceback sees only the
        code under test; anything else is printed as before."""
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


_S = TypeVar("_S", bound="LocalHTTPServer")


class LocalHTTPServer:
    """A :class:`JSONHandler` subclass served on ``127.0.0.1:<free port>`` from a daemon thread.

    Subclasses set :attr:`handler` and may override :meth:`_attach` to hand the running
    ``ThreadingHTTPServer`` their state (handlers reach it as ``self.server``).
    """

    handler: Type[JSONHandler] = JSONHandler

    def __init__(self) -> None:
        self._server: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    def _attach(self, server: ThreadingHTTPServer) -> None:
        """Called with the new server before it serves its first request."""

    def start(self: _S) -> _S:
        self._server = _Server(("127.0.0.1", 0), self.handler)
        self._attach(self._server)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self: _S) -> _S:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def root(self) -> str:
        """``http://127.0.0.1:PORT``."""
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"
