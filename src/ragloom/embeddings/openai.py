"""OpenAI and OpenAI-compatible embedding servers (vLLM, Text Embeddings Inference, LM Studio, LocalAI …).

``POST {api_base}/embeddings`` with ``{"model", "input": [texts], "encoding_format",
"dimensions"?}``; the reply's ``data[i].index`` says which input each vector belongs
to, so vectors are placed by index (a reply with missing, duplicate or out-of-range
indices is a fault and is retried).  Base64-encoded vectors (``encoding_format="base64"``,
little-endian float32) are decoded too.
"""

from __future__ import annotations

import base64
import logging
import os
from typing import Any, Callable, Dict, List, Optional, Tuple
from urllib.parse import urlparse

import numpy as np

from ragloom.embeddings.http import (
    BadResponse,
    EmbeddingProviderError,
    RemoteEmbedding,
    check_vectors,
)

logger = logging.getLogger(__name__)

__all__ = ["OpenAIEmbedding", "DEFAULT_OPENAI_API_BASE"]

DEFAULT_OPENAI_API_BASE = "https://api.openai.com/v1"
#: The API's caps: 2048 inputs per request, 300,000 tokens summed over a request's inputs.
OPENAI_MAX_INPUTS = 2048
OPENAI_MAX_REQUEST_TOKENS = 300_000


