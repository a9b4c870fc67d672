"""Known input-token limits of embedding models served over HTTP.

A remote provider must never send a text longer than the model reads: OpenAI rejects
it with HTTP 400, others truncate silently.  :func:`lookup_model_limits` finds a model's
limit by, in order:

1. the exact name (case-insensitive, a leading ``models/`` as Gemini writes it dropped);
2. the name without its tag or organisation (``nomic-embed-text:latest`` →
   ``nomic-embed-text``, ``BAAI/bge-m3`` → ``bge-m3``);
3. the longest registered name contained in it (``nomic-embed-text-v1.5-q8_0`` →
   ``nomic-embed-text``);

and :func:`get_token_limit` falls back to :data:`DEFAULT_MAX_TOKENS` with a logged
warning.  Limits count the model's whole input, special tokens included, as the model
cards state them.  ``tokenizer`` says how to count exactly: ``"cl100k_base"`` (OpenAI),
``"wordpiece"`` (BERT uncased vocabulary, as the bundled all-MiniLM-L6-v2 uses), or
``None`` (unknown: providers count approximately, see :mod:`ragloom.embeddings.http`).
Users add their own models with :func:`register_model_limits`.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Dict, Optional

logger = logging.getLogger(__name__)

__all__ = [
    "ModelLimits",
    "DEFAULT_MAX_TOKENS",
    "KNOWN_MODEL_LIMITS",
    "lookup_model_limits",
    "get_token_limit",
    "register_model_limits",
    "normalize_model_name",
]

#: Limit assumed for a model nobody registered: the common BERT-family window.
DEFAULT_MAX_TOKENS = 512


@dataclass(frozen=True)
class ModelLimits:
    """``max_tokens``: input tokens the model reads (special tokens included);
    ``dimension``: native vector length if known; ``tokenizer``: ``"cl100k_base"``,
    ``"wordpiece"`` or ``None`` (unknown)."""

    max_tokens: int
    dimension: Optional[int] = None
    tokenizer: Optional[str] = None


_CL100K = "cl100k_base"
_WP = "wordpiece"

# Facts from the providers' model pages and the models' Hugging Face cards.
KNOWN_MODEL_LIMITS: Dict[str, ModelLimits] = {
    # OpenAI (platform.openai.com model pages: 8191 input tokens, cl100k_base)
    "text-embedding-3-small": ModelLimits(8191, 1536, _CL100K),
    "text-embedding-3-large": ModelLimits(8191, 3072, _CL100K),
    "text-embedding-ada-002": ModelLimits(8191, 1536, _CL100K),
    # Alibaba DashScope / Model Studio (text-embedding synchronous API page: 8,192 tokens per input
    # for v3/v4, 2,048 for v1/v2; default dimensions 1024 and 1536)
    "text-embedding-v4": ModelLimits(8192, 1024),
    "text-embedding-v3": ModelLimits(8192, 1024),
    "text-embedding-v2": ModelLimits(2048, 1536),
    "text-embedding-v1": ModelLimits(2048, 1536),
    # Google Gemini API (ai.google.dev embeddings guide: 2048 input tokens)
    "gemini-embedding-001": ModelLimits(2048, 3072),
    "text-embedding-004": ModelLimits(2048, 768),
    "embedding-001": ModelLimits(2048, 768),
    # Nomic (nomic-bert, bert-base-uncased vocabulary, 8192-token context)
    "nomic-embed-text": ModelLimits(8192, 768, _WP),
    "nomic-embed-text-v1": ModelLimits(8192, 768, _WP),
    "nomic-embed-text-v1.5": ModelLimits(8192, 768, _WP),
    # mixedbread
    "mxbai-embed-large": ModelLimits(512, 1024, _WP),
    "mxbai-embed-large-v1": ModelLimits(512, 1024, _WP),
    # sentence-transformers (max_seq_length of the sentence-transformers configs)
    "all-minilm": ModelLimits(256, 384, _WP),
    "all-minilm-l6-v2": ModelLimits(256, 384, _WP),
    "all-minilm-l12-v2": ModelLimits(256, 384, _WP),
    "all-mpnet-base-v2": ModelLimits(384, 768),
    "paraphrase-multilingual-minilm-l12-v2": ModelLimits(128, 384),
    # BAAI
    "bge-m3": ModelLimits(8192, 1024),
    "bge-large": ModelLimits(512, 1024, _WP),
    "bge-large-en-v1.5": ModelLimits(512, 1024, _WP),
    "bge-base-en-v1.5": ModelLimits(512, 768, _WP),
    "bge-small-en-v1.5": ModelLimits(512, 384, _WP),
    "bge-large-zh-v1.5": ModelLimits(512, 1024),
    "bge-base-zh-v1.5": ModelLimits(512, 768),
    "bge-small-zh-v1.5": ModelLimits(512, 512),
    # Snowflake
    "snowflake-arctic-embed": ModelLimits(512, 1024, _WP),
    "snowflake-arctic-embed2": ModelLimits(8192, 1024),
    "snowflake-arctic-embed-l-v2.0": ModelLimits(8192, 1024),
    # intfloat E5
    "e5-small-v2": ModelLimits(512, 384, _WP),
    "e5-base-v2": ModelLimits(512, 768, _WP),
    "e5-large-v2": ModelLimits(512, 1024, _WP),
    "multilingual-e5-small": ModelLimits(512, 384),
    "multilingual-e5-base": ModelLimits(512, 768),
    "multilingual-e5-large": ModelLimits(512, 1024),
    "multilingual-e5-large-instruct": ModelLimits(512, 1024),
    # Alibaba GTE
    "gte-small": ModelLimits(512, 384, _WP),
    "gte-base": ModelLimits(512, 768, _WP),
    "gte-large": ModelLimits(512, 1024, _WP),
    "gte-base-en-v1.5": ModelLimits(8192, 768),
    "gte-large-en-v1.5": ModelLimits(8192, 1024),
    "gte-multilingual-base": ModelLimits(8192, 768),
    # Jina
    "jina-embeddings-v2-base-en": ModelLimits(8192, 768),
    "jina-embeddings-v2-small-en": ModelLimits(8192, 512),
    "jina-embeddings-v3": ModelLimits(8192, 1024),
    # Google EmbeddingGemma, Qwen3-Embedding, IBM Granite
    "embeddinggemma": ModelLimits(2048, 768),
    "embeddinggemma-300m": ModelLimits(2048, 768),
    "qwen3-embedding": ModelLimits(32768),
    "qwen3-embedding-0.6b": ModelLimits(32768, 1024),
    "qwen3-embedding-4b": ModelLimits(32768, 2560),
    "qwen3-embedding-8b": ModelLimits(32768, 4096),
    "granite-embedding": ModelLimits(512),
}

_lock = threading.Lock()


def normalize_model_name(name: str) -> str:
    """Lower-case, strip whitespace and a leading ``models/`` (Gemini's resource prefix)."""
    s = name.strip().lower()
    if s.startswith("models/"):
        s = s[len("models/"):]
    return s


def _without_tag(name: str) -> str:
    base = name.rsplit("/", 1)[-1]  # org/model → model (also hf.co/org/model)
    return base.split(":", 1)[0]  # model:tag → model


def register_model_limits(
    name: str, max_tokens: int, dimension: Optional[int] = None, tokenizer: Optional[str] = None
) -> None:
    """Add or replace a model's limits (``max_tokens`` >= 1)."""
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
    with _lock:
        KNOWN_MODEL_LIMITS[normalize_model_name(name)] = ModelLimits(max_tokens, dimension, tokenizer)


def lookup_model_limits(name: str) -> Optional[ModelLimits]:
    """A model's :class:`ModelLimits` by exact name, name without tag/org, then longest substring; else ``None``."""
    if not name:
        return None
    s = normalize_model_name(name)
    table = KNOWN_MODEL_LIMITS
    if s in table:
        return table[s]
    bare = _without_tag(s)
    if bare in table:
        return table[bare]
    for key, info in table.items():  # a registered "org/model:tag" matches "model"
        if _without_tag(key) == bare:
            return info
    best: Optional[str] = None
    for key in table:
        if key in bare and (best is None or len(key) > len(best)):
            best = key
    return table[best] if best is not None else None


def get_token_limit(name: str, default: int = DEFAULT_MAX_TOKENS) -> int:
    """The model's input-token limit, or ``default`` (logged) for an unknown model."""
    info = lookup_model_limits(name)
    if info is not None:
        return info.max_tokens
    logger.warning(
        "no known input-token limit for embedding model %r; assuming %d tokens "
        "(pass max_input_tokens= or register_model_limits() to set it)",
        name,
        default,
    )
    return default
