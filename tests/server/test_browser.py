"""The ``ragloom serve`` page (src/ragloom/server/static/) in a real browser.

Playwright's sync API drives the system Chromium (``/usr/bin/chromium``; nothing is downloaded,
``playwright install`` is never needed) against real server processes: the session ``server`` of
conftest (read-only tests) and ``writer``, a server of this module over a copy of the built index
with ``--allow-root`` on a folder of its own (uploads and ingest by path). Every expectation is
computed from the HTTP API for the same input, not written down.

Without Chromium or the playwright package the module is skipped, unless
``RAGLOOM_REQUIRE_BROWSER=1`` (CI) makes that a failure. With ``RAGLOOM_SCREENSHOTS=1`` the tests
also save full-page screenshots to docs/images/serve-*.png (the documentation's pictures).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional
from urllib.parse import quote

import pytest

from .conftest import start_writer

try:
    from playwright.sync_api import Browser, Page, expect, sync_playwright
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
except ImportError:  # see MISSING: skipped, or a failure under RAGLOOM_REQUIRE_BROWSER=1
    Browser = Page = Any  # type: ignore[misc,assignment]
    PlaywrightTimeout = TimeoutError  # type: ignore[misc,assignment]
    expect = sync_playwright = None  # type: ignore[assignment]

CHROMIUM = "/usr/bin/chromium"
#: why the browser cannot run here, or None
MISSING = ("the playwright package is not installed (pip install -e '.[test]')" if sync_playwright is None
           else None if os.path.exists(CHROMIUM) else f"{CHROMIUM} is not installed (apt-get install chromium)")
#: CI sets RAGLOOM_REQUIRE_BROWSER=1: a missing browser is then a failure, not a skip
REQUIRED = os.environ.get("RAGLOOM_REQUIRE_BROWSER") == "1"

pytestmark = [pytest.mark.requires_extra("server"),
              # skipped before any server starts; under REQUIRED the browser fixture fails instead
              pytest.mark.skipif(bool(MISSING) and not REQUIRED, reason=str(MISSING))]

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1366, "height": 768}
#: milliseconds for what the page waits on the server for (2 busy cores)
TIMEOUT = 30_000
#: milliseconds for an ingestion job (embedding) to finish
INGEST_TIMEOUT = 120_000
SCREENSHOTS = os.environ.get("RAGLOOM_SCREENSHOTS") == "1"
IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"

#: an English query whose best chunk (python-types.md, "Type hints in FastAPI") lies after the
#: file's emoji: its offsets differ in code points (the API) and UTF-16 units (JavaScript)
EN_QUERY = "How does FastAPI use type hints to validate data and convert requests?"
PANDA = ("大熊猫是中国特有的熊科动物，主要生活在四川、陕西和甘肃的山区竹林里。\n\n"
         "大熊猫的食物几乎全部是竹子，一只成年大熊猫每天要花十几个小时吃竹子。\n")


# -- helpers ---------------------------------------------------------------------------------------
def shot(page: Page, name: str) -> None:
    """A full-page screenshot docs/images/<name>, only with RAGLOOM_SCREENSHOTS=1."""
    if SCREENSHOTS:
        IMAGES.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(IMAGES / name), full_page=True)


def doc_url(doc_id: str, suffix: str = "") -> str:
    return "/documents/" + quote(doc_id, safe="") + suffix


def documents(client: Any, **params: Any) -> Dict[str, Any]:
    r = client.get("/documents", params={"limit": 1000, **params})
    assert r.status_code == 200, r.text
    return r.json()


def doc_id_of(client: Any, suffix: str) -> str:
    ids = [d["id"] for d in documents(client)["documents"] if (d["file_path"] or "").endswith(suffix)]
    assert len(ids) == 1, (suffix, ids)
    return ids[0]


def doc_chunks(client: Any, doc_id: str) -> Dict[str, Any]:
    r = client.get(doc_url(doc_id, "/chunks"))
    assert r.status_code == 200, r.text
    return r.json()


def api_query(client: Any, text: str, k: int, filters: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    r = client.post("/query", json={"text": text, "k": k, "mode": "hybrid", "filters": filters})
    assert r.status_code == 200, r.text
    return r.json()["results"]


def search(page: Page, text: str, k: int) -> None:
    """Run a search from the Search tab (Enter in the query box) and wait for its answer."""
    page.fill("#search-k", str(k))
    page.fill("#search-input", text)
    with page.expect_response(lambda r: r.url.endswith("/query") and r.request.method == "POST") as answer:
        page.press("#search-input", "Enter")
    assert answer.value.ok, answer.value.text()
    expect(page.locator("#search-button")).to_be_enabled()


def wait_mark(page: Page, text: str) -> None:
    """Wait until the document viewer highlights exactly ``text``."""
    try:
        page.wait_for_function(
            "t => document.querySelector('#viewer-text mark')?.textContent === t", arg=text, timeout=TIMEOUT)
    except PlaywrightTimeout:
        shown = page.locator("#viewer-text mark").all_text_contents()
        raise AssertionError(f"the viewer marks {shown!r}, not {text!r}") from None


def viewer_prefix(page: Page) -> str:
    """The viewer's text before its <mark>."""
    return page.locator("#viewer-text").evaluate(
        """pre => { let s = ''; for (const n of pre.childNodes) { if (n.nodeName === 'MARK') break;
                    s += n.textContent; } return s; }""")


