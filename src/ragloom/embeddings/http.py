"""The base of remote embedding providers (OpenAI-compatible, Ollama, Gemini).

- **Transport**: :class:`~ragloom.transport.HTTPTransport`, shared with the LLM providers
  (httpx clients, tenacity retries with Retry-After, rate limit, clear errors — see
  :mod:`ragloom.transport`).  For embeddings a *bad response* also means a wrong number of
  vectors, missing/duplicate indices, or ragged or non-finite vectors (:func:`check_vectors`),
  so a faulty reply is retried and never yields a short or misordered result.  Errors are
  :class:`EmbeddingProviderError`.
- **Remote model base** (:class:`RemoteEmbedding`): applies ``query_instruction`` /
  ``text_instruction`` exactly once, client-side (servers are never asked to add a
  prompt), truncates texts over the model's input-token limit before sending (counted in
  ``truncated_count`` and logged), splits batches to the provider's per-request caps,
  and offers async variants with bounded concurrency.

Token counting: OpenAI models are counted exactly with ``cl100k_base``.  Other models are
counted with the bundled all-MiniLM-L6-v2 WordPiece tokenizer (BERT uncased vocabulary):
exact for BERT-family models (nomic-embed-text, mxbai-embed-large, bge-*-en, e5, gte,
all-minilm), and an approximation for others — one token per CJK character (at least as
many as SentencePiece/BPE tokenizers make for CJK), similar counts for English — so for
those the limit is reduced by :data:`APPROX_TOKEN_MARGIN` as a safety margin.  Two tokens
are reserved for ``[CLS]``/``[SEP]`` whenever the count is not OpenAI's.  Pass
``tokenizer=`` to count with the model's own tokenizer instead (then the count is exact).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from abc import abstractmethod
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ragloom.embeddings.base import DEFAULT_EMBED_BATCH_SIZE, BaseEmbedding, Embedding
from ragloom.embeddings.limits import DEFAULT_MAX_TOKENS, lookup_model_limits

# the generic HTTP layer lives in ragloom.transport (shared with the LLM providers); its
# names are re-exported here for the embedding providers
from ragloom.transport import (
    RETRYABLE_STATUS,
    BadResponse,
    HTTPTransport,
    ProviderError,
    RateLimiter,
    httpx,
    parse_retry_after,
)

logger = logging.getLogger(__name__)

__all__ = [
    "EmbeddingProviderError",
    "HTTPTransport",
    "RateLimiter",
    "RemoteEmbedding",
    "BadResponse",
    "parse_retry_after",
    "APPROX_TOKEN_MARGIN",
    "RETRYABLE_STATUS",
]

#: Fraction of an approximately-counted limit actually used (10 % safety margin).
APPROX_TOKEN_MARGIN = 0.9


class EmbeddingProviderError(ProviderError):
    """A remote embedding request failed for good (see :class:`~ragloom.transport.ProviderError`).

    Attributes: ``provider``, ``model``, ``status`` (HTTP status or ``None``), ``reason``
    (short cause), ``attempts`` (requests made), ``url``.
    """

    request_kind = "embedding request"


def check_vectors(vectors: Any, n: int, expect_dim: Optional[int] = None) -> np.ndarray:
    """``vectors`` as a finite float32 ``(n, dim)`` array, or :class:`BadResponse`."""
    if not isinstance(vectors, list):
        raise BadResponse(f"expected a list of vectors, got {type(vectors).__name__}")
    if len(vectors) != n:
        raise BadResponse(f"got {len(vectors)} vectors for {n} inputs")
    if n == 0:
        return np.zeros((0, expect_dim or 0), dtype=np.float32)
    dims = {len(v) if isinstance(v, list) else -1 for v in vectors}
    if len(dims) != 1 or -1 in dims or 0 in dims:
        raise BadResponse(f"vectors are not equal-length lists of numbers (lengths {sorted(dims)[:5]})")
    try:
        arr = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise BadResponse(f"vectors contain non-numbers ({exc})") from exc
    if arr.ndim != 2:
        raise BadResponse(f"vectors have shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise BadResponse("vectors contain NaN or infinity")
    if expect_dim is not None and arr.shape[1] != expect_dim:
        raise BadResponse(f"vectors have {arr.shape[1]} dimensions, expected {expect_dim}")
    return arr


class RemoteEmbedding(BaseEmbedding):
    """Base class of HTTP embedding providers.

    Subclasses implement :meth:`_request` (URL, JSON payload and response parser for a
    list of prepared texts of one kind, ``"text"`` or ``"query"``) and may override
    :meth:`_probe_limits` (ask the server for the model's context length) and
    :attr:`max_items_per_request`.

    Common args:
        query_instruction / text_instruction: prefixes applied exactly once, here.
        max_input_tokens: the model's input-token limit (special tokens included);
            default: probed from the server where it can tell, else the registry in
            :mod:`ragloom.embeddings.limits`, else 512 (logged).
        tokenizer: count tokens with this (anything :func:`ragloom.tokenizers.get_tokenizer`
            takes) instead of the default described in the module docstring.
        timeout, max_retries, retry_backoff_base, retry_backoff_max, max_retry_after,
        requests_per_minute: see :class:`HTTPTransport`.
        max_concurrency: requests in flight at once in the async methods.
        embed_cache: persistent embedding cache (see :class:`~ragloom.embeddings.base.BaseEmbedding`).
    """

    provider_name = "remote"
    #: Most inputs one request may carry (the API's cap); ``None`` = no cap.
    max_items_per_request: Optional[int] = None
    #: Most tokens summed over one request's inputs; ``None`` = no cap.
    max_tokens_per_request: Optional[int] = None
    #: Inputs that must not be empty are sent as this instead of ``""``.
    empty_text_placeholder: Optional[str] = None

    def __init__(
        self,
        model_name: str,
        api_base: str,
        headers: Optional[Dict[str, str]] = None,
        embed_batch_size: int = DEFAULT_EMBED_BATCH_SIZE,
        dimensions: Optional[int] = None,
        query_instruction: Optional[str] = None,
        text_instruction: Optional[str] = None,
        max_input_tokens: Optional[int] = None,
        tokenizer: Any = None,
        timeout: float = 60.0,
        max_retries: int = 5,
        retry_backoff_base: float = 0.5,
        retry_backoff_max: float = 30.0,
        max_retry_after: float = 60.0,
        requests_per_minute: Optional[float] = None,
        max_concurrency: int = 4,
        embed_cache: Any = None,
    ) -> None:
        extra = {"embed_cache": embed_cache} if embed_cache is not None else {}
        super().__init__(model_name=model_name, embed_batch_size=embed_batch_size, **extra)
        if not model_name:
            raise ValueError("model_name must be a non-empty string")
        if dimensions is not None and (not isinstance(dimensions, int) or dimensions < 1):
            raise ValueError(f"dimensions must be a positive int, got {dimensions!r}")
        if max_input_tokens is not None and (not isinstance(max_input_tokens, int) or max_input_tokens < 8):
            raise ValueError(f"max_input_tokens must be an int >= 8, got {max_input_tokens!r}")
        if not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise ValueError(f"max_concurrency must be an int >= 1, got {max_concurrency!r}")
        self.api_base = api_base.rstrip("/")
        self.dimensions = dimensions
        self.query_instruction = query_instruction
        self.text_instruction = text_instruction
        self.max_concurrency = max_concurrency
        self.truncated_count = 0
        self._user_tokenizer = tokenizer
        self._user_max_tokens = max_input_tokens
        self._registry = lookup_model_limits(model_name)
        self._limit_lock = threading.Lock()
        self._limit_resolved = False
        self._max_tokens: Optional[int] = None
        self._count_tok: Any = None
        self._exact_count = False
        self._learned_dim: Optional[int] = None
        self._probed_dim: Optional[int] = None
        self.transport = HTTPTransport(
            provider=self.provider_name,
            model=model_name,
            headers=headers,
            timeout=timeout,
            max_retries=max_retries,
            retry_backoff_base=retry_backoff_base,
            retry_backoff_max=retry_backoff_max,
            max_retry_after=max_retry_after,
            requests_per_minute=requests_per_minute,
            error_cls=EmbeddingProviderError,
        )

    # -- to implement ---------------------------------------------------------------
    @abstractmethod
    def _request(
        self, texts: List[str], kind: str
    ) -> Tuple[str, Any, Callable[[Any], np.ndarray], Optional[Dict[str, str]]]:
        """``(url, payload, parse, params)`` for one request embedding ``texts`` (``kind``: ``"text"``/``"query"``).

        ``parse(json)`` returns an ``(len(texts), dim)`` array in input order or raises :class:`BadResponse`."""

    def _probe_limits(self) -> Tuple[Optional[int], Optional[int]]:
        """``(context_length, dimension)`` as the server reports them; ``(None, None)`` if it cannot tell."""
        return None, None

    # -- identity and limits -----------------------------------------------------------
    @property
    def dimension(self) -> Optional[int]:
        """Vector length: requested ``dimensions``, else as seen/probed, else the registry's; never calls the server."""
        if self.dimensions is not None:
            return self.dimensions
        if self._learned_dim is not None:
            return self._learned_dim
        if self._probed_dim is not None:
            return self._probed_dim
        return self._registry.dimension if self._registry is not None else None

    def identity(self) -> Dict[str, Any]:
        """Provider, model, dimensions, api_base and instructions — never the API key."""
        return {
            "class_name": self.class_name(),
            "model_name": self.model_name,
            "dimension": self.dimension,
            "dimensions": self.dimensions,
            "api_base": self.api_base,
            "query_instruction": self.query_instruction,
            "text_instruction": self.text_instruction,
        }

    def cache_identity(self) -> Dict[str, Any]:
        """What decides a document vector besides its text (stable: never what the server reports later)."""
        return {
            "class_name": self.class_name(),
            "model_name": self.model_name,
            "api_base": self.api_base,
            "dimensions": self.dimensions,
            "text_instruction": self.text_instruction,
            "max_input_tokens": self._user_max_tokens,
        }

    def _default_count_tokenizer(self) -> Tuple[Any, bool, int]:
        """``(tokenizer, exact, reserved_special_tokens)``."""
        from ragloom.tokenizers import get_default_tokenizer, get_tokenizer

        family = self._registry.tokenizer if self._registry is not None else None
        if family == "cl100k_base":
            return get_tokenizer("cl100k_base"), True, 0
        return get_default_tokenizer(), family == "wordpiece", 2

    def _resolve_limits(self) -> None:
        if self._limit_resolved:
            return
        with self._limit_lock:
            if self._limit_resolved:
                return
            if self._user_tokenizer is not None:
                from ragloom.tokenizers import get_tokenizer

                tok, exact, reserve = get_tokenizer(self._user_tokenizer), True, 0
            else:
                tok, exact, reserve = self._default_count_tokenizer()
            limit = self._user_max_tokens
            source = "max_input_tokens"
            if limit is None:
                try:
                    probed, dim = self._probe_limits()
                except EmbeddingProviderError as exc:
                    logger.warning("could not read %s's limits from the server: %s", self.model_name, exc)
                    probed, dim = None, None
                if dim:
                    self._probed_dim = int(dim)
                if probed:
                    limit, source = int(probed), "server"
            if limit is None and self._registry is not None:
                limit, source = self._registry.max_tokens, "registry"
            if limit is None:
                limit, source = DEFAULT_MAX_TOKENS, "default"
                logger.warning(
                    "no known input-token limit for embedding model %r; assuming %d tokens "
                    "(pass max_input_tokens= to set it)",
                    self.model_name,
                    limit,
                )
            effective = limit if exact else int(limit * APPROX_TOKEN_MARGIN)
            self._max_tokens = max(1, effective - reserve)
            self._count_tok = tok
            self._exact_count = exact
            logger.debug(
                "%s model %r: input limit %d tokens (%s), counted with %s (%s)",
                self.provider_name,
                self.model_name,
                self._max_tokens,
                source,
                getattr(tok, "name", tok),
                "exact" if exact else "approximate",
            )
            self._limit_resolved = True

    @property
    def max_text_tokens(self) -> int:
        """Tokens of text (in :meth:`get_tokenizer`'s count) sent before truncation."""
        self._resolve_limits()
        assert self._max_tokens is not None
        return self._max_tokens

    def get_tokenizer(self) -> Any:
        """The tokenizer texts are counted with (chunk sizes measured in it fit without truncation)."""
        self._resolve_limits()
        return self._count_tok

    # -- preparing texts -------------------------------------------------------------
    def _instruction(self, kind: str) -> Optional[str]:
        return self.query_instruction if kind == "query" else self.text_instruction

    def _truncate(self, texts: List[str]) -> Tuple[List[str], List[int]]:
        """Texts cut to ``max_text_tokens`` and their token counts."""
        self._resolve_limits()
        tok, limit = self._count_tok, self._max_tokens
        assert limit is not None
        counts = list(tok.count_batch(texts))
        over = [i for i, c in enumerate(counts) if c > limit]
        if not over:
            return texts, counts
        out = list(texts)
        for i in over:
            text = out[i]
            for _ in range(8):
                offsets = tok.encode_offsets(text)
                if len(offsets) <= limit:
                    break
                text = text[: offsets[limit][0]]
            else:  # pragma: no cover - tokenizers converge in one or two rounds
                text = text[: max(0, len(text) * limit // max(1, counts[i]))]
            out[i] = text
            counts[i] = tok.count(text)
        self.truncated_count += len(over)
        logger.warning(
            "%d of %d inputs exceed %d tokens for %s model %r and were truncated before sending",
            len(over),
            len(texts),
            limit,
            self.provider_name,
            self.model_name,
        )
        return out, counts

    def _prepare(self, texts: Sequence[str], kind: str) -> Tuple[List[str], List[int]]:
        prefix = self._instruction(kind)
        items = [prefix + t for t in texts] if prefix else list(texts)
        items, counts = self._truncate(items)
        if self.empty_text_placeholder is not None:
            items = [t if t else self.empty_text_placeholder for t in items]
        return items, counts

    def _split(self, n: int, counts: Sequence[int]) -> List[Tuple[int, int]]:
        """Index ranges of one request each, within the per-request item and token caps."""
        cap_items = self.max_items_per_request or n
        cap_tokens = self.max_tokens_per_request
        ranges: List[Tuple[int, int]] = []
        start, tokens = 0, 0
        for i in range(n):
            c = counts[i] if i < len(counts) else 0
            size = i - start
            if size and (size >= cap_items or (cap_tokens is not None and tokens + c > cap_tokens)):
                ranges.append((start, i))
                start, tokens = i, 0
            tokens += c
        if start < n:
            ranges.append((start, n))
        return ranges

    def _note_dim(self, arr: np.ndarray) -> np.ndarray:
        if arr.shape[0]:
            self._learned_dim = int(arr.shape[1])
        return arr

    # -- sync ----------------------------------------------------------------------
    def _embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        items, counts = self._prepare(texts, kind)
        parts = []
        for a, b in self._split(len(items), counts):
            url, payload, parse, params = self._request(items[a:b], kind)
            parts.append(self.transport.post(url, payload, parse, params=params))
        if not parts:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        return self._note_dim(np.concatenate(parts, axis=0) if len(parts) > 1 else parts[0])

    def _get_text_embeddings(self, texts: List[str]) -> np.ndarray:
        return self._embed(texts, "text")

    def _get_query_embeddings(self, queries: List[str]) -> np.ndarray:
        return self._embed(queries, "query")

    # -- async ---------------------------------------------------------------------
    async def _aembed(
        self,
        texts: Sequence[str],
        kind: str,
        client: Optional[httpx.AsyncClient] = None,
        semaphore: Optional[asyncio.Semaphore] = None,
        progress: Optional[Callable[[int], None]] = None,
    ) -> np.ndarray:
        if not self._limit_resolved:
            await asyncio.to_thread(self._resolve_limits)
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        items, counts = self._prepare(texts, kind)
        # length-sorted batches of embed_batch_size, then split to the request caps
        order = sorted(range(len(items)), key=lambda i: len(items[i]), reverse=True)
        jobs: List[List[int]] = []
        for s in range(0, len(order), self.embed_batch_size):
            idx = order[s : s + self.embed_batch_size]
            for a, b in self._split(len(idx), [counts[i] for i in idx]):
                jobs.append(idx[a:b])
        sem = semaphore or asyncio.Semaphore(self.max_concurrency)
        own_client = client is None
        ac = client or self.transport.new_async_client()

        async def run(idx: List[int]) -> np.ndarray:
            async with sem:
                url, payload, parse, params = self._request([items[i] for i in idx], kind)
                arr = await self.transport.apost(ac, url, payload, parse, params=params)
            if progress is not None:
                progress(len(idx))
            return arr

        try:
            tasks = [asyncio.ensure_future(run(idx)) for idx in jobs]
            try:
                results = await asyncio.gather(*tasks)
            except BaseException:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
        finally:
            if own_client:
                await ac.aclose()
        out = np.empty((len(items), results[0].shape[1]), dtype=np.float32)
        for idx, arr in zip(jobs, results, strict=True):
            if arr.shape[1] != out.shape[1]:
                raise EmbeddingProviderError(
                    self.provider_name, self.model_name,
                    f"responses disagree on the vector length ({arr.shape[1]} vs {out.shape[1]})",
                )
            out[idx] = arr
        return self._note_dim(out)

    async def _aget_text_embeddings(self, texts: List[str]) -> np.ndarray:
        """Async counterpart of :meth:`_get_text_embeddings` (concurrent requests, input order)."""
        return await self._aembed(texts, "text")

    async def _aget_query_embeddings(self, queries: List[str]) -> np.ndarray:
        return await self._aembed(queries, "query")

    async def aget_text_embedding_batch_array(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray:
        """Embed ``texts`` with up to ``max_concurrency`` requests in flight; ``(len(texts), dim)`` in input order."""
        bar = None
        if show_progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(texts), desc="Embedding", unit="text")
        progress = bar.update if bar is not None else None
        try:
            texts = list(texts)
            if getattr(self, "_embed_cache", None) is None or not texts:
                return await self._aembed(texts, "text", progress=progress)
            # the base class's persistent cache: only misses go to the server
            out, misses, hashes = self._cache_lookup(texts)
            if not misses:
                return out
            vecs = await self._aembed([texts[i] for i in misses], "text", progress=progress)
            self._cache_store([hashes[i] for i in misses], vecs)
            if out is None:
                return vecs
            out[misses] = vecs
            return out
        finally:
            if bar is not None:
                bar.close()

    async def aget_text_embedding_batch(
        self, texts: Sequence[str], show_progress: bool = False, **kwargs: Any
    ) -> List[Embedding]:
        """Async :meth:`get_text_embedding_batch`: ``list[list[float]]`` in input order."""
        return (await self.aget_text_embedding_batch_array(texts, show_progress=show_progress)).tolist()

    async def aget_text_embedding(self, text: str) -> Embedding:
        return (await self._aembed([text], "text"))[0].tolist()

    async def aget_query_embedding(self, query: str) -> Embedding:
        return (await self._aembed([query], "query"))[0].tolist()

    # -- lifecycle -----------------------------------------------------------------
    def close(self) -> None:
        """Close the pooled HTTP connections (the model stays usable; a new pool opens on demand)."""
        self.transport.close()

    def __enter__(self) -> "RemoteEmbedding":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
