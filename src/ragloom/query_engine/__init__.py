"""Query engines: ``query(question) -> Response`` (retrieve, postprocess, synthesize)."""

from ragloom.query_engine.base import BaseQueryEngine
from ragloom.query_engine.retriever_query_engine import RetrieverQueryEngine
from ragloom.query_engine.router_query_engine import RouterQueryEngine
from ragloom.query_engine.sub_question_query_engine import SubQuestionAnswerPair, SubQuestionQueryEngine
from ragloom.query_engine.transform_query_engine import TransformQueryEngine

__all__ = [
    "BaseQueryEngine",
    "RetrieverQueryEngine",
    "RouterQueryEngine",
    "SubQuestionAnswerPair",
    "SubQuestionQueryEngine",
    "TransformQueryEngine",
]