def check_viewer(page: Page, client: Any, hit: Dict[str, Any], slot: str) -> None:
    """The viewer (inside ``slot``) shows ``hit``'s whole document with exactly its span marked, in sight."""
    viewer = page.locator(f"{slot} #doc-viewer")
    expect(viewer).to_be_visible()
    wait_mark(page, hit["text"])
    doc = doc_chunks(client, hit["ref_doc_id"])
    assert page.locator("#viewer-text").text_content() == doc["text"]
    assert viewer_prefix(page) == doc["text"][: hit["start_char_idx"]]
    expect(page.locator("#viewer-text mark")).to_be_in_viewport()
    expect(page.locator("#viewer-title")).to_have_text(hit["source"])


# -- fixtures --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """The system Chromium, once for the module."""
    if MISSING:
        if REQUIRED:
            pytest.fail(f"RAGLOOM_REQUIRE_BROWSER=1 but {MISSING}")
        pytest.skip(MISSING)
    expect.set_options(timeout=TIMEOUT)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture()
def open_page(browser: Browser) -> Iterator[Callable[..., Page]]:
    """``open_page(server, locale="en-US", tab="search")``: the page in a fresh browser context,
    once its statistics have loaded. At the end the test fails if the page threw, logged an error
    other than a failed request, or opened a dialog."""
    contexts = []
    problems: List[str] = []

    def on_console(msg: Any) -> None:
        if msg.type == "error" and "Failed to load resource" not in msg.text:
            problems.append(f"console: {msg.text}")

    def on_dialog(dialog: Any) -> None:
        problems.append(f"dialog: {dialog.message}")
        dialog.dismiss()

    def _open(srv: Any, locale: str = "en-US", tab: str = "search") -> Page:
        context = browser.new_context(viewport=VIEWPORT, locale=locale)
        context.set_default_timeout(TIMEOUT)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
        page.on("console", on_console)
        page.on("dialog", on_dialog)
        page.goto(f"{srv.url}/#{tab}")
        expect(page.locator("#stats")).to_have_text(re.compile(r"\d"))
        expect(page.locator("#global-alert")).to_be_hidden()
        return page

    yield _open
    for context in contexts:
        context.close()
    assert not problems, problems


@pytest.fixture(scope="module")
def api(server: Any) -> Iterator[Any]:
    with server.client() as client:
        yield client


@pytest.fixture(scope="module")
def writer(built_index: Path, tmp_path_factory: Any) -> Iterator[Any]:
    """A server of this module for uploads and ingest by path: a copy of ``built_index`` with
    ``--allow-root`` on ``writer.root``, a folder of its own."""
    srv = start_writer(built_index, tmp_path_factory.mktemp("browser-writer"))
    yield srv
    srv.stop()
    assert "Traceback" not in srv.log_text(), srv.log_text()[-3000:]


