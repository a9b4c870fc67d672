"""`ragloom index` on the situations a new user ran into: files that empty out, symlinked folders,
metadata longer than the chunk budget, bad chunk options, changed chunk settings."""

import json
import logging
import os

from click.testing import CliRunner

from ragloom.cli import cli


def _index(runner, paths, index_dir, *extra, ok=True):
    res = runner.invoke(cli, ["index", *map(str, paths), "--index-dir", str(index_dir), "--json", *extra])
    if ok:
        assert res.exit_code == 0, res.output
        return json.loads(res.stdout)
    return res


def _query(runner, index_dir, text, *extra):
    res = runner.invoke(cli, ["query", text, "-k", "20", "--index-dir", str(index_dir), "--json", *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _docs(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    (d / "kayak.txt").write_text("Kayaking in the Norwegian fjords is calm in early summer.", encoding="utf-8")
    (d / "tea.txt").write_text("Green tea is brewed at about eighty degrees Celsius.", encoding="utf-8")
    return d


def test_a_file_that_becomes_empty_loses_its_old_chunks(tmp_path):
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    _index(runner, [docs], idx)
    (docs / "kayak.txt").write_text("   \n", encoding="utf-8")
    s = _index(runner, [docs], idx)
    assert s["documents"]["deleted"] == 1 and s["documents"]["in_index"] == 1
    assert any(x["reason"] == "empty" for x in s["skipped"])
    hits = _query(runner, idx, "kayak fjords")["results"]
    assert all("kayak" not in r["file_path"] for r in hits)


def test_symlinked_folder_has_one_identity_and_deletions_are_seen(tmp_path):
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    link = tmp_path / "link"
    os.symlink(docs, link)
    s1 = _index(runner, [link], idx)
    s2 = _index(runner, [docs], idx)  # same files through the real path: same documents, no copies
    assert s2["documents"]["added"] == 0 and s2["documents"]["in_index"] == 2
    assert s2["nodes_total"] == s1["nodes_total"]
    os.remove(docs / "tea.txt")
    s3 = _index(runner, [link], idx)
    assert s3["documents"]["deleted"] == 1 and s3["documents"]["in_index"] == 1


def test_metadata_longer_than_the_budget_skips_that_file_only(tmp_path):
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    # the file path is not embedded: a deep one costs nothing; an embedded Markdown title can
    deep = docs / ("孙悟空猪八戒沙和尚唐三藏白龙马" * 3) / ("花果山水帘洞美猴王" * 3)
    deep.mkdir(parents=True)
    (deep / "z.txt").write_text("deep file", encoding="utf-8")
    (docs / "t.md").write_text("# " + "花果山水帘洞美猴王" * 10 + "\n\nbody text", encoding="utf-8")
    s = _index(runner, [docs], idx, "--chunk-size", "64", "--chunk-overlap", "8")
    bad = [x for x in s["skipped"] if x["path"].endswith("t.md")]
    assert bad and "cannot be split" in bad[0]["reason"] and "document_title" in bad[0]["reason"]
    assert not [x for x in s["skipped"] if x["path"].endswith("z.txt")]
    assert s["documents"]["in_index"] == 3 and s["nodes_total"] >= 3


def test_bad_chunk_options_fail_cleanly_before_creating_an_index(tmp_path):
    runner, docs = CliRunner(), _docs(tmp_path)
    for extra in (["--chunk-overlap", "300"], ["--chunk-size", "1000"]):
        idx = tmp_path / f"idx{extra[1]}"
        res = _index(runner, [docs], idx, *extra, ok=False)
        assert res.exit_code == 2, res.output
        assert "Traceback" not in res.output and ("chunk" in res.output)
        assert not idx.exists()


def test_changed_chunk_settings_rechunk_everything(tmp_path):
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    _index(runner, [docs], idx)
    s = _index(runner, [docs], idx, "--chunk-size", "64", "--chunk-overlap", "8")
    assert s["rechunked"] is True and s["documents"]["updated"] == 2 and s["chunk_size"] == 64
    s = _index(runner, [docs], idx, "--chunk-size", "64", "--chunk-overlap", "8")
    assert s["rechunked"] is False and s["nodes_embedded"] == 0
    # a plain re-run keeps the index's own settings (it re-chunked everything back to 254 before)
    s = _index(runner, [docs], idx)
    assert s["rechunked"] is False and s["nodes_embedded"] == 0 and (s["chunk_size"], s["chunk_overlap"]) == (64, 8)
    s = _index(runner, [docs], idx, "--chunk-size", "128")
    assert s["rechunked"] is True and (s["chunk_size"], s["chunk_overlap"]) == (128, 16)
    # an overlap alone keeps the index's chunk size (it reset it to 254)
    s = _index(runner, [docs], idx, "--chunk-overlap", "5")
    assert (s["chunk_size"], s["chunk_overlap"]) == (128, 5) and s["rechunked"] is True


def test_the_parser_of_an_index_is_kept_by_a_plain_re_run(tmp_path):
    """A plain re-run after --parser sentence went back to 'auto' and re-chunked every file."""
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    s = _index(runner, [docs], idx, "--parser", "sentence")
    assert s["parser"] == "sentence"
    s = _index(runner, [docs], idx)
    assert s["parser"] == "sentence" and s["rechunked"] is False and s["nodes_embedded"] == 0
    s = _index(runner, [docs], idx, "--parser", "auto")
    assert s["parser"] == "auto" and s["rechunked"] is True
    assert _index(runner, [docs], tmp_path / "new")["parser"] == "auto"  # a new index: the default


def test_query_modes(tmp_path):
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    _index(runner, [docs], idx)
    for mode in ("hybrid", "dense", "keyword"):
        out = _query(runner, idx, "green tea temperature", "--mode", mode)
        assert out["mode"] == mode and out["score"]
        assert out["results"][0]["file_path"].endswith("tea.txt")


def test_a_chinese_query_by_meaning_alone_with_an_english_model_warns(tmp_path):
    """``--mode dense`` with a Chinese query and the English-only bundled model returned unrelated
    chunks with confident scores and no word of warning (hybrid searches such a query by its words)."""
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    _index(runner, [docs], idx)
    out = _query(runner, idx, "孙悟空的师父是谁", "--mode", "dense")
    assert [w["code"] for w in out["warnings"]] == ["english_only_model"] and out["results"]
    res = runner.invoke(cli, ["query", "孙悟空的师父是谁", "--mode", "dense", "--index-dir", str(idx)])
    assert res.exit_code == 0 and "warning: the embed model" in res.stderr and "reads English only" in res.stderr
    for args in (("孙悟空的师父是谁", "--mode", "hybrid"), ("green tea", "--mode", "dense")):
        assert _query(runner, idx, *args)["warnings"] == []


def test_second_writer_is_refused_with_the_holders_pid(tmp_path):
    import subprocess
    import sys
    import textwrap

    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from ragloom.storage.lock import IndexLock
            with IndexLock({str(idx)!r}):
                print("locked", flush=True)
                time.sleep(60)
        """)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        res = _index(runner, [docs], idx, ok=False)
        assert res.exit_code == 1
        assert f"locked by pid {holder.pid}" in res.output
    finally:
        holder.kill()
        holder.wait()
    # the kernel dropped the lock with the process: the next run proceeds
    s = _index(runner, [docs], idx)
    assert s["documents"]["added"] == 2


def test_rerun_with_the_same_named_model_is_accepted_and_another_model_is_refused(tmp_path):
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    _index(runner, [docs], idx, "--embed-model", "fp32")
    s = _index(runner, [docs], idx, "--embed-model", "local:sentence-transformers/all-MiniLM-L6-v2")
    assert s["documents"]["unchanged"] == 2
    other = tmp_path / "other-model"
    other.mkdir()
    res = _index(runner, [docs], idx, "--embed-model", f"local:{other}", ok=False)
    assert res.exit_code != 0 and "Traceback" not in res.output


def test_another_spelling_of_the_same_folder_changes_nothing(tmp_path, monkeypatch):
    # a symlink, a relative path and the real path reach the same files: the second run must
    # see every document as unchanged (file_path is canonical), not rewrite or re-embed it
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    link = tmp_path / "docs_link"
    os.symlink(docs, link)
    first = _index(runner, [link], idx)
    assert first["documents"]["added"] == 2
    monkeypatch.chdir(tmp_path)
    for spelling in ("docs", str(docs)):
        again = _index(runner, [spelling], idx)
        assert again["documents"]["unchanged"] == 2 and again["documents"]["updated"] == 0, again
        assert again["nodes_written"] == 0 and again["nodes_embedded"] == 0
    hit = _query(runner, idx, "green tea temperature")["results"][0]
    assert hit["file_path"] == os.path.realpath(docs / "tea.txt")


def test_an_empty_query_is_a_clean_error(tmp_path):
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    _index(runner, [docs], idx)
    for text in ("", "   "):
        res = runner.invoke(cli, ["query", text, "--index-dir", str(idx)])
        assert res.exit_code == 1 and "the query is empty" in res.output and "Traceback" not in res.output
    res = runner.invoke(cli, ["ask", " ", "--index-dir", str(idx), "--llm", "mock"])
    assert res.exit_code == 2 and "the question is empty" in res.output


def test_a_renamed_or_moved_file_reuses_its_vectors(tmp_path):
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    long_text = " ".join(f"Sentence {i} about tides, harbours and the ferries that cross them." for i in range(120))
    (docs / "harbour.md").write_text(long_text, encoding="utf-8")
    first = _index(runner, [docs], idx)
    (docs / "sub").mkdir()
    os.rename(docs / "harbour.md", docs / "sub" / "ports and tides.md")
    os.rename(docs / "tea.txt", docs / "green-tea.txt")
    s = _index(runner, [docs], idx)
    # the path is not part of the embedded text: the same chunks come from the embedding cache
    assert s["documents"]["added"] == 2 and s["documents"]["deleted"] == 2
    assert s["nodes_embedded"] == 0 and s["nodes_reused"] == s["nodes_written"] > 2
    assert s["nodes_total"] == first["nodes_total"]
    hits = _query(runner, idx, "ferries crossing the harbour")["results"]
    assert os.path.basename(hits[0]["file_path"]) == "ports and tides.md"


def test_an_unusable_index_dir_is_one_line(tmp_path):
    runner, docs = CliRunner(), _docs(tmp_path)
    (tmp_path / "a-file").write_text("x")
    for bad in (tmp_path / "a-file", tmp_path / "a-file" / "idx"):
        res = _index(runner, [docs], bad, ok=False)
        assert res.exit_code == 1 and "Traceback" not in res.output, res.output
        assert "cannot use" in res.output and "(check --index-dir)" in res.output, res.output


# -- found by the fifteenth session's new-user trial ------------------------------------------------
def test_an_index_kept_inside_the_indexed_folder_is_not_read_as_documents(tmp_path):
    """From the second run on, the index's own files (ragloom.sqlite, its -wal, the lock) were listed
    as skipped documents of the folder; the index directory is now left out of the walk."""
    runner, docs = CliRunner(), _docs(tmp_path)
    idx = docs / "idx"
    first = _index(runner, [docs], idx)
    again = _index(runner, [docs], idx)
    assert first["files_total"] == again["files_total"] == 2 and again["skipped"] == [], again
    assert again["nodes_embedded"] == 0
    # only that folder: another folder or file of the same name elsewhere is still read
    (docs / "proj" / "idx").mkdir(parents=True)
    (docs / "proj" / "idx" / "notes.txt").write_text("Notes about oolong tea.", encoding="utf-8")
    (docs / "proj" / "idx.txt").write_text("More notes about green tea.", encoding="utf-8")
    third = _index(runner, [docs], idx)
    assert third["files_total"] == 4 and third["skipped"] == [], third


def test_a_sqlite_file_that_is_not_an_index_is_refused(tmp_path):
    """Another program's SQLite file in the index directory was queried as an empty index ("No
    results") and written into by 'ragloom index'; both are refused now, and it is left as it was."""
    import sqlite3

    runner, docs = CliRunner(), _docs(tmp_path)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    with sqlite3.connect(foreign / "ragloom.sqlite") as plain:
        plain.execute("CREATE TABLE t(x)")
    before = (foreign / "ragloom.sqlite").read_bytes()
    res = runner.invoke(cli, ["query", "tea", "--index-dir", str(foreign)])
    assert res.exit_code == 1 and "ragloom did not create" in res.output and "Traceback" not in res.output
    assert "change models" not in res.output
    res = _index(runner, [docs], foreign, ok=False)
    assert res.exit_code == 1 and "ragloom did not create" in res.output, res.output
    assert (foreign / "ragloom.sqlite").read_bytes() == before


def test_no_results_says_why(tmp_path):
    """'No results (is the index empty?)' was printed for any empty answer, e.g. a keyword query
    matching no chunk of a full index."""
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    _index(runner, [docs], idx)
    res = runner.invoke(cli, ["query", "zebra", "--index-dir", str(idx), "--mode", "keyword"])
    assert res.exit_code == 0 and "no chunk matches the query's words (keyword search" in res.output
    assert "empty" not in res.output
    out = _query(runner, idx, "zebra", "--mode", "keyword")
    assert out["index_nodes"] == 2 and out["keyword_only"] is True
    # hybrid search of a Chinese query with the English-only bundled model is keyword search alone
    res = runner.invoke(cli, ["query", "孙悟空", "--index-dir", str(idx)])
    assert res.exit_code == 0 and "embed model reads English only" in res.output, res.output
    (docs / "kayak.txt").unlink()
    (docs / "tea.txt").unlink()
    docs.rmdir()  # (an emptied folder that is still there is refused: an unmounted share looks like that)
    _index(runner, [docs], idx)
    res = runner.invoke(cli, ["query", "tea", "--index-dir", str(idx)])
    assert res.exit_code == 0 and "is empty" in res.output
    # while a writer holds the index (a first run commits its first batch after up to 32 files), an
    # empty index says so; after a writer that exits normally, or one that was killed, it is empty
    import subprocess
    import sys
    import textwrap

    for ending in ("return", "kill"):
        holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from ragloom.storage.lock import IndexLock
            with IndexLock({str(idx)!r}):
                print("locked", flush=True)
                sys.stdin.readline()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "locked"
            res = runner.invoke(cli, ["query", "tea", "--index-dir", str(idx)])
            assert f"nothing committed yet, and a writer (pid {holder.pid}:" in res.output
            assert _query(runner, idx, "tea")["writer_pid"] == holder.pid
        finally:
            if ending == "kill":
                holder.kill()
            holder.communicate("done\n")
        res = runner.invoke(cli, ["query", "tea", "--index-dir", str(idx)])
        assert res.exit_code == 0 and "is empty" in res.output, (ending, res.output)
        assert _query(runner, idx, "tea")["writer_pid"] is None


def test_a_file_name_with_a_newline_is_printed_on_one_line(tmp_path):
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    (docs / "name with\nnewline.txt").write_text("Oolong is brewed at ninety degrees.", encoding="utf-8")
    _index(runner, [docs], idx)
    res = runner.invoke(cli, ["query", "oolong ninety degrees", "-k", "1", "--index-dir", str(idx)])
    assert res.exit_code == 0 and "name with\\nnewline.txt" in res.output, res.output


def test_a_chunk_size_over_the_models_limit_names_only_that_option(tmp_path):
    runner, docs = CliRunner(), _docs(tmp_path)
    res = _index(runner, [docs], tmp_path / "idx", "--chunk-size", "100000", ok=False)
    assert res.exit_code == 2 and "--chunk-size" in res.output and "at most 254" in res.output
    assert "--files-per-batch" not in res.output and "1..254" not in res.output


def test_overlapping_paths_read_each_file_once(tmp_path):
    """'ragloom index docs docs/tea.txt docs' read tea.txt (and the folder) more than once: the
    summary said 3 files read and 7 documents read."""
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    (docs / "sub").mkdir()
    (docs / "sub" / "rivers.txt").write_text("Rivers carve valleys over millions of years.", encoding="utf-8")
    hidden = docs / ".notes.txt"
    hidden.write_text("A hidden note about oolong.", encoding="utf-8")
    s = _index(runner, [docs, docs / "tea.txt", docs, docs / "sub", hidden], idx)
    assert s["files_total"] == s["files_read"] == 4, s  # kayak, tea, rivers, and the hidden file named
    assert s["documents"]["read"] == 4 and s["documents"]["added"] == 4, s
    s = _index(runner, [docs / "sub", docs], tmp_path / "idx2")  # the inner folder first
    assert s["files_total"] == 3 and s["documents"]["read"] == 3, s
    # an exclude pattern relative to the outer folder leaves one file of the inner one out there;
    # the inner folder (named) reads it, and the file they share is read once
    (docs / "sub" / "lakes.txt").write_text("Lakes fill basins left by glaciers.", encoding="utf-8")
    s = _index(runner, [docs, docs / "sub"], tmp_path / "idx3", "--exclude", "sub/lakes.txt")
    assert s["files_total"] == s["files_read"] == 4 and s["documents"]["read"] == 4, s
    assert [r["text"] for r in _query(runner, tmp_path / "idx3", "lakes basins glaciers")["results"]
            if "Lakes" in r["text"]], "lakes.txt was read"
    # a symlink in the inner folder to a file the outer one reads is that file: read once
    (docs / "sub" / "tea-link.txt").symlink_to(docs / "tea.txt")
    s = _index(runner, [docs, docs / "sub"], tmp_path / "idx4", "--exclude", "sub/lakes.txt")
    assert s["files_total"] == s["files_read"] == 4 and s["documents"]["read"] == 4, s


def test_a_query_on_an_empty_database_file_creates_nothing(tmp_path):
    """'ragloom query' on a folder holding a 0-byte ragloom.sqlite turned it into a new, empty index
    (and added an embedding cache): a read wrote files.  It is refused as no index."""
    runner, idx = CliRunner(), tmp_path / "idx"
    idx.mkdir()
    (idx / "ragloom.sqlite").touch()
    res = runner.invoke(cli, ["query", "tea", "--index-dir", str(idx)])
    assert res.exit_code == 1 and "no index in" in res.output, res.output
    assert sorted(p.name for p in idx.iterdir()) == ["ragloom.sqlite"] and (idx / "ragloom.sqlite").stat().st_size == 0


def test_a_chunk_size_recorded_by_a_python_build_over_the_models_limit_is_not_reused(tmp_path):
    """An index built in Python with SentenceSplitter(chunk_size=1024) recorded that size; a plain
    'ragloom index' took it as the index's own and refused ("exceeds the embed model's limit"),
    though no --chunk-size was given.  It falls back to the model's default."""
    from ragloom import StorageContext, VectorStoreIndex
    from ragloom.embeddings import HuggingFaceEmbedding
    from ragloom.node_parser import SentenceSplitter
    from ragloom.schema import Document

    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    sc = StorageContext.from_defaults(persist_dir=str(idx), create_if_missing=True)
    VectorStoreIndex.from_documents([Document(text="Tea.", id_="t")], storage_context=sc,
                                    embed_model=HuggingFaceEmbedding(),
                                    transformations=[SentenceSplitter(chunk_size=1024, chunk_overlap=20)])
    sc.persist(persist_dir=str(idx))
    s = _index(runner, [docs], idx)
    assert s["chunk_size"] == 254, s


def test_optimize_on_another_programs_database_is_a_clean_error(tmp_path):
    import sqlite3

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    with sqlite3.connect(foreign / "ragloom.sqlite") as plain:
        plain.execute("CREATE TABLE t(x)")
    res = CliRunner().invoke(cli, ["optimize", "--index-dir", str(foreign)])
    assert res.exit_code == 1 and "ragloom did not create" in res.output and "Traceback" not in res.output


def test_a_deleted_folder_given_again_leaves_the_index(tmp_path, caplog):
    """After 'rm -r data/A', the same 'ragloom index data/A data/B' failed ("Path 'data/A' does not
    exist") and indexed nothing: A's chunks stayed searchable, and a change in B was not indexed."""
    runner, idx = CliRunner(), tmp_path / "idx"
    a, b, a_old = tmp_path / "A", tmp_path / "B", tmp_path / "A-old"
    a.mkdir(), b.mkdir(), a_old.mkdir()
    (a / "a.txt").write_text("Walruses haul out on sea ice.", encoding="utf-8")
    (b / "b.txt").write_text("Narwhals have a long tusk.", encoding="utf-8")
    (a_old / "x.txt").write_text("Orcas hunt in pods.", encoding="utf-8")
    _index(runner, [a_old], idx)
    s = _index(runner, [a, b], idx)
    assert s["documents"]["in_index"] == 3
    import shutil

    shutil.rmtree(a)
    shutil.rmtree(a_old)  # gone too, but not given: a sibling whose name starts like A's stays
    (b / "b.txt").write_text("Belugas are white whales.", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="ragloom.ingestion.paths"):
        s = _index(runner, [a, b], idx)
    assert s["documents"]["deleted"] == 1 and s["documents"]["updated"] == 1 and s["documents"]["in_index"] == 2, s
    assert any("no longer exists: its 1 document leaves the index" in r.getMessage() for r in caplog.records)
    found = _query(runner, idx, "walruses sea ice narwhals belugas", "--mode", "keyword")["results"]
    texts = [r["text"] for r in found]
    assert texts == ["Belugas are white whales."], texts
    # a broken link is refused (by its target, which never held anything) and removes nothing
    (tmp_path / "broken").symlink_to(tmp_path / "elsewhere")
    res = _index(runner, [b, tmp_path / "broken"], idx, ok=False)
    assert res.exit_code == 2 and "elsewhere: no such file or folder" in res.output, res.output
    assert _index(runner, [b], idx)["documents"]["in_index"] == 2
    # a path that never held anything is a typo: refused, before anything is written
    res = _index(runner, [b, tmp_path / "nosuch"], idx, ok=False)
    assert res.exit_code == 2 and "nosuch: no such file or folder, and the index holds nothing from it" in res.output
    res = _index(runner, [tmp_path / "nosuch"], tmp_path / "new-idx", ok=False)
    assert res.exit_code == 2 and "no such file or folder" in res.output
    assert not (tmp_path / "new-idx").exists()


def test_an_unreadable_folder_keeps_its_documents(tmp_path, without_dac_override):
    """A folder that became unlistable (chmod 0) is reported as permission denied, not as deleted:
    its files could not be stat'ed, so their documents were removed. The folder is not a file done."""
    import subprocess
    import sys

    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    locked = docs / "locked"
    locked.mkdir()
    (locked / "otters.txt").write_text("Sea otters hold hands while they sleep.", encoding="utf-8")
    assert _index(runner, [docs], idx)["documents"]["in_index"] == 3
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    locked.chmod(0)
    try:
        res = subprocess.run([*without_dac_override, sys.executable, "-m", "ragloom", "index", str(docs),
                              "--index-dir", str(idx), "--json"], capture_output=True, text=True, env=env, timeout=300)
    finally:
        locked.chmod(0o755)
    assert res.returncode == 0, res.stderr
    s = json.loads(res.stdout)
    assert s["documents"]["deleted"] == 0 and s["documents"]["in_index"] == 3, s
    assert [(x["path"].endswith("locked"), x["reason"]) for x in s["skipped"]] == [(True, "permission denied")]
    found = _query(runner, idx, "sea otters sleep", "--mode", "keyword")["results"]
    assert found and "otters" in found[0]["text"]


def test_folders_not_entered_are_not_counted_as_files_skipped(tmp_path):
    """A symlinked folder (not followed) was counted in "files skipped"; it is listed under "folders
    skipped" now, and ``--json`` tells each skip's kind."""
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    other = tmp_path / "other"
    other.mkdir()
    (other / "moss.txt").write_text("Moss grows on the north side of old stones.", encoding="utf-8")
    (docs / "linked").symlink_to(other, target_is_directory=True)
    (docs / "blob.bin").write_bytes(b"\x00\x01\x02\xff" * 64)
    s = _index(runner, [docs], idx)
    kinds = {os.path.basename(x["path"]): x["kind"] for x in s["skipped"]}
    assert kinds == {"linked": "folder", "blob.bin": "file"}, s["skipped"]
    assert s["files_read"] == 2 and s["documents"]["in_index"] == 2
    res = runner.invoke(cli, ["index", str(docs), "--index-dir", str(tmp_path / "idx2"), "--no-progress"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    files_at = next(i for i, line in enumerate(lines) if line.strip().startswith("files skipped"))
    folders_at = next(i for i, line in enumerate(lines) if line.strip().startswith("folders skipped"))
    assert lines[files_at].split()[-1] == "1" and "blob.bin" in lines[files_at + 1]
    assert lines[folders_at].split()[-1] == "1" and "linked" in lines[folders_at + 1]


def test_keyword_scores_of_a_small_index_are_not_printed_as_zero(tmp_path):
    """SQLite FTS5 floors the BM25 weight of a word found in most chunks at 1e-6, so in a small index
    every keyword hit printed "score 0.0000"; scores are printed to four significant digits."""
    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    (docs / "black.txt").write_text("Black tea is brewed with boiling water.", encoding="utf-8")
    _index(runner, [docs], idx)
    hits = _query(runner, idx, "tea brewed", "--mode", "keyword")["results"]
    assert len(hits) == 2 and all(0 < h["score"] < 1e-4 for h in hits), hits
    res = runner.invoke(cli, ["query", "tea brewed", "--mode", "keyword", "--index-dir", str(idx)])
    assert res.exit_code == 0, res.output
    printed = [line.split()[2] for line in res.stdout.splitlines() if line.startswith("[")]
    assert len(printed) == 2, printed
    assert all(float(p) == float(f"{h['score']:.4g}") for p, h in zip(printed, hits, strict=True)), printed


def test_an_emptied_mount_point_keeps_its_documents(tmp_path):
    """A network share that is not mounted leaves its mount point behind, empty: 'ragloom index' on it
    (or on a folder inside it, which then looks deleted) removed every document.  It stops with a
    one-line reason and removes nothing; deleting the empty folder too removes them as before."""
    import shutil

    runner, idx = CliRunner(), tmp_path / "idx"
    share, away = tmp_path / "share", tmp_path / "away"
    (share / "docs" / "sub").mkdir(parents=True)
    (share / "docs" / "walrus.txt").write_text("Walruses haul out on sea ice.", encoding="utf-8")
    (share / "docs" / "sub" / "narwhal.txt").write_text("Narwhals have a long tusk.", encoding="utf-8")
    s = _index(runner, [share], idx)
    assert s["documents"]["in_index"] == 2
    shutil.move(str(share / "docs"), str(away))  # "unmounted": the mount point stays, empty
    for given in (share, share / "docs"):
        res = _index(runner, [given], idx, ok=False)
        assert res.exit_code == 1, res.output
        assert "share is empty, but the index holds 2 documents from it: nothing was removed" in res.output
        assert len(res.output.strip().splitlines()) == 1, res.output
        assert len(_query(runner, idx, "walruses narwhals", "--mode", "keyword")["results"]) == 2
    shutil.move(str(away), str(share / "docs"))  # mounted again: nothing to do
    s = _index(runner, [share], idx)
    assert s["documents"]["unchanged"] == 2 and s["nodes_embedded"] == 0
    # files deleted from a folder that keeps other entries, or a folder deleted with its files: removed
    (share / "docs" / "sub" / "narwhal.txt").unlink()
    (share / "docs" / "sub" / "keep.md").write_text("Belugas are white whales.", encoding="utf-8")
    s = _index(runner, [share], idx)
    assert s["documents"]["deleted"] == 1 and s["documents"]["in_index"] == 2, s
    shutil.rmtree(share / "docs" / "sub")
    s = _index(runner, [share], idx)
    assert s["documents"]["deleted"] == 1 and s["documents"]["in_index"] == 1, s
    # really emptied on purpose: the message's way out works
    (share / "docs" / "walrus.txt").unlink()
    res = _index(runner, [share], idx, ok=False)
    assert res.exit_code == 1 and f"ragloom remove {share / 'docs'}`" in res.output, res.output
    res = runner.invoke(cli, ["remove", str(share / "docs"), "--index-dir", str(idx)])
    assert res.exit_code == 0, res.output
    s = _index(runner, [share], idx)
    assert s["documents"]["in_index"] == 0, s


def test_an_index_the_user_cannot_write_is_a_one_line_error(tmp_path, without_dac_override):
    """Another user's index (or a read-only share): `query` printed apsw's ReadOnlyError traceback
    (SQLite reads a WAL database through its -shm file, which it must be able to write), and
    `remove` / `optimize` printed a PermissionError traceback from the lock file."""
    import subprocess
    import sys

    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    _index(runner, [docs], idx)
    modes = {p: p.stat().st_mode for p in [idx, *idx.iterdir()]}
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    for p in modes:
        p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        for args in (["query", "green tea"], ["remove", str(docs / "tea.txt")], ["optimize"]):
            res = subprocess.run([*without_dac_override, sys.executable, "-m", "ragloom", *args, "--index-dir",
                                  str(idx)], capture_output=True, text=True, env=env, timeout=300)
            assert res.returncode == 1, (args, res.stdout, res.stderr[-4000:])
            assert "Traceback" not in res.stderr and res.stderr.startswith("Error: cannot use "), (args, res.stderr)
            assert len(res.stderr.strip().splitlines()) == 1 and "write access" in res.stderr, (args, res.stderr)
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
    assert _query(runner, idx, "green tea")["results"]  # nothing was changed


def test_a_hit_in_an_archive_member_says_which_member(tmp_path):
    """`ragloom query` printed "corpus/simple.zip (chars 0-95)" for a hit in a zip member: the member
    (like an e-mail attachment or an e-book chapter) is named in the location."""
    import zipfile

    runner, docs, idx = CliRunner(), _docs(tmp_path), tmp_path / "idx"
    with zipfile.ZipFile(docs / "bundle.zip", "w") as z:
        z.writestr("notes/walrus.txt", "Walruses haul out on the sea ice in large groups.")
        z.writestr("notes/narwhal.txt", "Narwhals have one long spiral tusk.")
    _index(runner, [docs], idx)
    hit = _query(runner, idx, "narwhal spiral tusk", "--mode", "keyword")["results"][0]
    assert hit["source"].endswith("bundle.zip") and hit["location"].startswith("member notes/narwhal.txt, chars ")
    res = runner.invoke(cli, ["query", "walrus sea ice", "--mode", "keyword", "--index-dir", str(idx)])
    assert "bundle.zip  (member notes/walrus.txt, chars" in res.stdout, res.stdout
