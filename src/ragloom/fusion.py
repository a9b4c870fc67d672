"""Rank fusion: merge several ranked lists of the same items into one ranking.

One implementation, used by the SQLite store's built-in hybrid search
(:meth:`ragloom.vector_stores.SQLiteVectorStore.query`, mode ``hybrid``) and by
:class:`ragloom.retrievers.QueryFusionRetriever`, so the two rank identically.

A *ranking* is a sequence of ``(key, score)`` pairs, best first (``key``: a node id;
``score``: higher is better, ``None`` counts as 0.0).  Every function returns
``list[(key, fused score)]`` sorted by fused score, highest first, ties broken by key, so
the output does not depend on the order of the input lists.  Sums use :func:`math.fsum`
(exactly rounded), so permuting the lists or the items of a list cannot change a score by
even one ulp.

Modes (LlamaIndex's names, :class:`FUSION_MODES`):

* ``reciprocal_rerank`` — reciprocal rank fusion, Cormack, Clarke & Büttcher, "Reciprocal
  Rank Fusion outperforms Condorcet and individual Rank Learning Methods" (SIGIR 2009):
  ``score(d) = Σ_lists w · 1 / (RRF_K + rank(d))`` with ranks counted from 1 and
  ``RRF_K = 60`` (the paper's constant).  Each list is first sorted by score (stable).
  (LlamaIndex counts ranks from 0; the order it produces is the same except in rare ties.)
* ``relative_score`` — each list's scores are min-max scaled onto [0, 1], multiplied by
  the list's weight and summed (Weaviate's "relative score fusion").
* ``dist_based_score`` — like ``relative_score`` but each list is scaled by its
  mean ± 3 standard deviations (population std) instead of its min and max, so one outlier
  does not squash the others (Mazzeschi, "Distribution-Based Score Fusion", 2023).
* ``simple`` — each item keeps the highest raw score it has in any list (weights unused).

In the two score-scaling modes a list whose scale is degenerate (all scores equal) maps
every item to 1.0 if that score is > 0, else to 0.0 (LlamaIndex's rule).  A list whose
weight is 0 is ignored entirely: items that appear only there are not returned.
"""

from __future__ import annotations

import math
from enum import Enum
from typing import Dict, Hashable, List, Optional, Sequence, Tuple, TypeVar, Union

__all__ = [
    "FUSION_MODES",
    "FusionMode",
    "RRF_K",
    "reciprocal_rank_fusion",
    "relative_score_fusion",
    "dist_based_score_fusion",
    "simple_fusion",
    "fuse_rankings",
]

#: Reciprocal rank fusion constant (Cormack et al. 2009).
RRF_K = 60

K = TypeVar("K", bound=Hashable)
Ranking = Sequence[Tuple[K, Optional[float]]]


class FUSION_MODES(str, Enum):
    """How :func:`fuse_rankings` (and ``QueryFusionRetriever``) merge ranked lists."""

    RECIPROCAL_RANK = "reciprocal_rerank"
    RELATIVE_SCORE = "relative_score"
    DIST_BASED_SCORE = "dist_based_score"
    SIMPLE = "simple"


FusionMode = FUSION_MODES


def _weights(n: int, weights: Optional[Sequence[float]]) -> List[float]:
    if weights is None:
        return [1.0] * n
    w = [float(x) for x in weights]
    if len(w) != n:
        raise ValueError(f"weights must have one entry per ranking ({n}), got {len(w)}")
    for x in w:
        if not math.isfinite(x) or x < 0.0:
            raise ValueError(f"weights must be finite and >= 0, got {list(weights)}")
    return w


def _score(value: Optional[float]) -> float:
    return 0.0 if value is None else float(value)


def _ordered(totals: Dict[K, List[float]]) -> List[Tuple[K, float]]:
    fused = [(key, math.fsum(parts)) for key, parts in totals.items()]
    fused.sort(key=lambda kv: (-kv[1], kv[0]))
    return fused