# -- 1. search -------------------------------------------------------------------------------------
def test_search_results_and_document_viewer(server, api, open_page):
    page = open_page(server)
    k = 4
    search(page, EN_QUERY, k)
    want = api_query(api, EN_QUERY, k)
    assert len(want) == k
    results = page.locator("#search-results .result")
    expect(results).to_have_count(k)
    assert results.first.locator(".chunk").text_content() == want[0]["text"]
    assert [r.locator(".source").text_content() for r in results.all()] == [w["source"] for w in want]
    assert [r.locator(".rank").text_content() for r in results.all()] == [f"#{i}" for i in range(1, k + 1)]
    # scores to four significant digits (a small index's BM25 scores can be about 1e-6)
    shown = [r.locator(".score").text_content() for r in results.all()]
    assert [len(x.lstrip("0.").replace(".", "")) for x in shown] == [4] * k, shown
    assert [float(x) for x in shown] == [float(f"{w['score']:.4g}") for w in want], shown
    expect(page.locator("#search-meta")).to_contain_text(f"{k} results")

    # "Show in document": the whole document, the result's span marked and scrolled into sight
    for i in range(k):
        results.nth(i).get_by_role("button", name="Show in document").click()
        check_viewer(page, api, want[i], "#search-viewer-slot")
    shot(page, "serve-search.png")

    # Chinese: 孙悟空 finds the Chinese novel
    search(page, "孙悟空", 5)
    want = api_query(api, "孙悟空", 5)
    assert want[0]["source"].endswith("西游记.txt")
    expect(results.first.locator(".source")).to_have_text(want[0]["source"])
    assert results.first.locator(".chunk").text_content() == want[0]["text"]

    # the file-type filter: the same query in Markdown files only
    page.select_option("#search-type", "text/markdown")
    search(page, "孙悟空", 5)
    md_filter = {"filters": [{"key": "file_type", "operator": "==", "value": "text/markdown"}], "condition": "and"}
    want = api_query(api, "孙悟空", 5, md_filter)
    assert want and all(w["source"].endswith(".md") for w in want)
    expect(results.first.locator(".source")).to_have_text(want[0]["source"])
    assert [r.locator(".source").text_content() for r in results.all()] == [w["source"] for w in want]

    # and the path filter with it
    page.fill("#search-path", "/zh/")
    search(page, "孙悟空", 5)
    both = {"filters": md_filter["filters"] + [{"key": "file_path", "operator": "text_match", "value": "/zh/"}],
            "condition": "and"}
    want = api_query(api, "孙悟空", 5, both)
    assert want and all("/zh/" in w["source"] and w["source"].endswith(".md") for w in want)
    expect(results.first.locator(".source")).to_have_text(want[0]["source"])
    assert [r.locator(".source").text_content() for r in results.all()] == [w["source"] for w in want]
    expect(page.locator("#search-error")).to_be_hidden()


# -- 2. ask ----------------------------------------------------------------------------------------
def test_ask_streams_an_answer_with_numbered_sources(server, api, open_page):
    page = open_page(server, tab="ask")
    question = "What are Python type hints?"
    k = 3
    # record the answer's text length at each change, with whether the answer was still streaming
    page.locator("#ask-answer").evaluate(
        """answer => { window.answerLog = [];
             new MutationObserver(() => window.answerLog.push(
               [answer.textContent.length, answer.getAttribute('aria-busy') === 'true']))
             .observe(answer, { childList: true, subtree: true, characterData: true, attributes: true }); }""")
    page.fill("#ask-input", question)
    page.fill("#ask-k", str(k))
    # the form is compact: its toolbar right under the question box
    box = page.locator("#ask-input").bounding_box()
    bar = page.locator("#ask-form .toolbar").bounding_box()
    assert box and bar and 0 <= bar["y"] - (box["y"] + box["height"]) < 20, (box, bar)
    page.click("#ask-button")
    sources = page.locator("#ask-sources .source-item")
    expect(sources).to_have_count(k)
    expect(page.locator("#ask-button")).to_be_enabled()
    expect(page.locator("#ask-answer")).not_to_have_attribute("aria-busy", "true")

    r = api.post("/ask", json={"question": question, "k": k})
    assert r.status_code == 200, r.text
    want = r.json()
    log = page.evaluate("window.answerLog")
    assert any(length > 0 and busy for length, busy in log), log          # text arrived while streaming
    assert page.locator("#ask-answer").text_content() == want["answer"]   # the mock LLM: its prompt
    assert question in want["answer"]
    expect(page.locator("#ask-error")).to_be_hidden()
    if want["toy"] and want["note"]:
        expect(page.locator("#ask-note")).to_have_text(want["note"])
    else:
        expect(page.locator("#ask-note")).to_be_hidden()
    expect(page.locator("#ask-meta")).to_contain_text(want["llm"])

    # numbered sources, as the API lists them
    assert len(want["sources"]) == k
    for i, source in enumerate(want["sources"], start=1):
        item = page.locator(f"#source-{i}")
        expect(item).to_have_class(re.compile(r"\bsource-item\b"))
        expect(item.locator(".source-link")).to_have_text(f"[{i}] {source['source']}")
        assert item.locator(".chunk").text_content() == source["text"]

    # a source opens the document viewer beside the answer
    page.locator("#source-2 .source-link").click()
    expect(page.locator("#source-2")).to_have_class(re.compile(r"\bactive\b"))
    check_viewer(page, api, want["sources"][1], "#ask-viewer-slot")
    expect(page.locator("#search-viewer-slot")).to_be_hidden()
    shot(page, "serve-ask.png")


