"""ONNX Runtime: the CPU path of local sentence-transformers models.

A sentence-transformers folder (Transformer + Pooling [+ Normalize]) is exported once, by
this module's own code, to an ONNX graph that takes ``input_ids``, ``attention_mask`` (and
``token_type_ids`` where the model has them), each ``(batch, tokens)`` int64, and returns
``sentence_embedding``, ``(batch, dim)`` float32, with the pooling (mean, CLS or max, as the
folder's ``1_Pooling/config.json`` says) and the L2 normalisation (when the folder has a
Normalize module) inside the graph:

1. the model is loaded by ``transformers`` with eager attention and traced by
   ``torch.onnx.export`` (the TorchScript exporter, opset 17); where torch or transformers do
   not import (or ``RAGLOOM_ONNX_EXPORTER=onnx``), a BERT model is instead written node by node
   from ``config.json`` and ``model.safetensors`` by :mod:`ragloom.embeddings.onnx_build`, which
   gives the same graph (the same vectors, bit for bit, before and after step 2);
2. ONNX Runtime's transformer optimizer (``onnxruntime.transformers.optimizer``, model type
   ``bert``) fuses the embeddings, attention, GELU and skip-LayerNorm into its
   contrib operators;
3. optionally, dynamic int8 quantization with per-channel weights
   (``onnxruntime.quantization.quantize_dynamic``): about 1.7x fewer CPU-seconds per text
   at a small, measured loss (``benchmarks/results/embedding.txt``).

The fp32 graph gives the vectors of sentence-transformers + torch (cosine 1.000000), so an
index built with either backend is queried with the other.  Exporting needs onnx and either
torch + transformers or, for BERT models stored as safetensors, only safetensors; running the
graph needs only onnxruntime and tokenizers, so a query imports no torch.

The graphs are cached under :func:`cache_root` ``/onnx/<key>/`` where ``<key>`` is a sha256
of the files that decide the vectors (weights, configs, tokenizer), the export format
version and the variant.  The content hash of a folder is computed once and remembered by
the files' sizes and modification times, so a cold start reads no weights to find its graph.
Nothing is downloaded.  An export is written to a temporary folder and renamed into place,
so a killed export leaves no half graph behind and two processes exporting at once both
end with a whole one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ragloom.errors import RagloomError

logger = logging.getLogger(__name__)

__all__ = [
    "OnnxEncoder",
    "OnnxExportError",
    "QUANTIZE_VARIANTS",
    "cache_root",
    "export_onnx",
    "onnx_model_dir",
]

#: Bumped whenever the exported graph changes for the same model files.
EXPORT_VERSION = 1
#: ``quantize=`` values: ``None`` (fp32, the vectors of torch) or ``"int8"``.
QUANTIZE_VARIANTS = (None, "int8")
#: Files of a sentence-transformers folder that decide its vectors.
_FINGERPRINT_FILES = (
    "config.json",
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
    "tokenizer.json",
    "model.safetensors",
    "pytorch_model.bin",
)
_GRAPH_NAME = "model.onnx"
_META_NAME = "export.json"
_SESSIONS: Dict[Tuple[str, int], Any] = {}
_LOCK = threading.Lock()


class OnnxExportError(RagloomError, RuntimeError):
    """The model cannot be exported to ONNX (unsupported modules, torch missing for a model that
    only torch exports, onnx missing, or a cache folder that cannot be written)."""


def cache_root() -> Path:
    """ragloom's per-user cache folder: ``$RAGLOOM_CACHE_DIR``, else ``$XDG_CACHE_HOME/ragloom``,
    else ``~/.cache/ragloom``."""
    explicit = os.environ.get("RAGLOOM_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "ragloom"


def _stat_signature(model_path: Path) -> str:
    parts = [str(model_path.resolve())]
    for name in _FINGERPRINT_FILES:
        try:
            st = (model_path / name).stat()
        except OSError:
            continue
        parts.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def _content_hash(model_path: Path) -> str:
    digest = hashlib.sha256()
    for name in _FINGERPRINT_FILES:
        f = model_path / name
        if not f.is_file():
            continue
        digest.update(name.encode() + b"\0")
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def _fingerprint(model_path: Path) -> str:
    """sha256 of the model files, remembered per (path, sizes, mtimes) in ``onnx/fingerprints/``."""
    memo = cache_root() / "onnx" / "fingerprints" / _stat_signature(model_path)
    try:
        value = memo.read_text().strip()
        if len(value) == 64:
            return value
    except OSError:
        pass
    value = _content_hash(model_path)
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_name(memo.name + f".{os.getpid()}.tmp")
        tmp.write_text(value)
        os.replace(tmp, memo)
    except OSError:  # a read-only cache still works, it only hashes again next time
        pass
    return value


def onnx_model_dir(model_path: Path, quantize: Optional[str] = None) -> Path:
    """Where the graph of ``model_path`` (a sentence-transformers folder) in ``quantize`` variant lives."""
    if quantize not in QUANTIZE_VARIANTS:
        raise ValueError(f"quantize must be None or 'int8', got {quantize!r}")
    key = hashlib.sha256(
        f"{_fingerprint(model_path)}|v{EXPORT_VERSION}|{quantize or 'fp32'}".encode()
    ).hexdigest()[:32]
    return cache_root() / "onnx" / key


def _read_json(path: Path) -> Dict[str, Any]:
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return {}


def _plan(model_path: Path) -> Dict[str, Any]:
    """Pooling and normalisation of a plain Transformer + Pooling [+ Normalize] folder.

    Raises:
        OnnxExportError: other modules (Dense, …) or a pooling mode other than mean, CLS or max.
    """
    try:
        entries = list(json.loads((model_path / "modules.json").read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError) as exc:
        raise OnnxExportError(f"{model_path} has no readable modules.json: {exc}") from exc
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in entries]
    if not kinds or kinds[0] != "Transformer" or not set(kinds) <= {"Transformer", "Pooling", "Normalize"}:
        raise OnnxExportError(f"{model_path} is not a plain Transformer + Pooling model (modules: {kinds})")
    pooling = "mean"
    for m in entries:
        if str(m.get("type", "")).endswith("Pooling"):
            cfg = _read_json(model_path / str(m.get("path", "")) / "config.json")
            modes = [k for k in ("mean_tokens", "cls_token", "max_tokens") if cfg.get(f"pooling_mode_{k}")]
            others = [k for k, v in cfg.items() if k.startswith("pooling_mode_") and v
                      and k[len("pooling_mode_"):] not in ("mean_tokens", "cls_token", "max_tokens")]
            if len(modes) != 1 or others:
                raise OnnxExportError(f"{model_path}: pooling {cfg} is not one of mean, CLS or max")
            pooling = {"mean_tokens": "mean", "cls_token": "cls", "max_tokens": "max"}[modes[0]]
    return {"pooling": pooling, "normalize": "Normalize" in kinds}


#: ``RAGLOOM_ONNX_EXPORTER`` values: ``auto`` (torch when it imports, else the torch-free builder),
#: ``torch`` or ``onnx`` (:mod:`ragloom.embeddings.onnx_build`, BERT only).  Both write the same graph.
EXPORTERS = ("auto", "torch", "onnx")


def _exporter_choice() -> str:
    value = (os.environ.get("RAGLOOM_ONNX_EXPORTER") or "auto").strip().lower()
    if value not in EXPORTERS:
        raise OnnxExportError(f"RAGLOOM_ONNX_EXPORTER must be one of {', '.join(EXPORTERS)}, got {value!r}")
    return value


def _export_fp32(model_path: Path, out: Path, plan: Dict[str, Any]) -> Dict[str, Any]:
    """Write the fp32 graph with torch's exporter, or, where torch or transformers do not import (or
    ``RAGLOOM_ONNX_EXPORTER=onnx``), with :func:`ragloom.embeddings.onnx_build.build_bert_onnx`."""
    choice = _exporter_choice()
    if choice != "onnx":
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
        except ImportError as exc:
            if choice == "torch":
                raise OnnxExportError(f"exporting to ONNX with torch needs torch and transformers: {exc}") from exc
            logger.info("torch/transformers not importable (%s): building the ONNX graph without them", exc)
            choice = "onnx"
    if choice == "onnx":
        from ragloom.embeddings.onnx_build import build_bert_onnx

        meta = build_bert_onnx(model_path, out, plan)
        meta["exporter"] = "onnx_build"
    else:
        meta = _export_torch(model_path, out, plan)
        meta["exporter"] = "torch"
    return meta


def _export_torch(model_path: Path, out: Path, plan: Dict[str, Any]) -> Dict[str, Any]:
    import inspect

    import torch
    from transformers import AutoModel

    from ragloom.embeddings.huggingface import _quiet_transformers

    _quiet_transformers()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model = AutoModel.from_pretrained(str(model_path), attn_implementation="eager", local_files_only=True)
    model.eval()
    with_types = "token_type_ids" in inspect.signature(model.forward).parameters and int(
        getattr(model.config, "type_vocab_size", 0) or 0) > 0
    pooling, normalize = plan["pooling"], plan["normalize"]

    class _Sentence(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any = None) -> Any:
            kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
            if token_type_ids is not None:
                kwargs["token_type_ids"] = token_type_ids
            hidden = self.inner(**kwargs).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            if pooling == "cls":
                vec = hidden[:, 0]
            elif pooling == "max":
                vec = (hidden + (mask - 1.0) * 1e9).max(dim=1).values
            else:
                vec = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            if normalize:
                vec = torch.nn.functional.normalize(vec, p=2.0, dim=1)
            return vec

    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if with_types else [])
    example = tuple(torch.ones((2, 8), dtype=torch.long) for _ in names)
    axes: Dict[str, Dict[int, str]] = {n: {0: "batch", 1: "tokens"} for n in names}
    axes["sentence_embedding"] = {0: "batch"}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _Sentence(model), example, str(out), input_names=names, output_names=["sentence_embedding"],
            dynamic_axes=axes, opset_version=17, dynamo=False, do_constant_folding=True,
        )
    cfg = model.config
    return {
        "inputs": names,
        "model_type": str(getattr(cfg, "model_type", "")),
        "num_heads": int(getattr(cfg, "num_attention_heads", 0) or 0),
        "hidden_size": int(getattr(cfg, "hidden_size", 0) or 0),
    }


def _optimize(raw: Path, out: Path, meta: Dict[str, Any]) -> bool:
    """ONNX Runtime's BERT fusions; ``False`` (the raw graph is kept) when they do not apply."""
    try:
        from onnxruntime.transformers import optimizer
    except ImportError as exc:  # onnx missing
        logger.warning("ONNX graph left unfused (%s)", exc)
        return False
    # onnx_build's graph has no Constant nodes to fold and must not need torch: skip ONNX Runtime's
    # basic pass (opt_level 1, the default for bert), whose code imports torch
    level = {"opt_level": 0} if meta.get("exporter") == "onnx_build" else {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt = optimizer.optimize_model(
                str(raw), model_type="bert", num_heads=meta["num_heads"], hidden_size=meta["hidden_size"], **level,
            )
            opt.save_model_to_file(str(out))
        meta["fused"] = {k: v for k, v in opt.get_fused_operator_statistics().items() if v}
        return True
    except Exception as exc:  # an architecture the fusions do not know: keep the exact raw graph
        logger.warning("ONNX Runtime's transformer optimizer failed (%s); using the unfused graph", exc)
        return False


def _not_from_onnxruntime(record: logging.LogRecord) -> bool:
    return "onnxruntime" not in record.pathname


def _quantize_int8(src: Path, out: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    root.addFilter(_not_from_onnxruntime)  # it advises pre-processing on the root logger
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # per-channel weights: per-tensor int8 measured cosine 0.94 to fp32, per-channel 0.99
            quantize_dynamic(str(src), str(out), per_channel=True, weight_type=QuantType.QInt8,
                             extra_options={"DefaultTensorType": 1})  # 1 = onnx.TensorProto.FLOAT
    finally:
        root.removeFilter(_not_from_onnxruntime)


def export_onnx(model_path: Path, quantize: Optional[str] = None) -> Path:
    """Export ``model_path`` to ONNX (once; cached) and return the folder holding ``model.onnx``.

    Args:
        model_path: a local sentence-transformers folder.
        quantize: ``None`` (fp32) or ``"int8"`` (dynamic, per-channel weights).

    Returns:
        The cache folder: ``model.onnx`` and ``export.json`` (inputs, pooling, fusions, versions).

    Raises:
        OnnxExportError: the folder is not Transformer + Pooling [+ Normalize] with mean, CLS or
            max pooling, or torch / transformers are not installed and the model is not a BERT
            with ``model.safetensors`` (:mod:`ragloom.embeddings.onnx_build`).
        ValueError: ``quantize`` is not ``None`` or ``"int8"``.
    """
    model_path = Path(model_path)
    target = onnx_model_dir(model_path, quantize)
    if (target / _GRAPH_NAME).is_file() and (target / _META_NAME).is_file():
        return target
    plan = _plan(model_path)
    fp32 = export_onnx(model_path, None) if quantize else None  # int8 quantizes the cached fp32 graph
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".export-", dir=target.parent))
    except OSError as exc:
        raise OnnxExportError(
            f"cannot write the ONNX model cache {target.parent} ({exc.strerror or exc}); set RAGLOOM_CACHE_DIR "
            "to a writable folder"
        ) from exc
    try:
        logger.warning("preparing the embedding model for ONNX Runtime (%s), once: about 10-20 s; "
                       "later runs reuse %s", quantize or "fp32", target)
        if fp32 is not None:
            meta = _read_json(fp32 / _META_NAME)
            graph = work / "int8.onnx"
            _quantize_int8(fp32 / _GRAPH_NAME, graph)
        else:
            raw = work / "raw.onnx"
            meta = _export_fp32(model_path, raw, plan)
            fused = work / "fused.onnx"
            graph = fused if _optimize(raw, fused, meta) else raw
        final = work / "final"
        final.mkdir()
        final.chmod(0o755)  # mkdtemp's folders are private; the cache is readable like the model files
        os.replace(graph, final / _GRAPH_NAME)
        import onnxruntime

        meta.update(plan, quantize=quantize, export_version=EXPORT_VERSION, source=str(model_path),
                    onnxruntime=onnxruntime.__version__)
        (final / _META_NAME).write_text(json.dumps(meta, indent=1, sort_keys=True))
        if target.exists() and not ((target / _GRAPH_NAME).is_file() and (target / _META_NAME).is_file()):
            shutil.rmtree(target, ignore_errors=True)  # a damaged or half-deleted entry
        try:
            os.replace(final, target)
        except OSError:  # another process renamed its whole export in first
            if not (target / _GRAPH_NAME).is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


