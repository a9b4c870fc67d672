"""``ragloom serve``: an HTTP API and a web page over one index directory (the ``server`` extra).

:func:`serve` opens the index once (:class:`ragloom.service.IndexService`), warms the embed model
and runs :func:`ragloom.server.app.create_app` under uvicorn.  See ``docs/server.md``.
"""

from __future__ import annotations

import ipaddress
import logging
import os
from pathlib import Path
from typing import Any, List, Optional, Sequence, Union

logger = logging.getLogger(__name__)

__all__ = ["serve", "check_bind", "is_loopback"]


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, api_key: Optional[str]) -> None:
    """Refuse to listen beyond this machine without an API key.

    Raises:
        ValueError: ``host`` is not a loopback address and ``api_key`` is empty (the message names
            ``--api-key``).
    """
    if not is_loopback(host) and not api_key:
        raise ValueError(
            f"--host {host} would expose the index beyond this machine: give --api-key KEY "
            "(or set RAGLOOM_API_KEY) so that every request must carry it"
        )


def serve(
    index_dir: Union[str, "os.PathLike[str]"],
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    api_key: Optional[str] = None,
    allow_roots: Sequence[Union[str, "os.PathLike[str]"]] = (),
    max_upload_mb: float = 100,
    cors_origins: Sequence[str] = (),
    llm: Any = "default",
    log_level: str = "info",
    on_ready: Optional[Any] = None,
) -> None:
    """Serve the index in ``index_dir`` (created empty if missing) until interrupted.

    Args:
        host, port: where to listen (``port`` 0 picks a free one).
        api_key: bearer token required on every API request; required when ``host`` is not loopback.
        allow_roots: directories below which ``POST /ingest`` may read server-side paths.
        max_upload_mb: largest uploaded file (MiB, > 0).
        cors_origins: origins allowed to call the API from other pages (default: CORS off).
        llm: the LLM of ``/ask`` (a :func:`~ragloom.llms.resolve_llm` spec), loaded on first use.
        on_ready: called with the base URL once the server listens.

    Raises:
        ValueError: a non-loopback ``host`` without ``api_key``; a bad port, upload limit or root.
        MissingDependencyError: the ``server`` extra is not installed.
    """
    check_bind(host, api_key)
    if not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port must be an integer in 0..65535, got {port!r}")
    if not max_upload_mb > 0:
        raise ValueError(f"max_upload_mb must be > 0, got {max_upload_mb!r}")
    roots: List[Path] = []
    for root in allow_roots:
        if not Path(root).is_dir():
            raise ValueError(f"allow_root {str(root)!r} is not a directory")
        roots.append(Path(root))

    from ragloom._optional import require

    require("uvicorn", "server", "ragloom serve")
    import uvicorn

    from ragloom.server.app import ServerConfig, create_app
    from ragloom.service import IndexService

    service = IndexService(index_dir, llm=llm, create=True, memory_search=True)
    service.warm_up()
    app = create_app(service, ServerConfig(api_key=api_key or None, allow_roots=roots,
                                           max_upload_bytes=int(max_upload_mb * 1024 * 1024),
                                           cors_origins=list(cors_origins)))
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False))
    if on_ready is not None:
        original = server.startup

        async def startup(sockets: Any = None) -> None:
            await original(sockets=sockets)
            bound = server.servers[0].sockets[0].getsockname() if server.servers else (host, port)
            shown = f"[{bound[0]}]" if ":" in str(bound[0]) else bound[0]
            on_ready(f"http://{shown}:{bound[1]}")

        server.startup = startup  # type: ignore[method-assign]
    server.run()