def reciprocal_rank_fusion(
    rankings: Sequence[Ranking], weights: Optional[Sequence[float]] = None, k: int = RRF_K
) -> List[Tuple[K, float]]:
    """Reciprocal rank fusion: ``Σ w · 1 / (k + rank)``, ranks from 1 after sorting each list
    by score (stable).  With all weights 1 (the default) this is the paper's RRF.  An item
    repeated within one list counts at its best rank only.

    Raises:
        ValueError: ``k`` < 0, or ``weights`` of the wrong length or with negative / non-finite entries.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    w = _weights(len(rankings), weights)
    totals: Dict[K, List[float]] = {}
    for weight, ranking in zip(w, rankings, strict=True):
        if weight == 0.0:
            continue
        seen = set()
        ordered = sorted(ranking, key=lambda kv: -_score(kv[1]))
        for rank, (key, _) in enumerate(ordered, 1):
            if key in seen:
                continue
            seen.add(key)
            totals.setdefault(key, []).append(weight / (k + rank))
    return _ordered(totals)


def _scaled_fusion(
    rankings: Sequence[Ranking], weights: Optional[Sequence[float]], dist_based: bool
) -> List[Tuple[K, float]]:
    w = _weights(len(rankings), weights)
    totals: Dict[K, List[float]] = {}
    for weight, ranking in zip(w, rankings, strict=True):
        if weight == 0.0 or not ranking:
            continue
        best: Dict[K, float] = {}
        for key, value in ranking:
            s = _score(value)
            if key not in best or s > best[key]:
                best[key] = s
        scores = list(best.values())
        if dist_based:
            mean = math.fsum(scores) / len(scores)
            std = _std(scores, mean)
            low, high = mean - 3.0 * std, mean + 3.0 * std
        else:
            low, high = min(scores), max(scores)
        span = high - low
        for key, s in best.items():
            if span > 0.0:
                # not clipped here: an outlier past mean ± 3 std (a clear best match) must keep its lead
                norm = (s - low) / span
            else:
                norm = 1.0 if high > 0.0 else 0.0
            totals.setdefault(key, []).append(weight * norm)
    return _bounded(_ordered(totals), math.fsum(w))


def _std(scores: Sequence[float], mean: float) -> float:
    """Population standard deviation of ``scores`` about ``mean``, computed on the deviations scaled
    by the largest one, so tiny spreads (scores around 1e-200, whose squares underflow to 0) are not
    taken for equal scores, nor huge ones overflow."""
    devs = [s - mean for s in scores]
    m = max(map(abs, devs))
    if m == 0.0:
        return 0.0
    return m * math.sqrt(math.fsum((d / m) ** 2 for d in devs) / len(devs))


def _bounded(fused: List[Tuple[K, float]], top: float) -> List[Tuple[K, float]]:
    """``fused`` (best first) mapped into ``[0, top]`` by one increasing affine map when a score
    lies outside (an outlier beyond mean ± 3 std), so order and ties are kept.  Clipping each list
    instead (as 0.2 briefly did) tied every outlier at the top and broke the ranking: CMRC2018
    hybrid nDCG@10 fell from 0.980 to 0.722 (``benchmarks/retrieval_quality.py``)."""
    if not fused:
        return fused
    high, low = fused[0][1], fused[-1][1]
    if low >= 0.0 and high <= top:
        return fused
    lo, hi = min(0.0, low), max(top, high)
    scale = top / (hi - lo) if hi > lo else 0.0
    return [(key, min(top, max(0.0, (v - lo) * scale))) for key, v in fused]


def relative_score_fusion(
    rankings: Sequence[Ranking], weights: Optional[Sequence[float]] = None
) -> List[Tuple[K, float]]:
    """Min-max scale each list onto [0, 1], weight and sum.  An item repeated within one list
    counts once, with its best score.

    Raises:
        ValueError: ``weights`` of the wrong length or with negative / non-finite entries.
    """
    return _scaled_fusion(rankings, weights, dist_based=False)


def dist_based_score_fusion(
    rankings: Sequence[Ranking], weights: Optional[Sequence[float]] = None
) -> List[Tuple[K, float]]:
    """Scale each list by its mean ± 3 std onto [0, 1], weight and sum (Mazzeschi 2023); the fused
    scores are then mapped into [0, sum of weights] by one increasing affine map when an outlier
    (past mean ± 3 std) leaves that range, so the ranking is the paper's.

    Raises:
        ValueError: ``weights`` of the wrong length or with negative / non-finite entries.
    """
    return _scaled_fusion(rankings, weights, dist_based=True)


def simple_fusion(rankings: Sequence[Ranking], weights: Optional[Sequence[float]] = None) -> List[Tuple[K, float]]:
    """Each item's highest raw score over the lists whose weight is not 0.

    Raises:
        ValueError: ``weights`` of the wrong length or with negative / non-finite entries.
    """
    w = _weights(len(rankings), weights)
    best: Dict[K, float] = {}
    for weight, ranking in zip(w, rankings, strict=True):
        if weight == 0.0:
            continue
        for key, value in ranking:
            s = _score(value)
            if key not in best or s > best[key]:
                best[key] = s
    return _ordered({key: [s] for key, s in best.items()})


def fuse_rankings(
    rankings: Sequence[Ranking],
    mode: Union[str, FUSION_MODES] = FUSION_MODES.RECIPROCAL_RANK,
    weights: Optional[Sequence[float]] = None,
    top_k: Optional[int] = None,
) -> List[Tuple[K, float]]:
    """Fuse ``rankings`` with ``mode`` (a :class:`FUSION_MODES` or its string value) and keep
    the best ``top_k`` (all when ``None``).

    Raises:
        ValueError: an unknown ``mode``, ``top_k`` < 0, or bad ``weights``.
    """
    mode = parse_mode(mode)
    if top_k is not None and top_k < 0:
        raise ValueError(f"top_k must be >= 0, got {top_k}")
    if mode is FUSION_MODES.RECIPROCAL_RANK:
        fused = reciprocal_rank_fusion(rankings, weights)
    elif mode is FUSION_MODES.RELATIVE_SCORE:
        fused = relative_score_fusion(rankings, weights)
    elif mode is FUSION_MODES.DIST_BASED_SCORE:
        fused = dist_based_score_fusion(rankings, weights)
    else:
        fused = simple_fusion(rankings, weights)
    return fused if top_k is None else fused[:top_k]


def parse_mode(mode: Union[str, FUSION_MODES]) -> FUSION_MODES:
    """``mode`` as a :class:`FUSION_MODES`.

    Raises:
        ValueError: ``mode`` is not one of the four modes.
    """
    try:
        return FUSION_MODES(mode)
    except ValueError:
        allowed = ", ".join(m.value for m in FUSION_MODES)
        raise ValueError(f"mode must be one of {allowed}, got {mode!r}") from None
