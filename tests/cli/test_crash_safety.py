"""`ragloom index` killed with SIGKILL at random points, then rerun: the index ends up exactly as a clean build.

Real processes (``python -m ragloom.cli index``) on a dozen small English and Chinese Markdown
files from ``../shared/data``, the bundled model and the real SQLite store.  Kills land:

* at random delays after the run announced itself (reading, splitting, loading the model,
  embedding, writing — wherever the clock falls; seeded, so the sequence is reproducible);
* inside a write transaction, after every write and before COMMIT (``in_commit``);
* right after a commit (``after_commit``).

The last two are kill points the test injects through the ingestion engine's commit hook
(``tests/cli/kill_points.py`` wraps the CLI); production code reads no test variables.

After every kill the partial index must be consistent (vectors, keyword rows, docstore links
and hashes agree; a document whose hash is recorded has exactly its clean-build nodes); after
the final run it must equal a clean build: same node ids and content, same document hashes,
one vector per node (equal to the clean build's), no duplicates, same keyword-search results.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from index_state import assert_partial_is_a_prefix_of as _assert_partial_is_a_prefix_of
from index_state import assert_same as _assert_same
from index_state import per_doc as _per_doc
from index_state import FASTAPI_FILES
from index_state import read_state as _state

FILES = FASTAPI_FILES
CHUNK = ["--chunk-size", "128", "--chunk-overlap", "16"]
#: Seconds any one `ragloom index` process may take before the test fails.
RUN_TIMEOUT = 240


#: English and Chinese files for the shorter tests (a third of the work).
SMALL = [FILES[i] for i in (0, 1, 3, 6, 7, 8)]


def _copy(shared_data, tmp_path, files):
    src = Path(shared_data) / "markdown_fastapi" / "docs"
    dst = tmp_path / "corpus"
    dst.mkdir()
    for rel in files:
        shutil.copyfile(src / rel, dst / rel.replace("/", "_"))
    return dst


@pytest.fixture()
def corpus(shared_data, tmp_path):
    return _copy(shared_data, tmp_path, FILES)


@pytest.fixture()
def small_corpus(shared_data, tmp_path):
    return _copy(shared_data, tmp_path, SMALL)


KILL_POINTS = Path(__file__).with_name("kill_points.py")


def _cmd(corpus, index_dir, *extra, chunk=CHUNK, hooks=None):
    """The command line of one run; ``hooks`` (``in_commit=N`` / ``after_commit=N``) runs it through
    ``kill_points.py``, which kills the process at that commit."""
    head = [sys.executable, str(KILL_POINTS), json.dumps(hooks)] if hooks else [sys.executable, "-m", "ragloom.cli"]
    return [*head, "-v", "index", str(corpus), "--index-dir", str(index_dir),
            "--json", "--no-progress", "--files-per-batch", "1", *chunk, *extra]


def _env():
    return dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")


def _run(corpus, index_dir, *extra):
    """One complete run, in this process (the model is loaded once for all of them); returns its JSON summary."""
    from click.testing import CliRunner

    from ragloom.cli import cli

    res = CliRunner().invoke(cli, _cmd(corpus, index_dir, *extra)[4:])
    assert res.exit_code == 0, res.output[-3000:]
    return json.loads(res.stdout)


def _wait_for(path, text, proc, count=1, timeout=RUN_TIMEOUT):
    """Wait until ``text`` appears ``count`` times in the log ``path``; ``False`` if ``proc`` ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.read_text(errors="replace").count(text) >= count:
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.01)
    raise AssertionError(f"{text!r} never appeared {count} times in {path}")


