"""``BaseEmbedding``: batching, ordering and progress shared by every embedding provider."""

from __future__ import annotations

import logging
import math
from abc import abstractmethod
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ragloom.schema import BaseNode, MetadataMode, TransformComponent

logger = logging.getLogger(__name__)

Embedding = List[float]

DEFAULT_EMBED_BATCH_SIZE = 64


class BaseEmbedding(TransformComponent):
    """Base class of embedding models (LlamaIndex's method names).

    Subclasses implement :meth:`_get_text_embeddings` (a batch of texts → ``(n, dim)``
    float32 array) and may override :meth:`_get_query_embedding`.  The base class splits
    inputs into batches of ``embed_batch_size`` texts, sorted by length so padding is
    minimal, shows progress, and returns vectors in input order.

    Args:
        model_name: identity of the model, recorded in indexes built with it.
        embed_batch_size: texts per forward pass / request; must be in ``[1, 100000]``.

    Raises:
        ValueError: ``embed_batch_size`` outside ``[1, 100000]``.
    """

    model_name: str = "unknown"

    def __init__(self, model_name: str = "unknown", embed_batch_size: int = DEFAULT_EMBED_BATCH_SIZE) -> None:
        if not isinstance(embed_batch_size, int) or not 1 <= embed_batch_size <= 100_000:
            raise ValueError(f"embed_batch_size must be an int in [1, 100000], got {embed_batch_size!r}")
        self.model_name = model_name
        self.embed_batch_size = embed_batch_size

    # -- to implement ------------------------------------------------------------
    @abstractmethod
    def _get_text_embeddings(self, texts: List[str]) -> np.ndarray:
        """Embed a batch of document texts; returns a float32 array of shape ``(len(texts), dim)``."""

    def _get_query_embeddings(self, queries: List[str]) -> np.ndarray:
        return self._get_text_embeddings(queries)

    # -- identity ------------------------------------------------------------------
    @property
    def dimension(self) -> Optional[int]:
        """Length of the vectors, or ``None`` when unknown before the first call."""
        return None

    @property
    def max_text_tokens(self) -> Optional[int]:
        """Most tokens of text (excluding special tokens) the model reads; ``None`` when unlimited/unknown."""
        return None

    def get_tokenizer(self) -> Any:
        """The :class:`~ragloom.tokenizers.Tokenizer` this model consumes text with, or ``None``."""
        return None

    def identity(self) -> Dict[str, Any]:
        """What an index records about the model that built it."""
        return {"class_name": self.class_name(), "model_name": self.model_name, "dimension": self.dimension}

    def to_config(self) -> Dict[str, Any]:
        return self.identity()

    # -- public API ------------------------------------------------------------------
    def get_text_embedding_batch_array(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray:
        """Embed ``texts``; returns a float32 array of shape ``(len(texts), dim)`` in input order."""
        texts = list(texts)
        if not texts:
            dim = self.dimension or 0
            return np.zeros((0, dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        out: Optional[np.ndarray] = None
        bar = None
        if show_progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(texts), desc="Embedding", unit="text")
        try:
            for b in range(math.ceil(len(order) / self.embed_batch_size)):
                idx = order[b * self.embed_batch_size : (b + 1) * self.embed_batch_size]
                vecs = np.asarray(self._get_text_embeddings([texts[i] for i in idx]), dtype=np.float32)
                if vecs.shape[0] != len(idx):
                    raise RuntimeError(
                        f"{self.class_name()} returned {vecs.shape[0]} vectors for {len(idx)} texts"
                    )
                if out is None:
                    out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
                out[idx] = vecs
                if bar is not None:
                    bar.update(len(idx))
        finally:
            if bar is not None:
                bar.close()
        assert out is not None
        return out

    def get_text_embedding_batch(self, texts: Sequence[str], show_progress: bool = False, **kwargs: Any) -> List[Embedding]:
        """Embed ``texts``; returns ``list[list[float]]`` of shape ``(len(texts), dim)`` in input order."""
        return self.get_text_embedding_batch_array(texts, show_progress=show_progress).tolist()

    def get_text_embedding(self, text: str) -> Embedding:
        """Embed one document text; returns ``list[float]`` of length ``dim``."""
        return self.get_text_embedding_batch([text])[0]

    def get_query_embedding(self, query: str) -> Embedding:
        """Embed one query (with the model's query instruction, if any); returns ``list[float]``."""
        return np.asarray(self._get_query_embeddings([query]), dtype=np.float32)[0].tolist()

    def get_agg_embedding_from_queries(self, queries: List[str]) -> Embedding:
        """Mean of the query embeddings of ``queries``."""
        arr = np.asarray(self._get_query_embeddings(list(queries)), dtype=np.float32)
        return arr.mean(axis=0).tolist()

    async def aget_text_embedding_batch(self, texts: Sequence[str], show_progress: bool = False) -> List[Embedding]:
        return self.get_text_embedding_batch(texts, show_progress=show_progress)

    async def aget_query_embedding(self, query: str) -> Embedding:
        return self.get_query_embedding(query)

    @staticmethod
    def similarity(embedding1: Sequence[float], embedding2: Sequence[float]) -> float:
        """Cosine similarity of two vectors (``0.0`` if either is all zeros)."""
        a = np.asarray(embedding1, dtype=np.float64)
        b = np.asarray(embedding2, dtype=np.float64)
        denom = float(np.linalg.norm(a) * np.linalg.norm(b))
        return float(a @ b / denom) if denom else 0.0

    # -- as a transformation ------------------------------------------------------------
    def __call__(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> List[BaseNode]:
        """Set ``node.embedding`` on every node that has none, from ``get_content(MetadataMode.EMBED)``."""
        nodes = list(nodes)
        todo = [n for n in nodes if n.embedding is None]
        if todo:
            vecs = self.get_text_embedding_batch_array(
                [n.get_content(MetadataMode.EMBED) for n in todo], show_progress=show_progress
            )
            for node, vec in zip(todo, vecs):
                node.embedding = vec.tolist()
        return nodes
