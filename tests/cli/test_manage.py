"""`ragloom list`, `ragloom remove`, `ragloom import-llamaindex` and remote `--embed-model` specs, run
in-process with click's runner on real indexes (bundled model, SQLite store) and, for the remote
providers, a real embedding server on 127.0.0.1 (tests/embeddings/fake_server.py)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragloom.cli import cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "embeddings"))
from fake_server import FakeEmbeddingServer  # noqa: E402  (tests/embeddings/fake_server.py)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "data"
LLAMAINDEX_STORAGE = ROOT / "tests" / "data" / "llamaindex_storage"


def run(*args: str, ok: bool = True):
    res = CliRunner().invoke(cli, [str(a) for a in args])
    if ok:
        assert res.exit_code == 0, res.output
    return res


def run_json(*args: str):
    return json.loads(run(*args, "--json").stdout)


@pytest.fixture()
def corpus(tmp_path):
    dst = tmp_path / "docs"
    shutil.copytree(EXAMPLES, dst)
    return dst


@pytest.fixture()
def no_env(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL", "DASHSCOPE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


# -- ragloom list ---------------------------------------------------------------------------------
def test_list_finds_indexes_with_counts_model_and_size(tmp_path, corpus):
    run("index", corpus, "--index-dir", tmp_path / "work" / "idx", "--json")
    run("index", corpus / "大熊猫.md", "--index-dir", tmp_path / "work" / "a" / "b" / "deep", "--json")
    (tmp_path / "work" / ".hidden" / "x").mkdir(parents=True)
    shutil.copytree(tmp_path / "work" / "idx", tmp_path / "work" / ".hidden" / "x" / "idx")

    out = run_json("list", tmp_path / "work")
    got = {Path(i["index_dir"]).name: i for i in out["indexes"]}
    assert set(got) == {"idx", "deep"}  # hidden folders are not searched
    idx = got["idx"]
    assert idx["documents"] == 4 and idx["nodes"] > 4 and idx["error"] is None
    assert idx["embed_model"] == "sentence-transformers/all-MiniLM-L6-v2" and idx["dimension"] == 384
    assert idx["vector_store"] == "sqlite" and idx["bytes"] > 10_000 and idx["updated_at"].endswith("Z")
    assert idx["types"] == ["IndexDict"] and len(idx["indexes"]) == 1
    assert got["deep"]["documents"] == 1

    shallow = run_json("list", tmp_path / "work", "--max-depth", "1")
    assert [Path(i["index_dir"]).name for i in shallow["indexes"]] == ["idx"]

    text = run("list", tmp_path / "work").output
    assert "documents 4" in text and "all-MiniLM-L6-v2" in text and "384 dims" in text


def test_list_reports_a_broken_index_and_an_empty_tree(tmp_path):
    broken = tmp_path / "t" / "broken"
    broken.mkdir(parents=True)
    (broken / "ragloom.sqlite").write_bytes(b"this is not a database" * 100)
    out = run_json("list", tmp_path / "t")
    assert out["indexes"][0]["error"] and out["indexes"][0]["documents"] is None
    assert "unreadable" in run("list", tmp_path / "t").output
    (tmp_path / "empty").mkdir()
    assert "No ragloom index under" in run("list", tmp_path / "empty").output


# -- ragloom remove -------------------------------------------------------------------------------
def test_remove_a_file_then_a_folder(tmp_path, corpus):
    idx = tmp_path / "idx"
    run("index", corpus, "--index-dir", idx, "--json")
    before = run_json("list", tmp_path)["indexes"][0]

    dry = run_json("remove", corpus / "大熊猫.md", "--index-dir", idx, "--dry-run")
    assert dry["dry_run"] and dry["documents_removed"] == 1
    assert run_json("list", tmp_path)["indexes"][0]["nodes"] == before["nodes"]

    out = run_json("remove", corpus / "大熊猫.md", tmp_path / "not-indexed.txt", "--index-dir", idx)
    assert out["documents_removed"] == 1 and out["nodes_removed"] >= 1
    assert out["removed"][0]["id"].endswith("大熊猫.md") and out["not_found"] == [str(tmp_path / "not-indexed.txt")]
    assert out["documents_left"] == 3 and out["nodes_left"] == before["nodes"] - out["nodes_removed"]
    hits = run_json("query", "大熊猫每天吃多少竹子", "--index-dir", idx, "-k", "20")["results"]
    assert hits and all(not r["file_path"].endswith("大熊猫.md") for r in hits)

    # the file was not touched; indexing the folder again brings it back
    assert (corpus / "大熊猫.md").is_file()
    again = run_json("index", corpus, "--index-dir", idx)
    assert again["documents"]["added"] == 1 and again["documents"]["unchanged"] == 3

    # a folder: every document below it; the path need not exist any more
    shutil.rmtree(corpus)
    out = run_json("remove", corpus, "--index-dir", idx)
    assert out["documents_removed"] == 4 and out["documents_left"] == 0 and out["nodes_left"] == 0
    text = run("remove", corpus, "--index-dir", idx).output
    assert "removed 0 documents" in text and "no document in the index under" in text


def test_remove_dry_run_reports_what_the_real_run_leaves(tmp_path, corpus):
    """Before: the dry run reported the counts before removal as the counts left."""
    idx = tmp_path / "idx"
    run("index", corpus, "--index-dir", idx, "--chunk-size", "64", "--json")
    targets = (corpus / "大熊猫.md", corpus / "brewing_green_tea.md")
    dry = run_json("remove", *targets, "--index-dir", idx, "--dry-run")
    text = run("remove", *targets, "--index-dir", idx, "--dry-run").output
    assert dry["documents_removed"] == 2 and dry["nodes_removed"] > 2
    assert (f"would remove 2 documents, {dry['nodes_removed']} nodes; {dry['documents_left']} documents and "
            f"{dry['nodes_left']} nodes would be left") in text
    real = run_json("remove", *targets, "--index-dir", idx)
    keys = ("documents_removed", "nodes_removed", "documents_left", "nodes_left", "removed", "not_found")
    assert {k: dry[k] for k in keys} == {k: real[k] for k in keys}
    listed = run_json("list", tmp_path)["indexes"][0]
    assert (listed["documents"], listed["nodes"]) == (real["documents_left"], real["nodes_left"])


def test_remove_errors(tmp_path, corpus):
    res = run("remove", corpus, "--index-dir", tmp_path / "none", ok=False)
    assert res.exit_code != 0 and "ragloom index" in res.output
    res = run("remove", "--index-dir", tmp_path / "none", ok=False)
    assert res.exit_code == 2  # PATH is required


# -- ragloom import-llamaindex ---------------------------------------------------------------------
def test_import_llamaindex_then_query(tmp_path):
    idx = tmp_path / "imported"
    out = run_json("import-llamaindex", LLAMAINDEX_STORAGE, "--index-dir", idx, "--embed-model", "fp32")
    assert out["nodes_read"] == out["nodes_written"] == 14 and out["documents"]["added"] == 4
    assert out["verified"]["min_cosine"] > 0.999 and out["index_dir"] == str(idx)
    hit = run_json("query", "How hot should the water be for green tea?", "--index-dir", idx, "-k", "1",
                   "--mode", "dense")["results"][0]
    expected = json.loads((LLAMAINDEX_STORAGE / "expected.json").read_text())["top_node"]
    assert hit["node_id"] == expected["How hot should the water be for green tea?"][0]
    assert hit["file_path"].endswith("brewing_green_tea.md")
    again = run("import-llamaindex", LLAMAINDEX_STORAGE, "--index-dir", idx).output
    assert "4 unchanged" in again and "0 written" in again
    listed = run_json("list", tmp_path)["indexes"][0]
    assert listed["documents"] == 4 and listed["nodes"] == 14 and listed["quantize"] is None


def test_import_llamaindex_errors(tmp_path):
    res = run("import-llamaindex", tmp_path, "--index-dir", tmp_path / "idx", ok=False)
    assert res.exit_code == 1 and "missing docstore.json, index_store.json" in res.output
    assert not (tmp_path / "idx").exists()  # nothing created before the folder was read
    res = run("import-llamaindex", LLAMAINDEX_STORAGE, "--index-dir", tmp_path / "idx", "--embed-model",
              "fast", "--no-verify", ok=False)
    assert res.exit_code == 0  # int8 of the same model: allowed when the user says so
    res = run("import-llamaindex", LLAMAINDEX_STORAGE, "--index-dir", tmp_path / "idx", "--embed-model", "fp32",
              ok=False)
    assert res.exit_code == 1 and "int8" in res.output  # the existing index records another variant


# -- remote embedding providers from the command line -------------------------------------------
@pytest.mark.requires_extra("remote")
def test_index_with_an_openai_compatible_server_then_query(tmp_path, corpus, no_env):
    no_env.setenv("OPENAI_API_KEY", "sk-typed-url")
    idx = tmp_path / "idx"
    with FakeEmbeddingServer() as srv:
        spec = f"openai:my-embedder@{srv.url}/v1"
        out = run_json("index", corpus, "--index-dir", idx, "--embed-model", spec)
        assert out["documents"]["added"] == 4 and out["embed_model"] == "my-embedder"
        reqs = srv.requests_to("openai")
        assert reqs and all(r.path == "/v1/embeddings" and r.body["model"] == "my-embedder" for r in reqs)
        # the user typed this URL: the key from the environment goes with it
        assert all(r.headers["authorization"] == "Bearer sk-typed-url" for r in reqs)
        srv.reset()

        # the index records the model: query and re-index rebuild it without --embed-model
        res = run_json("query", "green tea water", "--index-dir", idx, "--mode", "dense", "-k", "2")
        assert len(res["results"]) == 2
        (q,) = srv.requests_to("openai")
        assert q.body["input"] == ["green tea water"] and q.body["model"] == "my-embedder"
        # ... but a URL read from the index gets no key from the environment
        assert "authorization" not in q.headers
        again = run_json("index", corpus, "--index-dir", idx)
        assert again["documents"]["unchanged"] == 4 and again["nodes_embedded"] == 0

    listed = run_json("list", tmp_path)["indexes"][0]
    assert listed["embed_model"] == "my-embedder" and listed["embed_class"] == "OpenAIEmbedding"

    res = run("index", corpus, "--index-dir", idx, "--embed-model", "fp32", ok=False)
    assert res.exit_code == 1 and "my-embedder" in res.output


@pytest.mark.requires_extra("remote")
def test_index_with_ollama_embeddings(tmp_path, corpus):
    with FakeEmbeddingServer(ollama_context_length=512) as srv:
        out = run_json("index", corpus, "--index-dir", tmp_path / "idx", "--embed-model",
                       f"ollama:nomic-embed-text:latest@{srv.url}")
        assert out["documents"]["added"] == 4
        reqs = srv.requests_to("ollama")
        assert reqs and all(r.path == "/api/embed" and r.body["model"] == "nomic-embed-text:latest" for r in reqs)
        assert srv.requests_to("ollama_show")  # the context length was read from the server


@pytest.mark.requires_extra("remote")
def test_bad_remote_spec_is_a_clear_cli_error(tmp_path, corpus, no_env):
    res = run("index", corpus, "--index-dir", tmp_path / "idx", "--embed-model", "openai:", ok=False)
    assert res.exit_code != 0 and "names no model" in res.output
    res = run("index", corpus, "--index-dir", tmp_path / "idx", "--embed-model", "openai:text-embedding-3-small",
              ok=False)
    assert res.exit_code != 0 and "OPENAI_API_KEY" in res.output
    assert not os.path.exists(tmp_path / "idx" / "ragloom.sqlite")


@pytest.mark.slow
@pytest.mark.requires_extra("remote")
def test_unreachable_embedding_server_is_one_clear_line(tmp_path, corpus):
    """The transport retries a refused connection (about 15 s of back-off) before giving up."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = run("index", corpus, "--index-dir", tmp_path / "idx", "--no-progress", "--embed-model",
              f"ollama:nomic-embed-text@http://127.0.0.1:{port}", ok=False)
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "Ollama" in res.output and "nomic-embed-text" in res.output and "is the server running" in res.output


