"""The torch-free ONNX export (ragloom.embeddings.onnx_build): a BERT graph written from config.json and
model.safetensors gives the torch exporter's vectors, fused by ONNX Runtime the same way, in a process
where torch, transformers and sentence-transformers cannot be imported."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ragloom.embeddings import onnx as onnx_mod
from ragloom.embeddings.huggingface import bundled_model_path
from ragloom.embeddings.onnx import OnnxEncoder, OnnxExportError, export_onnx
from ragloom.embeddings.onnx_build import build_bert_onnx

TEXTS = [
    "How do I reset my password?",
    "绿茶用八十度的水冲泡，三分钟后倒出。",
    "",
    "x",
    "a long text about brewing tea " * 80,  # over the 256-token window
    "Ünïcödé, emoji 🍵 and tabs\tand\nnewlines",
    "宝玉听了，便知是黛玉之意，忙笑道：「好妹妹，你且慢走。」",
    "The giant panda eats bamboo for up to fourteen hours a day, and sleeps between meals.",
    "def add(a, b):\n    return a + b\n",
    "Mixed 中英文 text: 数据库 index and 查询 query.",
]

#: Run in a fresh interpreter: torch, transformers and sentence-transformers raise ModuleNotFoundError
#: on import (as where they are not installed); builds fp32 and int8, embeds, saves the vectors.
_NO_TORCH = textwrap.dedent("""
    import importlib.abc, json, sys
    import numpy as np

    class _NoTorch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "transformers", "sentence_transformers"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, _NoTorch())
    from ragloom.embeddings import HuggingFaceEmbedding

    texts, out = json.loads(sys.argv[1]), sys.argv[2]
    fp32 = HuggingFaceEmbedding()
    int8 = HuggingFaceEmbedding(quantize="int8")
    np.save(out + "/fp32.npy", fp32.get_text_embedding_batch_array(texts))
    np.save(out + "/int8.npy", int8.get_text_embedding_batch_array(texts))
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "transformers", "sentence_transformers"))
    print(json.dumps({"backend": fp32.backend, "heavy": heavy, "meta": fp32.onnx_encoder.meta,
                      "meta8": int8.onnx_encoder.meta}))
""")


def _vectors(model_path):
    return OnnxEncoder(model_path).encode(TEXTS, 256)


def test_torch_free_export_gives_the_torch_graph_vectors(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    env = dict(os.environ, RAGLOOM_CACHE_DIR=str(tmp_path / "free"), HF_HUB_OFFLINE="1")
    env.pop("RAGLOOM_ONNX_EXPORTER", None)  # auto: falls back to onnx_build because torch does not import
    run = subprocess.run([sys.executable, "-c", _NO_TORCH, json.dumps(TEXTS), str(out)],
                         capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["heavy"] == [] and report["backend"] == "onnx"
    meta, meta8 = report["meta"], report["meta8"]
    assert meta["exporter"] == meta8["exporter"] == "onnx_build"
    assert meta["fused"] == {"Attention": 6, "BiasGelu": 6, "EmbedLayerNormalization": 1,
                             "SkipLayerNormalization": 12}  # what ONNX Runtime fuses in torch's graph
    assert meta["inputs"] == ["input_ids", "attention_mask", "token_type_ids"]

    # the same model exported by torch into another cache (the same cache key: the same vectors)
    monkeypatch.setenv("RAGLOOM_CACHE_DIR", str(tmp_path / "torch"))
    monkeypatch.setenv("RAGLOOM_ONNX_EXPORTER", "torch")
    model = bundled_model_path()
    folder = export_onnx(model)
    torch_meta = json.loads((folder / "export.json").read_text())
    assert torch_meta["exporter"] == "torch" and torch_meta["fused"] == meta["fused"]
    assert (tmp_path / "free" / "onnx" / folder.name / "model.onnx").is_file()  # the same cache key

    free, ref = np.load(out / "fp32.npy"), _vectors(model)
    assert free.shape == ref.shape == (len(TEXTS), 384)
    assert (free * ref).sum(axis=1).min() > 0.99999
    assert np.abs(free - ref).max() < 1e-5
    cos8 = (np.load(out / "int8.npy") * ref).sum(axis=1)
    assert 0.95 < cos8.min() and cos8.max() < 0.99999  # int8 quantization of it works: close, really quantized


def test_cls_and_max_pooling_match_sentence_transformers(tmp_path):
    """CLS and max pooling (with and without Normalize) on the unfused graph, against the pooling of
    sentence-transformers' token embeddings (its Pooling module: max over tokens with padding at -1e9)."""
    import onnxruntime as ort
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

    model = bundled_model_path()
    tokens = SentenceTransformer(str(model), device="cpu", local_files_only=True).encode(
        TEXTS, output_value="token_embeddings", convert_to_numpy=False)
    expected = {
        "cls": np.stack([t[0].numpy() for t in tokens]),
        "max": np.stack([t.max(dim=0).values.numpy() for t in tokens]),
    }
    tok = Tokenizer.from_file(str(model / "tokenizer.json"))
    tok.enable_truncation(256)
    tok.enable_padding()
    enc = tok.encode_batch(TEXTS)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
            "token_type_ids": np.zeros_like(ids)}
    for pooling, normalize in (("cls", False), ("max", True)):
        graph = tmp_path / f"{pooling}.onnx"
        build_bert_onnx(model, graph, {"pooling": pooling, "normalize": normalize})
        session = ort.InferenceSession(str(graph), providers=["CPUExecutionProvider"])
        vecs = session.run(["sentence_embedding"], feed)[0]
        ref = expected[pooling]
        if normalize:
            ref = ref / np.linalg.norm(ref, axis=1, keepdims=True)
        assert vecs.shape == ref.shape == (len(TEXTS), 384)
        assert np.abs(vecs - ref).max() < 1e-5 * max(1.0, float(np.abs(ref).max())), pooling


