"""``MockEmbedding``: LlamaIndex's constant embedding for tests and dry runs (no model, no network)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from ragloom.embeddings.base import BaseEmbedding

__all__ = ["MockEmbedding"]


class MockEmbedding(BaseEmbedding):
    """Every text, document or query, embeds to the same vector: ``embed_dim`` values of 0.5
    (LlamaIndex's ``MockEmbedding``).  Retrieval over it ranks every node equally (cosine 1.0), so it
    tests plumbing, not relevance; hybrid retrieval still ranks by keywords.

    Args:
        embed_dim: the vectors' length, ``>= 1``.
        embed_batch_size, embed_cache, callback_manager: as :class:`BaseEmbedding`.

    Raises:
        ValueError: ``embed_dim`` is not an integer ``>= 1``.
    """

    def __init__(self, embed_dim: int, **kwargs: Any) -> None:
        if isinstance(embed_dim, bool) or not isinstance(embed_dim, int) or embed_dim < 1:
            raise ValueError(f"embed_dim must be an integer >= 1, got {embed_dim!r}")
        kwargs.setdefault("model_name", "mock")
        super().__init__(**kwargs)
        self.embed_dim = embed_dim

    @property
    def dimension(self) -> Optional[int]:
        return self.embed_dim

    def identity(self) -> Dict[str, Any]:
        return {**super().identity(), "embed_dim": self.embed_dim}

    def _get_text_embeddings(self, texts: List[str]) -> np.ndarray:
        return np.full((len(texts), self.embed_dim), 0.5, dtype=np.float32)
