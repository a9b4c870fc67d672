"""Incremental ingestion: :class:`IngestionPipeline`, its per-node :class:`IngestionCache`, :class:`DocstoreStrategy`."""

from ragloom.ingestion.cache import IngestionCache, node_transform_key
from ragloom.ingestion.pipeline import (
    DocstoreStrategy,
    IngestionPipeline,
    IngestionStats,
    run_transformations,
)

__all__ = ["DocstoreStrategy", "IngestionCache", "IngestionPipeline", "IngestionStats", "node_transform_key", "run_transformations"]
