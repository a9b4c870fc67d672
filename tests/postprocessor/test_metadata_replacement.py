"""``MetadataReplacementPostProcessor`` and ``BaseNodePostprocessor``."""

import pytest

from ragloom.node_parser import SentenceWindowNodeParser
from ragloom.postprocessor import (
    BaseNodePostprocessor,
    MetadataReplacementPostProcessor,
)
from ragloom.schema import Document, MetadataMode, NodeWithScore, QueryBundle, TextNode


def test_window_swapped_in_without_mutating_the_retrieved_nodes():
    doc = Document(text="First one. Second one. Third one. Fourth one.", id_="d")
    nodes = SentenceWindowNodeParser(window_size=1, tokenizer="cl100k_base", chunk_size=64)([doc])
    assert [n.text for n in nodes] == ["First one.", "Second one.", "Third one.", "Fourth one."]
    retrieved = [NodeWithScore(node=nodes[2], score=0.9), NodeWithScore(node=nodes[0], score=0.5)]
    out = MetadataReplacementPostProcessor(target_metadata_key="window").postprocess_nodes(retrieved, query_str="q")
    assert [o.text for o in out] == ["Second one. Third one. Fourth one.", "First one. Second one."]
    assert [o.score for o in out] == [0.9, 0.5]
    assert nodes[2].text == "Third one."  # the original node is untouched
    assert out[0].node.get_content(MetadataMode.LLM) == "Second one. Third one. Fourth one."
    assert out[0].node.id_ == nodes[2].id_


def test_node_without_key_is_kept():
    node = TextNode(text="plain", id_="n")
    out = MetadataReplacementPostProcessor().postprocess_nodes([NodeWithScore(node=node, score=1.0)])
    assert out[0].text == "plain" and out[0].score == 1.0


def test_other_key_and_errors():
    node = TextNode(text="short", metadata={"long": "the long form"})
    pp = MetadataReplacementPostProcessor(target_metadata_key="long")
    assert pp.postprocess_nodes([NodeWithScore(node=node)])[0].text == "the long form"
    with pytest.raises(ValueError):
        pp.postprocess_nodes([], query_bundle=QueryBundle(query_str="a"), query_str="b")
    with pytest.raises(ValueError):
        MetadataReplacementPostProcessor(target_metadata_key="")
    assert isinstance(pp, BaseNodePostprocessor)
    assert pp.to_config()["target_metadata_key"] == "long"


def test_custom_postprocessor_gets_a_query_bundle():
    seen = []

    class Keep(BaseNodePostprocessor):
        def _postprocess_nodes(self, nodes, query_bundle=None):
            seen.append(query_bundle)
            return nodes[:1]

    out = Keep().postprocess_nodes(
        [NodeWithScore(node=TextNode(text="a")), NodeWithScore(node=TextNode(text="b"))], query_str="hi"
    )
    assert len(out) == 1 and seen[0].query_str == "hi"