# -- ragloom list numbers (regressions: docstore-only indexes listed "nodes 0"; the dimension was the
# model name's, not the stored vectors') ---------------------------------------------------------
def test_list_counts_the_nodes_of_docstore_backed_indexes(tmp_path):
    from ragloom import Document, SimpleKeywordTableIndex, StorageContext, SummaryIndex
    from ragloom.node_parser import SentenceSplitter

    texts = {f"d{i}": " ".join(f"Sentence {j} of document {i} talks about topic {i * 10 + j}." for j in range(12))
             for i in range(3)}
    docs = [Document(text=t, id_=k) for k, t in texts.items()]
    splitter = SentenceSplitter(chunk_size=32, chunk_overlap=0)
    only_summary = tmp_path / "w" / "summary"
    sc = StorageContext.from_defaults(persist_dir=only_summary, create_if_missing=True)
    summary = SummaryIndex.from_documents(docs, storage_context=sc, transformations=[splitter])
    sc.persist()
    both = tmp_path / "w" / "both"
    sc = StorageContext.from_defaults(persist_dir=both, create_if_missing=True)
    SummaryIndex.from_documents(docs[:1], storage_context=sc, transformations=[splitter])
    keywords = SimpleKeywordTableIndex.from_documents(docs, storage_context=sc, transformations=[splitter])
    sc.persist()
    n = len(summary.index_struct.nodes)
    assert n > 6 and len(keywords.index_struct.node_ids) == n

    got = {Path(i["index_dir"]).name: i for i in run_json("list", tmp_path / "w")["indexes"]}
    assert got["summary"]["nodes"] == n and got["summary"]["documents"] == 3
    assert got["summary"]["types"] == ["IndexList"] and got["summary"]["dimension"] is None
    assert got["both"]["nodes"] == n and len(got["both"]["indexes"]) == 2
    assert f"nodes {n} " in run("list", only_summary).output


@pytest.mark.requires_extra("remote")
def test_list_shows_the_dimension_of_the_stored_vectors(tmp_path, corpus, no_env):
    no_env.setenv("OPENAI_API_KEY", "sk-test")
    with FakeEmbeddingServer(dim=64) as srv:  # serves 64-d vectors under a 1536-d model's name
        run_json("index", corpus, "--index-dir", tmp_path / "idx", "--embed-model",
                 f"openai:text-embedding-3-small@{srv.url}/v1")
    (listed,) = run_json("list", tmp_path)["indexes"]
    assert listed["embed_model"] == "text-embedding-3-small" and listed["dimension"] == 64
    assert "64 dims" in run("list", tmp_path).output
