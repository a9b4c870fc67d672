"""``engine="ray"``: the ingestion engine on a real local Ray cluster, into the real Milvus server.

The cluster is ``ray start --head`` on 127.0.0.1 (2 CPUs), started by the ``ray_address`` fixture;
Milvus is the ``milvus_server`` fixture.  The corpus is the 200 smallest Markdown and Python files
of ``../shared/data`` (above 300 bytes), embedded with the bundled model.  Every Ray run is compared
with a local run of the same corpus into another collection: same node ids, same count, vectors
within 1e-5.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, Iterator, Optional, Tuple

import numpy as np
import pytest

from tests.conftest import SHARED_DATA
from tests.vector_stores.conftest import _stop_group, _tail, free_ports

import pymilvus  # noqa: F401
import ray  # ragloom[ray]: a missing extra fails here, or skips with --skip-missing-extras

pytestmark = pytest.mark.slow

RAY_START_TIMEOUT = 120.0
KILL_POINTS = Path(__file__).parents[1] / "cli" / "kill_points.py"


def _ray_bin() -> str:
    exe = Path(sys.executable).with_name("ray")
    return str(exe) if exe.exists() else "ray"


@pytest.fixture(scope="module")
def ray_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Ray head node on 127.0.0.1 (``ray start --head --block``), joined by this process too."""
    base = tmp_path_factory.mktemp("ray")
    (port,) = free_ports(1)
    out_path = base / "ray.out"
    # a test cluster on this machine: no token (drivers in subprocesses would need it passed on)
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_USAGE_STATS_ENABLED", "RAY_DATA_USAGE_DISABLED")}
    os.environ.update(RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0", RAY_DATA_USAGE_DISABLED="1")
    env = dict(os.environ)
    cmd = [_ray_bin(), "start", "--head", "--block", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
           "--disable-usage-stats"]
    with open(out_path, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    t0 = time.monotonic()
    address = ""
    try:
        while True:  # on a loaded 2-core machine the head takes a while: poll, then join
            if proc.poll() is not None:
                pytest.fail(f"ray start exited with {proc.returncode}\n{_tail(out_path)}")
            found = re.search(r"ray start --address='([^']+)'", out_path.read_text(encoding="utf-8", errors="replace"))
            if found:
                address = found.group(1)
                break
            if time.monotonic() - t0 > RAY_START_TIMEOUT:
                pytest.fail(f"ray head not up after {RAY_START_TIMEOUT:g} s\n{_tail(out_path)}")
            time.sleep(0.3)
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
        print(f"\n[ray] head at {address} in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        yield address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        _stop_group(proc, first=signal.SIGTERM, grace=10.0)
        # `ray start` leaves the address of its cluster here for later ray.init() calls to join
        current = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
        if address and current.is_file() and current.read_text(encoding="utf-8").strip() == address:
            current.unlink()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not os.path.isdir(SHARED_DATA):
        pytest.skip("../shared/data is not present")
    found = []
    for sub in ("markdown_fastapi", "code"):
        for root, _, files in os.walk(os.path.join(SHARED_DATA, sub)):
            for name in files:
                path = os.path.join(root, name)
                if name.endswith((".md", ".py")) and os.path.getsize(path) > 300:
                    found.append((os.path.getsize(path), path))
    found.sort()
    base = tmp_path_factory.mktemp("corpus")
    for i, (_, path) in enumerate(found[:200]):
        rel = os.path.relpath(path, SHARED_DATA).replace(os.sep, "__")
        shutil.copyfile(path, base / f"{i:03d}_{rel}")
    return base


def _rows(uri: str, collection: str) -> Dict[str, Tuple[np.ndarray, str, str]]:
    """``{node id: (vector, doc id, text)}`` of a Milvus collection."""
    from ragloom.vector_stores import MilvusVectorStore

    store = MilvusVectorStore(uri=uri, collection_name=collection)
    try:
        return {n.node_id: (np.asarray(n.embedding, dtype=np.float32), n.ref_doc_id or "", n.text)
                for n in store.get_nodes()}
    finally:
        store.close()


def _spec(uri: str, collection: str) -> str:
    return "milvus://" + uri.split("://", 1)[1] + "/" + collection


def _assert_same(got: Dict[str, Tuple[np.ndarray, str, str]], want: Dict[str, Tuple[np.ndarray, str, str]]) -> None:
    assert len(got) == len(want)
    assert set(got) == set(want)
    worst = max(float(np.abs(got[k][0] - want[k][0]).max()) for k in want)
    assert worst < 1e-5, worst
    assert all(got[k][1:] == want[k][1:] for k in want)


@pytest.fixture(scope="module")
def reference(milvus_server: str, corpus: Path, tmp_path_factory: pytest.TempPathFactory
              ) -> Dict[str, Tuple[np.ndarray, str, str]]:
    """The local engine's build of the corpus into collection ``ref``."""
    from ragloom.ingestion.paths import index_paths

    summary = index_paths([corpus], tmp_path_factory.mktemp("ref_index"), show_progress=False,
                          vector_store=_spec(milvus_server, "ref"))
    assert summary.files_read == 200 and not summary.skipped
    rows = _rows(milvus_server, "ref")
    assert len(rows) == summary.nodes_total > 200
    return rows


def test_a_ray_run_into_milvus_is_incremental_and_deletes_what_is_gone(ray_address, milvus_server, corpus, tmp_path):
    from ragloom.ingestion.paths import index_paths

    work = tmp_path / "corpus"
    shutil.copytree(corpus, work)
    index_dir = tmp_path / "index"
    spec = _spec(milvus_server, "ray_incremental")
    first = index_paths([work], index_dir, show_progress=False, engine="ray", ray_address=ray_address,
                        num_workers=2, vector_store=spec)
    assert first.extra["engine"] == "ray" and first.documents["added"] == 200
    got = _rows(milvus_server, "ray_incremental")
    # (another folder, so longer file paths in the embedded metadata: other chunks than ``reference``)
    assert first.nodes_embedded == first.nodes_written == first.nodes_total == len(got)

    again = index_paths([work], index_dir, show_progress=False, engine="ray", ray_address=ray_address,
                        num_workers=2)
    assert again.nodes_embedded == 0 and again.documents["unchanged"] == 200 and again.batches == 0

    edited = sorted(work.iterdir())[5]
    edited.write_text(edited.read_text(encoding="utf-8") + "\n\nA new closing paragraph about Ray.\n",
                      encoding="utf-8")
    gone = sorted(work.iterdir())[7]
    gone.unlink()
    third = index_paths([work], index_dir, show_progress=False, engine="ray", ray_address=ray_address)
    rows = _rows(milvus_server, "ray_incremental")
    edited_id = next(v[1] for v in rows.values() if v[1].endswith(edited.name))
    assert third.documents["updated"] == 1 and third.documents["deleted"] == 1
    assert third.nodes_embedded == sum(1 for v in rows.values() if v[1] == edited_id)
    assert not any(v[1].endswith(gone.name) for v in rows.values())
    assert any("A new closing paragraph about Ray." in v[2] for v in rows.values() if v[1] == edited_id)
    unchanged_before = {k: v for k, v in got.items() if v[1] != edited_id and not v[1].endswith(gone.name)}
    assert all(k in rows and np.array_equal(rows[k][0], v[0]) for k, v in unchanged_before.items())


def test_the_same_corpus_and_config_give_the_same_ids_and_vectors_as_the_local_engine(
        ray_address, milvus_server, corpus, reference, tmp_path):
    from ragloom.ingestion.paths import index_paths

    summary = index_paths([corpus], tmp_path / "index", show_progress=False, engine="ray", ray_address=ray_address,
                          vector_store=_spec(milvus_server, "ray_same"))
    assert summary.nodes_written == len(reference)
    _assert_same(_rows(milvus_server, "ray_same"), reference)


def _embed_actor_busy() -> Optional[int]:
    """The pid of an embed actor running a batch, or ``None``.  Ray titles an actor's process
    ``ray::<actor repr>`` between tasks and ``ray::<actor repr>.<method>`` while it runs one (Ray
    Data's map worker runs a batch in ``submit``)."""
    import psutil

    for proc in psutil.process_iter(["cmdline"]):
        title = " ".join(proc.info["cmdline"] or [])
        if title.startswith("ray::") and "_Transformer" in title and ".submit" in title:
            return proc.pid
    return None


def test_killing_an_embed_actor_mid_run_still_gives_the_exact_store(
        ray_address, milvus_server, corpus, reference, tmp_path):
    from ragloom.ingestion.paths import index_paths

    result: dict = {}

    def run() -> None:
        try:
            result["summary"] = index_paths([corpus], tmp_path / "index", show_progress=False, engine="ray",
                                            ray_address=ray_address, num_workers=2,
                                            files_per_batch=4,
                                            vector_store=_spec(milvus_server, "ray_actor_kill"))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            result["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    # killed while it runs a batch (the first one loads the model: seconds), so that Ray must restart
    # the actor and retry that batch; waiting for a commit instead raced with the end of the embed
    # stage (int8 embeds the 200 files before the driver commits its first batch on a loaded machine)
    deadline, pid = time.monotonic() + 240, None
    while pid is None and thread.is_alive() and time.monotonic() < deadline:
        pid = _embed_actor_busy()
        time.sleep(0.02)
    assert pid is not None, "no embed actor was seen running a batch"
    os.kill(pid, signal.SIGKILL)
    thread.join(600)
    assert not thread.is_alive()
    assert "error" not in result, result.get("error")
    assert result["summary"].nodes_written == len(reference)
    _assert_same(_rows(milvus_server, "ray_actor_kill"), reference)


def test_sigkill_of_the_driver_then_a_rerun_equals_a_clean_build(
        ray_address, milvus_server, corpus, reference, tmp_path):
    index_dir = tmp_path / "index"
    spec = _spec(milvus_server, "ray_driver_kill")
    args = ["index", str(corpus), "--index-dir", str(index_dir), "--engine", "ray", "--address", ray_address,
            "--vector-store", spec, "--no-progress", "--json",
            # small blocks: the 3rd commit comes early, before the writers have put every node in Milvus
            "--files-per-batch", "4"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    killed = subprocess.run([sys.executable, str(KILL_POINTS), json.dumps({"in_commit": 3}), *args],
                            capture_output=True, text=True, env=env, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    partial = _rows(milvus_server, "ray_driver_kill")
    assert 0 < len(partial) < len(reference)  # killed part way, with nodes already in Milvus
    from ragloom.storage import StorageContext

    sc = StorageContext.from_defaults(persist_dir=str(index_dir))
    recorded = sc.docstore.get_source_document_hashes()
    assert any(v.startswith("pending:") for v in recorded.values())
    sc.close()

    rerun = subprocess.run([sys.executable, "-m", "ragloom", *args], capture_output=True, text=True, env=env,
                           timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    summary = json.loads(rerun.stdout)
    assert summary["documents"]["unchanged"] >= 1 and summary["documents"]["in_index"] == 200
    _assert_same(_rows(milvus_server, "ray_driver_kill"), reference)
    sc = StorageContext.from_defaults(persist_dir=str(index_dir))
    assert not any(v.startswith("pending:") for v in sc.docstore.get_source_document_hashes().values())
    sc.close()


def test_ragloom_query_answers_from_the_milvus_collection_the_index_recorded(
        ray_address, milvus_server, corpus, reference, tmp_path):
    from ragloom.ingestion.paths import index_paths
    from ragloom.service import IndexService

    index_dir = tmp_path / "index"
    index_paths([corpus], index_dir, show_progress=False, engine="ray", ray_address=ray_address,
                vector_store=_spec(milvus_server, "ray_query"))
    service = IndexService(index_dir)
    out = service.query("how do I declare a path parameter", top_k=3)  # hybrid: dense on Milvus
    assert len(out["results"]) == 3 and out["mode"] == "dense"
    assert all(r["text"] for r in out["results"])
    with pytest.raises(ValueError, match="keyword"):
        service.query("path parameter", mode="keyword")
    with pytest.raises(ValueError, match="ray_query"):
        index_paths([corpus], index_dir, show_progress=False, vector_store=_spec(milvus_server, "other"))


# -- IngestionPipeline(engine="ray") into the embedded SQLite store (single node) -------------------
def _pipeline(engine: str, **kwargs):
    from ragloom.embeddings import resolve_embed_model
    from ragloom.ingestion import IngestionPipeline
    from ragloom.node_parser import SentenceSplitter
    from ragloom.storage import StorageContext

    sc = StorageContext.from_defaults()
    model = resolve_embed_model("default")
    pipeline = IngestionPipeline(transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=8), model],
                                 docstore=sc.docstore, vector_store=sc.vector_store,
                                 docstore_strategy="upserts_and_delete", engine=engine, **kwargs)
    return pipeline, sc


def _documents(n: int = 12):
    from ragloom import Document

    return [Document(text=f"Report {i}. " + " ".join(f"Sentence {j} of report {i} about river {i % 3}."
                                                   for j in range(30)), id_=f"doc-{i}") for i in range(n)]


def test_pipeline_engine_ray_writes_what_the_local_engine_writes_into_sqlite(ray_address):
    from ragloom.ingestion.ray_engine import RayOptions

    local, sc_local = _pipeline("local")
    # 3 embed actors on a 2-CPU cluster: they share the CPUs instead of starving the read tasks
    ray_run, sc_ray = _pipeline("ray", ray_options=RayOptions(address=ray_address, num_workers=3))
    docs = _documents()
    written_local = local.run(documents=[d.copy() for d in docs])
    written_ray = ray_run.run(documents=[d.copy() for d in docs])
    assert sorted(n.node_id for n in written_ray) == sorted(n.node_id for n in written_local)
    a = {n.node_id: np.asarray(n.embedding) for n in sc_local.vector_store.get_nodes()}
    b = {n.node_id: np.asarray(n.embedding) for n in sc_ray.vector_store.get_nodes()}
    assert a.keys() == b.keys() and max(float(np.abs(a[k] - b[k]).max()) for k in a) < 1e-5
    assert ray_run.last_stats.added == len(docs) and ray_run.last_stats.nodes_embedded == len(b)

    # a re-run with one document edited and one left out: only the edited one is embedded again
    docs[0].set_content(docs[0].text + " An added closing sentence.")
    ray_run.run(documents=[d.copy() for d in docs[:-1]])
    stats = ray_run.last_stats
    assert (stats.updated, stats.unchanged, stats.deleted) == (1, len(docs) - 2, 1)
    assert stats.nodes_embedded == len(sc_ray.docstore.get_ref_doc_info("doc-0").node_ids)
    assert not sc_ray.docstore.get_ref_doc_info(docs[-1].id_)


def test_pipeline_engine_ray_reports_a_bad_document_and_writes_the_others(ray_address):
    from ragloom import Document
    from ragloom.errors import IngestionError
    from ragloom.ingestion.ray_engine import RayOptions

    pipeline, sc = _pipeline("ray", ray_options=RayOptions(address=ray_address))
    docs = _documents(4)
    bad = Document(text="short text", id_="bad", metadata={"note": "x " * 200})  # metadata over the budget
    with pytest.raises(IngestionError) as info:
        pipeline.run(documents=[*docs, bad], raise_on_error=True)
    assert [f.doc_id for f in info.value.failures] == ["bad"]
    assert set(sc.docstore.get_source_document_hashes()) == {d.id_ for d in docs}


def test_engine_ray_refuses_what_it_cannot_do(ray_address):
    from ragloom.ingestion import DocstoreStrategy, IngestionPipeline
    from ragloom.ingestion.ray_engine import RayOptions
    from ragloom.schema import TextNode

    with pytest.raises(ValueError, match="engine must be"):
        IngestionPipeline(transformations=[], engine="spark")
    with pytest.raises(ValueError, match="num_workers"):
        RayOptions(num_workers=0)
    with pytest.raises(ValueError, match="ray_options needs engine='ray'"):
        IngestionPipeline(transformations=[], ray_options=RayOptions())
    pipeline, _ = _pipeline("ray", ray_options=RayOptions(address=ray_address))
    with pytest.raises(ValueError, match="whole Documents"):
        pipeline.run(nodes=[TextNode(text="a pre-split node", id_="n1")])
    dup, _ = _pipeline("ray", ray_options=RayOptions(address=ray_address))
    dup.docstore_strategy = DocstoreStrategy.DUPLICATES_ONLY
    with pytest.raises(ValueError, match="DUPLICATES_ONLY"):
        dup.run(documents=_documents(1))
    with pytest.raises(ValueError, match="already joined"):
        _pipeline("ray", ray_options=RayOptions(address="127.0.0.1:1"))[0].run(documents=_documents(1))


def test_ragloom_index_names_a_ray_address_where_nothing_answers(tmp_path, corpus):
    (port,) = free_ports(1)
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "ragloom", "index", str(corpus), "--index-dir", str(tmp_path / "ix"),
                          "--engine", "ray", "--address", f"127.0.0.1:{port}"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 1 and time.monotonic() - t0 < 60
    assert f"no Ray cluster answers at 127.0.0.1:{port}" in out.stderr and "Traceback" not in out.stderr


def test_a_collection_dropped_behind_the_index_is_reported_and_full_rebuilds_it(milvus_server, corpus, tmp_path):
    from pymilvus import MilvusClient

    from ragloom.ingestion.paths import index_paths

    small = tmp_path / "small"
    small.mkdir()
    for path in sorted(corpus.iterdir())[:3]:
        shutil.copyfile(path, small / path.name)
    spec = _spec(milvus_server, "dropped_behind")
    first = index_paths([small], tmp_path / "index", show_progress=False, vector_store=spec)
    assert "warning" not in first.extra
    client = MilvusClient(uri=milvus_server)
    client.drop_collection("dropped_behind")
    client.close()
    again = index_paths([small], tmp_path / "index", show_progress=False)
    assert again.nodes_embedded == 0 and "changed outside ragloom" in again.extra["warning"]
    full = index_paths([small], tmp_path / "index", show_progress=False, full=True)
    assert "warning" not in full.extra and full.nodes_total == first.nodes_total