# -- 3. library ------------------------------------------------------------------------------------
def wait_job(page: Page, writer: Any, start: Callable[[], None]) -> Dict[str, Any]:
    """Run ``start`` (it makes the page POST /ingest), wait until the page shows the job done, and
    return the job as the API reports it."""
    with page.expect_response(lambda r: r.url.endswith("/ingest") and r.request.method == "POST") as answer:
        start()
    assert answer.value.status == 202, answer.value.text()
    job_id = answer.value.json()["job_id"]
    status = page.locator("#ingest-status")
    expect(status).to_have_attribute("data-state", re.compile("^(done|failed)$"), timeout=INGEST_TIMEOUT)
    with writer.client() as client:
        job = client.get(f"/jobs/{quote(job_id, safe='')}").json()
    assert job["state"] == "done", job
    expect(status).to_have_attribute("data-state", "done")
    expect(page.locator("#ingest-progress")).to_have_js_property("value", 1)
    p = job["progress"]
    expect(status).to_contain_text(f"{p['files_done']}/{p['files_total']} files")
    expect(status).to_contain_text("(100%)")
    expect(page.locator("#ingest-errors li")).to_have_count(len(job["errors"]))
    expect(page.locator("#ingest-error")).to_be_hidden()
    return job


def check_table(page: Page, client: Any) -> List[str]:
    """The documents table lists what GET /documents lists; returns the sources shown."""
    want = documents(client, limit=50)
    cells = page.locator("#doc-table tbody td.source")
    expect(cells).to_have_count(len(want["documents"]))
    shown = cells.all_text_contents()
    assert shown == [d["source"] for d in want["documents"]]
    expect(page.locator("#page-info")).to_contain_text(f"of {want['total']}")
    return shown


def test_library_upload(writer, open_page, tmp_path):
    notes = tmp_path / "browser-notes.md"
    notes.write_text("# Browser notes\n\n## Uploads\n\nA small Markdown file uploaded through the page "
                     "of ragloom serve, then indexed.\n", encoding="utf-8")
    panda = tmp_path / "大熊猫.txt"
    panda.write_text(PANDA, encoding="utf-8")
    with writer.client() as client:
        before = documents(client)["total"]
        page = open_page(writer, tab="library")
        page.set_input_files("#upload-input", [str(notes), str(panda)])
        job = wait_job(page, writer, lambda: page.click("#upload-button"))
        assert job["progress"]["files_total"] == 2
        after = documents(client)
        assert after["total"] == before + 2
        shown = check_table(page, client)
        for name in (notes.name, panda.name):
            assert sum(s.endswith(name) for s in shown) == 1, (name, shown)
        expect(page.locator("#stats")).to_contain_text(f"{after['total']} documents")
        page.locator("#panel-library .add").scroll_into_view_if_needed()
        shot(page, "serve-library.png")

        # the uploaded Chinese text is found
        page.click("#tab-search")
        search(page, "大熊猫吃什么", 3)
        want = api_query(client, "大熊猫吃什么", 3)
        assert want[0]["source"].endswith(panda.name)
        expect(page.locator("#search-results .result .source").first).to_have_text(want[0]["source"])
        assert page.locator("#search-results .result .chunk").first.text_content() == want[0]["text"]


