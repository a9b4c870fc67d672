"""Retrievers: ``BaseRetriever`` and dense ``VectorIndexRetriever``."""

from ragloom.retrievers.base import BaseRetriever
from ragloom.retrievers.vector import VectorIndexRetriever

__all__ = ["BaseRetriever", "VectorIndexRetriever"]
