"""The FastAPI application of ``ragloom serve`` (see ``docs/server.md`` for the API).

Every endpoint reads its input, makes one call of :class:`ragloom.service.IndexService` (or queues
one on :class:`~ragloom.server.jobs.IngestJobs`) and returns the result as JSON.  Errors are
``{"error": message}`` with a 4xx status (400 bad argument, 401 missing or wrong key, 403 path
outside the allowed roots, 404 unknown id, 413 upload too large, 422 malformed request); anything
unexpected is logged with its traceback and answered ``500 {"error": "internal error"}``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import queue
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, AsyncIterator, Dict, List, Literal, Optional, Tuple

from ragloom._optional import require

require("fastapi", "server", "ragloom serve")

from fastapi import APIRouter, Depends, FastAPI, Query, Request  # noqa: E402
from fastapi.exceptions import RequestValidationError  # noqa: E402
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse  # noqa: E402
from fastapi.staticfiles import StaticFiles  # noqa: E402
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError  # noqa: E402
from starlette.concurrency import run_in_threadpool  # noqa: E402
from starlette.exceptions import HTTPException  # noqa: E402

from ragloom.server.jobs import IngestJobs  # noqa: E402
from ragloom.service import MAX_TOP_K, RESPONSE_MODES, IndexService  # noqa: E402

logger = logging.getLogger(__name__)

__all__ = ["ServerConfig", "create_app", "STATIC_DIR"]

#: the page's files (shipped in the package)
STATIC_DIR = Path(__file__).parent / "static"
#: most results one API request may ask for
API_MAX_K = min(100, MAX_TOP_K)
#: longest query or question (characters)
MAX_TEXT_CHARS = 20_000
#: most files in one upload request
MAX_FILES_PER_UPLOAD = 100


@dataclass
class ServerConfig:
    """What ``ragloom serve`` was started with.

    Attributes:
        api_key: bearer token every API request must carry (``None``: no authentication, allowed
            only on a loopback address; :func:`ragloom.server.check_bind` enforces it).
        allow_roots: directories below which ``POST /ingest`` may read paths (resolved).
        max_upload_bytes: largest uploaded file (bytes).
        cors_origins: origins allowed to call the API from a browser (none: CORS off).
    """

    api_key: Optional[str] = None
    allow_roots: List[Path] = field(default_factory=list)
    max_upload_bytes: int = 100 * 1024 * 1024
    cors_origins: List[str] = field(default_factory=list)


class _Strict(BaseModel):
    # strict: JSON true is not the integer 1, nor "yes" a boolean
    model_config = ConfigDict(extra="forbid", strict=True)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


#: a string with something besides whitespace (a blank one is refused with 422, naming the field)
NonBlank = Annotated[str, AfterValidator(_not_blank)]


class QueryRequest(_Strict):
    text: NonBlank = Field(min_length=1, max_length=MAX_TEXT_CHARS, description="the query")
    k: int = Field(5, ge=1, le=API_MAX_K, description="results wanted")
    mode: Literal["hybrid", "dense", "keyword"] = "hybrid"
    filters: Optional[Dict[str, Any]] = Field(None, description="LlamaIndex MetadataFilters as JSON")


class AskRequest(_Strict):
    question: NonBlank = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    k: int = Field(5, ge=1, le=API_MAX_K)
    response_mode: Literal[RESPONSE_MODES] = "compact"  # type: ignore[valid-type]
    mode: Literal["hybrid", "dense", "keyword"] = "hybrid"
    stream: bool = False
    max_tokens: Optional[int] = Field(None, ge=1, le=8192)
    filters: Optional[Dict[str, Any]] = None


class ChatMessageIn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: str
    content: Any = None


class ChatCompletionRequest(BaseModel):
    """OpenAI's chat completion request; fields OpenAI clients send and ragloom does not use
    (temperature, top_p, n, stop ...) are accepted and ignored."""

    model_config = ConfigDict(extra="ignore")
    model: str = "ragloom"
    messages: List[ChatMessageIn] = Field(min_length=1)
    stream: bool = False
    max_tokens: Optional[int] = Field(None, ge=1, le=8192)


class PreviewRequest(_Strict):
    doc_id: Optional[str] = None
    text: Optional[str] = None
    file_name: Optional[str] = None
    parser: str = "sentence"
    chunk_size: Optional[int] = Field(None, ge=1)
    chunk_overlap: Optional[int] = Field(None, ge=0)


class IngestRequest(_Strict):
    paths: List[str] = Field(min_length=1, max_length=1000)
    full: bool = False


#: the OpenAI-compatible routes, whose errors take OpenAI's shape (what its client libraries read)
OPENAI_PREFIX = "/v1/"


def _error(status: int, message: str, detail: Any = None, request: Optional[Request] = None) -> JSONResponse:
    """``{"error": message, "detail": ...}``; below :data:`OPENAI_PREFIX`, OpenAI's
    ``{"error": {"message", "type", "param", "code"}}`` (``param``: the field at fault, if known)."""
    if request is not None and request.url.path.startswith(OPENAI_PREFIX):
        param = detail[0].get("field") if isinstance(detail, list) and detail else None
        kind = "invalid_request_error" if status < 500 else "server_error"
        code = "invalid_api_key" if status == 401 else None
        return JSONResponse({"error": {"message": message, "type": kind, "param": param, "code": code}},
                            status_code=status)
    body: Dict[str, Any] = {"error": message}
    if detail is not None:
        body["detail"] = detail
    return JSONResponse(body, status_code=status)


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _user_error(exc: Exception) -> Optional[Tuple[int, str]]:
    """The status and message of an error the caller caused, or ``None`` for a bug."""
    from ragloom._optional import MissingDependencyError
    from ragloom.errors import RagloomError

    if isinstance(exc, KeyError):
        return 404, f"no document with id {exc.args[0]!r}" if exc.args else "not found"
    if isinstance(exc, (ValueError, MissingDependencyError)):
        return 400, str(exc)
    if isinstance(exc, RagloomError):
        return 502, str(exc)  # e.g. a remote LLM failed
    return None


class _ClientGone(Exception):
    """The client of a streamed answer went away: stop generating."""


def _run_streaming(call: Any, events: "queue.Queue[Optional[Tuple[str, Any]]]", gone: threading.Event) -> None:
    """Run ``call(on_delta)`` in a thread, putting ``("delta", text)``, then ``("done", result)`` or
    ``("error", message)``, then ``None`` into ``events``; once ``gone`` is set, the next piece of
    text stops the generation."""

    def on_delta(piece: str) -> None:
        if gone.is_set():
            raise _ClientGone()
        events.put(("delta", piece))

    def work() -> None:
        try:
            result = call(on_delta)
            events.put(("done", result))
        except _ClientGone:
            logger.info("streamed answer stopped: the client went away")
        except Exception as exc:  # reported to the client as an error event
            user = _user_error(exc)
            if user is None:
                logger.exception("streamed answer failed")
            events.put(("error", user[1] if user else "internal error (see the server log)"))
        finally:
            events.put(None)

    threading.Thread(target=work, name="ragloom-ask", daemon=True).start()


def _last_user_message(messages: List[ChatMessageIn]) -> str:
    for m in reversed(messages):
        if m.role != "user":
            continue
        if isinstance(m.content, str):
            return m.content
        if isinstance(m.content, list):  # [{"type": "text", "text": ...}, ...]
            return " ".join(p.get("text", "") for p in m.content if isinstance(p, dict) and p.get("type") == "text")
    return ""


_SAFE_NAME = re.compile(r"[^\w.\- ()\[\]]+", re.UNICODE)


#: The longest stored upload name, in UTF-8 bytes.  File systems allow 255 bytes per name (ext4,
#: XFS, Btrfs), and an upload is first written as ``.{name}.{8 hex digits}.part`` (15 bytes more).
MAX_UPLOAD_NAME_BYTES = 200
#: an extension kept when a name is shortened: a dot, then up to this many characters
_MAX_EXT_CHARS = 16


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def safe_upload_name(name: Optional[str]) -> str:
    """The last component of an uploaded file's name, without characters that could escape the
    upload directory or confuse a shell (``/``, ``\\``, NUL, control characters, ``?``, ``*`` …:
    each run of them becomes ``_``), at most :data:`MAX_UPLOAD_NAME_BYTES` UTF-8 bytes.

    A name kept as it is stays itself (a re-upload replaces the file, and so its document).  A name
    that had to change (characters replaced, or shortened; its extension is kept, so the file is
    still read by its type) gets ``-`` and 8 hex digits of the SHA-256 of the name given before its
    extension: two different names never become one stored file, which would silently replace the
    other's document.

    Raises:
        ValueError: nothing usable is left (empty, ``.``, ``..``).
    """
    base = (name or "").replace("\\", "/").split("/")[-1]
    clean = _SAFE_NAME.sub("_", base).strip(" .")
    if not clean or clean in (".", ".."):
        raise ValueError(f"uploaded file name {name!r} is not usable")
    if clean == base and _utf8_len(clean) <= MAX_UPLOAD_NAME_BYTES:
        return clean
    stem, dot, ext = clean.rpartition(".")
    if not dot or not stem or len(ext) > _MAX_EXT_CHARS or " " in ext:
        stem, ext = clean, ""
    else:
        ext = "." + ext
    tag = "-" + hashlib.sha256(base.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    room = MAX_UPLOAD_NAME_BYTES - _utf8_len(tag + ext)
    stem = stem.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore").rstrip(" .")
    return (stem or "upload") + tag + ext


def resolve_allowed(path: str, roots: List[Path]) -> Path:
    """``path`` resolved (symlinks followed) when it lies below one of ``roots``.

    Raises:
        PermissionError: ``path`` holds ``..``, is relative, or resolves outside every root.
        FileNotFoundError: it does not exist.
    """
    if not roots:
        raise PermissionError("ingesting by path is off: start the server with --allow-root DIR")
    raw = Path(path)
    if ".." in raw.parts:
        raise PermissionError(f"path {path!r} contains '..'")
    if not raw.is_absolute():
        raise PermissionError(f"path {path!r} must be absolute")
    real = Path(os.path.realpath(raw))
    for root in roots:
        if real == root or root in real.parents:
            if not real.exists():
                raise FileNotFoundError(f"no such file or directory: {path}")
            return real
    raise PermissionError(f"path {path!r} is outside the allowed roots (start the server with --allow-root DIR)")


def _state(request: Request) -> Any:
    return request.app.state


def authorize(request: Request) -> None:
    """The API-key check of every API route (a no-op when the server has no key)."""
    key = request.app.state.config.api_key
    if key is None:
        return
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), key.encode()):
        raise HTTPException(401, "missing or wrong API key: send 'Authorization: Bearer <key>'")


async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
    return _error(exc.status_code, str(exc.detail), request=request)


async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    problems = [
        {"field": "body" if e.get("type") == "json_invalid" else ".".join(str(p) for p in e.get("loc", ())[1:]),
         "message": e.get("msg", "")}
        for e in exc.errors()
    ]
    first = problems[0] if problems else {"field": "", "message": "invalid request"}
    return _error(422, f"{first['field'] or 'request'}: {first['message']}", problems, request=request)


async def internal_error(request: Request, exc: Exception) -> JSONResponse:
    user = _user_error(exc)
    if user is not None:
        return _error(*user, request=request)
    logger.exception("%s %s failed", request.method, request.url.path)
    return _error(500, "internal error (see the server log)", request=request)


public = APIRouter()
router = APIRouter(dependencies=[Depends(authorize)])


# -- page and health -------------------------------------------------------------------------------
@public.get("/", include_in_schema=False)
def page() -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html")


@public.get("/health")
def health(request: Request) -> Dict[str, Any]:
    """Liveness: ``{"status": "ok", "version", "index_dir"}``."""
    from ragloom import __version__

    return {"status": "ok", "version": __version__, "index_dir": str(_state(request).service.index_dir)}


@router.get("/stats")
def stats(request: Request) -> Dict[str, Any]:
    """Documents, nodes, store, models, chunking configuration and size on disk of the index."""
    state = _state(request)
    out = state.service.stats()
    out["ingesting"] = state.jobs.active()
    return out


# -- search and answers --------------------------------------------------------------------------
@router.post("/query")
def query(body: QueryRequest, request: Request) -> Dict[str, Any]:
    """The ``k`` best chunks for ``text`` (``ragloom query``)."""
    return _state(request).service.query(body.text, top_k=body.k, mode=body.mode, filters=body.filters)


async def _event_stream(call: Any, request: Request) -> AsyncIterator[Tuple[str, Any]]:
    """The events of ``call`` run in a thread.  When the client has disconnected (checked before
    each event: uvicorn drops what is sent to a closed connection without telling), the
    generator ends and the generation stops at its next piece."""
    events: "queue.Queue[Optional[Tuple[str, Any]]]" = queue.Queue()
    gone = threading.Event()
    _run_streaming(call, events, gone)
    try:
        while True:
            item = await run_in_threadpool(events.get)
            if item is None or await request.is_disconnected():
                return
            yield item
    finally:
        gone.set()


@router.post("/ask", response_model=None)
def ask(body: AskRequest, request: Request) -> Any:
    """An answer from the LLM with its sources (``ragloom ask``); ``stream`` for Server-Sent Events."""
    service = _state(request).service

    def call(on_delta: Any) -> Dict[str, Any]:
        return service.ask(body.question, top_k=body.k, response_mode=body.response_mode, mode=body.mode,
                           max_tokens=body.max_tokens, on_delta=on_delta, filters=body.filters)

    if not body.stream:
        return call(None)

    async def stream() -> AsyncIterator[str]:
        async for event, data in _event_stream(call, request):
            payload = {"text": data} if event == "delta" else {"error": data} if event == "error" else data
            yield _sse(event, payload)

    return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


@router.get("/v1/models")
def models() -> Dict[str, Any]:
    """OpenAI-compatible model list (chat front-ends ask it first): the one model, ``ragloom``."""
    return {"object": "list", "data": [{"id": "ragloom", "object": "model", "created": 0, "owned_by": "ragloom"}]}


@router.post("/v1/chat/completions", response_model=None)
def chat_completions(body: ChatCompletionRequest, request: Request) -> Any:
    """OpenAI-compatible chat completion answered from the index; the sources ride along in ``"sources"``."""
    service = _state(request).service
    question = _last_user_message(body.messages)
    if not question.strip():
        raise ValueError("messages: the last user message is empty")
    completion_id = "chatcmpl-" + uuid.uuid4().hex
    created = int(time.time())

    def call(on_delta: Any) -> Dict[str, Any]:
        return service.ask(question, max_tokens=body.max_tokens, on_delta=on_delta)

    if not body.stream:
        result = call(None)
        return {
            "id": completion_id, "object": "chat.completion", "created": created, "model": body.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": result["answer"] or ""},
                         "finish_reason": "stop"}],
            "sources": result["sources"],
        }

    def chunk(delta: Dict[str, Any], finish: Optional[str] = None, **extra: Any) -> str:
        payload = {"id": completion_id, "object": "chat.completion.chunk", "created": created,
                   "model": body.model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        payload.update(extra)
        return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"

    async def stream() -> AsyncIterator[str]:
        yield chunk({"role": "assistant", "content": ""})
        async for event, data in _event_stream(call, request):
            if event == "delta":
                yield chunk({"content": data})
            elif event == "done":
                yield chunk({}, "stop", sources=data["sources"])
            else:
                yield f"data: {json.dumps({'error': {'message': data}}, ensure_ascii=False)}\n\n"
        yield "data: [DONE]\n\n"

    return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


# -- documents and chunks ------------------------------------------------------------------------
@router.get("/documents")
def documents(request: Request, offset: int = Query(0, ge=0, le=2**62), limit: int = Query(50, ge=1, le=1000),
              path: Optional[str] = None) -> Dict[str, Any]:
    """One page of the documents in the index."""
    return _state(request).service.documents(offset=offset, limit=limit, path=path)


@router.get("/documents/{doc_id:path}/chunks")
def chunks(doc_id: str, request: Request) -> Dict[str, Any]:
    """The document's text with every chunk's span, tokens and overlaps."""
    return _state(request).service.chunks(doc_id)


@router.delete("/documents/{doc_id:path}")
def delete_document(doc_id: str, request: Request) -> Dict[str, Any]:
    """Remove a document and its nodes; an uploaded file that no other document comes from is
    deleted from the upload folder too."""
    state = _state(request)
    return state.service.delete_document(doc_id, remove_file_below=state.upload_dir)


@router.post("/chunks/preview")
def preview(body: PreviewRequest, request: Request) -> Dict[str, Any]:
    """Chunk a document (or text) with another configuration, without touching the index."""
    return _state(request).service.preview_chunks(
        doc_id=body.doc_id, text=body.text, file_name=body.file_name, parser=body.parser,
        chunk_size=body.chunk_size, chunk_overlap=body.chunk_overlap,
    )


@router.get("/parsers")
def parsers(request: Request) -> Dict[str, Any]:
    """The parsers the chunk inspector can compare, and the index's configuration."""
    from ragloom.settings import PARSER_DESCRIPTIONS

    current = _state(request).service.stats()
    return {
        "parsers": [{"name": k, "description": v} for k, v in PARSER_DESCRIPTIONS.items()],
        "default": {"parser": current["parser"] or "auto", "chunk_size": current["chunk_size"],
                    "chunk_overlap": current["chunk_overlap"]},
    }


