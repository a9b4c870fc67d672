"""The torch-free install (``scripts/install_without_torch.sh``): index and query a folder with the
bundled model on ONNX Runtime, its graph written by ragloom from the safetensors weights.

Runs in ``scripts/test_without_torch.sh`` (a fresh environment with no torch, part of ``.ci/run``);
in an environment that has torch it is skipped, and ``tests/embeddings/test_onnx_build.py`` checks
the same path with torch's imports blocked, against torch's own export."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

# RAGLOOM_REQUIRE_NO_TORCH=1 (scripts/test_without_torch.sh) makes it run, and fail, wherever torch is found
_HAS_TORCH = any(importlib.util.find_spec(m) is not None for m in ("torch", "sentence_transformers"))
pytestmark = pytest.mark.skipif(
    not os.environ.get("RAGLOOM_REQUIRE_NO_TORCH") and _HAS_TORCH,
    reason="torch is installed here; scripts/test_without_torch.sh runs this in an environment without it",
)


def _ragloom(*args, env):
    return subprocess.run([sys.executable, "-m", "ragloom", *args], env=env, capture_output=True, text=True,
                          timeout=600)


def test_index_and_query_without_torch(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tea.md").write_text("# Tea\n\nGreen tea is brewed at eighty degrees for three minutes.\n")
    (docs / "panda.md").write_text("# 熊猫\n\n大熊猫每天要吃很多竹子。The giant panda eats bamboo all day.\n")
    env = dict(os.environ, RAGLOOM_CACHE_DIR=str(tmp_path / "cache"), HF_HUB_OFFLINE="1")
    res = _ragloom("index", str(docs), "--index-dir", str(tmp_path / "idx"), "--json", env=env)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["nodes_written"] >= 2 and summary["nodes_embedded"] == summary["nodes_written"]
    exports = [json.loads(p.read_text()) for p in (tmp_path / "cache" / "onnx").glob("*/export.json")]
    assert {e["exporter"] for e in exports} == {"onnx_build"}
    assert {e.get("quantize") for e in exports} == {None, "int8"}  # int8 is quantized from the fp32 graph
    assert all(e["fused"].get("Attention") == 6 for e in exports if e.get("quantize") is None)
    res = _ragloom("query", "how hot should the water be for tea", "--index-dir", str(tmp_path / "idx"), "--json",
                   env=env)
    assert res.returncode == 0, res.stderr
    assert "eighty degrees" in json.loads(res.stdout)["results"][0]["text"]
    again = _ragloom("index", str(docs), "--index-dir", str(tmp_path / "idx"), "--json", env=env)
    assert json.loads(again.stdout)["nodes_embedded"] == 0
    assert importlib.util.find_spec("torch") is None  # nothing installed it on the way
    assert importlib.util.find_spec("sentence_transformers") is None


def test_an_extra_installs_without_torch(tmp_path):
    """``scripts/install_without_torch.sh ".[office]"`` (as scripts/test_without_torch.sh runs it) installs
    the extra's readers; it installed none of them before, so a spreadsheet was skipped ("install
    ragloom[office] to read it"), and plain pip would have brought torch."""
    import openpyxl

    docs = tmp_path / "docs"
    docs.mkdir()
    book = openpyxl.Workbook()
    book.active.append(["tea", "water temperature"])
    book.active.append(["oolong", "ninety degrees"])
    book.save(docs / "teas.xlsx")
    env = dict(os.environ, RAGLOOM_CACHE_DIR=str(tmp_path / "cache"), HF_HUB_OFFLINE="1")
    res = _ragloom("index", str(docs), "--index-dir", str(tmp_path / "idx"), "--json", env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["nodes_written"] >= 1
    res = _ragloom("query", "oolong water temperature", "--index-dir", str(tmp_path / "idx"), "--json", env=env)
    assert "ninety degrees" in json.loads(res.stdout)["results"][0]["text"]
    assert importlib.util.find_spec("torch") is None
