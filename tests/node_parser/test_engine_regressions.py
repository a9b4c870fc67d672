"""Regressions of the span engine found on real corpora.

Each case runs in a subprocess with a time limit, so a hang fails the test instead of
stalling the suite.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
PUBMED = DATA / "chunking_eval" / "corpora" / "pubmed.md"

_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from ragloom.node_parser import SentenceSplitter
    from ragloom.tokenizers import get_tokenizer
    text = open(sys.argv[1], encoding="utf-8").read()[int(sys.argv[2]):int(sys.argv[3])]
    tok = get_tokenizer("cl100k_base")
    sp = SentenceSplitter(chunk_size=200, chunk_overlap=0, tokenizer="cl100k_base")
    nodes = sp.split_text(text)
    print(json.dumps({"chunks": len(nodes), "max_tokens": max(tok.count(t) for t in nodes),
                      "chars": sum(len(t) for t in nodes), "nonspace": len("".join(text.split()))}))
    """
)


@pytest.mark.skipif(not PUBMED.exists(), reason="shared/data/chunking_eval is not beside the repository")
@pytest.mark.parametrize("start,end", [(78000, 82000), (0, None)])
def test_reference_list_without_sentence_ends_does_not_hang(start, end):
    # pubmed.md's reference list (long lines, no sentence terminators) once sent the boundary
    # finder into an endless window-widening loop: a cached boundary query made for another
    # parent segment was reused for this one.  The slice 78000:82000 hung; the whole file must
    # split in well under a second of work.
    stop = str(end if end is not None else 10**9)
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(PUBMED), str(start), stop],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads(proc.stdout)
    assert res["chunks"] > 0 and res["max_tokens"] <= 200
    # no text lost: every non-space character is in some chunk (no overlap here)
    assert res["chars"] >= res["nonspace"]


def test_heavy_metadata_warns_once_per_set_of_keys_in_a_direct_call(caplog):
    """Sixty documents sharing a heavy ``title`` logged sixty near-identical warnings from one
    ``get_nodes_from_documents`` call; now each set of keys is named once (with its first document),
    and another set of keys still gets its own warning."""
    import logging

    from ragloom.node_parser import SentenceSplitter
    from ragloom.schema import Document

    docs = [Document(id_=f"d{i}", text="Tea is brewed. " * 30, metadata={"title": "a long title word " * 8})
            for i in range(60)]
    docs.append(Document(id_="other", text="Tea is brewed. " * 30, metadata={"summary": "a long summary " * 10}))
    with caplog.at_level(logging.WARNING, logger="ragloom"):
        nodes = SentenceSplitter(chunk_size=64, chunk_overlap=8, tokenizer="cl100k_base").get_nodes_from_documents(docs)
    warned = [r.getMessage() for r in caplog.records if "metadata keys" in r.getMessage()]
    assert len(warned) == 2, warned
    assert "'d0'" in warned[0] and "['title']" in warned[0] and "'other'" in warned[1]
    assert {n.ref_doc_id for n in nodes} == {d.id_ for d in docs}