# -- ingestion -------------------------------------------------------------------------------------
@router.post("/ingest", status_code=202)
async def ingest(request: Request) -> Dict[str, Any]:
    """Queue an ingestion of server-side ``paths`` (JSON) or of uploaded ``files`` (multipart)."""
    state = _state(request)
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        saved = await _save_uploads(request, state.config, state.upload_dir)
        return _queued(state.jobs.submit([str(p) for p in saved], display=[p.name for p in saved],
                                         remove_skipped=True))
    try:
        body = IngestRequest.model_validate(await request.json())
    except json.JSONDecodeError as exc:
        raise HTTPException(422, f"request body is not JSON: {exc}") from None
    except ValidationError as exc:  # located in the body, as FastAPI's own validation errors
        raise RequestValidationError([dict(e, loc=("body", *e["loc"])) for e in exc.errors()]) from None
    resolved = []
    for raw in body.paths:
        try:
            resolved.append(resolve_allowed(raw, state.roots))
        except PermissionError as exc:
            logger.warning("refused ingest path %r: %s", raw, exc)
            raise HTTPException(403, str(exc)) from None
        except FileNotFoundError as exc:
            raise HTTPException(404, str(exc)) from None
    return _queued(state.jobs.submit([str(p) for p in resolved], full=body.full, display=body.paths))


