"""The hostile corpus: every kind of bad input of issue 15 in one folder, through `ragloom index`
in real processes.

The folder holds names that are not UTF-8, a long single line, a 200 MB file and a 3 GB sparse
file, a FIFO and a symlink loop, a base64 blob, a zip bomb and a zip of real documents, a truncated
and an encrypted PDF, broken office files, an encrypted Outlook message, images, and ordinary prose.
A run must end with exit status 0, report every file that is not indexed with the right reason,
keep its peak RSS bounded, and an index interrupted by Ctrl-C (SIGINT) and re-run must equal a
clean build.  A file that grows while it is read is skipped as changed (in-process: the timing is
ours to control).  The 50 MB line of the issue is split here in a child process (memory bound);
its end-to-end time and memory through `ragloom index` are in benchmarks/hostile.py --index.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest
from index_state import assert_same, read_state

from ragloom.readers import SimpleDirectoryReader
from ragloom.readers.directory import REASON_CHANGED

#: Peak RSS (MiB) a `ragloom index` run over the hostile corpus may reach: the bundled model and
#: ONNX Runtime take about 300 MiB; the 200 MB and 3 GB files must never be loaded.
RSS_LIMIT_MB = 1024
RUN_TIMEOUT = 300
EX = ("mixed_docs", "example-docs")


def _prose(i: int) -> str:
    topics = ["harbour cranes", "tide tables", "river barges", "lighthouse keepers", "ferry timetables"]
    return " ".join(f"Paragraph {j} of note {i} is about {topics[(i + j) % 5]} and the people who mind them."
                    for j in range(60))


def _hostile(root: Path, shared_data: str) -> dict:
    """Write the corpus; returns ``{file name: the start of its expected skip reason}``."""
    ex = Path(shared_data, *EX)
    raw = os.fsencode(root)
    for name in (b"caf\xe9.txt", b"\xff\xfe-notes.md"):
        with open(raw + b"/" + name, "wb") as f:
            f.write(_prose(len(name)).encode())
    for i in range(12):
        (root / f"note-{i:02d}.txt").write_text(_prose(i))
    words = "harbour crane tide river bank stone lantern meadow".split()
    (root / "one-line.txt").write_text(" ".join(words[i % 8] for i in range(40_000)))  # 250 KB, no newline
    with open(root / "huge.log", "wb") as f:  # 200 MB of real bytes: never read
        block = b"log line about nothing in particular\n" * 28_000
        while f.tell() < 200 * 2**20:
            f.write(block)
        f.truncate(200 * 2**20)
    with open(root / "sparse.txt", "wb") as f:
        f.truncate(3 * 2**30)
    os.mkfifo(root / "pipe.txt")
    os.symlink(root / "loop_b.txt", root / "loop_a.txt")
    os.symlink(root / "loop_a.txt", root / "loop_b.txt")
    blob = base64.b64encode(bytes(range(256)) * 40).decode()
    (root / "attachment-dump.txt").write_text("\n".join(blob[i:i + 76] for i in range(0, len(blob), 76)))
    with zipfile.ZipFile(root / "bomb.zip", "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open("zeros.txt", "w") as out:
            for _ in range(64):
                out.write(b"\0" * 2**20)
    shutil.copyfile(ex / "simple.zip", root / "simple.zip")
    pdf = (ex / "pdf" / "multi-column.pdf").read_bytes()
    (root / "truncated.pdf").write_bytes(pdf[: len(pdf) // 3])
    shutil.copyfile(ex / "pdf" / "password.pdf", root / "password.pdf")
    (root / "broken.docx").write_bytes(b"PK\x03\x04 not a real package")
    shutil.copyfile(ex / "fake-power-point-malformed.pptx", root / "malformed.pptx")
    shutil.copyfile(ex / "fake-encrypted.msg", root / "encrypted.msg")
    shutil.copyfile(ex / "password_protected.xlsx", root / "password.xlsx")
    shutil.copyfile(ex / "img" / "example.jpg", root / "photo.jpg")
    shutil.copyfile(ex / "fake.doc", root / "old.doc")
    return {
        "huge.log": "too large: 200 MB",
        "sparse.txt": "too large: 3072 MB",
        "pipe.txt": "not a regular file",
        "loop_a.txt": "a symlink loop",
        "loop_b.txt": "a symlink loop",
        "bomb.zip": "no readable file in the archive (zeros.txt: compression ratio",
        "truncated.pdf": "corrupt",
        "password.pdf": "encrypted",
        "broken.docx": "corrupt DOCX",
        "password.xlsx": "encrypted",
        "encrypted.msg": "encrypted e-mail",
        "photo.jpg": "image: no text to read",
        "old.doc": "unsupported format (Word 97-2003; convert it to DOCX)",
    }


@pytest.fixture(scope="module", autouse=True)
def exported_model() -> None:
    """Export the bundled model to ONNX once, here, before any child process is measured: on a
    machine with an empty cache the one-time export (torch and transformers loaded) peaks near
    1.6 GB, which is not what indexing costs."""
    from ragloom.embeddings import HuggingFaceEmbedding

    HuggingFaceEmbedding().get_text_embedding("warm up")


def _env() -> dict:
    return dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")


#: Runs the ragloom command and, at exit, writes the process's own peak RSS (``VmHWM``, KiB) to
#: ``$HWM_FILE``.  Not ``wait4``'s ``ru_maxrss``: Linux carries that across ``fork`` + ``exec``, so a
#: child of a 1.5 GB test process reported 1.5 GB whatever it did.
HWM_WRAPPER = r"""
import atexit, os, sys
def _hwm():
    with open(os.environ["HWM_FILE"], "w") as f:
        f.write(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1])
