"""The library entry points, SIGKILLed inside and after a commit, then re-run: the store equals a clean build.

Real processes run ``VectorStoreIndex.from_documents`` / ``refresh_ref_docs`` and
``IngestionPipeline.run_batches`` over a persisted SQLite index with the bundled model; a kill point is
injected through the engine's commit hook (``ragloom.ingestion.engine.set_commit_hook``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent(
    """
    import json, os, signal, sys
    from ragloom import Document, StorageContext, VectorStoreIndex, load_index_from_storage
    from ragloom.ingestion import DocstoreStrategy, IngestionPipeline
    from ragloom.ingestion.engine import set_commit_hook
    from ragloom.node_parser import SentenceSplitter

    entry, persist, kill = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    texts = json.loads(sys.argv[4])
    seen = {"before_commit": 0, "after_commit": 0}

    def hook(event):
        seen[event] += 1
        if kill.get(event) == seen[event]:
            os.kill(os.getpid(), signal.SIGKILL)

    set_commit_hook(hook)
    docs = [Document(id_=k, text=v) for k, v in sorted(texts.items())]
    splitter = SentenceSplitter(chunk_size=32, chunk_overlap=4)
    if entry == "index":
        if os.path.exists(os.path.join(persist, "ragloom.sqlite")):
            sc = StorageContext.from_defaults(persist_dir=persist)
            index = load_index_from_storage(sc, transformations=[splitter])
        else:
            sc = StorageContext.from_defaults(persist_dir=persist, create_if_missing=True)
            index = VectorStoreIndex(storage_context=sc, transformations=[splitter])
        for doc in docs:  # one transaction each
            index.refresh_ref_docs([doc])
    else:
        from ragloom.settings import Settings
        sc = StorageContext.from_defaults(persist_dir=persist, create_if_missing=True)
        p = IngestionPipeline(transformations=[splitter, Settings.embed_model], docstore=sc.docstore,
                              vector_store=sc.vector_store, docstore_strategy=DocstoreStrategy.UPSERTS_AND_DELETE)
        p.run_batches([[d] for d in docs])
    """
)

TEXTS = {
    f"doc{i}": " ".join(f"Sentence {j} of document {i} talks about topic {i * j % 7}." for j in range(12))
    for i in range(4)
}


def _run(tmp_path: Path, entry: str, persist: Path, kill: dict) -> int:
    script = tmp_path / "ingest.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.run([sys.executable, str(script), entry, str(persist), json.dumps(kill), json.dumps(TEXTS)],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode in (0, -signal.SIGKILL), proc.stderr[-3000:]
    return proc.returncode


def _state(persist: Path) -> dict:
    from ragloom.storage.sqlite import SQLiteDatabase

    db = SQLiteDatabase(persist / "ragloom.sqlite", create=False)
    try:
        ids = sorted(r[0] for r in db.execute("SELECT node_id FROM vs_default_nodes"))
        refs = sorted({r[0] for r in db.execute("SELECT ref_doc_id FROM vs_default_nodes")})
        hashes = dict(db.execute(
            "SELECT doc_id, doc_hash FROM docstore_meta WHERE doc_hash IS NOT NULL AND ref_doc_id IS NULL"
        ))
        return {"ids": ids, "refs": refs, "hashes": hashes}
    finally:
        db.close()


@pytest.mark.parametrize("entry", ["index", "pipeline"])
def test_library_run_killed_in_and_after_commit_equals_clean_build(tmp_path, entry):
    clean = tmp_path / "clean"
    assert _run(tmp_path, entry, clean, {}) == 0
    want = _state(clean)
    assert len(want["refs"]) == len(TEXTS) and want["ids"]

    crashed = tmp_path / "crashed"
    assert _run(tmp_path, entry, crashed, {"before_commit": 2}) == -signal.SIGKILL
    partial = _state(crashed)
    # the killed transaction left nothing: what is there is whole documents of the clean build
    assert set(partial["ids"]) <= set(want["ids"]) and set(partial["hashes"]) < set(want["hashes"])
    assert _run(tmp_path, entry, crashed, {"after_commit": 1}) in (0, -signal.SIGKILL)
    assert _run(tmp_path, entry, crashed, {}) == 0
    assert _state(crashed) == want
