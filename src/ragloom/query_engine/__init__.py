"""Query engines: ``query(question) -> Response`` (retrieve, postprocess, synthesize)."""

from ragloom.query_engine.base import BaseQueryEngine
from ragloom.query_engine.retriever_query_engine import RetrieverQueryEngine

__all__ = ["BaseQueryEngine", "RetrieverQueryEngine"]