def test_library_ingest_by_path(writer, open_page):
    folder = writer.root / "by-path"
    folder.mkdir()
    (folder / "browser-guide.md").write_text(
        "# Browser guide\n\nIndexed by its path on the server, below an allowed root.\n", encoding="utf-8")
    with writer.client() as client:
        before = documents(client)["total"]
        page = open_page(writer, tab="library")

        # outside the allowed roots: refused, the reason shown, no job
        page.fill("#path-input", "/etc")
        with page.expect_response(lambda r: r.url.endswith("/ingest")) as answer:
            page.click("#path-button")
        assert answer.value.status == 403
        expect(page.locator("#ingest-error")).to_be_visible()
        expect(page.locator("#ingest-error")).to_contain_text(answer.value.json()["error"])

        page.fill("#path-input", str(folder))
        job = wait_job(page, writer, lambda: page.click("#path-button"))
        assert job["progress"]["files_total"] == 1
        assert documents(client)["total"] == before + 1
        shown = check_table(page, client)
        assert sum(s.endswith("browser-guide.md") for s in shown) == 1, shown
        assert documents(client, path="browser-guide.md")["total"] == 1


def test_inspector_select_with_many_documents_and_a_long_name(writer, open_page):
    """The inspector's document select lists one page (200) of documents: it now says how many it
    leaves out, and a 200-character file name no longer widens the page past the window."""
    folder = writer.root / "many"
    folder.mkdir()
    for i in range(205):
        (folder / f"note-{i:03d}.txt").write_text(f"Note {i} about tide pool number {i}.", encoding="utf-8")
    (folder / ("a-very-long-file-name-" * 9 + ".txt")).write_text("A note with a long name.", encoding="utf-8")
    with writer.client() as client:
        page = open_page(writer, tab="library")
        page.fill("#path-input", str(folder))
        wait_job(page, writer, lambda: page.click("#path-button"))
        total = documents(client)["total"]
        assert total > 206
        page.click("#tab-chunks")
        more = page.locator("[data-testid=inspector-more]")
        expect(more).to_have_text(f"… {total - 200} more: type in the filter to narrow the list")
        assert more.is_disabled()
        widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1], widths
        page.click("#lang-toggle")  # the line follows the language
        expect(more).to_have_text(f"… 另有 {total - 200} 个：在筛选框输入以缩小范围")
        page.click("#lang-toggle")
        page.fill("#inspector-filter", "note-20")  # narrowed to one page: nothing left out
        expect(page.locator("#inspector-doc option")).to_have_count(1 + 5, timeout=TIMEOUT)  # note-200 … 204
        expect(more).to_have_count(0)


# -- 4. chunk inspector ----------------------------------------------------------------------------
READ_VIEW = """root => ({
  text: root.querySelector('.chunk-text').textContent,
  code: root.querySelector('.chunk-text').classList.contains('code'),
  gutter: root.querySelector('.gutter').hidden ? null : root.querySelector('.gutter').textContent,
  marks: root.querySelectorAll('.chunk-text .bmark').length,
  segs: [...root.querySelectorAll('.chunk-text .seg')].map((s) => ({
    text: s.textContent, chunks: s.dataset.chunks, cls: [...s.classList],
    image: getComputedStyle(s).backgroundImage })),
  items: [...root.querySelectorAll('.chunk-items .chunk-item')].map((li) => ({
    start: li.dataset.start, end: li.dataset.end, tokens: li.dataset.tokens,
    header: li.querySelector('.header-path')?.textContent ?? null })),
})"""


