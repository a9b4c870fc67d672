"""``BaseEmbedding``: batching, ordering, caching, adaptive batch size and progress shared by every provider."""

from __future__ import annotations

import logging
import os
from abc import abstractmethod
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ragloom.callbacks.instrument import CallbackManagerMixin
from ragloom.callbacks.schema import CBEventType, EventPayload
from ragloom.tokenizers.base import valid_unicode
from ragloom.schema import BaseNode, MetadataMode, TransformComponent

if TYPE_CHECKING:  # pragma: no cover
    from ragloom.embeddings.cache import EmbeddingCache

logger = logging.getLogger(__name__)

Embedding = List[float]

DEFAULT_EMBED_BATCH_SIZE = 64


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an accelerator (or host) out-of-memory error from a forward pass.

    Recognises ``torch.cuda.OutOfMemoryError`` (and its MPS/XPU relatives, which are
    ``RuntimeError`` subclasses saying "out of memory"), ``MemoryError``, ONNX Runtime's
    failed allocations and any ``RuntimeError`` whose message contains "out of memory".
    """
    if isinstance(exc, MemoryError):
        return True
    name = type(exc).__name__
    if name == "OutOfMemoryError":
        return True
    if name in ("RuntimeException", "Fail") and "allocat" in str(exc).lower():
        return True  # ONNX Runtime: "Failed to allocate memory for requested buffer ..."
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


class EmbeddingOutOfMemoryError(RuntimeError):
    """A single text did not fit in memory even at batch size 1."""


class BaseEmbedding(CallbackManagerMixin, TransformComponent):
    """Base class of embedding models (LlamaIndex's method names).

    Subclasses implement :meth:`_get_text_embeddings` (a batch of texts → ``(n, dim)``
    float32 array) and may override :meth:`_get_query_embeddings`.  The base class:

    * looks every text up in the optional persistent :class:`~ragloom.embeddings.cache.EmbeddingCache`
      first and embeds only the misses (``embed_cache=``);
    * splits the misses into batches of ``embed_batch_size`` texts, sorted by length
      (longest first) so padding is minimal, shows progress, and returns vectors in input order;
    * for local models (``adaptive_batch = True`` on the class), recovers from
      out-of-memory errors: frees the accelerator cache, halves ``embed_batch_size`` and
      retries the same texts, down to 1, then raises :class:`EmbeddingOutOfMemoryError`.
      The smaller size is kept for the rest of the run (and logged).
    * reports each batch of texts the model computes (documents or queries; cache hits cost no
      model run and report nothing) as one ``CBEventType.EMBEDDING`` event of
      :attr:`callback_manager` (start: ``SERIALIZED``, ``MODEL_NAME``; end: ``CHUNKS``,
      ``EMBEDDINGS``, ``TOKENIZER`` = :meth:`get_tokenizer`), so a provider that implements
      ``_get_text_embeddings`` needs no callback code (:meth:`_embed_batch`).

    Args:
        model_name: identity of the model, recorded in indexes built with it.
        embed_batch_size: texts per forward pass / request; must be in ``[1, 100000]``.
        embed_cache: ``None`` (no cache), a path to a cache database, or an
            :class:`~ragloom.embeddings.cache.EmbeddingCache` (shareable between models
            and processes).
        callback_manager: where its EMBEDDING events go (default: inherited, see
            :mod:`ragloom.callbacks.base`); also settable as ``model.callback_manager = cm``.

    Raises:
        ValueError: ``embed_batch_size`` outside ``[1, 100000]``; ``callback_manager`` not a
            ``CallbackManager``.
    """

    model_name: str = "unknown"
    #: Local models set this: out-of-memory errors halve the batch size and retry.
    adaptive_batch: bool = False
    #: Whether the model computes in this process, on this machine's cores.  Callers that share one
    #: instance between threads (``ragloom serve``) then embed one query at a time: concurrent
    #: forward passes on the same cores oversubscribe them and each gets slower.
    runs_locally: bool = False
    #: Whether the model embeds non-English text (Chinese in particular) meaningfully.  Hybrid
    #: retrieval leans on keyword search alone for mostly-CJK queries when it is ``False``.
    multilingual: bool = False

    def __init__(
        self,
        model_name: str = "unknown",
        embed_batch_size: int = DEFAULT_EMBED_BATCH_SIZE,
        embed_cache: Union[None, str, "os.PathLike[str]", "EmbeddingCache"] = None,
        callback_manager: Any = None,
    ) -> None:
        if (
            not isinstance(embed_batch_size, int)
            or isinstance(embed_batch_size, bool)
            or not 1 <= embed_batch_size <= 100_000
        ):
            raise ValueError(f"embed_batch_size must be an int in [1, 100000], got {embed_batch_size!r}")
        self.model_name = model_name
        self.embed_batch_size = embed_batch_size
        self.callback_manager = callback_manager
        self._embed_cache: Optional["EmbeddingCache"] = None
        self._cache_namespace: Optional[str] = None
        self._cache_ident: Dict[str, Any] = {}
        self.embed_cache = embed_cache  # type: ignore[assignment]
        self._query_cache: Optional["EmbeddingCache"] = None
        self._query_namespace: Optional[str] = None

    # -- to implement ------------------------------------------------------------
    @abstractmethod
    def _get_text_embeddings(self, texts: List[str]) -> np.ndarray:
        """Embed a batch of document texts; returns a float32 array of shape ``(len(texts), dim)``."""

    def _get_query_embeddings(self, queries: List[str]) -> np.ndarray:
        return self._get_text_embeddings(queries)

    def _embed_batch(self, texts: List[str], compute: Any) -> np.ndarray:
        """``compute(texts)`` as a float32 array, inside an EMBEDDING event of
        :attr:`callback_manager` when it has handlers (without, one list check)."""
        cm = self.callback_manager
        if not cm.handlers:
            return np.asarray(compute(texts), dtype=np.float32)
        start = {EventPayload.SERIALIZED: self.identity(), EventPayload.MODEL_NAME: self.model_name}
        with cm.event(CBEventType.EMBEDDING, payload=start) as event:
            vecs = np.asarray(compute(texts), dtype=np.float32)
            event.on_end(payload={EventPayload.CHUNKS: list(texts), EventPayload.EMBEDDINGS: vecs.tolist(),
                                  EventPayload.TOKENIZER: self.get_tokenizer()})
        return vecs

    def _release_memory(self) -> None:
        """Free what an out-of-memory error left allocated (local models: the CUDA cache)."""

    # -- identity ------------------------------------------------------------------
    @property
    def dimension(self) -> Optional[int]:
        """Length of the vectors, or ``None`` when unknown before the first call."""
        return None

    @property
    def max_text_tokens(self) -> Optional[int]:
        """Most tokens of text (excluding special tokens) the model reads; ``None`` when unlimited/unknown."""
        return None

    def get_tokenizer(self) -> Any:
        """The :class:`~ragloom.tokenizers.Tokenizer` this model consumes text with, or ``None``."""
        return None

    def identity(self) -> Dict[str, Any]:
        """What an index records about the model that built it."""
        return {"class_name": self.class_name(), "model_name": self.model_name, "dimension": self.dimension}

    def cache_identity(self) -> Dict[str, Any]:
        """What decides a document vector besides the text: the cache's key (without the text).

        Defaults to :meth:`identity` minus query-only settings; providers add whatever
        else changes the vectors (e.g. truncation length).
        """
        ident = dict(self.identity())
        ident.pop("query_instruction", None)
        ident["class_name"] = self.class_name()
        return ident

    def to_config(self) -> Dict[str, Any]:
        return self.identity()

    # -- cache -------------------------------------------------------------------------
    @property
    def embed_cache(self) -> Optional["EmbeddingCache"]:
        """The persistent :class:`~ragloom.embeddings.cache.EmbeddingCache`, or ``None``."""
        return self._embed_cache

    @embed_cache.setter
    def embed_cache(self, value: Union[None, str, "os.PathLike[str]", "EmbeddingCache"]) -> None:
        from ragloom.embeddings.cache import EmbeddingCache

        if value is None or isinstance(value, EmbeddingCache):
            self._embed_cache = value
        elif isinstance(value, (str, os.PathLike)):
            self._embed_cache = EmbeddingCache(value)
        else:
            raise ValueError(f"embed_cache must be None, a path or an EmbeddingCache, got {type(value).__name__}")
        self._cache_namespace = None

    def _namespace(self) -> str:
        if self._cache_namespace is None:
            from ragloom.embeddings.cache import namespace_of

            self._cache_ident = self.cache_identity()
            self._cache_namespace = namespace_of(self._cache_ident)
        return self._cache_namespace

    @property
    def query_cache(self) -> Optional["EmbeddingCache"]:
        """Where query vectors are kept (:class:`~ragloom.embeddings.cache.EmbeddingCache` or ``None``):
        a repeated query costs a lookup instead of a model run.  An index opened from a folder
        (``ragloom query``, ``ragloom serve``) uses the folder's ``embed_cache.sqlite``.  Queries
        have their own namespace (the model's identity with its query instruction), so they never
        mix with document vectors."""
        return self._query_cache

    @query_cache.setter
    def query_cache(self, value: Optional["EmbeddingCache"]) -> None:
        from ragloom.embeddings.cache import EmbeddingCache

        if value is not None and not isinstance(value, EmbeddingCache):
            raise ValueError(f"query_cache must be None or an EmbeddingCache, got {type(value).__name__}")
        self._query_cache = value
        self._query_namespace = None

    def _query_vectors(self, queries: List[str]) -> np.ndarray:
        """``(len(queries), dim)`` float32 query vectors, through :attr:`query_cache` when set.

        The cache is best effort: a database that cannot be read or written (busy past its
        timeout, read-only, full disk) only costs the model run it would have saved.
        """
        queries = [valid_unicode(q) for q in queries]
        cache = self._query_cache
        if cache is None:
            return self._embed_batch(queries, self._get_query_embeddings)
        from ragloom.embeddings.cache import namespace_of, text_hash

        ident = dict(self.cache_identity(), kind="query", query_instruction=self.identity().get("query_instruction"))
        if self._query_namespace is None:
            self._query_namespace = namespace_of(ident)
        hashes = [text_hash(q) for q in queries]
        try:
            found = cache.get_many(self._query_namespace, hashes)
        except Exception as exc:  # apsw errors: the cache is an optimisation
            logger.debug("query cache lookup failed: %s", exc)
            found = {}
        misses = [i for i, h in enumerate(hashes) if h not in found]
        if not misses:
            return np.stack([found[h] for h in hashes]).astype(np.float32, copy=False)
        vecs = self._embed_batch([queries[i] for i in misses], self._get_query_embeddings)
        try:
            cache.put_many(self._query_namespace, [hashes[i] for i in misses], vecs, ident)
        except Exception as exc:
            logger.debug("query cache write failed: %s", exc)
        out = np.empty((len(queries), vecs.shape[1]), dtype=np.float32)
        out[misses] = vecs
        for i, h in enumerate(hashes):
            if h in found:
                out[i] = found[h]
        return out

    def _cache_lookup(self, texts: List[str]) -> Tuple[Optional[np.ndarray], List[int], List[bytes]]:
        """``(vectors or None, indexes of misses, text hashes)``; ``vectors`` has the hits filled in."""
        from ragloom.embeddings.cache import text_hash

        cache = self._embed_cache
        assert cache is not None
        hashes = [text_hash(t) for t in texts]
        found = cache.get_many(self._namespace(), hashes)
        out: Optional[np.ndarray] = None
        misses: List[int] = []
        for i, h in enumerate(hashes):
            vec = found.get(h)
            if vec is None:
                misses.append(i)
                continue
            if out is None:
                out = np.empty((len(texts), vec.shape[0]), dtype=np.float32)
            out[i] = vec
        return out, misses, hashes

    def _cache_store(self, hashes: Sequence[bytes], vectors: np.ndarray) -> None:
        if self._embed_cache is not None and len(hashes):
            self._embed_cache.put_many(self._namespace(), hashes, vectors, self._cache_ident)

    # -- public API ------------------------------------------------------------------
    def get_text_embedding_batch_array(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray:
        """Embed ``texts``; returns a float32 array of shape ``(len(texts), dim)`` in input order.

        With an ``embed_cache``, cached texts cost a lookup; only the misses are embedded
        (and then stored).
        """
        texts = [valid_unicode(t) for t in texts]  # models reject lone surrogates (offsets are not used here)
        if not texts:
            dim = self.dimension or 0
            return np.zeros((0, dim), dtype=np.float32)
        if self._embed_cache is None:
            return self._embed_all(texts, show_progress)
        out, misses, hashes = self._cache_lookup(texts)
        if not misses:
            assert out is not None
            return out
        vecs = self._embed_all([texts[i] for i in misses], show_progress)
        self._cache_store([hashes[i] for i in misses], vecs)
        if out is None:
            return vecs
        if out.shape[1] != vecs.shape[1]:
            raise RuntimeError(
                f"{self.class_name()}: cached vectors have dimension {out.shape[1]} "
                f"but the model returned {vecs.shape[1]}"
            )
        out[misses] = vecs
        return out

    def _embed_all(self, texts: List[str], show_progress: bool) -> np.ndarray:
        """Length-sorted batches (longest first) with out-of-memory back-off; input order kept."""
        n = len(texts)
        lengths = [len(t) for t in texts]
        order = sorted(range(n), key=lengths.__getitem__, reverse=True)
        out: Optional[np.ndarray] = None
        bar = None
        if show_progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=n, desc="Embedding", unit="text")
        try:
            pos = 0
            while pos < n:
                size = self.embed_batch_size
                idx = order[pos : pos + size]
                try:
                    vecs = self._embed_batch([texts[i] for i in idx], self._get_text_embeddings)
                except Exception as exc:
                    if not (self.adaptive_batch and is_out_of_memory(exc)):
                        raise
                    self._on_out_of_memory(exc, len(idx))
                    continue  # same texts, smaller batches
                if vecs.ndim != 2 or vecs.shape[0] != len(idx):
                    raise RuntimeError(f"{self.class_name()} returned {vecs.shape[0]} vectors for {len(idx)} texts")
                if out is None:
                    out = np.empty((n, vecs.shape[1]), dtype=np.float32)
                out[idx] = vecs
                pos += len(idx)
                if bar is not None:
                    bar.update(len(idx))
        finally:
            if bar is not None:
                bar.close()
        assert out is not None
        return out

    def _on_out_of_memory(self, exc: BaseException, batch_len: int) -> None:
        """Halve ``embed_batch_size`` (kept for the rest of the run) or give up at 1."""
        self._release_memory()
        if batch_len <= 1:
            raise EmbeddingOutOfMemoryError(
                f"{self.class_name()} ({self.model_name}) ran out of memory embedding a single text; "
                f"lower max_length or use a device with more memory ({exc})"
            ) from exc
        new = max(1, min(self.embed_batch_size, batch_len) // 2)
        logger.warning(
            "%s ran out of memory at batch size %d; retrying with %d (kept for the rest of the run)",
            self.class_name(), batch_len, new,
        )
        self.embed_batch_size = new

    def get_text_embedding_batch(
        self, texts: Sequence[str], show_progress: bool = False, **kwargs: Any
    ) -> List[Embedding]:
        """Embed ``texts``; returns ``list[list[float]]`` of shape ``(len(texts), dim)`` in input order."""
        return self.get_text_embedding_batch_array(texts, show_progress=show_progress).tolist()

    def get_text_embedding(self, text: str) -> Embedding:
        """Embed one document text; returns ``list[float]`` of length ``dim``."""
        return self.get_text_embedding_batch([text])[0]

    def get_query_embedding(self, query: str) -> Embedding:
        """Embed one query (with the model's query instruction, if any); returns ``list[float]``."""
        return self._query_vectors([query])[0].tolist()

    def get_agg_embedding_from_queries(self, queries: List[str]) -> Embedding:
        """Mean of the query embeddings of ``queries``."""
        return self._query_vectors(list(queries)).mean(axis=0).tolist()

    async def aget_text_embedding_batch(self, texts: Sequence[str], show_progress: bool = False) -> List[Embedding]:
        return self.get_text_embedding_batch(texts, show_progress=show_progress)

    async def aget_query_embedding(self, query: str) -> Embedding:
        return self.get_query_embedding(query)

    @staticmethod
    def similarity(embedding1: Sequence[float], embedding2: Sequence[float]) -> float:
        """Cosine similarity of two vectors (``0.0`` if either is all zeros)."""
        a = np.asarray(embedding1, dtype=np.float64)
        b = np.asarray(embedding2, dtype=np.float64)
        denom = float(np.linalg.norm(a) * np.linalg.norm(b))
        return float(a @ b / denom) if denom else 0.0

    # -- as a transformation ------------------------------------------------------------
    def __call__(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> List[BaseNode]:
        """Set ``node.embedding`` on every node that has none, from ``get_content(MetadataMode.EMBED)``."""
        nodes = list(nodes)
        todo = [n for n in nodes if n.embedding is None]
        if todo:
            vecs = self.get_text_embedding_batch_array(
                [n.get_content(MetadataMode.EMBED) for n in todo], show_progress=show_progress
            )
            for node, vec in zip(todo, vecs, strict=True):
                node.embedding = vec.tolist()
        return nodes
