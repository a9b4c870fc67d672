"""The CLI on folders where Python saved other index kinds: a shared StorageContext (Summary +
Vector + Keyword) uses its one VectorStoreIndex; a folder without one gets a one-line error, and
nothing is changed."""

from __future__ import annotations

import json

from click.testing import CliRunner

from ragloom import Document, SimpleKeywordTableIndex, StorageContext, SummaryIndex, VectorStoreIndex
from ragloom.cli import cli
from ragloom.node_parser import SentenceSplitter

DOCS = [
    Document(text="Green tea is brewed with water at about eighty degrees.", id_="tea"),
    Document(text="A flat bicycle tyre is fixed by patching the inner tube.", id_="bike"),
]


def _run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_a_shared_folder_is_queried_through_its_vector_index(tmp_path):
    sc = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    nodes = SentenceSplitter(chunk_size=64, chunk_overlap=0).get_nodes_from_documents(DOCS)
    SummaryIndex(nodes, storage_context=sc)
    VectorStoreIndex(nodes, storage_context=sc)
    SimpleKeywordTableIndex(nodes, storage_context=sc)
    sc.persist()
    res = _run("query", "how to brew tea", "--index-dir", tmp_path, "--json", "-k", "1", "--mode", "dense")
    assert res.exit_code == 0, res.output
    hits = json.loads(res.output)["results"]
    assert "Green tea" in hits[0]["text"]


def test_a_folder_without_a_vector_index_gets_a_one_line_error_and_is_left_alone(tmp_path):
    sc = StorageContext.from_defaults(persist_dir=tmp_path, create_if_missing=True)
    SummaryIndex.from_documents(DOCS, storage_context=sc)
    sc.persist()
    for args in (["query", "tea"], ["remove", tmp_path / "x.txt"], ["index", tmp_path / "x.txt"]):
        (tmp_path / "x.txt").write_text("some text", encoding="utf-8")
        res = _run(*args, "--index-dir", tmp_path)
        assert res.exit_code != 0
        assert "holds a SummaryIndex and no VectorStoreIndex" in res.output, res.output
        assert "Traceback" not in res.output
    reopened = StorageContext.from_defaults(persist_dir=tmp_path)
    assert [type(s).__name__ for s in reopened.index_store.index_structs()] == ["IndexList"]