def check_chunk_view(view: Dict[str, Any], doc: Dict[str, Any]) -> int:
    """A rendered chunk view shows ``doc`` (a GET /documents/{id}/chunks or /chunks/preview answer)
    exactly; returns the number of overlap segments."""
    text, chunks = doc["text"], doc["chunks"]
    assert view["text"] == text
    assert view["marks"] == len(chunks)
    assert [(int(i["start"]), int(i["end"])) for i in view["items"]] == [(c["start"], c["end"]) for c in chunks]
    assert [i["tokens"] for i in view["items"]] == [str(c["tokens"]) for c in chunks]
    offset = 0
    overlaps = 0
    for seg in view["segs"]:
        a, b = offset, offset + len(seg["text"])   # code points, as the API counts
        assert a < b and text[a:b] == seg["text"]
        covering = [i for i, c in enumerate(chunks) if c["start"] <= a and b <= c["end"]]
        # a segment is cut at every chunk boundary: no chunk starts or ends inside it
        assert not [c for c in chunks if a < c["start"] < b or a < c["end"] < b], (a, b)
        assert seg["chunks"] == ",".join(map(str, covering)), (a, b, seg, covering)
        if len(covering) > 1:
            overlaps += 1
            assert "overlap" in seg["cls"] and "repeating-linear-gradient" in seg["image"], seg
        elif covering:
            assert f"c{covering[0] % 2}" in seg["cls"] and "overlap" not in seg["cls"], seg
        else:
            assert "gap" in seg["cls"], seg
        offset = b
    assert offset == len(text)
    assert (overlaps > 0) == any(c["overlap_next"] > 0 for c in chunks)
    return overlaps


def open_in_inspector(page: Page, doc_id: str, n_chunks: int) -> None:
    page.select_option("#inspector-doc", doc_id)
    expect(page.locator("#chunk-list .chunk-item")).to_have_count(n_chunks)
    expect(page.locator("#inspector-error")).to_be_hidden()


@pytest.mark.parametrize("suffix, fmt", [("zh/西游记.txt", "text"), ("en/python-types.md", "markdown"),
                                         ("code/stack.py", "code")])
def test_chunk_inspector(server, api, open_page, suffix, fmt):
    doc_id = doc_id_of(api, suffix)
    doc = doc_chunks(api, doc_id)
    assert doc["format"] == fmt and doc["text_source"] == "file"
    chunks = doc["chunks"]
    page = open_page(server, tab="chunks")
    open_in_inspector(page, doc_id, len(chunks))
    expect(page.locator("#inspector-info")).to_contain_text(f"{fmt} · {len(chunks)} chunks")
    expect(page.locator("#inspector-warn")).to_be_hidden()
    view = page.locator("#inspector").evaluate(READ_VIEW)
    overlaps = check_chunk_view(view, doc)

    if fmt == "text":
        assert overlaps > 0   # the sentence splitter's overlap shows
    if fmt == "markdown":
        headers = [" › ".join(c["metadata"]["header_path_list"]) if c["metadata"].get("header_path_list") else None
                   for c in chunks]
        assert any(headers)
        assert [i["header"] for i in view["items"]] == headers
    if fmt == "code":
        assert view["code"]
        lines = doc["text"].count("\n") + 1
        assert view["gutter"] == "\n".join(str(n) for n in range(1, lines + 1))
        expect(page.locator("#inspector .gutter")).to_be_visible()
    else:
        assert not view["code"] and view["gutter"] is None

    # selecting a chunk in the list highlights its text and scrolls to it
    n = len(chunks) // 2
    page.locator("#chunk-list .chunk-item").nth(n).click()
    expect(page.locator("#chunk-list .chunk-item").nth(n)).to_have_attribute("aria-current", "true")
    active = page.locator("#inspector-text .seg.active")
    assert "".join(active.all_text_contents()) == chunks[n]["text"]
    expect(active.first).to_be_in_viewport()
    if fmt == "text":
        shot(page, "serve-chunks.png")