atexit.register(_hwm)
if os.environ.get("COMMIT_DELAY"):  # seconds to wait after each commit: a run slow enough to interrupt
    import time
    from ragloom.ingestion.engine import set_commit_hook
    set_commit_hook(lambda event: time.sleep(float(os.environ["COMMIT_DELAY"])) if event == "after_commit" else None)
from ragloom.cli.main import main
main()
"""


def _cmd(root: Path, idx: Path) -> list:
    return [sys.executable, "-c", HWM_WRAPPER, "index", str(root), "--index-dir", str(idx), "--json",
            "--no-progress", "--files-per-batch", "1"]


def _hwm_env(tmp: Path) -> dict:
    return dict(_env(), HWM_FILE=str(tmp))


def _run(root: Path, idx: Path) -> tuple:
    """One `ragloom index` process to its end: ``(summary, its peak RSS in MiB)``."""
    hwm = idx.parent / f"{idx.name}.hwm"
    proc = subprocess.run(_cmd(root, idx), env=_hwm_env(hwm), capture_output=True, timeout=RUN_TIMEOUT)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    assert b"Traceback" not in proc.stderr
    return json.loads(proc.stdout), int(hwm.read_text()) / 1024


def _nodes(idx: Path) -> int:
    try:
        with sqlite3.connect(f"file:{idx / 'ragloom.sqlite'}?mode=ro", uri=True, timeout=1) as db:
            return int(db.execute("SELECT count(*) FROM vs_default_nodes").fetchone()[0])
    except sqlite3.Error:
        return 0


@pytest.mark.requires_extra("office")  # the broken and encrypted office files name their format's reader
@pytest.mark.requires_extra("outlook")
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX only (FIFOs)")
def test_hostile_corpus_is_reported_bounded_and_survives_ctrl_c(tmp_path: Path, shared_data: str) -> None:
    root = tmp_path / "hostile"
    root.mkdir()
    expected = _hostile(root, shared_data)

    clean, rss = _run(root, tmp_path / "clean")
    assert rss < RSS_LIMIT_MB, f"peak RSS {rss:.0f} MiB"
    reasons = {os.path.basename(s["path"]): s["reason"] for s in clean["skipped"] if "!/" not in s["path"]}
    for name, start in expected.items():
        assert name in reasons, (name, reasons)
        assert reasons[name].startswith(start) or start in reasons[name], (name, reasons[name])
    assert set(reasons) == set(expected), set(reasons) ^ set(expected)
    assert [os.path.basename(j["path"]) for j in clean["junk"]] == ["attachment-dump.txt"]
    # read: 14 text files, the one-line file, the base64 file (its junk chunks left out), the
    # malformed deck (its readable slide) and the zip (two members: two documents)
    assert clean["files_read"] == 18 and clean["documents"]["added"] == 19
    state = read_state(tmp_path / "clean")
    texts = [v[1] for v in state["nodes"].values()]
    assert any("Stanley" in t for t in texts)  # a member of simple.zip
    assert sum("lantern" in t for t in texts) >= 5  # the long line, split

    # Ctrl-C after the first committed batch, then a re-run: the same index as the clean build.  The
    # child waits a quarter second after each commit (about 18 of them), so the interrupt, sent once a
    # 50 ms poll sees nodes, lands with batches still to come even on a loaded machine (without the
    # wait a run once finished its last batches within one poll).  A short wait, not a pause until
    # the signal: the commit can run on a thread that SIGINT's KeyboardInterrupt never reaches.
    idx = tmp_path / "interrupted"
    proc = subprocess.Popen(_cmd(root, idx), env=dict(_hwm_env(tmp_path / "interrupted.hwm"), COMMIT_DELAY="0.25"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + RUN_TIMEOUT
    while _nodes(idx) == 0 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=RUN_TIMEOUT)
    assert proc.returncode != 0, "the run ended before the interrupt: give it more work"
    assert b"Traceback" not in err, err.decode(errors="replace")[-2000:]
    assert proc.returncode == 130 and b"run the same command again" in err, err.decode(errors="replace")[-2000:]
    partial = _nodes(idx)
    assert 0 < partial < len(state["nodes"])
    again, _ = _run(root, idx)
    assert again["nodes_embedded"] < clean["nodes_embedded"]  # the committed batches were kept
    assert_same(read_state(idx), state)
    # and an unchanged folder does nothing
    third, _ = _run(root, idx)
    assert third["nodes_embedded"] == 0 and third["documents"]["unchanged"] == 19


def test_a_file_growing_while_it_is_read_is_skipped_as_changed(tmp_path: Path) -> None:
    f = tmp_path / "growing.log"
    f.write_text("A log line about the harbour cranes and the tide.\n" * 100_000)  # 5 MB
    stop = threading.Event()

    def append() -> None:
        with open(f, "a") as out:
            while not stop.is_set():
                out.write("another line\n")
                out.flush()
                time.sleep(0.0005)

    writer = threading.Thread(target=append)
    writer.start()
    try:
        time.sleep(0.05)
        r = SimpleDirectoryReader(input_files=[str(f)])
        docs = r.load_data()
    finally:
        stop.set()
        writer.join()
    assert docs == [] and [s.reason for s in r.report.skipped] == [REASON_CHANGED]
    assert r.report.skipped[0].transient


LINE_CHILD = r"""
import json, random, sys
from ragloom.embeddings import resolve_embed_model
from ragloom.schema import Document
from ragloom.settings import default_node_parser
words = "harbour crane tide river bank stone lantern meadow".split()
rnd = random.Random(0)
text = " ".join(rnd.choice(words) for _ in range(int(sys.argv[1]) // 6))
parser = default_node_parser(resolve_embed_model("default"), None, None, "auto")
nodes = parser.get_nodes_from_documents([Document(text=text, id_="line", metadata={"file_path": "/x/line.txt"})])
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1]
print(json.dumps({"chars": len(text), "nodes": len(nodes), "end": nodes[-1].end_char_idx,
                  "starts_at_0": nodes[0].start_char_idx == 0, "peak_rss_kib": int(hwm)}))
"""


@pytest.mark.slow
def test_a_50_mb_line_splits_linearly_in_bounded_memory(tmp_path: Path) -> None:
    """The 50 MB single line of the issue (it once took 7.85 GB and hours): split by ``ragloom
    index``'s default parser in a child process, all of it covered, peak RSS under 1 GiB."""
    proc = subprocess.run([sys.executable, "-c", LINE_CHILD, str(50_000_000)], env=_env(), capture_output=True,
                          timeout=RUN_TIMEOUT)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    got = json.loads(proc.stdout)
    assert got["end"] == got["chars"] and got["starts_at_0"] and got["nodes"] > 30_000
    assert got["peak_rss_kib"] / 1024 < RSS_LIMIT_MB, f"peak RSS {got['peak_rss_kib'] / 1024:.0f} MiB"