def _queued(job: Dict[str, Any]) -> Dict[str, Any]:
    """The answer of ``POST /ingest``: ``{"job_id", "state"}`` (docs/server.md), then the whole job."""
    return {"job_id": job["id"], **job}


def _too_large(name: Optional[str], limit: int) -> HTTPException:
    return HTTPException(413, f"{name}: larger than the upload limit of {limit} bytes (--max-upload-mb)")


async def _save_uploads(request: Request, config: ServerConfig, upload_dir: Path) -> List[Path]:
    """Store the uploaded ``files`` below ``upload_dir`` (same name: replaced, so a re-upload updates)."""
    limit = config.max_upload_bytes
    if int(request.headers.get("content-length") or 0) > limit * MAX_FILES_PER_UPLOAD:
        raise HTTPException(413, f"upload too large: at most {MAX_FILES_PER_UPLOAD} files of {limit} bytes each")
    form = await request.form(max_files=MAX_FILES_PER_UPLOAD, max_fields=10)
    files = [f for f in form.getlist("files") if not isinstance(f, str)]
    if not files:
        raise HTTPException(422, "files: no file uploaded (multipart field 'files')")
    for upload in files:  # refuse the request before storing any of its files
        if upload.size is not None and upload.size > limit:
            raise _too_large(upload.filename, limit)
    names = [safe_upload_name(upload.filename) for upload in files]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:  # they would overwrite each other in the upload folder
        raise HTTPException(422, f"files: several uploaded files are named {', '.join(map(repr, twice))}; "
                                 "rename them or upload them separately")
    upload_dir.mkdir(parents=True, exist_ok=True)
    saved = []
    for upload, name in zip(files, names, strict=True):
        tmp = upload_dir / f".{name}.{uuid.uuid4().hex[:8]}.part"
        written = 0
        try:
            with open(tmp, "wb") as out:
                while block := await upload.read(1 << 20):
                    written += len(block)
                    if written > limit:
                        raise _too_large(upload.filename, limit)
                    out.write(block)
            os.replace(tmp, upload_dir / name)
        finally:
            tmp.unlink(missing_ok=True)
        saved.append(upload_dir / name)
    return saved


