"""The ONNX Runtime backend: the same vectors as torch, exported once and cached, int8 as a recorded
variant, a query path that imports no torch, and query vectors cached in the index folder."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ragloom.embeddings import HuggingFaceEmbedding, embed_model_from_identity
from ragloom.embeddings import onnx as onnx_mod
from ragloom.embeddings.cache import EmbeddingCache
from ragloom.embeddings.huggingface import bundled_model_path
from ragloom.embeddings.onnx import OnnxEncoder, OnnxExportError, export_onnx, onnx_model_dir

TEXTS = [
    "How do I reset my password?",
    "绿茶用八十度的水冲泡，三分钟后倒出。",
    "",
    "x",
    "a long text about brewing tea " * 80,  # over the 256-token window: truncated the same way
    "Ünïcödé, emoji 🍵 and tabs\tand\nnewlines",
]


@pytest.fixture(scope="module")
def torch_vectors():
    return HuggingFaceEmbedding(backend="torch", device="cpu").get_text_embedding_batch_array(TEXTS)


def test_fp32_onnx_vectors_equal_torch_vectors(torch_vectors):
    emb = HuggingFaceEmbedding()
    assert emb.backend == "onnx" and emb.device == "cpu"  # no GPU here: auto picks ONNX Runtime
    vecs = emb.get_text_embedding_batch_array(TEXTS)
    assert vecs.shape == torch_vectors.shape == (len(TEXTS), 384)
    cos = (vecs * torch_vectors).sum(axis=1)
    assert cos.min() > 0.99999, cos
    assert np.abs(vecs - torch_vectors).max() < 1e-4
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert emb.truncated_count == 1  # the long text, counted as on the torch path


def test_batches_and_singles_agree_and_order_is_kept():
    emb = HuggingFaceEmbedding(embed_batch_size=2)
    batch = emb.get_text_embedding_batch_array(TEXTS)
    singles = np.stack([emb.get_text_embedding_batch_array([t])[0] for t in TEXTS])
    assert np.abs(batch - singles).max() < 1e-5  # padding inside a batch changes nothing


def test_export_is_cached_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLOOM_CACHE_DIR", str(tmp_path))
    folder = export_onnx(bundled_model_path())
    assert folder.parent == tmp_path / "onnx" and (folder / "model.onnx").is_file()
    meta = json.loads((folder / "export.json").read_text())
    assert meta["pooling"] == "mean" and meta["normalize"] is True
    assert meta["inputs"] == ["input_ids", "attention_mask", "token_type_ids"]
    assert meta.get("fused", {}).get("Attention") == 6  # ORT's fusions applied to all six layers
    assert [p.name for p in (tmp_path / "onnx").iterdir() if p.name.startswith(".export-")] == []

    def no_export(*a, **k):
        raise AssertionError("exported again")

    monkeypatch.setattr(onnx_mod, "_export_fp32", no_export)
    assert export_onnx(bundled_model_path()) == folder
    monkeypatch.setattr(onnx_mod, "_content_hash", no_export)  # fingerprint remembered by stat
    assert onnx_model_dir(bundled_model_path()) == folder


def test_cache_key_follows_the_model_files(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLOOM_CACHE_DIR", str(tmp_path / "cache"))
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "config.json").write_text('{"hidden_size": 8}')
        (d / "model.safetensors").write_bytes(b"weights")
    assert onnx_model_dir(a) == onnx_model_dir(b)  # same content, same graph, wherever it lies
    assert onnx_model_dir(a) != onnx_model_dir(a, "int8")
    (b / "model.safetensors").write_bytes(b"other weights")
    assert onnx_model_dir(a) != onnx_model_dir(b)
    with pytest.raises(ValueError, match="quantize"):
        onnx_model_dir(a, "int4")


def _model_copy(tmp_path, pooling_mode):
    """The bundled model's files (symlinked) with another pooling configuration."""
    src = bundled_model_path()
    dst = tmp_path / f"model-{pooling_mode}"
    dst.mkdir()
    for f in src.iterdir():
        if f.is_file():
            (dst / f.name).symlink_to(f)
    (dst / "1_Pooling").mkdir()
    cfg = json.loads((src / "1_Pooling" / "config.json").read_text())
    for key in [k for k in cfg if k.startswith("pooling_mode_")]:
        cfg[key] = False
    cfg[f"pooling_mode_{pooling_mode}"] = True
    (dst / "1_Pooling" / "config.json").write_text(json.dumps(cfg))
    return dst


