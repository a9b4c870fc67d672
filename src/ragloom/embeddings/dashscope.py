"""DashScope (Alibaba Cloud Model Studio) text embeddings, LlamaIndex:
``llama_index.embeddings.dashscope.DashScopeEmbedding``.

ragloom calls DashScope's OpenAI-compatible endpoint (``POST
https://dashscope.aliyuncs.com/compatible-mode/v1/embeddings``) with the OpenAI embedding client
(:class:`~ragloom.embeddings.openai.OpenAIEmbedding`: batching, truncation to the model's input
limit, retries), instead of the ``dashscope`` SDK LlamaIndex uses.  The key comes from
``$DASHSCOPE_API_KEY`` (never from ``$OPENAI_API_KEY``).

Limits (Model Studio's text-embedding API page): ``text-embedding-v4`` — dimensions 2048, 1536,
1024 (default), 768, 512, 256, 128 or 64; ``text-embedding-v3`` — 1024 (default), 768, 512, 256,
128 or 64; both at most 10 inputs per request and 8,192 tokens per input.  ``text-embedding-v2`` /
``-v1`` — 1536 dimensions, 25 inputs per request, 2,048 tokens per input.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from ragloom.embeddings.openai import OpenAIEmbedding
from ragloom.llms.dashscope import DASHSCOPE_API_BASE, DASHSCOPE_INTL_API_BASE, is_dashscope_host

__all__ = [
    "DashScopeEmbedding",
    "DashScopeTextEmbeddingModels",
    "DashScopeTextEmbeddingType",
    "DASHSCOPE_EMBEDDING_DIMENSIONS",
    "DASHSCOPE_API_BASE",
    "DASHSCOPE_INTL_API_BASE",
]


class DashScopeTextEmbeddingModels:
    """Model names (LlamaIndex's enum lists v1–v3; v4 is the current model)."""

    TEXT_EMBEDDING_V1 = "text-embedding-v1"
    TEXT_EMBEDDING_V2 = "text-embedding-v2"
    TEXT_EMBEDDING_V3 = "text-embedding-v3"
    TEXT_EMBEDDING_V4 = "text-embedding-v4"


class DashScopeTextEmbeddingType:
    """``text_type`` values: retrieval embeds documents and queries differently."""

    TEXT_TYPE_QUERY = "query"
    TEXT_TYPE_DOCUMENT = "document"


#: ``model -> dimensions it can return`` (the first is its default).
DASHSCOPE_EMBEDDING_DIMENSIONS: Dict[str, Tuple[int, ...]] = {
    "text-embedding-v4": (1024, 2048, 1536, 768, 512, 256, 128, 64),
    "text-embedding-v3": (1024, 768, 512, 256, 128, 64),
    "text-embedding-v2": (1536,),
    "text-embedding-v1": (1536,),
}
#: inputs per request: 25 for v1/v2, 10 for v3/v4 (and for a model not listed, to be safe)
_MAX_INPUTS = {"text-embedding-v1": 25, "text-embedding-v2": 25}
_DEFAULT_MAX_INPUTS = 10
#: LlamaIndex's default batch size for DashScopeEmbedding
EMBED_MAX_BATCH_SIZE = 25


class DashScopeEmbedding(OpenAIEmbedding):
    """Text embeddings from DashScope.

    Args (LlamaIndex's names and defaults):
        model_name: default ``"text-embedding-v2"`` (LlamaIndex's); ``"text-embedding-v4"`` is
            the current, multilingual model.
        text_type: how *texts* (documents) are embedded: ``"document"`` (default) or ``"query"``;
            queries are always embedded as ``"query"``.  Sent as the request field ``text_type``,
            DashScope's name for it; ``None`` sends no such field (for an endpoint that refuses
            fields outside OpenAI's API: then documents and queries are embedded alike).
        api_key: default ``$DASHSCOPE_API_KEY``; required for DashScope's own hosts.
        embed_batch_size: texts per batch (default 25); requests carry at most 10 (v3, v4) or 25
            (v1, v2) inputs, as the API allows.
        dimensions: (ragloom addition) shorter vectors for v3/v4, one of
            :data:`DASHSCOPE_EMBEDDING_DIMENSIONS`.
        api_base: (ragloom addition) default :data:`DASHSCOPE_API_BASE`; the international
            endpoint is :data:`DASHSCOPE_INTL_API_BASE`.
        Other args: as :class:`~ragloom.embeddings.openai.OpenAIEmbedding` (``timeout``,
            ``max_retries``, ``callback_manager`` …).

    Raises:
        ValueError: no API key for a DashScope host; ``text_type`` not ``"document"``,
            ``"query"`` or ``None``; ``dimensions`` the model does not offer.
        EmbeddingProviderError: (when embedding) a permanent fault or retries exhausted.
    """

    provider_name = "DashScope"
    #: no cap on the tokens of one request: DashScope caps each input (the registry's limit)
    max_tokens_per_request: Optional[int] = None  # type: ignore[assignment]  # OpenAI's 300k cap is not DashScope's

    def __init__(
        self,
        model_name: str = DashScopeTextEmbeddingModels.TEXT_EMBEDDING_V2,
        text_type: Optional[str] = DashScopeTextEmbeddingType.TEXT_TYPE_DOCUMENT,
        api_key: Optional[str] = None,
        embed_batch_size: int = EMBED_MAX_BATCH_SIZE,
        dimensions: Optional[int] = None,
        api_base: str = DASHSCOPE_API_BASE,
        **kwargs: Any,
    ) -> None:
        if text_type not in ("document", "query", None):
            raise ValueError(f"text_type must be 'document', 'query' or None, got {text_type!r}")
        allowed = DASHSCOPE_EMBEDDING_DIMENSIONS.get(model_name)
        if dimensions is not None and allowed is not None and dimensions not in allowed:
            raise ValueError(f"dimensions for {model_name} must be one of {sorted(allowed)}, got {dimensions!r}")
        key = api_key if api_key is not None else os.environ.get("DASHSCOPE_API_KEY", "")
        if not key and is_dashscope_host(api_base):
            raise ValueError("DashScopeEmbedding needs an API key: pass api_key= or set DASHSCOPE_API_KEY")
        super().__init__(
            model=model_name,
            api_base=api_base,
            api_key=key,  # "" (no header) rather than None, which would read $OPENAI_API_KEY
            dimensions=dimensions,
            embed_batch_size=embed_batch_size,
            **kwargs,
        )
        self.text_type = text_type
        self.max_items_per_request = _MAX_INPUTS.get(model_name, _DEFAULT_MAX_INPUTS)

    def _request(self, texts: List[str], kind: str) -> Tuple[str, Any, Callable[[Any], np.ndarray], None]:
        url, payload, parse, params = super()._request(texts, kind)
        if self.text_type is not None:
            payload["text_type"] = "query" if kind == "query" else self.text_type
        return url, payload, parse, params

    def identity(self) -> Dict[str, Any]:
        out = super().identity()
        out["text_type"] = self.text_type
        return out

    def cache_identity(self) -> Dict[str, Any]:
        out = super().cache_identity()
        out["text_type"] = self.text_type
        return out
