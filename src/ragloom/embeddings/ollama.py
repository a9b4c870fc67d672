"""Ollama embeddings over its batched ``/api/embed`` endpoint.

One request carries a whole batch (``{"model", "input": [texts]}`` → ``{"embeddings":
[[...], ...]}`` in input order) — never one request per text.  The model's context
length is read once from ``POST /api/show`` (``model_info["<arch>.context_length"]``
and the ``num_ctx`` model parameter; the smaller wins, since the server runs the model
with ``num_ctx``) and used as the token limit, so texts are truncated here, counted,
before sending.  ``truncate: true`` is still sent as a backstop for the approximate
token count (see :mod:`ragloom.embeddings.http`).
"""

from __future__ import annotations

import logging
import re
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import numpy as np

from ragloom.embeddings.http import BadResponse, RemoteEmbedding, check_vectors

logger = logging.getLogger(__name__)

__all__ = ["OllamaEmbedding", "DEFAULT_OLLAMA_BASE_URL", "OllamaModelInfo", "parse_ollama_show"]

DEFAULT_OLLAMA_BASE_URL = "http://localhost:11434"
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


class OllamaModelInfo(NamedTuple):
    """What ``POST /api/show`` tells about a model (``None``: not reported)."""

    #: the model's trained context length (``model_info["<arch>.context_length"]``), tokens
    context_length: Optional[int]
    #: the ``num_ctx`` parameter of its Modelfile (the context the server runs it with), tokens
    num_ctx: Optional[int]
    #: vector length of an embedding model (``model_info["<arch>.embedding_length"]``)
    embedding_length: Optional[int]


def parse_ollama_show(data: Any) -> OllamaModelInfo:
    """Read an Ollama ``/api/show`` reply (shared by the embedding and LLM providers).

    Raises:
        BadResponse: the reply is not a JSON object.
    """
    if not isinstance(data, dict):
        raise BadResponse("/api/show reply is not an object")
    info = data.get("model_info") or {}
    arch = info.get("general.architecture")
    ctx = info.get(f"{arch}.context_length") if arch else None
    dim = info.get(f"{arch}.embedding_length") if arch else None
    if ctx is None:  # architecture key missing: any "*.context_length"
        ctx = next((v for k, v in info.items() if k.endswith(".context_length")), None)
    m = _NUM_CTX.search(str(data.get("parameters") or ""))

    def positive(v: Any) -> Optional[int]:
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else None

    return OllamaModelInfo(positive(ctx), int(m.group(1)) if m else None, positive(dim))


class OllamaEmbedding(RemoteEmbedding):
    """Embeddings from an Ollama server.

    Args:
        model_name: e.g. ``"nomic-embed-text"``, ``"mxbai-embed-large:latest"``, ``"bge-m3"``.
        base_url: the server (default ``http://localhost:11434``).
        embed_batch_size: texts per ``/api/embed`` request.
        ollama_additional_kwargs: model options sent as ``options`` (e.g. ``{"num_ctx": 8192}``).
        keep_alive: how long the server keeps the model loaded (e.g. ``"5m"``).
        dimensions: shorter vectors, for models that support it.
        Other args: see :class:`~ragloom.embeddings.http.RemoteEmbedding`.
    """

    provider_name = "Ollama"

    def __init__(
        self,
        model_name: str,
        base_url: str = DEFAULT_OLLAMA_BASE_URL,
        embed_batch_size: int = 64,
        ollama_additional_kwargs: Optional[Dict[str, Any]] = None,
        keep_alive: Optional[str] = None,
        dimensions: Optional[int] = None,
        query_instruction: Optional[str] = None,
        text_instruction: Optional[str] = None,
        timeout: float = 60.0,
        max_retries: int = 5,
        requests_per_minute: Optional[float] = None,
        max_concurrency: int = 2,
        max_input_tokens: Optional[int] = None,
        tokenizer: Any = None,
        retry_backoff_base: float = 0.5,
        retry_backoff_max: float = 30.0,
        max_retry_after: float = 60.0,
        embed_cache: Any = None,
        **kwargs: Any,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.options = dict(ollama_additional_kwargs or {})
        self.keep_alive = keep_alive
        super().__init__(
            model_name=model_name,
            api_base=self.base_url,
            embed_batch_size=embed_batch_size,
            dimensions=dimensions,
            query_instruction=query_instruction,
            text_instruction=text_instruction,
            max_input_tokens=max_input_tokens,
            tokenizer=tokenizer,
            timeout=timeout,
            max_retries=max_retries,
            retry_backoff_base=retry_backoff_base,
            retry_backoff_max=retry_backoff_max,
            max_retry_after=max_retry_after,
            requests_per_minute=requests_per_minute,
            max_concurrency=max_concurrency,
            embed_cache=embed_cache,
        )
        self.callback_manager = kwargs.pop("callback_manager", None)  # LlamaIndex argument: EMBEDDING events
        if kwargs:
            logger.debug("OllamaEmbedding ignores arguments %s", sorted(kwargs))

    def _probe_limits(self) -> Tuple[Optional[int], Optional[int]]:
        def parse(data: Any) -> Tuple[Optional[int], Optional[int]]:
            info = parse_ollama_show(data)
            limits = [n for n in (info.context_length, info.num_ctx) if n]
            if isinstance(self.options.get("num_ctx"), int):
                limits.append(int(self.options["num_ctx"]))
            return (min(limits) if limits else None), info.embedding_length

        return self.transport.post(f"{self.base_url}/api/show", {"model": self.model_name}, parse, attempts=2)

    def _request(self, texts: List[str], kind: str) -> Tuple[str, Any, Callable[[Any], np.ndarray], None]:
        payload: Dict[str, Any] = {"model": self.model_name, "input": texts, "truncate": True}
        if self.options:
            payload["options"] = self.options
        if self.keep_alive is not None:
            payload["keep_alive"] = self.keep_alive
        if self.dimensions is not None:
            payload["dimensions"] = self.dimensions
        n = len(texts)

        def parse(data: Any) -> np.ndarray:
            return check_vectors(data["embeddings"], n, self.dimensions)

        return f"{self.base_url}/api/embed", payload, parse, None

    def cache_identity(self) -> Dict[str, Any]:
        out = super().cache_identity()
        out["options"] = self.options
        return out

    def identity(self) -> Dict[str, Any]:
        out = super().identity()
        out["base_url"] = self.base_url
        return out
