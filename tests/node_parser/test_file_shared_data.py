"""Every code, Markdown, HTML and JSON file of shared/data parses without error.

The default run takes a deterministic sample (every Nth file); RAGLOOM_FULL_DATA=1 runs
all of them.
"""

import logging
import os
from pathlib import Path

import pytest

from ragloom.node_parser import SimpleFileNodeParser
from ragloom.readers.flat import FlatReader
from ragloom.tokenizers import get_tokenizer

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
FULL = os.environ.get("RAGLOOM_FULL_DATA") == "1"


def _files():
    if not DATA.exists():
        return []
    out = [p for p in sorted((DATA / "code").rglob("*")) if p.suffix in (".py", ".java", ".ts", ".js", ".json")]
    out += sorted((DATA / "markdown_fastapi").rglob("*.md"))
    out += [
        p
        for p in sorted((DATA / "mixed_docs" / "example-docs").rglob("*"))
        if p.suffix in (".html", ".htm", ".json", ".ndjson")
    ]
    if not FULL:
        step = 8
        out = [
            p
            for i, p in enumerate(out)
            if i % step == 0 or p.suffix in (".html", ".htm", ".ndjson") and p.stat().st_size < 200_000
        ]
    return out


@pytest.mark.skipif(not DATA.exists(), reason="shared/data not found")
def test_shared_data_parses_without_fallback(caplog):
    tok = get_tokenizer("cl100k_base")
    parser = SimpleFileNodeParser(chunk_size=512, chunk_overlap=50, tokenizer=tok)
    reader = FlatReader()
    files = _files()
    assert files
    with caplog.at_level(logging.WARNING):
        for f in files:
            docs = reader.load_data(f)
            nodes = parser.get_nodes_from_documents(docs)
            assert nodes or not docs[0].text.strip(), f
            for n in nodes:
                assert tok.count(n.get_content("embed")) <= 512, f
                if f.suffix in (".py", ".java", ".ts", ".md"):
                    assert docs[0].text[n.start_char_idx : n.end_char_idx] == n.text, f
    assert "falling back" not in caplog.text and "syntax errors" not in caplog.text, caplog.text[:2000]
