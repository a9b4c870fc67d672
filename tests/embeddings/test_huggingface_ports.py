"""HuggingFaceEmbedding as LlamaIndex users call it (issue 14): the model's own prompts,
``trust_remote_code``, LlamaIndex's constructor arguments, and unknown arguments refused.

Models are the bundled all-MiniLM-L6-v2 and copies of its folder given a prompt config or
their own modelling code, built in ``tmp_path`` (nothing is downloaded).
"""

from __future__ import annotations

import inspect
import json
import shutil
from pathlib import Path
from typing import Any, Dict

import numpy as np
import pytest

from ragloom.embeddings import embed_model_from_identity
from ragloom.embeddings.huggingface import HuggingFaceEmbedding, bundled_model_path, model_prompts

#: LlamaIndex's HuggingFaceEmbedding arguments (llama-index-embeddings-huggingface 0.8), less the
#: four it refuses as deprecated (tokenizer_name, pooling, model, tokenizer), plus the
#: SentenceTransformer arguments LlamaIndex users pass through its **model_kwargs.
LLAMAINDEX_ARGS = {
    "model_name", "max_length", "query_instruction", "text_instruction", "normalize", "embed_batch_size",
    "cache_folder", "trust_remote_code", "device", "callback_manager", "parallel_process", "target_devices",
    "show_progress_bar", "model_kwargs", "tokenizer_kwargs", "config_kwargs", "backend", "revision", "prompts",
    "default_prompt_name",
}


def _copy_model(tmp_path: Path, name: str, st_config: Dict[str, Any]) -> Path:
    folder = tmp_path / name
    shutil.copytree(bundled_model_path(), folder)
    cfg_file = folder / "config_sentence_transformers.json"
    cfg = json.loads(cfg_file.read_text())
    cfg.update(st_config)
    cfg_file.write_text(json.dumps(cfg))
    return folder


def _cos(a: Any, b: Any) -> float:
    return float(np.dot(np.asarray(a), np.asarray(b)))


def test_constructor_takes_llamaindex_arguments_and_refuses_others():
    params = set(inspect.signature(HuggingFaceEmbedding.__init__).parameters) - {"self"}
    assert LLAMAINDEX_ARGS <= params
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in
                   inspect.signature(HuggingFaceEmbedding.__init__).parameters.values())
    for bad in ({"pooling": "mean"}, {"tokenizer_name": "x"}, {"model_kwargs_typo": {}}, {"token": "hf_x"}):
        with pytest.raises(TypeError, match="unexpected keyword"):
            HuggingFaceEmbedding(**bad)
    emb = HuggingFaceEmbedding(callback_manager=None, show_progress_bar=True, target_devices=["cpu"], device="cpu")
    assert emb.show_progress_bar is True and emb.target_devices == ["cpu"]
    with pytest.raises(ValueError, match="target_devices"):
        HuggingFaceEmbedding(target_devices="cuda:0")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="model_kwargs"):
        HuggingFaceEmbedding(model_kwargs=["torch_dtype"])  # type: ignore[arg-type]


def test_bundled_model_has_no_prompts():
    emb = HuggingFaceEmbedding()
    assert (emb.query_instruction, emb.text_instruction) == (None, None)
    assert emb.identity()["query_instruction"] is None  # records of existing indexes stay equal


