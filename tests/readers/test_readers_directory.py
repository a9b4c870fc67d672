"""SimpleDirectoryReader: arguments, listing, ids, hashes, metadata, errors, report, progress."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from ragloom.errors import ReaderError
from ragloom.readers import (
    DEFAULT_EXCLUDED_METADATA_KEYS,
    BaseReader,
    SimpleDirectoryReader,
)
from ragloom.schema import Document, MetadataMode


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    tmp_path = tmp_path.resolve()  # document ids are canonical paths
    (tmp_path / "a.txt").write_text("alpha text", encoding="utf-8")
    (tmp_path / "b.md").write_text("# beta\n\nbody", encoding="utf-8")
    (tmp_path / "c.py").write_text("print('gamma')\n", encoding="utf-8")
    (tmp_path / ".hidden.txt").write_text("secret", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.txt").write_text("delta", encoding="utf-8")
    (tmp_path / "sub" / "deep").mkdir()
    (tmp_path / "sub" / "deep" / "e.TXT").write_text("epsilon", encoding="utf-8")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config.txt").write_text("git", encoding="utf-8")
    (tmp_path / "drafts").mkdir()
    (tmp_path / "drafts" / "f.txt").write_text("draft", encoding="utf-8")
    return tmp_path


def names(reader: SimpleDirectoryReader) -> List[str]:
    root = reader.input_dir
    assert root is not None
    return [Path(p).relative_to(root).as_posix() for p in reader.list_resources()]


# -- arguments -------------------------------------------------------------------------------
def test_argument_errors(tree: Path) -> None:
    with pytest.raises(ValueError, match="input_dir and input_files"):
        SimpleDirectoryReader()
    with pytest.raises(ValueError, match="input_dir and input_files"):
        SimpleDirectoryReader(input_dir=tree, input_files=[tree / "a.txt"])
    with pytest.raises(FileNotFoundError, match="input_dir"):
        SimpleDirectoryReader(input_dir=tree / "nope")
    with pytest.raises(NotADirectoryError, match="input_dir"):
        SimpleDirectoryReader(input_dir=tree / "a.txt")
    with pytest.raises(FileNotFoundError, match="input_files"):
        SimpleDirectoryReader(input_files=[tree / "missing.txt"])
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="num_files_limit"):
            SimpleDirectoryReader(input_dir=tree, num_files_limit=bad)
    with pytest.raises(ValueError, match="errors"):
        SimpleDirectoryReader(input_dir=tree, errors="bogus")
    with pytest.raises(ValueError, match="file_extractor"):
        SimpleDirectoryReader(input_dir=tree, file_extractor={".x": object()})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="num_workers"):
        SimpleDirectoryReader(input_dir=tree).load_data(num_workers=0)


# -- listing ---------------------------------------------------------------------------------
def test_listing_sorted_non_recursive_and_hidden(tree: Path) -> None:
    assert names(SimpleDirectoryReader(tree)) == ["a.txt", "b.md", "c.py"]
    assert names(SimpleDirectoryReader(tree, exclude_hidden=False)) == [".hidden.txt", "a.txt", "b.md", "c.py"]


def test_recursive(tree: Path) -> None:
    assert names(SimpleDirectoryReader(tree, recursive=True)) == [
        "a.txt", "b.md", "c.py", "drafts/f.txt", "sub/d.txt", "sub/deep/e.TXT",
    ]
    assert ".git/config.txt" in names(SimpleDirectoryReader(tree, recursive=True, exclude_hidden=False))


def test_exclude_patterns(tree: Path) -> None:
    r = SimpleDirectoryReader(tree, recursive=True, exclude=["*.py", "drafts", "sub/deep/*"])
    assert names(r) == ["a.txt", "b.md", "sub/d.txt"]
    r = SimpleDirectoryReader(tree, recursive=True, exclude=["**/d.txt", "*.md"])
    assert names(r) == ["a.txt", "c.py", "drafts/f.txt", "sub/deep/e.TXT"]


def test_required_exts(tree: Path) -> None:
    r = SimpleDirectoryReader(tree, recursive=True, required_exts=[".txt", "md"])
    assert names(r) == ["a.txt", "b.md", "drafts/f.txt", "sub/d.txt", "sub/deep/e.TXT"]


def test_num_files_limit(tree: Path) -> None:
    r = SimpleDirectoryReader(tree, recursive=True, num_files_limit=2)
    assert names(r) == ["a.txt", "b.md"]
    assert len(r.load_data()) == 2


def test_input_files_sorted_and_deduplicated(tree: Path) -> None:
    r = SimpleDirectoryReader(input_files=[str(tree / "c.py"), tree / "a.txt", tree / "c.py"])
    assert [Path(p).name for p in r.list_resources()] == ["a.txt", "c.py"]


# -- ids, hashes, metadata -------------------------------------------------------------------------
def test_ids_are_paths_and_stable(tree: Path) -> None:
    d1 = SimpleDirectoryReader(tree, recursive=True).load_data()
    d2 = SimpleDirectoryReader(tree, recursive=True, filename_as_id=True).load_data()
    assert [d.id_ for d in d1] == [d.id_ for d in d2]
    assert [d.hash for d in d1] == [d.hash for d in d2]
    assert d1[0].id_ == (tree / "a.txt").as_posix()
    assert d1[0].metadata["file_path"] == (tree / "a.txt").as_posix()


def test_metadata_and_exclusions(tree: Path) -> None:
    [doc] = SimpleDirectoryReader(input_files=[tree / "b.md"]).load_data()
    md = doc.metadata
    assert md["file_name"] == "b.md"
    assert md["file_size"] == (tree / "b.md").stat().st_size
    assert md["file_type"] in ("text/markdown", "text/x-markdown", None)
    assert len(md["last_modified_date"]) == 10 and md["last_modified_date"][4] == "-"
    for key in DEFAULT_EXCLUDED_METADATA_KEYS + ("encoding",):
        assert key in doc.excluded_embed_metadata_keys and key in doc.excluded_llm_metadata_keys
    # the LLM sees the path and the Markdown title; the embed model only the title, so that
    # a renamed or moved file embeds the same text
    visible = f"file_path: {(tree / 'b.md').as_posix()}\ndocument_title: {md['document_title']}"
    assert doc.get_metadata_str(MetadataMode.EMBED) == f"document_title: {md['document_title']}"
    assert doc.get_metadata_str(MetadataMode.LLM) == visible


def test_touching_a_file_keeps_its_hash(tree: Path) -> None:
    f = tree / "a.txt"
    [before] = SimpleDirectoryReader(input_files=[f]).load_data()
    os.utime(f, (1_000_000_000, 1_000_000_000))  # 2001: every date changes
    [after] = SimpleDirectoryReader(input_files=[f]).load_data()
    assert before.metadata["last_modified_date"] != after.metadata["last_modified_date"]
    assert before.hash == after.hash
    f.write_text("alpha text, edited", encoding="utf-8")
    [edited] = SimpleDirectoryReader(input_files=[f]).load_data()
    assert edited.hash != before.hash and edited.id_ == before.id_


def test_file_metadata_replaces_default(tree: Path) -> None:
    r = SimpleDirectoryReader(input_files=[tree / "a.txt"], file_metadata=lambda p: {"source": Path(p).stem})
    [doc] = r.load_data()
    assert doc.metadata == {"source": "a", "encoding": "utf-8"}
    assert doc.get_metadata_str(MetadataMode.EMBED) == "source: a"


class UpperReader(BaseReader):
    """A custom reader that gives two documents without ids."""

    def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
        text = Path(file).read_text(encoding="utf-8")
        return [Document(text=text.upper(), metadata=dict(extra_info or {})), Document(text="second")]


def test_custom_file_extractor_gets_stable_ids(tree: Path) -> None:
    r = SimpleDirectoryReader(tree, file_extractor={".md": UpperReader()})
    docs = r.load_data()
    md_docs = [d for d in docs if d.metadata.get("file_name") == "b.md" or d.text == "second"]
    assert [d.id_ for d in md_docs] == [f"{(tree / 'b.md').as_posix()}_part_{i}" for i in range(2)]
    assert md_docs[0].text.startswith("# BETA")


# -- errors and report -------------------------------------------------------------------------
def test_report_and_skips(tree: Path) -> None:
    (tree / "bin.dat").write_bytes(b"\x00\x01\x02\x03" * 100)
    (tree / "empty.txt").write_bytes(b"")
    (tree / "blank.txt").write_text(" \n\t\n", encoding="utf-8")
    r = SimpleDirectoryReader(tree)
    docs = r.load_data()
    assert {Path(x.path).name for x in r.report.read} == {"a.txt", "b.md", "c.py"}
    assert r.report.skipped_reasons() == {
        (tree / "bin.dat").as_posix(): "binary file",
        (tree / "blank.txt").as_posix(): "empty",
        (tree / "empty.txt").as_posix(): "empty",
    }
    assert r.report.num_documents == len(docs) == 3
    assert r.report.num_chars == sum(len(d.text) for d in docs)
    assert "skipped 3" in r.report.summary()


def test_skips_are_logged_not_printed(
    tree: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture
) -> None:
    (tree / "bin.dat").write_bytes(b"\x00" * 64)
    with caplog.at_level(logging.WARNING, logger="ragloom.readers"):
        SimpleDirectoryReader(tree).load_data()
    assert any("bin.dat" in rec.getMessage() and "binary file" in rec.getMessage() for rec in caplog.records)
    assert capsys.readouterr().out == ""


def test_raise_on_error(tree: Path) -> None:
    (tree / "bin.dat").write_bytes(b"\x00\x01" * 100)
    with pytest.raises(ReaderError) as info:
        SimpleDirectoryReader(tree, raise_on_error=True).load_data()
    assert info.value.path == (tree / "bin.dat").as_posix()
    assert info.value.reason == "binary file"


def test_permission_denied(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tree / "locked.txt"
    f.write_text("locked", encoding="utf-8")
    if os.geteuid() != 0:
        f.chmod(0)
    else:
        # Tests run as root here, and root ignores file modes: simulate the OS refusing to open.
        import builtins

        real_open = builtins.open

        def fake_open(file: Any, *args: Any, **kwargs: Any) -> Any:
            if os.fspath(file) == os.fspath(f):
                raise PermissionError(13, "Permission denied", os.fspath(file))
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", fake_open)
    try:
        r = SimpleDirectoryReader(tree)
        docs = r.load_data()
        assert len(docs) == 3
        assert r.report.skipped_reasons() == {f.as_posix(): "permission denied"}
        with pytest.raises(ReaderError, match="permission denied"):
            SimpleDirectoryReader(tree, raise_on_error=True).load_data()
    finally:
        f.chmod(0o644)


def test_an_unreadable_sub_folder_is_reported_and_the_rest_read(tree: Path, without_dac_override) -> None:
    """A folder that cannot be listed made the check for another ragloom index inside it raise
    (``PermissionError`` from ``Path.is_file``), so ``ragloom index`` refused the whole folder."""
    import json
    import subprocess
    import sys

    locked = tree / "sub" / "locked"
    locked.mkdir()
    (locked / "x.txt").write_text("hidden away", encoding="utf-8")
    code = ("import json, sys; from ragloom.readers import SimpleDirectoryReader as R; "
            "r = R(sys.argv[1], recursive=True); docs = r.load_data(); "
            "print(json.dumps([sorted(d.text for d in docs), r.report.skipped_reasons()]))")
    locked.chmod(0)
    try:
        res = subprocess.run([*without_dac_override, sys.executable, "-c", code, str(tree)],
                             capture_output=True, text=True, timeout=120)
    finally:
        locked.chmod(0o755)
    assert res.returncode == 0, res.stderr
    texts, skipped = json.loads(res.stdout.splitlines()[-1])
    assert "delta" in texts and "alpha text" in texts and "hidden away" not in texts
    assert skipped == {locked.as_posix(): "permission denied"}


def test_broken_symlink_and_directory_inputs(tree: Path) -> None:
    link = tree / "dangling.txt"
    link.symlink_to(tree / "does-not-exist.txt")
    r = SimpleDirectoryReader(input_files=[link, tree / "sub", tree / "a.txt"])
    docs = r.load_data()
    assert [d.text for d in docs] == ["alpha text"]
    reasons = r.report.skipped_reasons()
    assert reasons[link.as_posix()] == "not found (broken link?)"
    assert reasons[(tree / "sub").as_posix()] == "not a regular file"


def test_a_file_reached_by_several_paths_is_read_once(tree: Path, caplog: pytest.LogCaptureFixture) -> None:
    # a symlink sorted before its target, and one after it: the target's own path is kept
    (tree / "0-link.txt").symlink_to(tree / "a.txt")
    (tree / "z-link.txt").symlink_to("a.txt")
    # two symlinks to a file outside the listing: the first is kept
    outside = tree / "sub" / "deep" / "e.TXT"
    (tree / "l1.txt").symlink_to(outside)
    (tree / "l2.txt").symlink_to(outside)
    r = SimpleDirectoryReader(tree, required_exts=[".txt"])
    assert [Path(p).name for p in r.list_resources()] == ["a.txt", "l1.txt"]
    docs = r.load_data()
    assert sorted(d.id_ for d in docs) == sorted([(tree / "a.txt").as_posix(), outside.as_posix()])
    assert [Path(d.metadata["file_path"]).name for d in docs] == ["a.txt", "l1.txt"]
    # named files: the same rule, and num_files_limit counts files, not paths
    r = SimpleDirectoryReader(input_files=[tree / "0-link.txt", tree / "a.txt", tree / "z-link.txt", tree / "b.md"],
                              num_files_limit=2)
    assert [Path(p).name for p in r.list_resources()] == ["a.txt", "b.md"]


def test_a_folder_holding_a_ragloom_index_is_not_entered(tree: Path) -> None:
    from ragloom.readers.directory import REASON_INDEX_FOLDER

    idx = tree / "sub" / "old-index"
    idx.mkdir()
    (idx / "ragloom.sqlite").write_bytes(b"SQLite format 3\x00" + bytes(100))
    (idx / "notes.txt").write_text("not read either", encoding="utf-8")
    empty = tree / "drafts" / "empty-db"  # an empty database file is no index: read as usual
    empty.mkdir()
    (empty / "ragloom.sqlite").write_bytes(b"")
    (empty / "g.txt").write_text("gamma", encoding="utf-8")
    r = SimpleDirectoryReader(tree, recursive=True)
    listed = names(r)
    assert "sub/d.txt" in listed and "drafts/empty-db/g.txt" in listed
    assert not [p for p in listed if p.startswith("sub/old-index")]
    assert r.listing_skipped == [type(r.listing_skipped[0])(idx.as_posix(), REASON_INDEX_FOLDER)]
    r.load_data()
    assert r.report.skipped_reasons()[idx.as_posix()] == REASON_INDEX_FOLDER


def test_symlinked_folders_and_symlink_loops_are_reported(tree: Path) -> None:
    """A symlinked folder was left out without a word, and a symlink loop was reported as a
    transient failure (so an index kept whatever it held for that path)."""
    from ragloom.readers.directory import REASON_SYMLINK_LOOP, REASON_SYMLINKED_FOLDER

    (tree / "linked").symlink_to(tree / "sub" / "deep")
    (tree / "loop-a.txt").symlink_to("loop-b.txt")
    (tree / "loop-b.txt").symlink_to("loop-a.txt")
    r = SimpleDirectoryReader(tree, recursive=True)
    r.load_data()
    reasons = r.report.skipped_reasons()
    assert reasons[(tree / "linked").as_posix()] == REASON_SYMLINKED_FOLDER
    assert reasons[(tree / "loop-a.txt").as_posix()] == REASON_SYMLINK_LOOP
    assert not [s for s in r.report.skipped if s.path.endswith("loop-a.txt") and s.transient]
    assert "sub/deep/e.TXT" in names(r)  # the folder itself is read where it is


def test_broken_reader_never_escapes(tree: Path) -> None:
    class Boom(BaseReader):
        def load_data(self, file: Path, extra_info: Optional[Dict[str, Any]] = None) -> List[Document]:
            raise RuntimeError("kaboom")

    r = SimpleDirectoryReader(tree, file_extractor={".py": Boom()})
    assert len(r.load_data()) == 2
    assert r.report.skipped[0].reason == "corrupt or unreadable: RuntimeError: kaboom"


# -- lazy, progress, workers, load_file ----------------------------------------------------------
def test_iter_data_yields_per_file(tree: Path) -> None:
    r = SimpleDirectoryReader(tree, recursive=True)
    it = r.iter_data()
    first = next(it)
    assert [d.text for d in first] == ["alpha text"]
    assert len(r.report.read) == 1  # the report fills as we go
    rest = list(it)
    assert len(rest) == 5
    assert [d.id_ for batch in [first, *rest] for d in batch] == [d.id_ for d in r.load_data()]


def test_show_progress(tree: Path, capsys: pytest.CaptureFixture) -> None:
    SimpleDirectoryReader(tree).load_data(show_progress=True)
    assert "Loading files" in capsys.readouterr().err
    SimpleDirectoryReader(tree, show_progress=True).load_data()
    assert "Loading files" in capsys.readouterr().err
    SimpleDirectoryReader(tree).load_data()
    assert "Loading files" not in capsys.readouterr().err


def test_num_workers_same_result(tree: Path) -> None:
    (tree / "bin.dat").write_bytes(b"\x00\x01" * 100)
    seq = SimpleDirectoryReader(tree, recursive=True)
    par = SimpleDirectoryReader(tree, recursive=True)
    a, b = seq.load_data(), par.load_data(num_workers=2)
    assert [(d.id_, d.hash) for d in a] == [(d.id_, d.hash) for d in b]
    assert par.report.skipped_reasons() == seq.report.skipped_reasons()


def test_load_file(tree: Path) -> None:
    [doc] = SimpleDirectoryReader.load_file(tree / "a.txt")
    assert doc.id_ == (tree / "a.txt").as_posix()
    (tree / "empty.txt").write_bytes(b"")
    assert SimpleDirectoryReader.load_file(tree / "empty.txt") == []
    with pytest.raises(ReaderError, match="empty"):
        SimpleDirectoryReader.load_file(tree / "empty.txt", raise_on_error=True)


def test_top_level_import() -> None:
    import ragloom
    from ragloom.readers import SimpleDirectoryReader as SDR

    assert ragloom.SimpleDirectoryReader is SDR