@router.get("/jobs")
def list_jobs(request: Request) -> Dict[str, Any]:
    """Every ingestion job this server knows, newest first."""
    return {"jobs": _state(request).jobs.list()}


@router.get("/jobs/{job_id}")
def get_job(job_id: str, request: Request) -> Dict[str, Any]:
    """One job's state, progress, per-file errors and summary."""
    job = _state(request).jobs.get(job_id)
    if job is None:
        raise HTTPException(404, f"no job with id {job_id!r}")
    return job


def create_app(service: IndexService, config: Optional[ServerConfig] = None) -> FastAPI:
    """The FastAPI application serving ``service`` (see ``docs/server.md``); it starts the
    ingestion worker thread."""
    from ragloom import __version__

    app = FastAPI(title="ragloom", version=__version__,
                  description="Search, ask, ingest and inspect the chunks of a ragloom index.")
    state = app.state
    state.service = service
    state.config = config or ServerConfig()
    state.upload_dir = Path(os.path.realpath(service.index_dir)) / "uploads"
    # uploaded files may be re-indexed by path (the page's Re-index button)
    state.roots = [Path(os.path.realpath(r)) for r in state.config.allow_roots] + [state.upload_dir]
    state.jobs = IngestJobs(service, within=state.roots)
    if state.config.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=state.config.cors_origins, allow_methods=["*"],
                           allow_headers=["Authorization", "Content-Type"])
    app.add_exception_handler(HTTPException, http_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, validation_error)  # type: ignore[arg-type]
    # The caller's errors are answered by ExceptionMiddleware; a handler registered only for
    # ``Exception`` runs in ServerErrorMiddleware, which re-raises after answering: uvicorn then logs
    # a traceback for every 400/404 and drops the keep-alive connection.
    from ragloom.errors import RagloomError

    for user_exc in (KeyError, ValueError, RagloomError):
        app.add_exception_handler(user_exc, internal_error)
    app.add_exception_handler(Exception, internal_error)
    app.include_router(public)
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    return app