def test_model_prompts_are_used_when_none_given(tmp_path: Path):
    folder = _copy_model(tmp_path, "e5ish", {"prompts": {"query": "query: ", "document": "passage: "},
                                             "default_prompt_name": None})
    base = HuggingFaceEmbedding(device="cpu")
    emb = HuggingFaceEmbedding(model_name=str(folder), device="cpu")
    assert (emb.query_instruction, emb.text_instruction) == ("query: ", "passage: ")
    assert emb.identity()["query_instruction"] == "query: " and emb.cache_identity()["text_instruction"] == "passage: "
    # the prefix is applied exactly once, on the query and on the document side
    assert _cos(emb.get_query_embedding("green tea"), base.get_text_embedding("query: green tea")) > 0.9999
    assert _cos(emb.get_text_embedding("green tea"), base.get_text_embedding("passage: green tea")) > 0.9999
    assert _cos(emb.get_text_embedding("green tea"), base.get_text_embedding("green tea")) < 0.99
    # the caller's instructions win; "" means none
    mine = HuggingFaceEmbedding(model_name=str(folder), device="cpu", query_instruction="search: ", text_instruction="")
    assert (mine.query_instruction, mine.text_instruction) == ("search: ", None)
    assert _cos(mine.get_text_embedding("green tea"), base.get_text_embedding("green tea")) > 0.9999
    # an index records the prefixes, and is reopened with exactly them
    again = embed_model_from_identity(emb.identity())
    assert (again.query_instruction, again.text_instruction) == ("query: ", "passage: ")
    plain = embed_model_from_identity(HuggingFaceEmbedding(model_name=str(folder), query_instruction="",
                                                           text_instruction="").identity())
    assert (plain.query_instruction, plain.text_instruction) == (None, None)


def test_prompt_names_and_default_prompt(tmp_path: Path):
    folder = _copy_model(tmp_path, "named", {"prompts": {"query": "Q: ", "passage": "P: ", "classify": "C: "},
                                             "default_prompt_name": "classify"})
    assert model_prompts(folder) == ("Q: ", "P: ")
    only_default = _copy_model(tmp_path, "default",
                               {"prompts": {"retrieval": "R: "}, "default_prompt_name": "retrieval"})
    assert model_prompts(only_default) == ("R: ", "R: ")
    emb = HuggingFaceEmbedding(model_name=str(only_default), device="cpu",
                               prompts={"query": "ask: ", "text": "doc: "})  # LlamaIndex's prompt names
    assert (emb.query_instruction, emb.text_instruction) == ("ask: ", "doc: ")
    with pytest.raises(ValueError, match="default_prompt_name"):
        HuggingFaceEmbedding(model_name=str(folder), default_prompt_name="nope")


@pytest.mark.slow
def test_torch_backend_applies_the_prompt_once(tmp_path: Path):
    """sentence-transformers would add its default_prompt_name prompt by itself; it must not add
    it on top of ours (torch backend), and both backends must give the same vectors."""
    folder = _copy_model(tmp_path, "defprompt", {"prompts": {"query": "query: "}, "default_prompt_name": "query"})
    onnx = HuggingFaceEmbedding(model_name=str(folder), device="cpu", backend="onnx")
    torch = HuggingFaceEmbedding(model_name=str(folder), device="cpu", backend="torch")
    base = HuggingFaceEmbedding(device="cpu", backend="torch")
    assert torch.text_instruction == "query: "
    want = base.get_text_embedding("query: green tea")
    assert _cos(torch.get_text_embedding("green tea"), want) > 0.9999
    assert _cos(onnx.get_text_embedding("green tea"), want) > 0.9999


def _custom_code_model(tmp_path: Path) -> Path:
    folder = _copy_model(tmp_path, "custom", {})
    (folder / "modeling_custom.py").write_text(
        "from transformers import BertModel\n\n\nclass CustomBertModel(BertModel):\n    custom_code_ran = True\n"
    )
    cfg = json.loads((folder / "config.json").read_text())
    cfg["auto_map"] = {"AutoModel": "modeling_custom.CustomBertModel"}
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


def test_a_model_with_its_own_code_runs_on_torch(tmp_path: Path):
    """The ONNX export never runs a folder's own code: such a model is encoded by torch."""
    folder = _custom_code_model(tmp_path)
    assert HuggingFaceEmbedding(model_name=str(folder), device="cpu", trust_remote_code=True).backend == "torch"
    assert HuggingFaceEmbedding(model_name=str(folder), device="cpu").backend == "torch"
    with pytest.raises(ValueError, match="own modelling code"):
        HuggingFaceEmbedding(model_name=str(folder), backend="onnx", trust_remote_code=True)
    assert HuggingFaceEmbedding(device="cpu", trust_remote_code=True).backend == "onnx"  # plain BERT: ONNX


