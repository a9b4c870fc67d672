"""The `ragloom` command, run in-process with click's runner on real files."""

import json
import os
import shutil

import pytest
from click.testing import CliRunner

from ragloom.cli import cli

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "data")


@pytest.fixture()
def corpus(tmp_path):
    dst = tmp_path / "corpus"
    shutil.copytree(EXAMPLES, dst)
    (dst / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (dst / "empty.txt").write_text("   \n")
    return dst


def _index(runner, corpus, index_dir, *extra):
    res = runner.invoke(cli, ["index", str(corpus), "--index-dir", str(index_dir), "--json", *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_index_then_query_and_incremental_rerun(tmp_path, corpus):
    runner = CliRunner()
    index_dir = tmp_path / "idx"
    s = _index(runner, corpus, index_dir)
    assert s["files_read"] == 4
    assert {os.path.basename(x["path"]) for x in s["skipped"]} == {"broken.pdf", "empty.txt"}
    assert all(x["reason"] for x in s["skipped"])
    assert s["documents"]["added"] == 4 and s["nodes_embedded"] > 0 and s["tokens_embedded"] > 0
    assert s["nodes_total"] == s["nodes_embedded"]

    res = runner.invoke(cli, ["query", "How hot should the water be for green tea?", "-k", "2",
                              "--index-dir", str(index_dir), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert os.path.basename(out["results"][0]["file_path"]) == "brewing_green_tea.md"
    r0 = out["results"][0]
    assert r0["rank"] == 1 and r0["score"] is not None and r0["text"]

    # unchanged folder: nothing is embedded again
    s2 = _index(runner, corpus, index_dir)
    assert s2["documents"]["unchanged"] == 4 and s2["nodes_embedded"] == 0
    assert s2["nodes_total"] == s["nodes_total"]

    # one edited file is replaced, one deleted file is removed
    (corpus / "fixing_a_flat_tire.md").write_text("# Chain care\n\nClean and oil the bicycle chain monthly.\n")
    os.remove(corpus / "大熊猫.md")
    s3 = _index(runner, corpus, index_dir)
    assert s3["documents"]["updated"] == 1 and s3["documents"]["deleted"] == 1
    assert s3["documents"]["unchanged"] == 2
    res = runner.invoke(cli, ["query", "bicycle chain oil", "-k", "20", "--index-dir", str(index_dir), "--json"])
    files = [os.path.basename(r["file_path"]) for r in json.loads(res.stdout)["results"]]
    assert "大熊猫.md" not in files
    texts = [r["text"] for r in json.loads(res.stdout)["results"] if r["file_path"].endswith("tire.md")]
    assert texts and all("puncture" not in t for t in texts)


def test_human_readable_output(tmp_path, corpus):
    runner = CliRunner()
    index_dir = tmp_path / "idx"
    res = runner.invoke(cli, ["index", str(corpus), "--index-dir", str(index_dir), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "files read" in res.output and "broken.pdf" in res.output
    res = runner.invoke(cli, ["query", "大熊猫每天吃多少竹子", "-k", "1", "--index-dir", str(index_dir)])
    assert res.exit_code == 0, res.output
    assert "[1] score" in res.output and "大熊猫.md" in res.output


def test_query_without_index_is_a_clear_error(tmp_path):
    res = CliRunner().invoke(cli, ["query", "anything", "--index-dir", str(tmp_path / "none")])
    assert res.exit_code != 0
    assert "ragloom index" in res.output


def test_bad_chunk_arguments(tmp_path, corpus):
    runner = CliRunner()
    res = runner.invoke(cli, ["index", str(corpus), "--index-dir", str(tmp_path / "i"),
                              "--chunk-size", "100", "--chunk-overlap", "100"])
    assert res.exit_code != 0 and "chunk-overlap" in res.output
    res = runner.invoke(cli, ["index", str(corpus), "--index-dir", str(tmp_path / "i"), "--chunk-size", "5000"])
    assert res.exit_code != 0 and "254" in res.output


def test_help_explains_commands():
    res = CliRunner().invoke(cli, ["--help"])
    assert res.exit_code == 0
    assert "index" in res.output and "query" in res.output and "offline" in res.output.lower()
