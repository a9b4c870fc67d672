"""Incremental ingestion: the one engine (:mod:`ragloom.ingestion.engine`: plan → transform → write)
and its callers: :class:`IngestionPipeline`, with its per-node :class:`IngestionCache` and
:class:`DocstoreStrategy`."""

from ragloom.ingestion.cache import IngestionCache, node_transform_key
from ragloom.ingestion.engine import (
    DocstoreStrategy,
    DocumentFailure,
    FailureKind,
    IngestionEngine,
    IngestionStats,
)
from ragloom.ingestion.pipeline import IngestionPipeline
from ragloom.ingestion.transform import run_transformations

__all__ = [
    "DocstoreStrategy",
    "DocumentFailure",
    "FailureKind",
    "IngestionCache",
    "IngestionEngine",
    "IngestionPipeline",
    "IngestionStats",
    "node_transform_key",
    "run_transformations",
]
