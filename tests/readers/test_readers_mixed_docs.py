"""Reading the real-world fixture folder ../shared/data/mixed_docs/example-docs ends with a
per-file report and no exception.

The full folder (35 MB, incl. a 619-page PDF) takes ~23 s on one core, so the test suite reads
everything except the two largest PDFs (~5 s); ``bench_readers_mixed_docs.py`` in this folder
runs the full folder and prints timings.
"""

from __future__ import annotations

from pathlib import Path

from ragloom.readers import SimpleDirectoryReader

BIG = ["pdf/DA-619p.pdf", "pdf/pdf2image-memory-error-test-400p.pdf"]


def test_mixed_docs_folder_reads_with_report(shared_data: str) -> None:
    root = Path(shared_data, "mixed_docs", "example-docs")
    r = SimpleDirectoryReader(root, recursive=True, exclude=BIG)
    listed = r.list_resources()
    docs = r.load_data()
    report = r.report
    # every listed file is accounted for exactly once
    accounted = [x.path for x in report.read] + [x.path for x in report.skipped]
    assert sorted(accounted) == sorted(listed)
    assert len(listed) > 200
    assert report.num_documents == len(docs)
    reasons = report.skipped_reasons()
    p = lambda rel: (root / rel).as_posix()  # noqa: E731
    assert reasons[p("pdf/password.pdf")].startswith("encrypted")
    assert reasons[p("pdf/loremipsum-flat.pdf")] == "no text layer (scanned PDF?)"
    assert reasons[p("empty.txt")] == "empty"
    assert reasons[p("fake-text-all-whitespace.txt")] == "empty"
    assert reasons[p("CantinaBand3.wav")].startswith("audio: no text to read")
    assert reasons[p("img/example.jpg")].startswith("image: no text to read (ragloom does no OCR")
    read = {x.path: x for x in report.read}
    assert read[p("handbook-872p.docx")].num_chars > 500_000
    assert read[p("book-war-and-peace-1225p.txt")].num_documents == 1
    assert read[p("pdf/multi-column.pdf")].num_documents == 13
    # ids unique and stable
    ids = [d.id_ for d in docs]
    assert len(ids) == len(set(ids))
    assert all("\ufffd" not in d.text for d in docs if d.metadata.get("file_name", "").endswith(".html"))