class OnnxEncoder:
    """Runs an exported graph with ONNX Runtime on the CPU, one text per run.

    Each text runs alone (a ``(1, tokens)`` input, no padding), on ``threads`` threads that each
    run whole texts (ONNX Runtime sessions with one intra-op thread; a run releases the GIL).
    Measured against one padded batch of 32 on 2 cores (``benchmarks/embedding.py``): fewer
    CPU-seconds (no padding, no thread hand-offs inside small matrix products), and a text's
    vector never depends on the other texts of its batch.  That matters for ``quantize="int8"``:
    dynamic quantization scales the activations of a whole input tensor, so a padded batch gave
    a text different vectors (up to 0.03 per element) in different batches, and a re-run after a
    crash did not equal a clean build.

    Sessions are shared per process (per graph file and thread count); ``encode`` is thread-safe.

    Args:
        model_path: the sentence-transformers folder (its ``tokenizer.json`` is used).
        quantize: the variant, as :func:`export_onnx`.
        threads: texts run at once; ``0`` (default) uses the cores this process may run on.

    Raises:
        OnnxExportError: as :func:`export_onnx`, when the graph is not cached yet.
        ValueError: ``threads < 0``.
    """

    def __init__(self, model_path: Path, quantize: Optional[str] = None, threads: int = 0) -> None:
        if threads < 0:
            raise ValueError(f"threads must be >= 0, got {threads!r}")
        folder = export_onnx(Path(model_path), quantize)
        try:
            self.session = _session(folder / _GRAPH_NAME, 1)
        except Exception as exc:  # a damaged cached graph (truncated, not protobuf): export it again
            logger.warning("the cached ONNX graph %s is unusable (%s); exporting it again", folder, exc)
            shutil.rmtree(folder, ignore_errors=True)
            folder = export_onnx(Path(model_path), quantize)
            self.session = _session(folder / _GRAPH_NAME, 1)
        self.graph_path = folder / _GRAPH_NAME
        self.meta = _read_json(folder / _META_NAME)
        self.inputs: List[str] = list(self.meta.get("inputs") or ["input_ids", "attention_mask"])
        if threads == 0:
            from ragloom._system import available_cpus

            threads = available_cpus()
        self.threads = threads
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(Path(model_path) / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._max_length = 0

    def _run_one(self, ids: List[int], type_ids: List[int]) -> np.ndarray:
        row = np.asarray([ids], dtype=np.int64)
        feed = {"input_ids": row, "attention_mask": np.ones_like(row),
                "token_type_ids": np.asarray([type_ids], dtype=np.int64)}
        return self.session.run(["sentence_embedding"], {k: feed[k] for k in self.inputs})[0][0]

    def encode(self, texts: List[str], max_length: int) -> np.ndarray:
        """``(len(texts), dim)`` float32 vectors; each text is cut to ``max_length`` tokens
        (special tokens included) and runs alone, so its vector does not depend on the others."""
        tok = self._tokenizer
        if max_length != self._max_length:
            tok.enable_truncation(max_length)
            self._max_length = max_length
        encodings = tok.encode_batch(texts)
        if len(encodings) < 2 or self.threads == 1:
            rows = [self._run_one(e.ids, e.type_ids) for e in encodings]
        else:
            rows = list(_runner(self.threads).map(lambda e: self._run_one(e.ids, e.type_ids), encodings))
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        return np.asarray(np.stack(rows), dtype=np.float32)


_RUNNERS: Dict[int, Any] = {}


def _runner(threads: int) -> Any:
    """A process-wide thread pool of ``threads`` threads for :meth:`OnnxEncoder.encode`."""
    with _LOCK:
        pool = _RUNNERS.get(threads)
        if pool is None:
            from concurrent.futures import ThreadPoolExecutor

            pool = _RUNNERS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="ragloom-onnx")
    return pool


def _session(graph: Path, threads: int) -> Any:
    key = (str(graph), threads)
    with _LOCK:
        session = _SESSIONS.get(key)
        if session is None:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            # idle threads sleep instead of spinning: measured fewer CPU-seconds for the same wall time
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            options.log_severity_level = 3
            session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
            _SESSIONS[key] = session
    return session
