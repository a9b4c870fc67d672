"""Fixtures of the ``ragloom serve`` tests: a real server process on 127.0.0.1 over a small index
of English, Chinese and code files, built once per session with the bundled model."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Optional

import pytest

pytestmark = pytest.mark.requires_extra("server")

#: files of ../shared/data copied into the test corpus (English and Chinese Markdown, Chinese text, Python)
CORPUS_FILES = {
    "en/features.md": "markdown_fastapi/docs/en/docs/features.md",
    "en/python-types.md": "markdown_fastapi/docs/en/docs/python-types.md",
    "zh/features.md": "markdown_fastapi/docs/zh/docs/features.md",
    "zh/python-types.md": "markdown_fastapi/docs/zh/docs/python-types.md",
}
#: characters of 西游记 in the corpus (a Chinese plain-text file)
ZH_TEXT_CHARS = 12_000
#: seconds a server may take to start (it loads the embed model)
START_TIMEOUT = 180

_READY = re.compile(r"at (http://[^/\s]+)/")


def make_corpus(shared_data: str, dst: Path) -> Path:
    """Copy the test corpus into ``dst`` and return it (writable copies)."""
    for rel, src in CORPUS_FILES.items():
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(shared_data) / src, target)
    text = (Path(shared_data) / "zh_classics" / "西游记.utf8.txt").read_text(encoding="utf-8")
    (dst / "zh" / "西游记.txt").write_text(text[:ZH_TEXT_CHARS], encoding="utf-8")
    (dst / "code").mkdir(exist_ok=True)
    (dst / "code" / "stack.py").write_text(
        '"""A tiny stack."""\n\n\nclass Stack:\n    """Last in, first out."""\n\n'
        "    def __init__(self):\n        self.items = []\n\n"
        "    def push(self, item):\n        self.items.append(item)\n\n"
        "    def pop(self):\n        return self.items.pop()\n",
        encoding="utf-8",
    )
    return dst


def env() -> dict:
    return dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")


def run_index(corpus: Path, index_dir: Path, *extra: str) -> None:
    """``ragloom index`` in a subprocess (as a user would run it)."""
    res = subprocess.run([sys.executable, "-m", "ragloom.cli", "index", str(corpus), "--index-dir", str(index_dir),
                          "--no-progress", *extra], env=env(), capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]


@dataclass
class Server:
    """A running ``ragloom serve`` process."""

    url: str
    proc: subprocess.Popen
    log: Path
    index_dir: Path
    api_key: Optional[str] = None
    args: List[str] = field(default_factory=list)
    #: for servers made by :func:`start_writer`: the folder ``--allow-root`` names, and the folder above it
    root: Optional[Path] = None
    work: Optional[Path] = None

    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def client(self, **kwargs: Any) -> Any:
        import httpx

        return httpx.Client(base_url=self.url, headers=self.headers(), timeout=kwargs.pop("timeout", 120), **kwargs)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def start_server(index_dir: Path, log: Path, *args: str, api_key: Optional[str] = None,
                 timeout: float = START_TIMEOUT) -> Server:
    """Start ``ragloom serve --port 0`` on ``index_dir`` and wait until it listens."""
    cmd = [sys.executable, "-m", "ragloom.cli", "serve", "--index-dir", str(index_dir), "--port", "0", *args]
    if api_key:
        cmd += ["--api-key", api_key]
    fh = open(log, "w")
    proc = subprocess.Popen(cmd, env=env(), stdout=fh, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = _READY.search(log.read_text(errors="replace"))
        if match:
            return Server(match.group(1), proc, log, index_dir, api_key, list(args))
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"ragloom serve did not start:\n{log.read_text(errors='replace')[-3000:]}")


def start_writer(built_index: Path, work: Path) -> Server:
    """A server for tests that write: a copy of ``built_index`` in ``work``, ``--allow-root`` on
    ``work/root`` (created empty), the mock LLM."""
    index_dir = work / "idx"
    shutil.copytree(built_index, index_dir)
    root = work / "root"
    root.mkdir()
    srv = start_server(index_dir, work / "server.log", "--allow-root", str(root), "--llm", "mock")
    srv.root, srv.work = root, work
    return srv


@pytest.fixture(scope="session")
def corpus_dir(shared_data, tmp_path_factory) -> Path:
    return make_corpus(shared_data, tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="session")
def built_index(corpus_dir, tmp_path_factory) -> Path:
    """An index of the corpus built by ``ragloom index`` (copy it before writing to it)."""
    index_dir = tmp_path_factory.mktemp("built") / "idx"
    run_index(corpus_dir, index_dir)
    return index_dir


@pytest.fixture(scope="session")
def server(built_index, corpus_dir, tmp_path_factory):
    """One read-mostly server over a copy of ``built_index`` (tests that write use their own),
    with ``--allow-root`` on the corpus and the mock LLM (answers with its prompt)."""
    work = tmp_path_factory.mktemp("served")
    index_dir = work / "idx"
    shutil.copytree(built_index, index_dir)
    srv = start_server(index_dir, work / "server.log", "--allow-root", str(corpus_dir), "--llm", "mock")
    yield srv
    srv.stop()
    assert "Traceback" not in srv.log_text(), srv.log_text()[-3000:]


@pytest.fixture()
def fresh_server(built_index, corpus_dir, tmp_path):
    """A server of its own over a copy of ``built_index`` (for tests that write)."""
    index_dir = tmp_path / "idx"
    shutil.copytree(built_index, index_dir)
    srv = start_server(index_dir, tmp_path / "server.log", "--allow-root", str(corpus_dir), "--llm", "mock")
    yield srv
    srv.stop()