def _decode(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return np.frombuffer(base64.b64decode(value, validate=True), dtype="<f4").astype(np.float32).tolist()
        except (ValueError, TypeError) as exc:
            raise BadResponse(f"undecodable base64 embedding ({exc})") from exc
    return value


class OpenAIEmbedding(RemoteEmbedding):
    """Embeddings from the OpenAI API or any OpenAI-compatible server.

    Args:
        model: model id (``model_name=`` is accepted as an alias).
        api_base: default ``$OPENAI_API_BASE``, ``$OPENAI_BASE_URL``, then ``https://api.openai.com/v1``.
        api_key: default ``$OPENAI_API_KEY``; required for api.openai.com, optional elsewhere.
        dimensions: shorter vectors (text-embedding-3 and servers that support it).
        embed_batch_size: inputs per request (the API allows up to 2048).
        encoding_format: ``"float"`` (default, understood by every compatible server) or ``"base64"``.
        default_headers: extra HTTP headers.  additional_kwargs: extra JSON fields per request.
        Other args: see :class:`~ragloom.embeddings.http.RemoteEmbedding`.

    Raises:
        ValueError: no API key for api.openai.com, or a bad argument.
        EmbeddingProviderError: (when embedding) a permanent fault or retries exhausted.
    """

    provider_name = "OpenAI"
    max_items_per_request = OPENAI_MAX_INPUTS
    max_tokens_per_request = OPENAI_MAX_REQUEST_TOKENS
    empty_text_placeholder = " "  # the API rejects empty strings

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        api_base: Optional[str] = None,
        api_key: Optional[str] = None,
        dimensions: Optional[int] = None,
        embed_batch_size: int = 100,
        timeout: float = 60.0,
        max_retries: int = 5,
        requests_per_minute: Optional[float] = None,
        query_instruction: Optional[str] = None,
        text_instruction: Optional[str] = None,
        max_concurrency: int = 8,
        max_input_tokens: Optional[int] = None,
        tokenizer: Any = None,
        encoding_format: str = "float",
        default_headers: Optional[Dict[str, str]] = None,
        additional_kwargs: Optional[Dict[str, Any]] = None,
        retry_backoff_base: float = 0.5,
        retry_backoff_max: float = 30.0,
        max_retry_after: float = 60.0,
        model_name: Optional[str] = None,
        embed_cache: Any = None,
        **kwargs: Any,
    ) -> None:
        model = model_name or model
        api_base = (
            api_base
            or os.environ.get("OPENAI_API_BASE")
            or os.environ.get("OPENAI_BASE_URL")
            or DEFAULT_OPENAI_API_BASE
        )
        api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not api_key and (urlparse(api_base).hostname or "").endswith("api.openai.com"):
            raise ValueError("OpenAIEmbedding needs an API key for api.openai.com: pass api_key= or set OPENAI_API_KEY")
        if encoding_format not in ("float", "base64"):
            raise ValueError(f"encoding_format must be 'float' or 'base64', got {encoding_format!r}")
        headers = dict(default_headers or {})
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.encoding_format = encoding_format
        self.additional_kwargs = dict(additional_kwargs or {})
        super().__init__(
            model_name=model,
            api_base=api_base,
            headers=headers,
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
            logger.debug("OpenAIEmbedding ignores arguments %s", sorted(kwargs))

    @property
    def model(self) -> str:
        return self.model_name

    def _default_count_tokenizer(self) -> Tuple[Any, bool, int]:
        # OpenAI's own models are counted exactly in cl100k_base; other models behind an
        # OpenAI-compatible server (vLLM, TEI …) use the registry/approximation rule.
        if self._registry is None and (urlparse(self.api_base).hostname or "").endswith("api.openai.com"):
            from ragloom.tokenizers import get_tokenizer

            return get_tokenizer("cl100k_base"), True, 0
        return super()._default_count_tokenizer()

    def _probe_limits(self) -> Tuple[Optional[int], Optional[int]]:
        """Ask an OpenAI-compatible server about a model the registry does not know.

        vLLM lists ``max_model_len`` in ``GET {api_base}/models``; Text Embeddings Inference
        reports ``max_input_length`` in ``GET /info``.  One attempt each; silence is fine."""
        if self._registry is not None or (urlparse(self.api_base).hostname or "").endswith("api.openai.com"):
            return None, None

        def from_models(data: Any) -> Optional[int]:
            for item in data.get("data") or []:
                if isinstance(item, dict) and item.get("id") == self.model_name:
                    value = item.get("max_model_len")
                    return int(value) if isinstance(value, int) and value > 0 else None
            return None

        def from_info(data: Any) -> Optional[int]:
            value = data.get("max_input_length")
            return int(value) if isinstance(value, int) and value > 0 else None

        root = self.api_base[: -len("/v1")] if self.api_base.endswith("/v1") else self.api_base
        for url, parse in ((f"{self.api_base}/models", from_models), (f"{root}/info", from_info)):
            try:
                limit = self.transport.post(url, None, parse, attempts=1, method="GET")
            except EmbeddingProviderError as exc:
                logger.debug("no token limit from %s: %s", url, exc)
                continue
            if limit:
                return limit, None
        return None, None

    def _request(self, texts: List[str], kind: str) -> Tuple[str, Any, Callable[[Any], np.ndarray], None]:
        payload: Dict[str, Any] = {"model": self.model_name, "input": texts, "encoding_format": self.encoding_format}
        if self.dimensions is not None:
            payload["dimensions"] = self.dimensions
        payload.update(self.additional_kwargs)
        n = len(texts)

        def parse(data: Any) -> np.ndarray:
            items = data["data"]
            if not isinstance(items, list):
                raise BadResponse("'data' is not a list")
            if len(items) != n:
                raise BadResponse(f"got {len(items)} vectors for {n} inputs")
            if all(isinstance(it, dict) and "index" in it for it in items):
                indices = [it["index"] for it in items]
                if sorted(indices) != list(range(n)) or not all(isinstance(i, int) for i in indices):
                    raise BadResponse(f"indices are not a permutation of 0..{n - 1}")
                ordered = [None] * n
                for it in items:
                    ordered[it["index"]] = it
                items = ordered
            elif any(isinstance(it, dict) and "index" in it for it in items):
                raise BadResponse("some vectors lack an 'index'")
            vectors = [_decode(it["embedding"]) for it in items]
            return check_vectors(vectors, n, self.dimensions)

        return f"{self.api_base}/embeddings", payload, parse, None

    def identity(self) -> Dict[str, Any]:
        out = super().identity()
        out["model"] = self.model_name
        return out
