"""Corpus and an independent BM25 reference shared by the retriever tests."""

import math

import pytest

from ragloom.analysis import analyze
from ragloom.schema import NodeRelationship, RelatedNodeInfo, TextNode

# (node id, source document id, text) — English, Chinese and mixed
CORPUS = [
    ("tea-1", "tea", "Green tea should be brewed with water at about eighty degrees for two minutes."),
    ("tea-2", "tea", "Black tea tolerates boiling water and a longer steeping time of four minutes."),
    ("tea-3", "tea", "Oolong tea leaves can be steeped several times; each brew tastes different."),
    ("bike-1", "bike", "To fix a flat tire, remove the wheel and pull the inner tube out of the tire."),
    ("bike-2", "bike", "Find the puncture by inflating the tube and listening for escaping air."),
    ("bike-3", "bike", "Patch the tube, refit the tire on the wheel and pump it to the pressure on the sidewall."),
    ("panda-1", "panda", "大熊猫主要生活在四川、陕西和甘肃的山区竹林里。"),
    ("panda-2", "panda", "大熊猫每天要花十几个小时吃竹子，成年熊猫一天能吃十多公斤竹子。"),
    ("panda-3", "panda", "熊猫宝宝出生时只有一百克左右，粉红色，没有毛。"),
    ("hike-1", "hike", "秋天去登山要带好保暖的衣服，山顶的温度比山下低很多。"),
    ("hike-2", "hike", "登山前查看天气预报，下雨天山路湿滑，不要冒险上山。"),
    ("mixed-1", "mixed", "Python 的 asyncio 库让你用 async 和 await 写并发程序。"),
]

QUERIES = [
    "how hot should the water be for green tea",
    "fix a flat bicycle tire puncture",
    "大熊猫吃什么",
    "熊猫宝宝",
    "秋天登山注意什么",
    "asyncio 并发",
    "tea tube",
]


def make_nodes(corpus=CORPUS):
    return [
        TextNode(
            id_=nid,
            text=text,
            metadata={"topic": doc},
            excluded_embed_metadata_keys=["topic"],
            excluded_llm_metadata_keys=["topic"],
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc)},
        )
        for nid, doc, text in corpus
    ]


def brute_force_bm25(query, docs, k1=1.2, b=0.75):
    """Okapi BM25 computed directly (FTS5's variant: idf = ln((N - n + 0.5) / (n + 0.5)) floored
    at 1e-6, document length and average in analyzer tokens).  ``docs``: {node_id: text}.
    Returns {node_id: score} for documents sharing at least one query term."""
    toks = {nid: analyze(text) for nid, text in docs.items()}
    n_docs = len(toks)
    avgdl = sum(len(t) for t in toks.values()) / n_docs
    terms = list(dict.fromkeys(analyze(query)))
    out = {}
    for nid, tk in toks.items():
        score, hit = 0.0, False
        for term in terms:
            tf = tk.count(term)
            if not tf:
                continue
            hit = True
            df = sum(term in t for t in toks.values())
            idf = math.log((n_docs - df + 0.5) / (df + 0.5))
            idf = idf if idf > 0 else 1e-6
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(tk) / avgdl))
        if hit:
            out[nid] = score
    return out


def assert_matches_brute_force(results, query, docs, k):
    expected = brute_force_bm25(query, docs)
    ranked = sorted(expected.items(), key=lambda kv: -kv[1])[:k]
    got = [(r.node.node_id, r.score) for r in results]
    assert len(got) == len(ranked), (query, got, ranked)
    for (gid, gs), (eid, es) in zip(got, ranked, strict=True):
        assert gs == pytest.approx(es, rel=1e-9, abs=1e-9), (query, got, ranked)
        assert gid == eid or gs == pytest.approx(expected[gid], rel=1e-9), (query, got, ranked)
    for gid, gs in got:
        assert gs == pytest.approx(expected[gid], rel=1e-9)
