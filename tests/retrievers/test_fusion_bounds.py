"""Fused scores stay in [0, 1] with weights summing to 1 (issue 15: hybrid scores went above 1)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.fusion import dist_based_score_fusion, relative_score_fusion

scores = st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=60)


@given(a=scores, b=scores)
@settings(max_examples=200, deadline=None)
def test_fused_scores_stay_within_zero_and_one(a, b):
    dense = [(f"d{i}", s) for i, s in enumerate(a)]
    keyword = [(f"d{i}", s) for i, s in enumerate(b)]
    for fuse in (dist_based_score_fusion, relative_score_fusion):
        for _, score in fuse([dense, keyword], [0.5, 0.5]):
            assert 0.0 <= score <= 1.0 + 1e-12


def test_an_outlier_no_longer_scores_above_one():
    ranking = [("top", 100.0)] + [(f"x{i}", 1.0) for i in range(20)]
    fused = dict(dist_based_score_fusion([ranking, ranking], [0.5, 0.5]))
    assert fused["top"] == 1.0 and all(v < 1.0 for k, v in fused.items() if k != "top")


@given(a=scores, b=scores)
@settings(max_examples=200, deadline=None)
def test_bounding_keeps_the_unbounded_ranking(a, b):
    """Bounding maps scores, it never reorders: several outliers keep their order (clipping tied
    them at 1 and broke hybrid ranking)."""
    dense = [(f"d{i}", s) for i, s in enumerate(a)]
    keyword = [(f"k{i}", s) for i, s in enumerate(b)]
    fused = dist_based_score_fusion([dense, keyword], [0.3, 0.7])
    scores_out = [v for _, v in fused]
    assert scores_out == sorted(scores_out, reverse=True)


def test_two_outliers_keep_their_order():
    ranking = [("best", 200.0), ("second", 150.0)] + [(f"x{i}", 1.0 + i / 100) for i in range(30)]
    fused = dist_based_score_fusion([ranking], [1.0])
    assert [k for k, _ in fused[:2]] == ["best", "second"] and fused[0][1] > fused[1][1]