def test_cls_pooling_is_exported_and_matches_torch(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLOOM_CACHE_DIR", str(tmp_path / "cache"))
    folder = _model_copy(tmp_path, "cls_token")
    onnx = HuggingFaceEmbedding(model_name=str(folder), backend="onnx").get_text_embedding_batch_array(TEXTS[:3])
    ref = HuggingFaceEmbedding(model_name=str(folder), backend="torch", device="cpu")
    assert (onnx * ref.get_text_embedding_batch_array(TEXTS[:3])).sum(axis=1).min() > 0.99999


def test_unsupported_model_raises_for_onnx_and_falls_back_for_auto(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("RAGLOOM_CACHE_DIR", str(tmp_path / "cache"))
    folder = _model_copy(tmp_path, "weightedmean_tokens")
    with pytest.raises(OnnxExportError, match="pooling"):
        HuggingFaceEmbedding(model_name=str(folder), backend="onnx").get_text_embedding("tea")
    auto = HuggingFaceEmbedding(model_name=str(folder))
    vec = auto.get_text_embedding("tea")
    assert len(vec) == 384 and auto.backend == "torch"
    assert "cannot run on ONNX Runtime" in caplog.text
    assert not (tmp_path / "cache" / "onnx").exists() or not [
        p for p in (tmp_path / "cache" / "onnx").iterdir() if p.name != "fingerprints"
    ]


def test_int8_is_close_but_recorded_as_its_own_variant(torch_vectors):
    emb = HuggingFaceEmbedding(quantize="int8")
    vecs = emb.get_text_embedding_batch_array(TEXTS)
    cos = (vecs * torch_vectors).sum(axis=1)
    assert 0.95 < cos.min() and cos.max() < 0.99999  # close, and really quantized
    ident = emb.identity()
    assert ident["quantize"] == "int8" and ident["backend"] == "onnx"
    assert emb.cache_identity()["quantize"] == "int8"  # int8 vectors never serve fp32 cache hits
    assert "quantize" not in HuggingFaceEmbedding().identity()  # fp32 records stay as before
    rebuilt = embed_model_from_identity(ident)
    assert rebuilt.quantize == "int8"


def test_an_int8_index_refuses_an_fp32_model_and_reopens_as_int8(tmp_path):
    from ragloom.ingestion.paths import index_paths, open_index

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tea.md").write_text("# Tea\n\nGreen tea is brewed at eighty degrees for three minutes.\n")
    (docs / "panda.md").write_text("# Panda\n\nThe giant panda eats bamboo for ten hours a day.\n")
    index_paths([docs], tmp_path / "idx", embed_model=HuggingFaceEmbedding(quantize="int8"))
    reopened = open_index(tmp_path / "idx", create=False)
    assert reopened.embed_model.quantize == "int8"
    top = reopened.as_retriever(similarity_top_k=1).retrieve("how hot should the water be for tea")
    assert "eighty degrees" in top[0].node.get_content()
    with pytest.raises(ValueError, match=r"in int8 \(the default of a new index"):
        open_index(tmp_path / "idx", create=False, embed_model=HuggingFaceEmbedding())


def test_a_new_index_defaults_to_int8_on_a_cpu_machine_and_an_old_one_keeps_fp32(tmp_path):
    """The quality gate passed (README, Embedding), so without a GPU a new index is int8; an index built
    in fp32 keeps fp32 when reopened or re-indexed with the default spec."""
    from ragloom.embeddings import default_embed_model, resolve_embed_model
    from ragloom.embeddings.huggingface import _auto_device
    from ragloom.ingestion.paths import index_paths, open_index

    assert _auto_device() == "cpu"  # this test machine has no GPU
    assert resolve_embed_model("default").quantize == "int8" and default_embed_model().quantize == "int8"
    assert resolve_embed_model(None).quantize == "int8" and resolve_embed_model("local").quantize == "int8"
    assert resolve_embed_model("fp32").quantize is None
    assert embed_model_from_identity({}).quantize is None  # records older than model records: fp32 vectors
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tea.md").write_text("# Tea\n\nGreen tea is brewed at eighty degrees for three minutes.\n")
    index_paths([docs], tmp_path / "new")
    assert open_index(tmp_path / "new", create=False).embed_model.quantize == "int8"
    index_paths([docs], tmp_path / "old", embed_model="fp32")
    (docs / "panda.md").write_text("# Panda\n\nThe giant panda eats bamboo for ten hours a day.\n")
    summary = index_paths([docs], tmp_path / "old")  # "default" = the recorded model
    assert summary.embed_model == HuggingFaceEmbedding().model_name
    reopened = open_index(tmp_path / "old", create=False)
    assert reopened.embed_model.quantize is None
    top = reopened.as_retriever(similarity_top_k=1).retrieve("what do pandas eat")
    assert "bamboo" in top[0].node.get_content()


@pytest.mark.parametrize("quantize", [None, "int8"])
def test_a_texts_vector_does_not_depend_on_its_batch(quantize):
    """Each text runs alone: int8's dynamic activation scales would otherwise differ by batch, and a
    re-run after a crash would not equal a clean build."""
    emb = HuggingFaceEmbedding(quantize=quantize)
    together = emb.get_text_embedding_batch_array(TEXTS + ["a long unrelated text about rivers " * 30])
    for i, text in enumerate(TEXTS):
        assert np.array_equal(emb.get_text_embedding_batch_array([text])[0], together[i])
    in_threads = emb.onnx_encoder.encode(TEXTS * 4, 256)
    assert emb.onnx_encoder.threads >= 1
    for i in range(len(TEXTS) * 4):
        assert np.array_equal(in_threads[i], together[i % len(TEXTS)])


def test_bad_arguments():
    with pytest.raises(ValueError, match="backend must be one of auto, onnx, torch"):
        HuggingFaceEmbedding(backend="tensorrt")
    with pytest.raises(ValueError, match="quantize must be None or 'int8'"):
        HuggingFaceEmbedding(quantize="int4")
    with pytest.raises(ValueError, match="needs backend='onnx'"):
        HuggingFaceEmbedding(backend="torch", quantize="int8")
    with pytest.raises(ValueError, match="run on the CPU"):
        HuggingFaceEmbedding(backend="onnx", device="cuda")
    with pytest.raises(ValueError, match="run on the CPU"):
        HuggingFaceEmbedding(quantize="int8", device="cuda")


def test_a_query_imports_no_torch(tmp_path):
    """What ``ragloom query`` does in a fresh process: open the index, embed the query, search."""
    from ragloom.ingestion.paths import index_paths

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tea.md").write_text("# Tea\n\nGreen tea is brewed at eighty degrees for three minutes.\n")
    index_paths([docs], tmp_path / "idx")
    script = textwrap.dedent(f"""
        import sys
        from ragloom.service import IndexService
        found = IndexService({str(tmp_path / "idx")!r}).query("water temperature for tea", top_k=1, mode="dense")
        heavy = sorted(m for m in ("torch", "transformers", "sentence_transformers") if m in sys.modules)
        print(heavy, found["results"][0]["text"][:40])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, HF_HUB_OFFLINE="1"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("[] ") and "Green tea" in out.stdout, out.stdout  # nothing heavy imported


def test_repeated_queries_cost_no_model_run(tmp_path, monkeypatch):
    cache = EmbeddingCache(tmp_path / "q.sqlite")
    emb = HuggingFaceEmbedding(query_instruction="query: ")
    emb.query_cache = cache
    calls = []
    real = emb._get_query_embeddings
    monkeypatch.setattr(emb, "_get_query_embeddings", lambda qs: calls.append(list(qs)) or real(qs))
    first = emb.get_query_embedding("green tea temperature")
    again = emb.get_query_embedding("green tea temperature")
    assert calls == [["green tea temperature"]] and first == again
    mean = emb.get_agg_embedding_from_queries(["green tea temperature", "panda food"])
    assert calls[-1] == ["panda food"] and len(mean) == 384
    # the document vector of the same text is another namespace (no query instruction)
    doc = emb.get_text_embedding("green tea temperature")
    assert not np.allclose(doc, first)
    # a cache that cannot be written only costs the model run
    cache.close()
    assert emb.get_query_embedding("a new query after close") is not None
    with pytest.raises(ValueError, match="query_cache"):
        emb.query_cache = str(tmp_path / "x.sqlite")


def test_open_index_keeps_query_vectors_in_the_index_folder(tmp_path):
    from ragloom.ingestion.paths import index_paths, open_index
    from ragloom.settings import Settings

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tea.md").write_text("# Tea\n\nGreen tea is brewed at eighty degrees.\n")
    index_paths([docs], tmp_path / "idx")
    index = open_index(tmp_path / "idx", create=False)
    cache = index.embed_model.query_cache
    assert cache is not None
    if index.embed_model is not Settings._embed_model:  # a model of its own: this folder's cache
        assert cache.path == str((tmp_path / "idx" / "embed_cache.sqlite").resolve())
    hits, misses = cache.hits, cache.misses
    index.as_retriever(similarity_top_k=1).retrieve("brewing temperature in this folder")
    index.as_retriever(similarity_top_k=1).retrieve("brewing temperature in this folder")
    assert (cache.hits - hits, cache.misses - misses) == (1, 1)


def test_encoder_sessions_are_shared_per_process():
    a = OnnxEncoder(bundled_model_path())
    b = OnnxEncoder(bundled_model_path())
    assert a.session is b.session


def test_an_unwritable_cache_falls_back_to_torch_or_says_which_folder(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("RAGLOOM_CACHE_DIR", str(blocker / "cache"))
    auto = HuggingFaceEmbedding(embed_batch_size=4)
    assert len(auto.get_query_embedding("tea")) == 384 and auto.backend == "torch"
    assert "RAGLOOM_CACHE_DIR" in caplog.text
    with pytest.raises(OnnxExportError, match="RAGLOOM_CACHE_DIR"):
        HuggingFaceEmbedding(quantize="int8").get_query_embedding("tea")


def test_a_damaged_or_half_deleted_cache_entry_is_exported_again(tmp_path, monkeypatch, torch_vectors):
    monkeypatch.setenv("RAGLOOM_CACHE_DIR", str(tmp_path))
    folder = export_onnx(bundled_model_path())
    (folder / "model.onnx").write_bytes(b"truncated")
    monkeypatch.setattr(onnx_mod, "_SESSIONS", {})
    vecs = OnnxEncoder(bundled_model_path()).encode(TEXTS[:2], 256)
    assert (vecs * torch_vectors[:2]).sum(axis=1).min() > 0.99999
    (folder / "model.onnx").unlink()  # export.json left behind
    again = OnnxEncoder(bundled_model_path())
    assert (again.encode(TEXTS[:2], 256) * torch_vectors[:2]).sum(axis=1).min() > 0.99999


def test_load_index_from_storage_keeps_query_vectors_in_the_folder(tmp_path):
    from ragloom import StorageContext, VectorStoreIndex, load_index_from_storage
    from ragloom.schema import Document

    index = VectorStoreIndex.from_documents([Document(text="Green tea is brewed at eighty degrees.")],
                                            embed_model=HuggingFaceEmbedding())
    index.storage_context.persist(tmp_path / "storage")
    loaded = load_index_from_storage(StorageContext.from_defaults(persist_dir=tmp_path / "storage"))
    cache = loaded.embed_model.query_cache
    assert cache is not None
    hits = cache.hits
    loaded.as_retriever(similarity_top_k=1).retrieve("tea temperature from storage")
    loaded.as_retriever(similarity_top_k=1).retrieve("tea temperature from storage")
    assert cache.hits == hits + 1
