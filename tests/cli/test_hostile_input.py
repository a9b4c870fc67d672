"""Hostile input through `ragloom index`: file names that are not UTF-8 (any bytes but ``/`` and NUL
are legal on POSIX), FIFOs, symlink loops, sparse and oversized files, junk chunks (base64, hex), a
chunk size too small for the metadata and an empty folder: reported, never a crash."""

from __future__ import annotations

import json
import os
import re

import pytest
from click.testing import CliRunner

from ragloom.cli import cli
from ragloom.readers import SimpleDirectoryReader
from ragloom.readers.base import escaped_path, fs_path, path_text


def _folder(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    raw = os.fsencode(root)
    names = [b"caf\xe9.txt", b"\xff\xfe-bytes.md", "日本語.txt".encode()]
    for i, name in enumerate(names):
        with open(raw + b"/" + name, "wb") as f:
            f.write(f"Document {i} about harbour cranes and tides. ".encode() * 30)
    return root, [os.fsdecode(raw + b"/" + n) for n in names]


def test_path_text_is_lossless_valid_text_and_escapes_for_display():
    for raw in (b"/a/caf\xe9.txt", b"/\xff\x80/x", "/ü/日本".encode(), b"/plain"):
        s = os.fsdecode(raw)
        t = path_text(s)
        t.encode("utf-8")  # valid text
        assert os.fsencode(fs_path(t)) == raw
    assert path_text("/plain/é") == "/plain/é"  # UTF-8 names are unchanged (existing ids keep)
    assert escaped_path(path_text(os.fsdecode(b"/caf\xe9.txt"))) == "/caf\\xe9.txt"


def test_reader_ids_and_metadata_are_valid_text_that_map_back_to_the_file(tmp_path):
    root, files = _folder(tmp_path)
    docs = SimpleDirectoryReader(str(root)).load_data()
    assert len(docs) == 3
    for doc in docs:
        doc.id_.encode("utf-8")
        json.dumps(doc.metadata, ensure_ascii=False).encode("utf-8")
        assert os.path.isfile(fs_path(doc.metadata["file_path"]))
    assert sorted(fs_path(d.metadata["file_path"]) for d in docs) == sorted(files)


def test_index_query_rerun_and_delete_with_undecodable_names(tmp_path):
    root, files = _folder(tmp_path)
    idx = str(tmp_path / "idx")
    run = CliRunner()
    first = run.invoke(cli, ["index", str(root), "--index-dir", idx, "--json", "--no-progress"])
    assert first.exit_code == 0, first.output
    s = json.loads(first.stdout)
    assert s["documents"]["added"] == 3 and s["skipped"] == []
    again = json.loads(run.invoke(cli, ["index", str(root), "--index-dir", idx, "--json", "--no-progress"]).stdout)
    assert again["documents"]["unchanged"] == 3 and again["nodes_embedded"] == 0
    q = run.invoke(cli, ["query", "harbour cranes", "--index-dir", idx, "--top-k", "3"])
    assert q.exit_code == 0 and "caf\\xe9.txt" in q.output and "\\xff\\xfe-bytes.md" in q.output, q.output
    os.remove(files[0])
    gone = json.loads(run.invoke(cli, ["index", str(root), "--index-dir", idx, "--json", "--no-progress"]).stdout)
    assert gone["documents"]["deleted"] == 1 and gone["documents"]["in_index"] == 2


def test_special_and_oversized_files_are_reported_not_read(tmp_path):
    """A FIFO (opening it would block), a symlink loop, a sparse file over the size limit and a
    normal file: one document, every other file listed with its reason."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "ok.txt").write_text("Tides and harbour cranes. " * 20)
    os.mkfifo(root / "pipe.txt")
    os.symlink(root / "loop_b.txt", root / "loop_a.txt")
    os.symlink(root / "loop_a.txt", root / "loop_b.txt")
    with open(root / "sparse.txt", "wb") as f:  # 3 GB apparent size, no blocks written
        f.truncate(3 * 2**30)
    big = root / "big.txt"
    big.write_text("word " * 300_000)  # 1.5 MB
    res = CliRunner().invoke(cli, ["index", str(root), "--index-dir", str(tmp_path / "idx"), "--json",
                                   "--no-progress", "--max-file-size", "1"])
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    reasons = {os.path.basename(x["path"]): x["reason"] for x in s["skipped"]}
    assert s["documents"]["added"] == 1 and set(reasons) == {"pipe.txt", "loop_a.txt", "loop_b.txt", "sparse.txt",
                                                              "big.txt"}, reasons
    assert reasons["pipe.txt"] == "not a regular file"
    assert reasons["loop_a.txt"] == "a symlink loop (the link leads back to itself)"
    assert reasons["sparse.txt"].startswith("too large: 3072 MB is over the 1.0 MB limit")
    assert "--max-file-size" in reasons["big.txt"]
    with_limit_off = CliRunner().invoke(cli, ["index", str(big), "--index-dir", str(tmp_path / "idx2"), "--json",
                                              "--no-progress", "--max-file-size", "0"])
    assert json.loads(with_limit_off.stdout)["documents"]["added"] == 1


def test_a_chunk_size_too_small_fails_before_reading_and_an_empty_folder_warns(tmp_path, caplog):
    root, _ = _folder(tmp_path)
    res = CliRunner().invoke(cli, ["index", str(root), "--index-dir", str(tmp_path / "idx"), "--chunk-size", "12",
                                   "--chunk-overlap", "0", "--no-progress"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "Invalid value for '--chunk-size': 12 is not in the range x>=16" in res.output, res.output
    from ragloom.ingestion.paths import index_paths

    with pytest.raises(ValueError, match=r"chunk_size 12 \(--chunk-size\) leaves under 16 tokens .* 64 or more"):
        index_paths([root], tmp_path / "idx1", chunk_size=12, chunk_overlap=0, show_progress=False)
    empty = tmp_path / "empty"
    empty.mkdir()
    with caplog.at_level("WARNING"):
        ok = CliRunner().invoke(cli, ["index", str(empty), "--index-dir", str(tmp_path / "idx2"), "--json",
                                      "--no-progress"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["files_total"] == 0
    assert any("no files to index" in r.getMessage() for r in caplog.records)


def test_junk_chunks_are_left_out_and_listed_unless_kept(tmp_path):
    import base64

    from ragloom.ingestion.junk import junk_kind

    root = tmp_path / "docs"
    root.mkdir()
    blob = base64.b64encode(bytes(range(256)) * 30).decode()
    (root / "mail-dump.txt").write_text("Attached image follows.\n" + "\n".join(
        blob[i:i + 76] for i in range(0, len(blob), 76)))
    (root / "hexdump.txt").write_text((bytes(range(256)) * 8).hex())
    (root / "prose.txt").write_text("Harbour cranes lift containers at the tide. " * 60)
    (root / "chinese.txt").write_text("孙悟空在花果山水帘洞里称王，众猴拜他为美猴王。" * 40)
    res = CliRunner().invoke(cli, ["index", str(root), "--index-dir", str(tmp_path / "idx"), "--json",
                                   "--no-progress"])
    s = json.loads(res.stdout)
    junk = {os.path.basename(j["path"]): j["kinds"] for j in s["junk"]}
    assert set(junk) == {"mail-dump.txt", "hexdump.txt"} and "base64" in junk["mail-dump.txt"]
    assert "hex" in junk["hexdump.txt"]
    from ragloom.storage.sqlite import SQLiteDatabase

    db = SQLiteDatabase(tmp_path / "idx" / "ragloom.sqlite", create=False)
    texts = [json.loads(n)["text"] for (n,) in db.execute("SELECT node FROM vs_default_nodes")]
    db.close()
    assert texts and not any(junk_kind(t) for t in texts)
    # the short tail of the blob too (a new user found its last 153 characters indexed)
    assert not any(re.search(r"[A-Za-z0-9+/]{60}", t) for t in texts)
    assert any("Harbour" in t for t in texts) and any("孙悟空" in t for t in texts)
    kept = json.loads(CliRunner().invoke(cli, ["index", str(root), "--index-dir", str(tmp_path / "idx2"), "--json",
                                               "--no-progress", "--keep-junk"]).stdout)
    assert kept["junk"] == [] and kept["nodes_written"] > s["nodes_written"]


@pytest.mark.requires_extra("remote")
def test_unusable_remote_embed_model_specs_are_refused_in_one_line(tmp_path, monkeypatch):
    # remote providers are named on the command line since issue 14 (tests/cli/test_manage.py);
    # one that cannot work is refused before anything is read, in one line
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    root, _ = _folder(tmp_path)
    for spec, words in (("gemini:text-embedding-004", ("GeminiEmbedding", "ragloom[remote]")),
                        ("openai:text-embedding-3-small", ("OPENAI_API_KEY",)),
                        ("ollama:nomic-embed-text@localhost:11434", ("http://",))):
        res = CliRunner().invoke(cli, ["index", str(root), "--index-dir", str(tmp_path / "idx"), "--no-progress",
                                       "--embed-model", spec])
        assert res.exit_code != 0 and "Traceback" not in res.output
        assert all(w in res.output for w in words) and len(res.output.strip().splitlines()) == 1, res.output
        assert not (tmp_path / "idx").exists()