# -- 5. compare configurations ---------------------------------------------------------------------
def test_compare_configurations(server, api, open_page):
    doc_id = doc_id_of(api, "en/python-types.md")
    doc = doc_chunks(api, doc_id)
    page = open_page(server, tab="chunks")
    open_in_inspector(page, doc_id, len(doc["chunks"]))
    a, b = page.locator("#compare-a"), page.locator("#compare-b")

    # A: the index's own chunks; B: waiting for a configuration
    expect(a.locator(".chunk-item")).to_have_count(len(doc["chunks"]))
    expect(a.locator(".cfg-summary")).to_contain_text(f"current index: {len(doc['chunks'])} chunks")
    check_chunk_view(a.evaluate(READ_VIEW), doc)
    expect(b.locator(".cfg-summary")).to_have_text("Choose a configuration and press Apply.")
    expect(b.locator(".chunk-item")).to_have_count(0)

    # B: the token splitter with smaller windows than the index's
    config = {"parser": "token", "chunk_size": 96, "chunk_overlap": 16}
    r = api.post("/chunks/preview", json={"doc_id": doc_id, **config})
    assert r.status_code == 200, r.text
    preview = r.json()
    n = len(preview["chunks"])
    assert n > len(doc["chunks"])
    b.locator(".cfg-parser").select_option(config["parser"])
    b.locator(".cfg-size").fill(str(config["chunk_size"]))
    b.locator(".cfg-overlap").fill(str(config["chunk_overlap"]))
    b.locator(".cfg-apply").click()
    expect(b.locator(".chunk-item")).to_have_count(n)
    expect(b.locator(".cfg-summary")).to_contain_text(f"{n} chunks")
    expect(b.locator(".cfg-summary")).not_to_contain_text("current index")
    check_chunk_view(b.evaluate(READ_VIEW), preview)
    expect(b.locator(".cfg-error")).to_be_hidden()
    # A is unchanged
    expect(a.locator(".chunk-item")).to_have_count(len(doc["chunks"]))
    expect(a.locator(".cfg-summary")).to_contain_text(f"current index: {len(doc['chunks'])} chunks")
    page.locator(".compare-title").scroll_into_view_if_needed()
    shot(page, "serve-compare.png")

    # bad configurations, told inside panel B (no popup: open_page fails on dialogs).  Out of the
    # inputs' range, or an overlap not below the size: the page says so in its own language and
    # sends nothing (the server refuses them too)
    previews: list = []
    page.on("request", lambda req: previews.append(req.url) if req.url.endswith("/chunks/preview") else None)
    for size, overlap, message, invalid in (
            ("0", "0", "Chunk size must be at least 1.", ".cfg-size"),
            ("32", "32", "Overlap must be less than Chunk size (32).", ".cfg-overlap"),
            ("32", "-1", "Overlap must be at least 0.", ".cfg-overlap"),
            ("32.5", "4", "Chunk size must be a whole number.", ".cfg-size")):
        if "." not in size:
            r = api.post("/chunks/preview", json={"doc_id": doc_id, "parser": "token", "chunk_size": int(size),
                                                  "chunk_overlap": int(overlap)})
            assert 400 <= r.status_code < 500, r.text
        b.locator(".cfg-size").fill(size)
        b.locator(".cfg-overlap").fill(overlap)
        b.locator(".cfg-apply").click()
        expect(b.locator(".cfg-error")).to_have_text(message)
        expect(b.locator(invalid)).to_have_attribute("aria-invalid", "true")
        expect(b.locator(invalid)).to_be_focused()
        expect(a.locator(".cfg-error")).to_be_hidden()
    assert previews == []
    # a size too small for the document's metadata: only the server knows; its reason is shown
    r = api.post("/chunks/preview", json={"doc_id": doc_id, "parser": "token", "chunk_size": 8, "chunk_overlap": 0})
    assert 400 <= r.status_code < 500, r.text
    b.locator(".cfg-size").fill("8")
    b.locator(".cfg-overlap").fill("0")
    with page.expect_response(lambda resp: resp.url.endswith("/chunks/preview")):
        b.locator(".cfg-apply").click()
    expect(b.locator(".cfg-error")).to_be_visible()
    expect(b.locator(".cfg-error")).to_contain_text(r.json()["error"])
    expect(b.locator(".cfg-size")).not_to_have_attribute("aria-invalid", "true")
    expect(b.locator(".cfg-overlap")).not_to_have_attribute("aria-invalid", "true")
    expect(a.locator(".cfg-error")).to_be_hidden()
    expect(page.locator("#global-alert")).to_be_hidden()
    # a good configuration again clears the error
    b.locator(".cfg-size").fill(str(config["chunk_size"]))
    b.locator(".cfg-overlap").fill(str(config["chunk_overlap"]))
    b.locator(".cfg-apply").click()
    expect(b.locator(".cfg-error")).to_be_hidden()
    expect(b.locator(".chunk-item")).to_have_count(n)


