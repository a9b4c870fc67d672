"""Maximal marginal relevance (MMR): pick results that are relevant to the query *and* unlike each other.

The greedy selection of Carbonell & Goldstein, "The Use of MMR, Diversity-Based Reranking for
Reordering Documents and Producing Summaries" (SIGIR 1998): at each step take the candidate ``d``
maximising ``λ·sim(q, d) − (1 − λ)·max_{s ∈ selected} sim(d, s)``, with cosine similarity.
``λ`` is LlamaIndex's ``mmr_threshold`` (1 = pure relevance, 0 = pure diversity; default 0.5, as
LlamaIndex's).
"""

from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["DEFAULT_MMR_THRESHOLD", "DEFAULT_MMR_PREFETCH_FACTOR", "check_mmr_threshold", "mmr_select"]

#: λ when none is given (LlamaIndex's default)
DEFAULT_MMR_THRESHOLD = 0.5
#: candidates fetched per result before the MMR selection (LlamaIndex's ``mmr_prefetch_factor``)
DEFAULT_MMR_PREFETCH_FACTOR = 4.0


def check_mmr_threshold(mmr_threshold: Optional[float]) -> float:
    """``mmr_threshold`` as a float in [0, 1] (``None`` gives :data:`DEFAULT_MMR_THRESHOLD`).

    Raises:
        ValueError: not a number in [0, 1].
    """
    if mmr_threshold is None:
        return DEFAULT_MMR_THRESHOLD
    if isinstance(mmr_threshold, bool) or not isinstance(mmr_threshold, (int, float)):
        raise ValueError(f"mmr_threshold must be a number in [0, 1], got {mmr_threshold!r}")
    value = float(mmr_threshold)
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError(f"mmr_threshold must be a number in [0, 1], got {mmr_threshold!r}")
    return value


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms == 0.0, 1.0, norms)


def mmr_select(
    query_embedding: Sequence[float],
    embeddings: Sequence[Sequence[float]],
    top_k: int,
    mmr_threshold: Optional[float] = None,
) -> List[Tuple[int, float]]:
    """Choose up to ``top_k`` of ``embeddings`` by maximal marginal relevance.

    Args:
        query_embedding: the query vector, shape ``(dim,)``.
        embeddings: candidate vectors, shape ``(n, dim)``.
        top_k: how many to choose (>= 1); fewer when there are fewer candidates.
        mmr_threshold: λ in [0, 1] (see the module docstring); ``None`` for 0.5.

    Returns:
        ``(candidate index, cosine similarity to the query)`` in the order chosen.  The score is
        the plain cosine similarity, not the MMR objective, so a ``SimilarityPostprocessor``
        cutoff means the same as in dense mode (LlamaIndex returns the objective).  Ties go to
        the earlier candidate, so the result is deterministic.  The first choice is always the
        most relevant candidate (with λ = 0 the objective alone would not rank it).

    Raises:
        ValueError: ``top_k`` < 1, ``mmr_threshold`` outside [0, 1], or vectors of different
            dimensions.
    """
    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
        raise ValueError(f"top_k must be an int >= 1, got {top_k!r}")
    lam = check_mmr_threshold(mmr_threshold)
    if len(embeddings) == 0:
        return []
    query = _unit(np.asarray(query_embedding, dtype=np.float64).reshape(1, -1))[0]
    cands = np.asarray(embeddings, dtype=np.float64)
    if cands.ndim != 2 or cands.shape[1] != query.shape[0]:
        raise ValueError(f"embeddings must have shape (n, {query.shape[0]}), got {cands.shape}")
    cands = _unit(cands)
    relevance = cands @ query
    redundancy = np.full(len(cands), -np.inf)  # max similarity to anything chosen so far
    chosen: List[Tuple[int, float]] = []
    available = np.ones(len(cands), dtype=bool)
    for _ in range(min(top_k, len(cands))):
        if chosen:
            objective = np.where(available, lam * relevance - (1.0 - lam) * redundancy, -np.inf)
        else:  # nothing to be redundant with yet: the most relevant node comes first, whatever λ
            objective = relevance
        best = int(np.argmax(objective))
        chosen.append((best, float(relevance[best])))
        available[best] = False
        redundancy = np.maximum(redundancy, cands @ cands[best])
    return chosen
