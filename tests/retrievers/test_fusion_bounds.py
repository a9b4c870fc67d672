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