# -- 6. keyboard -----------------------------------------------------------------------------------
def test_tabs_with_the_keyboard(server, open_page):
    page = open_page(server)
    tabs = ["search", "ask", "library", "chunks"]

    def selected(name: str) -> None:
        for tab in tabs:
            on = tab == name
            expect(page.locator(f"#tab-{tab}")).to_have_attribute("aria-selected", str(on).lower())
            expect(page.locator(f"#tab-{tab}")).to_have_attribute("tabindex", "0" if on else "-1")
            if on:
                expect(page.locator(f"#panel-{tab}")).to_be_visible()
            else:
                expect(page.locator(f"#panel-{tab}")).to_be_hidden()
        expect(page.locator(f"#tab-{name}")).to_be_focused()
        assert page.url.endswith(f"#{name}")

    page.focus("#tab-search")
    for key, name in [("ArrowRight", "ask"), ("ArrowRight", "library"), ("ArrowRight", "chunks"),
                      ("ArrowRight", "search"), ("ArrowLeft", "chunks"), ("Home", "search"), ("End", "chunks"),
                      ("ArrowLeft", "library")]:
        page.keyboard.press(key)
        selected(name)
    # Tab leaves the tab list for the panel's first control (only the selected tab is a tab stop)
    page.keyboard.press("Tab")
    expect(page.locator("#upload-input")).to_be_focused()


# -- 7. the Chinese interface ----------------------------------------------------------------------
def test_chinese_interface(server, api, open_page):
    page = open_page(server, locale="zh-CN")
    assert page.evaluate("document.documentElement.lang").startswith("zh")
    expect(page.locator("#tab-search")).to_have_text("检索")
    expect(page.locator("#tab-chunks")).to_have_text("分块")
    expect(page.locator("#search-button")).to_have_text("检索")
    expect(page.locator("#lang-toggle")).to_have_text("English")
    stats = api.get("/stats").json()
    expect(page.locator("#stats")).to_have_text(re.compile(rf"^{stats['documents']} 个文档"))

    search(page, "孙悟空", 3)
    want = api_query(api, "孙悟空", 3)
    expect(page.locator("#search-meta")).to_contain_text("3 条结果")
    page.locator("#search-results .result").first.get_by_role("button", name="在文档中显示").click()
    check_viewer(page, api, want[0], "#search-viewer-slot")
    shot(page, "serve-zh.png")

    # a bad number is told in Chinese, before any request
    queries: list = []
    page.on("request", lambda req: queries.append(req.url) if req.url.endswith(("/query", "/chunks/preview")) else None)
    page.fill("#search-k", "0")
    page.click("#search-button")
    expect(page.locator("#search-error")).to_have_text("k必须在 1 到 100 之间。")
    page.fill("#search-k", "3")
    doc_id = doc_id_of(api, "zh/西游记.txt")
    page.click("#tab-chunks")
    open_in_inspector(page, doc_id, len(doc_chunks(api, doc_id)["chunks"]))
    b = page.locator("#compare-b")
    b.locator(".cfg-size").fill("20")  # the overlap (the index's) left as it was: above the new size
    b.locator(".cfg-apply").click()
    overlap = b.locator(".cfg-overlap").input_value()
    assert int(overlap) >= 20
    expect(b.locator(".cfg-error")).to_have_text("重叠必须小于分块大小（20）。")
    assert queries == []
    page.click("#tab-search")
    search(page, "孙悟空", 3)  # a good k again: the message goes
    expect(page.locator("#search-error")).to_be_hidden()
    expect(page.locator("#search-warning")).to_be_hidden()
    # by meaning alone, a Chinese query with the English-only model: the page says the scores are noise
    page.select_option("#search-mode", "dense")
    search(page, "孙悟空", 3)
    expect(page.locator("#search-warning")).to_contain_text("嵌入模型只能理解英文")
    page.select_option("#search-mode", "hybrid")
    search(page, "孙悟空", 3)
    expect(page.locator("#search-warning")).to_be_hidden()

    # the toggle switches to English, what is shown included
    page.click("#lang-toggle")
    assert page.evaluate("document.documentElement.lang") == "en"
    expect(page.locator("#tab-search")).to_have_text("Search")
    expect(page.locator("#search-meta")).to_contain_text("3 results")
    expect(page.locator("#search-results .show-doc").first).to_have_text("Show in document")
