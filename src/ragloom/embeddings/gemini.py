"""Google Gemini API embeddings over HTTP (``models/{model}:batchEmbedContents``).

Documents are embedded with ``taskType`` ``RETRIEVAL_DOCUMENT`` and queries with
``RETRIEVAL_QUERY``: the task type tells the model which side of retrieval a text is on,
so no instruction prefix is added (``query_instruction``/``text_instruction`` stay
``None`` unless you set them, and then are applied once, here).  A request carries at
most 100 texts (the API's cap); the key travels in the ``x-goog-api-key`` header, never
in the URL.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from ragloom.embeddings.http import BadResponse, RemoteEmbedding, check_vectors

logger = logging.getLogger(__name__)

__all__ = ["GeminiEmbedding", "DEFAULT_GEMINI_API_BASE"]

DEFAULT_GEMINI_API_BASE = "https://generativelanguage.googleapis.com/v1beta"
GEMINI_MAX_BATCH = 100
_TASK_TYPES = {
    "TASK_TYPE_UNSPECIFIED",
    "RETRIEVAL_QUERY",
    "RETRIEVAL_DOCUMENT",
    "SEMANTIC_SIMILARITY",
    "CLASSIFICATION",
    "CLUSTERING",
    "QUESTION_ANSWERING",
    "FACT_VERIFICATION",
    "CODE_RETRIEVAL_QUERY",
}


class GeminiEmbedding(RemoteEmbedding):
    """Embeddings from the Gemini API.

    Args:
        model_name: ``"gemini-embedding-001"`` (default) or ``"text-embedding-004"``; a
            ``models/`` prefix is accepted.
        api_key: default ``$GOOGLE_API_KEY`` then ``$GEMINI_API_KEY``.
        api_base: default ``https://generativelanguage.googleapis.com/v1beta``.
        task_type / query_task_type: task types of documents / queries
            (``RETRIEVAL_DOCUMENT`` / ``RETRIEVAL_QUERY``).
        output_dimensionality: shorter vectors (``dimensions=`` is an alias).
        embed_batch_size: texts per request, at most 100.
        Other args: see :class:`~ragloom.embeddings.http.RemoteEmbedding`.

    Raises:
        ValueError: no API key, an unknown task type, or a bad argument.
    """

    provider_name = "Gemini"
    max_items_per_request = GEMINI_MAX_BATCH
    empty_text_placeholder = " "

    def __init__(
        self,
        model_name: str = "gemini-embedding-001",
        api_key: Optional[str] = None,
        api_base: Optional[str] = None,
        task_type: str = "RETRIEVAL_DOCUMENT",
        query_task_type: str = "RETRIEVAL_QUERY",
        output_dimensionality: Optional[int] = None,
        dimensions: Optional[int] = None,
        embed_batch_size: int = GEMINI_MAX_BATCH,
        query_instruction: Optional[str] = None,
        text_instruction: Optional[str] = None,
        timeout: float = 60.0,
        max_retries: int = 5,
        requests_per_minute: Optional[float] = None,
        max_concurrency: int = 4,
        max_input_tokens: Optional[int] = None,
        tokenizer: Any = None,
        retry_backoff_base: float = 0.5,
        retry_backoff_max: float = 30.0,
        max_retry_after: float = 60.0,
        embed_cache: Any = None,
        **kwargs: Any,
    ) -> None:
        model_name = model_name.strip()
        if model_name.startswith("models/"):
            model_name = model_name[len("models/"):]
        api_key = api_key or os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY")
        if not api_key:
            raise ValueError("GeminiEmbedding needs an API key: pass api_key= or set GOOGLE_API_KEY / GEMINI_API_KEY")
        for name, value in (("task_type", task_type), ("query_task_type", query_task_type)):
            if value.upper() not in _TASK_TYPES:
                raise ValueError(f"{name} must be one of {sorted(_TASK_TYPES)}, got {value!r}")
        if embed_batch_size > GEMINI_MAX_BATCH:
            raise ValueError(f"embed_batch_size must be <= {GEMINI_MAX_BATCH} for Gemini, got {embed_batch_size}")
        self.task_type = task_type.upper()
        self.query_task_type = query_task_type.upper()
        super().__init__(
            model_name=model_name,
            api_base=api_base or DEFAULT_GEMINI_API_BASE,
            headers={"x-goog-api-key": api_key},
            embed_batch_size=embed_batch_size,
            dimensions=output_dimensionality if output_dimensionality is not None else dimensions,
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
            logger.debug("GeminiEmbedding ignores arguments %s", sorted(kwargs))

    @property
    def output_dimensionality(self) -> Optional[int]:
        return self.dimensions

    def _request(self, texts: List[str], kind: str) -> Tuple[str, Any, Callable[[Any], np.ndarray], None]:
        task = self.query_task_type if kind == "query" else self.task_type
        resource = f"models/{self.model_name}"
        requests = []
        for text in texts:
            req: Dict[str, Any] = {"model": resource, "content": {"parts": [{"text": text}]}, "taskType": task}
            if self.dimensions is not None:
                req["outputDimensionality"] = self.dimensions
            requests.append(req)
        n = len(texts)

        def parse(data: Any) -> np.ndarray:
            items = data["embeddings"]
            if not isinstance(items, list):
                raise BadResponse("'embeddings' is not a list")
            return check_vectors([it["values"] for it in items], n, self.dimensions)

        return f"{self.api_base}/{resource}:batchEmbedContents", {"requests": requests}, parse, None

    def cache_identity(self) -> Dict[str, Any]:
        out = super().cache_identity()
        out["task_type"] = self.task_type
        return out

    def identity(self) -> Dict[str, Any]:
        out = super().identity()
        out["task_type"] = self.task_type
        out["query_task_type"] = self.query_task_type
        return out
