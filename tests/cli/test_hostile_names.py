"""File names that are not UTF-8 (any bytes but ``/`` and NUL are legal on POSIX): read, stored as
valid text, shown escaped, and tracked across runs like any other file."""

from __future__ import annotations

import json
import os

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
