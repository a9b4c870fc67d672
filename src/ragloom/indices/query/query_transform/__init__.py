"""Query transforms (LlamaIndex ``llama_index.core.indices.query.query_transform`` names): rewrite
a :class:`~ragloom.schema.QueryBundle` before retrieval, e.g. HyDE."""

from ragloom.indices.query.query_transform.base import (
    DEFAULT_HYDE_PROMPT,
    BaseQueryTransform,
    HyDEQueryTransform,
    IdentityQueryTransform,
)

__all__ = ["BaseQueryTransform", "IdentityQueryTransform", "HyDEQueryTransform", "DEFAULT_HYDE_PROMPT"]