def _killed_run(corpus, index_dir, log, delay=None, after=("indexing ", 1), **hooks):
    """Start a run; SIGKILL it ``delay`` s after its log shows ``after`` = (text, times), or let a hook kill it.

    Returns ``"killed"`` or ``"finished"`` (the run ended before the kill).
    """
    with open(log, "w") as err:
        proc = subprocess.Popen(_cmd(corpus, index_dir, hooks=hooks), env=_env(), stdout=subprocess.DEVNULL,
                                stderr=err)
    try:
        if delay is not None and _wait_for(log, after[0], proc, count=after[1]):
            time.sleep(delay)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
        rc = proc.wait(timeout=RUN_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc in (0, -signal.SIGKILL), log.read_text()[-3000:]
    return "killed" if rc == -signal.SIGKILL else "finished"


def test_sigkill_at_random_points_then_rerun_equals_a_clean_build(corpus, tmp_path):
    clean_dir = tmp_path / "clean"
    clean_summary = _run(corpus, clean_dir)
    clean = _state(clean_dir)
    assert clean_summary["documents"]["added"] == len(FILES) and clean_summary["batches"] == len(FILES)
    assert len(clean["nodes"]) == clean_summary["nodes_total"] > len(FILES)

    # Kill points, adapted to the machine's speed by waiting for the run's own log lines:
    # "startup" = a random delay after the run announced itself (reading, splitting, loading the
    # model); "batch" = a random delay after its k-th commit (splitting, embedding or writing the
    # next batch); "in_commit" / "after" = the hooks (inside a transaction / right after a commit).
    # The random kills also carry the after-2-commits hook as a backstop, so that on a fast machine
    # no run gets further than 2 batches and the sequence never completes the index early.
    rng = random.Random(20240605)
    plan = [("startup", 1.5), ("in_commit", 1), ("batch", 1), ("after", 1), ("startup", 3.0),
            ("in_commit", 2), ("batch", 1), ("in_commit", 1), ("after", 1), ("batch", 1)]
    idx = tmp_path / "crashed"
    outcomes, committed = [], []
    for i, (kind, n) in enumerate(plan):
        log = tmp_path / f"kill{i}.log"
        if kind == "startup":
            outcome = _killed_run(corpus, idx, log, delay=rng.uniform(0.0, n), after_commit=2)
        elif kind == "batch":
            outcome = _killed_run(corpus, idx, log, delay=rng.uniform(0.0, 0.5), after=("committed a batch", n),
                                  after_commit=2)
        elif kind == "in_commit":
            outcome = _killed_run(corpus, idx, log, in_commit=n)
        else:
            outcome = _killed_run(corpus, idx, log, after_commit=n)
        outcomes.append(outcome)
        if (idx / "ragloom.sqlite").exists():
            state = _state(idx)
            _assert_partial_is_a_prefix_of(state, clean)
            committed.append(len(state["hashes"]))
    assert outcomes.count("killed") >= 6, outcomes
    # the kills left the index part-built at least twice, at different points
    partial = {c for c in committed if 0 < c < len(FILES)}
    assert len(partial) >= 2, committed

    final = _run(corpus, idx)
    assert final["documents"]["in_index"] == len(FILES)
    assert final["documents"]["added"] + final["documents"]["unchanged"] == len(FILES)
    _assert_same(_state(idx), clean)


def test_files_changed_between_kills_replace_exactly_their_nodes(small_corpus, tmp_path):
    corpus, idx = small_corpus, tmp_path / "crashed"
    first = _run(corpus, idx)
    assert first["documents"]["added"] == len(SMALL)
    before = _per_doc(_state(idx))
    names = sorted(p.name for p in corpus.iterdir())
    changed, removed = corpus / names[0], corpus / names[4]
    changed_id = os.path.realpath(changed)
    old_ids = before[changed_id]

    changed.write_text(changed.read_text(encoding="utf-8") + "\n\nCrash-safe indexing appends this paragraph.\n",
                       encoding="utf-8")
    assert _killed_run(corpus, idx, tmp_path / "k1.log", in_commit=1) == "killed"
    assert _per_doc(_state(idx))[changed_id] == old_ids  # the killed transaction changed nothing
    os.remove(removed)
    (corpus / "new_zh.md").write_text("# 新文件\n\n崩溃之后重新运行，索引应该和干净构建完全一致。\n", encoding="utf-8")
    _killed_run(corpus, idx, tmp_path / "k2.log", after_commit=1)
    changed.write_text(changed.read_text(encoding="utf-8").replace("Crash-safe", "Kill-safe"), encoding="utf-8")
    _killed_run(corpus, idx, tmp_path / "k3.log", in_commit=1)
    _state(idx)  # consistent after every kill

    final = _run(corpus, idx)
    assert final["documents"]["deleted"] == 1
    clean_dir = tmp_path / "clean"
    _run(corpus, clean_dir)
    clean = _state(clean_dir)
    state = _state(idx)
    _assert_same(state, clean)
    now = _per_doc(state)
    assert now[changed_id] == _per_doc(clean)[changed_id]
    assert not (old_ids - now[changed_id]) & set(state["nodes"])  # none of its old nodes is left
    assert os.path.realpath(removed) not in now and os.path.realpath(removed) not in state["hashes"]
    assert any("Kill-safe" in state["nodes"][n][1] for n in now[changed_id])


def test_second_writer_fails_at_once_and_wait_lets_it_finish_after(small_corpus, tmp_path):
    corpus, idx = small_corpus, tmp_path / "idx"
    log_a = tmp_path / "a.log"
    with open(log_a, "w") as err:
        a = subprocess.Popen(_cmd(corpus, idx), env=_env(), stdout=subprocess.PIPE, stderr=err, text=True)
    c = None
    try:
        assert _wait_for(log_a, "committed a batch", a)
        a.send_signal(signal.SIGSTOP)  # A holds the lock, part-way through
        t0 = time.monotonic()
        b = subprocess.run(_cmd(corpus, idx), env=_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT,
                           check=False)
        assert b.returncode == 1 and f"is locked by pid {a.pid}" in b.stderr, b.stderr
        assert "Traceback" not in b.stderr and time.monotonic() - t0 < 60

        log_c = tmp_path / "c.log"
        with open(log_c, "w") as err:
            c = subprocess.Popen(_cmd(corpus, idx, "--wait"), env=_env(), stdout=subprocess.PIPE, stderr=err, text=True)
        assert _wait_for(log_c, "waiting", c)
        time.sleep(1.0)
        assert c.poll() is None  # still waiting for A
        a.send_signal(signal.SIGCONT)
        out_a, _ = a.communicate(timeout=RUN_TIMEOUT)
        assert a.returncode == 0
        out_c, _ = c.communicate(timeout=RUN_TIMEOUT)
        assert c.returncode == 0, log_c.read_text()[-3000:]
    finally:
        for p in (a, c):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
                p.wait()
    sa, sc = json.loads(out_a), json.loads(out_c)
    assert sa["documents"]["in_index"] == len(SMALL)
    assert sc["documents"]["unchanged"] == len(SMALL) and sc["nodes_written"] == 0
    state = _state(idx)
    assert len(state["hashes"]) == len(SMALL) and len(state["nodes"]) == sa["nodes_total"]


def test_a_rechunk_killed_half_way_is_finished_by_the_next_run_whatever_its_settings(small_corpus, tmp_path):
    corpus, idx = small_corpus, tmp_path / "idx"
    _run(corpus, idx)  # chunk 128
    # a re-chunk to 96 tokens, killed after its first batch: one document now has 96-token chunks
    with open(tmp_path / "k.log", "w") as err:
        rc = subprocess.run(_cmd(corpus, idx, chunk=["--chunk-size", "96", "--chunk-overlap", "12"],
                                 hooks={"after_commit": 1}),
                            env=_env(), stdout=subprocess.DEVNULL, stderr=err,
                            timeout=RUN_TIMEOUT, check=False).returncode
    assert rc == -signal.SIGKILL
    # back to the original settings: the half-done re-chunk must not be mistaken for "unchanged"
    # (each document's fingerprint holds the chunking configuration: only the one re-chunked
    # document differs from the recorded 128-token configuration, and only it is redone)
    s = _run(corpus, idx)
    assert s["documents"]["updated"] == 1 and s["documents"]["unchanged"] == len(SMALL) - 1
    assert s["nodes_embedded"] == 0 and s["nodes_reused"] == s["nodes_written"]  # vectors from the cache
    clean_dir = tmp_path / "clean"
    _run(corpus, clean_dir)
    _assert_same(_state(idx), _state(clean_dir))


def _ann_answers_agree_with_the_stored_vectors(index_dir):
    """A resident ANN-backed store over the index (whatever generation a killed build left) finds
    every stored node as the top hit of its own vector, and never a node that is not stored."""
    import numpy as np

    from ragloom.storage.sqlite import SQLiteDatabase
    from ragloom.vector_stores.sqlite import SQLiteVectorStore
    from ragloom.vector_stores.types import VectorStoreQuery

    db = SQLiteDatabase(Path(index_dir) / "ragloom.sqlite", create=False)
    try:
        store = SQLiteVectorStore(db, ann_threshold=0, memory_search=True)
        rows = db.execute("SELECT n.node_id, v.embedding FROM vs_default_nodes n JOIN vs_default_vectors v "
                          "ON v.rowid = n.id ORDER BY n.id")
        live = {node_id for node_id, _ in rows}
        for node_id, blob in rows[::3]:
            res = store.query(VectorStoreQuery(query_embedding=np.frombuffer(blob, dtype=np.float32).tolist(),
                                               similarity_top_k=5))
            assert res.ids[0] == node_id and set(res.ids) <= live
        return store._ann._gen is not None  # whether the answers came from a generation
    finally:
        db.close()


@pytest.mark.parametrize("stage", ["train", "write", "rename", "prune"])
def test_sigkill_inside_an_ann_build_leaves_queries_and_the_next_run_correct(small_corpus, tmp_path, stage):
    idx = tmp_path / "idx"
    _run(small_corpus, idx)
    before = _state(idx)
    cmd = [sys.executable, str(KILL_POINTS), json.dumps({"ann": stage}), "optimize", "--index-dir", str(idx), "--json"]
    log = tmp_path / "optimize.log"
    with open(log, "w") as err:
        rc = subprocess.run(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=err, timeout=RUN_TIMEOUT,
                            check=False).returncode
    assert rc == -signal.SIGKILL, log.read_text()[-3000:]
    # the database is untouched apart from the change log; a query right after the kill is correct,
    # from the generation the build got to install ("rename", "prune") or from exact search
    _assert_same(_state(idx), before)
    assert _ann_answers_agree_with_the_stored_vectors(idx) == (stage in ("rename", "prune"))
    res = subprocess.run([sys.executable, "-m", "ragloom.cli", "query", "cookie parameters", "--index-dir", str(idx),
                          "--json"], env=_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
    assert res.returncode == 0 and json.loads(res.stdout)["results"], res.stderr[-3000:]
    # the next run finds nothing to do, the next optimize builds a generation that answers correctly
    s = _run(small_corpus, idx)
    assert s["nodes_embedded"] == 0 and s["documents"]["unchanged"] == len(SMALL)
    from click.testing import CliRunner

    from ragloom.cli import cli

    out = CliRunner().invoke(cli, ["optimize", "--index-dir", str(idx), "--json"])
    assert out.exit_code == 0 and json.loads(out.stdout)["ann"] == "built", out.output[-3000:]
    assert _ann_answers_agree_with_the_stored_vectors(idx)
    _assert_same(_state(idx), before)


def _descendants(pid: int) -> list:
    """``[(pid, command line)]`` of the live processes below ``pid`` (from ``/proc``: the base install
    has no psutil)."""
    parents, lines = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if fields[0] != b"Z":  # (state, ppid, ...) after the command name
            parents[int(name)], lines[int(name)] = int(fields[1]), cmdline
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for child, ppid in parents.items():
            if ppid == parent:
                found.append((child, lines[child]))
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process table from /proc")
def test_ctrl_c_while_the_split_workers_start_exits_at_once_without_tracebacks(tmp_path):
    """Ctrl-C reaches the whole process group.  Sent while the spawned split workers were still
    importing ragloom (their SIGINT handling starts after that), it killed them, each printing a
    ``KeyboardInterrupt`` traceback, and `ragloom index` printed "Interrupted" and then hung in the
    broken pool's shutdown (or in joining its idle workers at exit), found by a trial run in 5 of 23
    tries.  The workers now ignore SIGINT from birth and an abandoned pool is not waited for."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(8):  # one batch of 1.2 MB of text: over POOL_MIN_CHARS, so the split pool starts
        (docs / f"part{i}.md").write_text(f"# Part {i}\n\n" + f"Harbour crane {i} lifts the blue containers. " * 3500,
                                          encoding="utf-8")
    cmd = [sys.executable, "-m", "ragloom", "index", str(docs), "--index-dir", str(tmp_path / "idx"),
           "--no-progress", "--workers", "2"]
    proc = subprocess.Popen(cmd, env=dict(os.environ, HF_HUB_OFFLINE="1"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    workers: list = []
    deadline = time.monotonic() + 180
    try:
        while not workers and proc.poll() is None and time.monotonic() < deadline:
            workers = [pid for pid, line in _descendants(proc.pid)
                       if "multiprocessing" in line and "resource_tracker" not in line]
            time.sleep(0.02)
        assert workers, "the split workers never started (give the run more text)"
        # what `timeout -s INT` does: the child first, then its whole group (a terminal's Ctrl-C: the
        # group); the second signal once landed in tqdm's __del__ at shutdown ("Exception ignored")
        os.kill(proc.pid, signal.SIGINT)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    text = err.decode(errors="replace")
    assert proc.returncode == 130 and "run the same command again" in text, (proc.returncode, text[-3000:])
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text[-3000:]
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in workers if _alive(pid)], "worker processes left behind"
    # and the next run finishes the job
    again = subprocess.run(cmd + ["--json"], env=dict(os.environ, HF_HUB_OFFLINE="1"), capture_output=True,
                           timeout=600)
    assert again.returncode == 0, again.stderr.decode(errors="replace")[-3000:]
    assert json.loads(again.stdout)["documents"]["in_index"] == 8


def test_a_ctrl_c_dropped_in_a_finalizer_still_stops_the_run():
    """CPython drops an exception raised while a finalizer runs: a Ctrl-C that landed in
    ``ZipFile.__del__`` printed "Exception ignored ... KeyboardInterrupt" and the run went on to its
    end (exit 0, found by a trial run).  ``interrupts_remembered`` keeps the interrupt, and its
    callback (``index_paths(on_progress=...)``) raises it at the next file or batch.  In a
    subprocess: the signal goes to that process alone."""
    script = textwrap.dedent("""
        import os, signal, time
        from ragloom.cli.indexing import interrupts_remembered
        before = signal.getsignal(signal.SIGINT)
        with interrupts_remembered() as check:
            class Finalized:
                def __del__(self):
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(0.2)  # the handler runs here, in the finalizer: its exception is dropped
            Finalized()
            print("went on", flush=True)
            try:
                check(None)
            except KeyboardInterrupt:
                print("stopped", flush=True)
        assert signal.getsignal(signal.SIGINT) is before
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["went", "on", "stopped"], done.stdout
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr, done.stderr
