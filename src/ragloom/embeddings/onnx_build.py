"""A BERT sentence-embedding graph written directly with ``onnx``: the export without torch.

:func:`build_bert_onnx` reads a sentence-transformers folder's ``config.json`` and
``model.safetensors`` (with ``safetensors.numpy``, no torch) and writes the same fp32 graph as
the torch exporter of :mod:`ragloom.embeddings.onnx`: inputs ``input_ids``, ``attention_mask``
(and ``token_type_ids`` when the model has token types), each ``(batch, tokens)`` int64, output
``sentence_embedding`` ``(batch, dim)`` float32, opset 17, with the pooling and the optional L2
normalisation inside the graph.

The graph is BERT's forward pass in eval mode:

* embeddings: ``word[input_ids] + token_type[token_type_ids] + position[0..tokens)``, LayerNorm;
* each layer: Q, K, V linears, scores ``Q K^T / sqrt(head_dim)`` plus the additive mask
  ``(1 - mask) * -10000``, softmax, ``· V``, output linear, residual + LayerNorm, then the
  feed-forward ``Linear -> GELU (erf) -> Linear``, residual + LayerNorm;
* pooling over the last hidden state: mean over the attended tokens, the first (CLS) token, or
  the max over the attended tokens; then ``x / max(||x||, 1e-12)`` when the folder normalises.

Its nodes follow the patterns torch's TorchScript exporter produces for this model (``MatMul`` +
``Add`` linears, ``Reshape``/``Transpose`` heads, ``LayerNormalization``, GELU as
``Div/Erf/Add/Mul/Mul``, the position ids sliced from a ``(1, max_positions)`` constant), so that
ONNX Runtime's transformer optimizer (model type ``bert``) fuses them into ``Attention``,
``SkipLayerNormalization``, ``BiasGelu`` and ``EmbedLayerNormalization`` as it does the torch
graph.  Only ``model_type == "bert"`` with absolute positions and the erf GELU is built; anything
else raises :class:`~ragloom.embeddings.onnx.OnnxExportError`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

__all__ = ["build_bert_onnx"]

OPSET = 17
#: Added to the scores of masked-out keys (what BERT's extended attention mask used; exp() of it is
#: 0.0 in float32 as for torch's float32-min, and it is ONNX Runtime's Attention default).
_MASK_FILL = -10000.0


def _error(message: str) -> Exception:
    from ragloom.embeddings.onnx import OnnxExportError

    return OnnxExportError(message)


def _read_config(model_path: Path) -> Dict[str, Any]:
    try:
        cfg = json.loads((model_path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _error(f"{model_path} has no readable config.json: {exc}") from exc
    if not isinstance(cfg, dict):
        raise _error(f"{model_path}/config.json is not an object")
    model_type = cfg.get("model_type")
    if model_type != "bert":
        raise _error(f"building ONNX without torch supports model_type 'bert' only, not {model_type!r}")
    act = cfg.get("hidden_act", "gelu")
    if act != "gelu":
        raise _error(f"building ONNX without torch supports hidden_act 'gelu' (erf) only, not {act!r}")
    position = cfg.get("position_embedding_type", "absolute") or "absolute"
    if position != "absolute":
        raise _error(f"building ONNX without torch supports absolute positions only, not {position!r}")
    if cfg.get("is_decoder") or cfg.get("add_cross_attention"):
        raise _error("building ONNX without torch supports encoder-only BERT")
    try:
        hidden, heads = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
        int(cfg["num_hidden_layers"]), int(cfg["intermediate_size"]), int(cfg["max_position_embeddings"])
    except (KeyError, TypeError, ValueError) as exc:
        raise _error(f"{model_path}/config.json lacks a BERT size: {exc}") from exc
    if heads <= 0 or hidden % heads:
        raise _error(f"hidden_size {hidden} is not a multiple of num_attention_heads {heads}")
    return cfg


def _load_weights(model_path: Path) -> Dict[str, np.ndarray]:
    path = model_path / "model.safetensors"
    if not path.is_file():
        raise _error(f"building ONNX without torch needs {path} (pytorch_model.bin needs torch to read)")
    try:
        from safetensors.numpy import load_file
    except ImportError as exc:
        raise _error(f"building ONNX without torch needs the safetensors package: {exc}") from exc
    try:
        raw = load_file(str(path))
    except Exception as exc:  # a truncated or non-numpy-loadable file (bfloat16 has no numpy dtype)
        raise _error(f"cannot read {path}: {exc}") from exc
    weights: Dict[str, np.ndarray] = {}
    for name, value in raw.items():
        for prefix in ("bert.", "model."):  # BertFor* checkpoints nest the encoder
            if name.startswith(prefix):
                name = name[len(prefix):]
                break
        # checkpoints from old TF conversions name LayerNorm's parameters gamma/beta
        if name.endswith("LayerNorm.gamma"):
            name = name[: -len("gamma")] + "weight"
        elif name.endswith("LayerNorm.beta"):
            name = name[: -len("beta")] + "bias"
        weights[name] = value
    return weights


class _Graph:
    """Nodes, initializers and unique names for one graph."""

    def __init__(self, weights: Dict[str, np.ndarray]) -> None:
        self.nodes: List[Any] = []
        self.initializers: List[Any] = []
        self._weights = weights
        self._consts: Dict[Any, str] = {}
        self._count = 0

    def weight(self, name: str, shape: tuple, transpose: bool = False) -> str:
        """The float32 initializer of parameter ``name``, checked against ``shape`` (``None``: any
        length); ``transpose``: a torch Linear's ``(out, in)`` weight as MatMul's ``(in, out)``."""
        from onnx import numpy_helper

        value = self._weights.get(name)
        if value is None:
            raise _error(f"model.safetensors has no {name!r}")
        value = np.asarray(value, dtype=np.float32)
        if transpose:
            value = value.T
        if len(value.shape) != len(shape) or any(
                s is not None and s != n for s, n in zip(shape, value.shape, strict=True)):
            raise _error(f"{name} has shape {tuple(value.shape)}, expected {tuple(shape)}")
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def const(self, value: Any, dtype: Any) -> str:
        """A shared constant initializer (scalars and small shape vectors)."""
        from onnx import numpy_helper

        arr = np.asarray(value, dtype=dtype)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        name = self._consts.get(key)
        if name is None:
            name = f"const_{len(self._consts)}"
            self.initializers.append(numpy_helper.from_array(arr, name))
            self._consts[key] = name
        return name

    def op(self, op_type: str, inputs: List[str], name: str, output: Optional[str] = None, **attrs: Any) -> str:
        from onnx import helper

        self._count += 1
        out = output or f"{name}_output_{self._count}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=name, **attrs))
        return out

    def linear(self, x: str, prefix: str, n_in: int, n_out: int) -> str:
        w = self.weight(f"{prefix}.weight", (n_in, n_out), transpose=True)
        b = self.weight(f"{prefix}.bias", (n_out,))
        return self.op("Add", [b, self.op("MatMul", [x, w], f"/{prefix}/MatMul")], f"/{prefix}/Add")

    def layer_norm(self, x: str, prefix: str, hidden: int, eps: float) -> str:
        return self.op(
            "LayerNormalization",
            [x, self.weight(f"{prefix}.weight", (hidden,)), self.weight(f"{prefix}.bias", (hidden,))],
            f"/{prefix}/LayerNormalization", axis=-1, epsilon=eps,
        )


def _encoder_layer(g: _Graph, x: str, mask_add: str, i: int, cfg: Dict[str, Any]) -> str:
    hidden, heads = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
    inter, eps = int(cfg["intermediate_size"]), float(cfg.get("layer_norm_eps", 1e-12))
    head_dim = hidden // heads
    p = f"encoder.layer.{i}"
    heads_shape = g.const([0, 0, heads, head_dim], np.int64)

    def split(t: str, name: str, perm: List[int]) -> str:
        return g.op("Transpose", [g.op("Reshape", [t, heads_shape], f"/{p}/{name}/Reshape")],
                    f"/{p}/{name}/Transpose", perm=perm)

    q = split(g.linear(x, f"{p}.attention.self.query", hidden, hidden), "q", [0, 2, 1, 3])
    k = split(g.linear(x, f"{p}.attention.self.key", hidden, hidden), "k", [0, 2, 3, 1])
    v = split(g.linear(x, f"{p}.attention.self.value", hidden, hidden), "v", [0, 2, 1, 3])
    scores = g.op("MatMul", [q, k], f"/{p}/attention/MatMul")
    # Div, not torch 5's Mul by head_dim**-0.5: ONNX Runtime's mask matcher takes the first Mul parent
    # of the Add as the mask's, so the scale must not be a Mul (the vectors agree to ~1e-7)
    scores = g.op("Div", [scores, g.const(np.sqrt(head_dim), np.float32)], f"/{p}/attention/Div")
    scores = g.op("Add", [scores, mask_add], f"/{p}/attention/Add")
    probs = g.op("Softmax", [scores], f"/{p}/attention/Softmax", axis=-1)
    ctx = g.op("MatMul", [probs, v], f"/{p}/attention/MatMul_1")
    ctx = g.op("Transpose", [ctx], f"/{p}/attention/Transpose", perm=[0, 2, 1, 3])
    ctx = g.op("Reshape", [ctx, g.const([0, 0, hidden], np.int64)], f"/{p}/attention/Reshape")
    out = g.linear(ctx, f"{p}.attention.output.dense", hidden, hidden)
    out = g.op("Add", [out, x], f"/{p}/attention/output/Add")
    x = g.layer_norm(out, f"{p}.attention.output.LayerNorm", hidden, eps)

    h = g.linear(x, f"{p}.intermediate.dense", hidden, inter)
    # GELU, erf form: x * (1 + erf(x / sqrt(2))) * 0.5
    gelu = g.op("Div", [h, g.const(np.sqrt(2.0), np.float32)], f"/{p}/gelu/Div")
    gelu = g.op("Erf", [gelu], f"/{p}/gelu/Erf")
    gelu = g.op("Add", [gelu, g.const(1.0, np.float32)], f"/{p}/gelu/Add")
    gelu = g.op("Mul", [h, gelu], f"/{p}/gelu/Mul")
    gelu = g.op("Mul", [gelu, g.const(0.5, np.float32)], f"/{p}/gelu/Mul_1")
    out = g.linear(gelu, f"{p}.output.dense", inter, hidden)
    out = g.op("Add", [out, x], f"/{p}/output/Add")
    return g.layer_norm(out, f"{p}.output.LayerNorm", hidden, eps)


def build_bert_onnx(model_path: Path, out: Path, plan: Dict[str, Any]) -> Dict[str, Any]:
    """Write the fp32 sentence-embedding graph of the BERT folder ``model_path`` to ``out``.

    Args:
        model_path: a sentence-transformers folder with ``config.json`` and ``model.safetensors``.
        out: the ``.onnx`` file to write.
        plan: ``{"pooling": "mean" | "cls" | "max", "normalize": bool}`` (``onnx._plan``).

    Returns:
        The export metadata: ``inputs``, ``model_type``, ``num_heads``, ``hidden_size``.

    Raises:
        OnnxExportError: not a BERT model this builder handles, no ``model.safetensors``, missing
            or mis-shaped weights, or ``onnx`` / ``safetensors`` not installed.
    """
    model_path = Path(model_path)
    cfg = _read_config(model_path)
    try:
        from onnx import TensorProto, helper
    except ImportError as exc:
        raise _error(f"building ONNX needs the onnx package: {exc}") from exc
    g = _Graph(_load_weights(model_path))
    hidden, heads = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
    vocab, max_pos = int(cfg.get("vocab_size", 0)), int(cfg["max_position_embeddings"])
    types = int(cfg.get("type_vocab_size", 0) or 0)
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if types > 0 else [])

    # embeddings: word + token type, + position (ids 0..tokens-1 sliced from a constant), LayerNorm
    word_w = g.weight("embeddings.word_embeddings.weight", (vocab or None, hidden))
    emb = g.op("Gather", [word_w, "input_ids"], "/embeddings/word_embeddings/Gather")
    if types > 0:
        type_w = g.weight("embeddings.token_type_embeddings.weight", (types, hidden))
        emb = g.op("Add", [emb, g.op("Gather", [type_w, "token_type_ids"],
                                     "/embeddings/token_type_embeddings/Gather")], "/embeddings/Add")
    tokens = g.op("Gather", [g.op("Shape", ["input_ids"], "/embeddings/Shape"), g.const(1, np.int64)],
                  "/embeddings/Gather", axis=0)
    end = g.op("Unsqueeze", [tokens, g.const([0], np.int64)], "/embeddings/Unsqueeze")
    position_ids = g.op(
        "Slice", [g.const(np.arange(max_pos, dtype=np.int64)[None, :], np.int64), g.const([0], np.int64),
                  end, g.const([1], np.int64), g.const([1], np.int64)], "/embeddings/Slice")
    pos_w = g.weight("embeddings.position_embeddings.weight", (max_pos, hidden))
    emb = g.op("Add", [emb, g.op("Gather", [pos_w, position_ids], "/embeddings/position_embeddings/Gather")],
               "/embeddings/Add_1")
    x = g.layer_norm(emb, "embeddings.LayerNorm", hidden, eps)

    # additive attention mask (batch, 1, 1, tokens): 0 where attended, -10000 where padded
    m = g.op("Unsqueeze", ["attention_mask", g.const([1], np.int64)], "/mask/Unsqueeze")
    m = g.op("Unsqueeze", [m, g.const([2], np.int64)], "/mask/Unsqueeze_1")
    m = g.op("Cast", [m], "/mask/Cast", to=TensorProto.FLOAT)
    m = g.op("Sub", [g.const(1.0, np.float32), m], "/mask/Sub")
    mask_add = g.op("Mul", [m, g.const(_MASK_FILL, np.float32)], "/mask/Mul")

    for i in range(int(cfg["num_hidden_layers"])):
        x = _encoder_layer(g, x, mask_add, i, cfg)

    # pooling as sentence-transformers' Pooling module, then Normalize
    pooling = plan.get("pooling", "mean")
    if pooling == "cls":
        vec = g.op("Gather", [x, g.const(0, np.int64)], "/pool/Gather", axis=1)
    else:
        keep = g.op("Cast", [g.op("Unsqueeze", ["attention_mask", g.const([-1], np.int64)], "/pool/Unsqueeze")],
                    "/pool/Cast", to=TensorProto.FLOAT)
        if pooling == "max":
            penalty = g.op("Mul", [g.op("Sub", [keep, g.const(1.0, np.float32)], "/pool/Sub"),
                                   g.const(1e9, np.float32)], "/pool/Mul")
            vec = g.op("ReduceMax", [g.op("Add", [x, penalty], "/pool/Add")], "/pool/ReduceMax",
                       axes=[1], keepdims=0)
        elif pooling == "mean":
            axes = g.const([1], np.int64)
            total = g.op("ReduceSum", [g.op("Mul", [x, keep], "/pool/Mul"), axes], "/pool/ReduceSum", keepdims=0)
            count = g.op("ReduceSum", [keep, axes], "/pool/ReduceSum_1", keepdims=0)
            count = g.op("Clip", [count, g.const(1e-9, np.float32)], "/pool/Clip")
            vec = g.op("Div", [total, count], "/pool/Div")
        else:
            raise _error(f"unknown pooling {pooling!r}")
    if plan.get("normalize"):
        norm = g.op("ReduceL2", [vec], "/normalize/ReduceL2", axes=[1], keepdims=1)
        norm = g.op("Clip", [norm, g.const(1e-12, np.float32)], "/normalize/Clip")
        g.op("Div", [vec, norm], "/normalize/Div", output="sentence_embedding")
    else:
        g.op("Identity", [vec], "/output/Identity", output="sentence_embedding")

    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"]) for n in names]
    outputs = [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hidden])]
    graph = helper.make_graph(g.nodes, "sentence_embedding", inputs, outputs, initializer=g.initializers)
    # no producer_name: ONNX Runtime's optimizer warns about any producer but "pytorch" for model type bert
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              doc_string="built by ragloom.embeddings.onnx_build")
    model.ir_version = 8  # opset 17's IR version: readable by onnxruntime >= 1.13
    try:
        from onnx import save_model

        save_model(model, str(out))
    except (OSError, ValueError) as exc:
        raise _error(f"cannot write {out}: {exc}") from exc
    return {"inputs": names, "model_type": "bert", "num_heads": heads, "hidden_size": hidden}