@pytest.mark.slow
def test_trust_remote_code_reaches_sentence_transformers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import transformers.dynamic_module_utils as dynamic

    monkeypatch.setattr(dynamic, "HF_MODULES_CACHE", str(tmp_path / "modules"))  # not ~/.cache
    folder = _custom_code_model(tmp_path)
    plain = HuggingFaceEmbedding(model_name=str(folder), device="cpu")
    trusted = HuggingFaceEmbedding(model_name=str(folder), device="cpu", trust_remote_code=True)
    vec = trusted.get_text_embedding("green tea")
    assert type(trusted.model[0].auto_model).__name__ == "CustomBertModel"  # its code ran
    assert type(plain.model[0].auto_model).__name__ == "BertModel"  # without trust: transformers' own class
    assert _cos(vec, HuggingFaceEmbedding(device="cpu").get_text_embedding("green tea")) > 0.9999


def test_loading_arguments_choose_torch(tmp_path: Path):
    emb = HuggingFaceEmbedding(device="cpu", model_kwargs={"torch_dtype": "float32"}, tokenizer_kwargs={},
                               config_kwargs=None)
    assert emb.backend == "torch"
    assert emb._sentence_transformer_kwargs(_FakeST) == {"model_kwargs": {"torch_dtype": "float32"}}
    assert HuggingFaceEmbedding(device="cpu", parallel_process=True).backend == "torch"
    assert HuggingFaceEmbedding(device="cpu").backend == "onnx"
    with pytest.raises(ValueError, match="model_kwargs"):
        HuggingFaceEmbedding(model_kwargs={"torch_dtype": "float32"}, backend="onnx")
    with pytest.raises(ValueError, match="parallel_process"):
        HuggingFaceEmbedding(parallel_process=True, quantize="int8")
    # sentence-transformers 5.2+ calls tokenizer_kwargs processor_kwargs
    renamed = HuggingFaceEmbedding(device="cpu", tokenizer_kwargs={"model_max_length": 128})
    assert renamed._sentence_transformer_kwargs(_FakeST) == {"processor_kwargs": {"model_max_length": 128}}
    assert renamed._sentence_transformer_kwargs(_OldST) == {"tokenizer_kwargs": {"model_max_length": 128}}


class _FakeST:
    def __init__(self, model_name_or_path: str, processor_kwargs: Any = None, model_kwargs: Any = None) -> None:
        pass


class _OldST:
    def __init__(self, model_name_or_path: str, tokenizer_kwargs: Any = None, model_kwargs: Any = None) -> None:
        pass


@pytest.mark.slow
def test_model_kwargs_reach_the_model():
    emb = HuggingFaceEmbedding(device="cpu", model_kwargs={"attn_implementation": "eager"}, embed_batch_size=4)
    vec = emb.get_text_embedding("green tea")
    assert emb.model[0].auto_model.config._attn_implementation == "eager"
    assert _cos(vec, HuggingFaceEmbedding(device="cpu").get_text_embedding("green tea")) > 0.9999


@pytest.mark.slow
def test_parallel_process_pool_gives_the_same_vectors():
    """LlamaIndex's parallel_process: sentence-transformers' process pool (one process here)."""
    texts = ["green tea", "bicycle chain"]
    pooled = HuggingFaceEmbedding(device="cpu", parallel_process=True, target_devices=["cpu"])
    assert pooled.backend == "torch"
    got = pooled.get_text_embedding_batch(texts)
    want = HuggingFaceEmbedding(device="cpu").get_text_embedding_batch(texts)
    assert all(_cos(a, b) > 0.9999 for a, b in zip(got, want, strict=True))
