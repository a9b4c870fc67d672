"""``BaseRetriever``'s contract: ``_retrieve`` is abstract."""

import pytest

from ragloom.retrievers import (
    AutoMergingRetriever,
    BaseRetriever,
    BM25Retriever,
    QueryFusionRetriever,
    RecursiveRetriever,
)
from ragloom.retrievers.vector import VectorIndexRetriever
from ragloom.schema import NodeWithScore, QueryBundle, TextNode


def test_retriever_without_retrieve_cannot_be_instantiated():
    class NoRetrieve(BaseRetriever):
        pass

    with pytest.raises(TypeError, match="_retrieve"):
        NoRetrieve()

    class Echo(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle):
            return [NodeWithScore(node=TextNode(text=query_bundle.query_str), score=1.0)]

    assert Echo().retrieve("hello")[0].node.text == "hello"
    # every shipped retriever implements it
    for cls in (AutoMergingRetriever, BM25Retriever, QueryFusionRetriever, RecursiveRetriever, VectorIndexRetriever):
        assert not cls.__abstractmethods__, cls
