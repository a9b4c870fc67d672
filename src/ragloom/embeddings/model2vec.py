"""Static (model2vec) embeddings: multilingual, tiny and ~100× faster than a transformer, offline.

``pip install "ragloom[static]"`` pulls ``model2vec`` and ``tokenlearn-static-model``
(a 7 MB model2vec model, 64-d, 276k-token multilingual unigram vocabulary, int8).  A
static model averages token vectors — no attention, no context window — so quality is
well below a transformer's (see the README table), but it embeds thousands of texts per
second on one core: good for tests, previews and very large corpora next to BM25.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ragloom.embeddings.base import BaseEmbedding
from ragloom._optional import require
from ragloom.errors import ModelNotAvailableError

logger = logging.getLogger(__name__)

__all__ = ["Model2VecEmbedding", "bundled_static_model_path", "DEFAULT_STATIC_MODEL"]

DEFAULT_STATIC_MODEL = "tokenlearn-static-model"

_MODELS: Dict[Tuple[str, bool], Any] = {}
_LOCK = threading.Lock()


def bundled_static_model_path() -> Path:
    """Folder of the model shipped by ``tokenlearn-static-model``.

    Raises:
        MissingDependencyError: (an ``ImportError``) the package is not installed (extra ``ragloom[static]``).
    """
    static_model = require("static_model", "static", "The bundled static model (tokenlearn-static-model)")
    return Path(static_model.__file__).resolve().parent / "model"


def _resolve(model_name: str) -> Path:
    if model_name in (DEFAULT_STATIC_MODEL, "static", "default"):
        return bundled_static_model_path()
    p = Path(model_name).expanduser()
    if p.is_dir() and (p / "tokenizer.json").exists():
        return p
    raise ModelNotAvailableError(
        f"static model {model_name!r} is not a local model2vec folder and ragloom never downloads models; "
        f"use {DEFAULT_STATIC_MODEL!r} (bundled by tokenlearn-static-model) or a local folder"
    )


class Model2VecEmbedding(BaseEmbedding):
    """A model2vec ``StaticModel`` from a local folder (default: the bundled tokenlearn static model).

    Args:
        model_name: ``"tokenlearn-static-model"`` (default) or a local model2vec folder.
        normalize: L2-normalise vectors.
        max_length: tokens read per text (``None``: all of it — a static model has no window).
        embed_batch_size: texts per call.
        embed_cache: optional persistent cache (path or ``EmbeddingCache``).

    Raises:
        MissingDependencyError: (an ``ImportError``) ``model2vec`` or the bundled model is not installed
            (extra ``ragloom[static]``).
        ModelNotAvailableError: ``model_name`` is not a local model2vec folder.
    """

    multilingual = True
    runs_locally = True

    def __init__(self, model_name: str = DEFAULT_STATIC_MODEL, normalize: bool = True, max_length: Optional[int] = None,
                 embed_batch_size: int = 1024, embed_cache: Any = None, **kwargs: Any) -> None:
        super().__init__(model_name=model_name, embed_batch_size=embed_batch_size, embed_cache=embed_cache)
        self.callback_manager = kwargs.pop("callback_manager", None)  # LlamaIndex argument: EMBEDDING events
        if max_length is not None and (not isinstance(max_length, int) or max_length < 1):
            raise ValueError(f"max_length must be a positive int or None, got {max_length!r}")
        self._path = _resolve(model_name)
        self.normalize = normalize
        self._max_length = max_length
        self._tokenizer: Any = None
        self._model: Any = None

    @property
    def model(self) -> Any:
        """The ``model2vec.StaticModel`` (loaded once per process per folder)."""
        if self._model is None:
            key = (str(self._path), self.normalize)
            with _LOCK:
                m = _MODELS.get(key)
                if m is None:
                    StaticModel = require("model2vec", "static", "Model2VecEmbedding").StaticModel
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    m = StaticModel.from_pretrained(str(self._path), normalize=self.normalize)
                    _MODELS[key] = m
            self._model = m
        return self._model

    @property
    def dimension(self) -> int:
        return int(self.model.dim)

    def get_tokenizer(self) -> Any:
        if self._tokenizer is None:
            from ragloom.tokenizers import HFTokenizer

            self._tokenizer = HFTokenizer(str(self._path / "tokenizer.json"), name=f"hf:{self.model_name}")
        return self._tokenizer

    @property
    def max_text_tokens(self) -> Optional[int]:
        return self._max_length

    def identity(self) -> Dict[str, Any]:
        return {
            "class_name": self.class_name(),
            "model_name": self.model_name,
            "dimension": self.dimension,
            "normalize": self.normalize,
            "max_length": self._max_length,
        }

    def _get_text_embeddings(self, texts: List[str]) -> np.ndarray:
        vecs = self.model.encode(list(texts), max_length=self._max_length, normalize=self.normalize,
                                 batch_size=max(1, len(texts)), use_multiprocessing=False, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32).reshape(len(texts), -1)