def _fake_bert(tmp_path, **config):
    folder = tmp_path / "fake"
    folder.mkdir(exist_ok=True)
    base = json.loads((bundled_model_path() / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(dict(base, **config)))
    return folder


def test_unsupported_models_raise_export_errors(tmp_path):
    plan = {"pooling": "mean", "normalize": True}
    out = tmp_path / "g.onnx"
    with pytest.raises(OnnxExportError, match="model_type 'bert' only"):
        build_bert_onnx(_fake_bert(tmp_path, model_type="xlm-roberta"), out, plan)
    with pytest.raises(OnnxExportError, match="hidden_act"):
        build_bert_onnx(_fake_bert(tmp_path, hidden_act="gelu_new"), out, plan)
    with pytest.raises(OnnxExportError, match="absolute positions"):
        build_bert_onnx(_fake_bert(tmp_path, position_embedding_type="relative_key"), out, plan)
    with pytest.raises(OnnxExportError, match="model.safetensors"):  # e.g. only pytorch_model.bin
        build_bert_onnx(_fake_bert(tmp_path), out, plan)
    from safetensors.numpy import save_file

    save_file({"embeddings.word_embeddings.weight": np.zeros((30522, 8), np.float32)},
              str(tmp_path / "fake" / "model.safetensors"))
    with pytest.raises(OnnxExportError, match="shape"):
        build_bert_onnx(_fake_bert(tmp_path), out, plan)
    assert not out.exists()


def test_exporter_choice(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLOOM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RAGLOOM_ONNX_EXPORTER", "tensorrt")
    with pytest.raises(OnnxExportError, match="RAGLOOM_ONNX_EXPORTER"):
        export_onnx(bundled_model_path())
    monkeypatch.setenv("RAGLOOM_ONNX_EXPORTER", "torch")
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    with pytest.raises(OnnxExportError, match="with torch needs torch"):
        export_onnx(bundled_model_path())
    built = []

    def stub(*args):
        built.append(args)
        raise OnnxExportError("stub")

    monkeypatch.setattr("ragloom.embeddings.onnx_build.build_bert_onnx", stub)
    monkeypatch.setenv("RAGLOOM_ONNX_EXPORTER", "auto")
    with pytest.raises(OnnxExportError, match="stub"):
        export_onnx(bundled_model_path())
    assert len(built) == 1  # auto without torch: the torch-free builder
    assert onnx_mod.EXPORTERS == ("auto", "torch", "onnx")
