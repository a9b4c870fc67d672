"""The *transform* part of the ingestion engine: transformations applied node by node through a cache.

Each transformation is applied to a list of nodes through :class:`~ragloom.ingestion.IngestionCache`:
for every input node the pair (node, transformation) is looked up; only the misses are computed,
in one call of the transformation per step, and the outputs are mapped back to their input (1:1
when the transformation returns the same nodes, as embed models and extractors do; otherwise by
the outputs' immediate SOURCE relationship, as node parsers set it).  Editing one document
recomputes only that document's nodes; changing one transformation's ``to_config()`` invalidates
exactly that step.

Node parsers in a chain keep the *original* source: the second parser of
``[SentenceSplitter(...), SentenceWindowNodeParser(...)]`` gives nodes whose ``ref_doc_id`` is the
document, not the intermediate chunk (:func:`ragloom.node_parser.interface.carry_source`).

Metadata extractors (:class:`~ragloom.extractors.BaseExtractor`) take their own path
(:func:`_apply_extractor`): a node's key adds what its metadata depends on besides the node (its
neighbours, its document's first nodes, the budget of the next embed model), misses are extracted
with the whole step as context, and the LLM's answers are kept in the same cache by prompt.

Node parsers may run in worker processes (``num_workers > 1``, :class:`SplitPool`: one pool for a
whole run, spawned on first use, fed contiguous parts of about equal text); embed models report
progress and count computed vs cached vectors.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import pickle
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from ragloom._system import children_ignore_sigint, worker_process_start
from ragloom.ingestion.cache import IngestionCache, node_transform_key, transformation_digest
from ragloom.schema import BaseNode, TransformComponent

logger = logging.getLogger(__name__)

__all__ = ["ProgressCallback", "SplitPool", "run_transformations"]

#: ``callback(event, payload)`` of the ingestion engine.  Events, in order per batch:
#: ``"splitting"`` (payload: the characters of the nodes entering a node-parser step; a 50 MB
#: document takes about 40 s to split on one core, so a caller can say what is happening),
#: ``"embedding"`` (payload: how many nodes are about to enter an embed-model step),
#: ``"embedded"`` (payload: how many more of them are done; sent per sub-batch of
#: ``4 × embed_batch_size`` nodes), ``"committed"`` (payload: the ``list[BaseNode]`` written by the
#: batch's transaction, just committed).
ProgressCallback = Callable[[str, Any], None]


@dataclass
class EmbedCounts:
    """Vectors computed by an embed model (``embedded``) vs taken from a cache (``reused``)."""

    embedded: int = 0
    reused: int = 0


def _is_embedding(transform: Any) -> bool:
    from ragloom.embeddings.base import BaseEmbedding

    return isinstance(transform, BaseEmbedding)


#: A node-parser step over fewer characters than this runs in the calling process: handing the
#: nodes and the parser to worker processes costs more than splitting them in place (about 0.2 s
#: to unpickle a parser with its tokenizer in a fresh worker, then ~1 ms per 10 kB of nodes).
POOL_MIN_CHARS = 256 * 1024

#: The parser a worker process last received, by the sha256 of its pickle (a worker keeps one).
_WORKER_PARSER: Dict[str, Any] = {}


#: a worker's log record, as handed to its parent: ``(logger name, level, formatted message)``
LogEntry = Tuple[str, int, str]


class _Collector(logging.Handler):
    """Keeps the formatted records of ragloom's loggers in a worker process (see :func:`_pooled_call`)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.entries: List[LogEntry] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.entries.append((record.name, record.levelno, record.getMessage()))
        except Exception:  # a malformed log call must not stop the split (as with logging's own handlers)
            self.handleError(record)


def _pooled_call(digest: str, blob: bytes, nodes: List[BaseNode],
                 kw: Dict[str, Any]) -> Tuple[List[BaseNode], list, List[LogEntry]]:
    """Worker side of :class:`SplitPool`: unpickle the parser once per worker, then split ``nodes``.

    Returns the outputs, the heavy-metadata warnings (see
    :func:`~ragloom.node_parser.interface.deferred_metadata_warnings`) and the other warnings ragloom
    logged meanwhile: the parent logs them (a worker's own log would go to its stderr, unformatted,
    once per worker: a parser's "once per run" warning came out once per worker)."""
    from ragloom.node_parser.interface import deferred_metadata_warnings

    collector = _Collector()
    root = logging.getLogger("ragloom")
    root.addHandler(collector)
    propagate, root.propagate = root.propagate, False
    try:
        transform = _WORKER_PARSER.get(digest)
        if transform is None:
            transform = pickle.loads(blob)
            _WORKER_PARSER.clear()
            _WORKER_PARSER[digest] = transform
        with deferred_metadata_warnings() as warnings:
            outputs = _raw_call(transform, nodes, kw)
    finally:
        root.removeHandler(collector)
        root.propagate = propagate
    return outputs, warnings, collector.entries


class SplitPool:
    """Worker processes that run node-parser steps, kept for a whole ingestion run.

    The processes are started (``spawn``) on the first step that needs them and stay until
    :meth:`close`, so a run of many batches pays the start-up (importing ragloom, unpickling the
    parser and its tokenizer: about a second per worker) once, and an unchanged re-run, which
    splits nothing, starts none.  A step's nodes go out in contiguous parts of about equal text
    (``2 * num_workers`` parts) and come back in input order, so node ids, order and the cache are
    what a single process gives.

    Args:
        num_workers: worker processes, ``>= 2``.
        min_chars: steps over fewer characters (of the nodes to split) run in the calling process.

    Raises:
        ValueError: ``num_workers < 2`` or ``min_chars < 0``.
    """

    def __init__(self, num_workers: int, min_chars: int = POOL_MIN_CHARS) -> None:
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 2:
            raise ValueError(f"num_workers must be an integer >= 2 for a SplitPool, got {num_workers!r}")
        if min_chars < 0:
            raise ValueError(f"min_chars must be >= 0, got {min_chars!r}")
        self.num_workers = num_workers
        self.min_chars = min_chars
        self._executor: Optional[ProcessPoolExecutor] = None
        #: id(transform) -> (transform, sha256, pickle), or None when it does not pickle; the entry holds
        #: the transform itself, so its id is not reused by another object while the pool lives
        self._blobs: Dict[int, Optional[Tuple[Any, str, bytes]]] = {}
        self._logged: Set[LogEntry] = set()  # worker records already logged here (see :meth:`_log`)

    def _blob(self, transform: Any) -> Optional[Tuple[str, bytes]]:
        """(sha256, pickle) of ``transform``, or ``None`` (warned once) when it does not pickle."""
        key = id(transform)
        if key not in self._blobs:
            try:
                blob = pickle.dumps(transform)
                self._blobs[key] = (transform, hashlib.sha256(blob).hexdigest(), blob)
            except (pickle.PicklingError, TypeError, AttributeError) as exc:
                logger.warning("num_workers > 1 ignored: %s cannot be pickled for worker processes (%s: %s); "
                               "splitting in this process", type(transform).__name__, type(exc).__name__, exc)
                self._blobs[key] = None
        entry = self._blobs[key]
        return None if entry is None else (entry[1], entry[2])

    def wants(self, transform: Any, nodes: Sequence[BaseNode], chars: int) -> bool:
        """Whether the step ``transform(nodes)`` goes to the workers; ``chars``: the nodes' text length."""
        if len(nodes) < 2 or not _is_parser(transform) or chars < self.min_chars:
            return False
        return self._blob(transform) is not None

    def run(self, transform: Any, nodes: List[BaseNode],
            kw: Dict[str, Any]) -> List[Tuple[List[BaseNode], List[BaseNode]]]:
        """``[(part, outputs)]``: the contiguous parts of ``nodes``, in order, each with the raw
        outputs (:func:`_raw_call`) of ``transform`` over it."""
        blob = self._blob(transform)
        assert blob is not None
        starting = self._executor is None
        if starting:
            import multiprocessing

            self._executor = ProcessPoolExecutor(max_workers=self.num_workers,
                                                 mp_context=multiprocessing.get_context("spawn"),
                                                 initializer=worker_process_start)
        executor = self._executor
        assert executor is not None
        parts = _balanced_parts(nodes, 2 * self.num_workers)
        logger.debug("%s: %d nodes in %d parts on %d worker processes", type(transform).__name__, len(nodes),
                     len(parts), self.num_workers)
        # a spawn pool starts its processes as parts are submitted: the first parts start them all
        with children_ignore_sigint() if starting else contextlib.nullcontext():
            futures = [executor.submit(_pooled_call, blob[0], blob[1], part, {**kw, "show_progress": False})
                       for part in parts]
        from ragloom.node_parser.interface import log_metadata_warnings

        out: List[Tuple[List[BaseNode], List[BaseNode]]] = []
        for part, fut in zip(parts, futures, strict=True):
            outputs, warnings, entries = fut.result()
            log_metadata_warnings(warnings)  # in this process's warn-once block: once per run
            self._log(entries)
            out.append((part, outputs))
        return out

    def _log(self, entries: Sequence[LogEntry]) -> None:
        """Log the records workers handed back (:func:`_pooled_call`) through the same loggers here,
        each distinct one once for the pool's life (a run): every worker holds its own copy of the
        parser, so a warning it gives once (a missing grammar, say) came once per worker."""
        for name, level, message in entries:
            key = (name, level, message)
            if key not in self._logged:
                self._logged.add(key)
                logging.getLogger(name).log(level, "%s", message)

    def close(self, cancel: bool = False) -> None:
        """Stop the worker processes (a pool that never started has none).  ``cancel``: the run is
        being abandoned (an error, Ctrl-C): parts not started are dropped and nothing is waited for
        (a part still running ends in its worker; a broken pool, whose workers died, made a waiting
        shutdown hang)."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        if cancel:
            executor.shutdown(wait=False, cancel_futures=True)
        else:
            executor.shutdown()


def _balanced_parts(nodes: List[BaseNode], parts: int) -> List[List[BaseNode]]:
    """``nodes`` cut into at most ``parts`` contiguous runs of about equal text length."""
    sizes = [len(n.get_content()) + 1 for n in nodes]
    total = sum(sizes)
    out: List[List[BaseNode]] = []
    current: List[BaseNode] = []
    acc = 0
    for node, size in zip(nodes, sizes, strict=True):
        current.append(node)
        acc += size
        if acc * parts >= total * (len(out) + 1) and len(out) < parts - 1:
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


def _is_parser(transform: Any) -> bool:
    from ragloom.node_parser.interface import NodeParser

    return isinstance(transform, NodeParser)


def _is_extractor(transform: Any) -> bool:
    from ragloom.extractors.interface import BaseExtractor

    return isinstance(transform, BaseExtractor)


def _next_embed_model(transformations: Sequence[Any], step: int) -> Any:
    """The first embed model after ``transformations[step]``, or ``None``: what a metadata
    extractor's embedded metadata must fit (:meth:`~ragloom.extractors.BaseExtractor.embed_budget`)."""
    return next((t for t in transformations[step + 1 :] if _is_embedding(t)), None)


def _apply_extractor(
    nodes: List[BaseNode],
    transform: Any,
    cache: Optional[IngestionCache],
    collection: Optional[str],
    show_progress: bool,
    embed_model: Any,
) -> List[BaseNode]:
    """A metadata extractor's step: one output per input node, in order.

    The cache key of each node adds :meth:`~ragloom.extractors.BaseExtractor.cache_contexts` (what
    its output depends on besides itself: its document's first nodes, its neighbours, the embed
    budget), and the misses are extracted with every node of the step as context, so a title or a
    neighbour's summary is the one a full run gives.  Outputs of failed LLM calls kept only because
    ``raise_on_error=False`` are not cached.  The extractor also keeps its LLM answers in ``cache``
    (by prompt), so a re-extracted node re-asks only the prompts that changed.
    """
    budget = transform.embed_budget(embed_model)
    if cache is None:
        return transform.run_step(nodes, nodes, budget, show_progress=show_progress)[0]
    digest = transformation_digest(transform)
    contexts = transform.cache_contexts(nodes, budget)
    keys = [node_transform_key(n, transform, digest, context=c) for n, c in zip(nodes, contexts, strict=True)]
    found = cache.get_many(keys, collection=collection)
    first: Dict[str, int] = {}
    for i, key in enumerate(keys):
        if key not in found:
            first.setdefault(key, i)
    computed: Dict[str, BaseNode] = {}
    if first:
        todo = [nodes[i] for i in first.values()]
        outputs, cacheable = transform.run_step(todo, nodes, budget, show_progress=show_progress,
                                                cache=cache, cache_collection=collection)
        computed = dict(zip(first, outputs, strict=True))
        cache.put_many({k: [o] for (k, o), ok in zip(computed.items(), cacheable, strict=True) if ok},
                       collection=collection)
    result: List[BaseNode] = []
    emitted: set = set()
    for node, key in zip(nodes, keys, strict=True):
        if key in computed:
            out = computed[key] if key not in emitted else computed[key].copy()
        else:
            out = found[key][0] if key not in emitted else found[key][0].copy()
            _refresh_hidden(node, [out])
        emitted.add(key)
        result.append(out)
    return result


def run_transformations(
    nodes: Sequence[BaseNode],
    transformations: Sequence[TransformComponent],
    in_place: bool = True,
    cache: Optional[IngestionCache] = None,
    cache_collection: Optional[str] = None,
    show_progress: bool = False,
    num_workers: Optional[int] = None,
    progress_callback: Optional[ProgressCallback] = None,
    embed_counts: Optional[EmbedCounts] = None,
    validate_nodes: Optional[Callable[[Sequence[BaseNode]], None]] = None,
    compact_embeddings: bool = False,
    pool: Optional[SplitPool] = None,
    **kwargs: Any,
) -> List[BaseNode]:
    """Apply ``transformations`` in order, through ``cache`` when given; returns ``list[BaseNode]``.

    Node-parser steps run in ``pool`` when given (the caller owns it and closes it: the engine keeps
    one for a whole run); otherwise, with ``num_workers > 1``, in a :class:`SplitPool` of this call
    that splits any size (``min_chars=0``), closed before returning.

    ``compact_embeddings``: embed-model steps leave each ``node.embedding`` as a float32 numpy
    array, converted sub-batch by sub-batch, instead of a ``list[float]`` (12 KB of Python floats per
    384-d vector against 1.5 KB: 450 MB for the 36,835 chunks of a 50 MB line).  For callers that
    write the nodes to a vector store and do not hand them on (the stores take either form).

    ``progress_callback`` receives the ``"embedding"`` / ``"embedded"`` events of
    :data:`ProgressCallback` for embed-model steps.  ``validate_nodes`` (a vector store's
    ``validate_nodes``) sees the nodes entering an embed-model step before any is embedded, so a
    node the store would reject raises ``ValueError`` before embeddings are paid for.

    Raises:
        ValueError: ``num_workers < 1``; whatever a transformation raises propagates.
    """
    if num_workers is not None and num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    out: List[BaseNode] = list(nodes) if in_place else [n.copy() for n in nodes]
    own = pool is None and (num_workers or 1) > 1 and len(out) > 1
    if own:
        pool = SplitPool(int(num_workers or 2), min_chars=0)
    try:
        for step, transform in enumerate(transformations):
            if _is_extractor(transform):  # LLM calls, not processes: its own path (see _apply_extractor)
                out = _apply_extractor(out, transform, cache, cache_collection, show_progress,
                                       _next_embed_model(transformations, step))
                continue
            parser = _is_parser(transform)
            chars = sum(len(n.get_content()) for n in out) if parser and (progress_callback or pool) else 0
            if progress_callback is not None and parser:
                progress_callback("splitting", chars)
            out = _apply_cached(
                out,
                transform,
                cache,
                cache_collection,
                show_progress=show_progress,
                pool=pool if pool is not None and pool.wants(transform, out, chars) else None,
                progress_callback=progress_callback,
                embed_counts=embed_counts,
                validate_nodes=validate_nodes,
                compact_embeddings=compact_embeddings,
                **kwargs,
            )
    finally:
        if own and pool is not None:
            pool.close()
    return out


def _raw_call(transform: Any, nodes: List[BaseNode], kwargs: Dict[str, Any]) -> List[BaseNode]:
    """The transformation's outputs; a node parser's keep their *immediate* SOURCE (the input)
    so they can be mapped back to it; :func:`_carry` then restores the original source.
    Module level, so it pickles for worker processes."""
    if _is_parser(transform):
        return list(transform.get_nodes_from_documents(nodes, **kwargs))
    return list(transform(nodes, **kwargs))


def _carry(transform: Any, inputs: Sequence[BaseNode], outputs: List[BaseNode]) -> List[BaseNode]:
    if _is_parser(transform):
        from ragloom.node_parser.interface import carry_source

        return carry_source(inputs, outputs)
    return outputs


def _group(inputs: Sequence[BaseNode], outputs: Sequence[BaseNode]) -> Optional[List[List[BaseNode]]]:
    """Outputs per input: 1:1 when ids line up, else by immediate SOURCE; ``None`` if unmappable."""
    if len(outputs) == len(inputs) and all(o.id_ == i.id_ for o, i in zip(outputs, inputs, strict=True)):
        return [[o] for o in outputs]
    index = {n.id_: k for k, n in enumerate(inputs)}
    if len(index) != len(inputs):
        return None
    groups: List[List[BaseNode]] = [[] for _ in inputs]
    for o in outputs:
        k = index.get(o.ref_doc_id) if o.ref_doc_id is not None else None
        if k is None:
            k = index.get(o.id_)
        if k is None:
            return None
        groups[k].append(o)
    return groups


def _hidden_keys(node: BaseNode) -> List[str]:
    both = set(node.excluded_embed_metadata_keys) & set(node.excluded_llm_metadata_keys)
    return [k for k in node.metadata if k in both]


def _refresh_hidden(inp: BaseNode, outputs: List[BaseNode]) -> None:
    """Copy the input's bookkeeping metadata (hidden from both views, so not in the key) onto cached outputs.
    Not for node parsers: their key includes it, and they may write hidden keys of their own."""
    keys = _hidden_keys(inp)
    if not keys:
        return
    for out in outputs:
        for k in keys:
            if k in out.metadata:
                out.metadata[k] = inp.metadata[k]


def _apply_cached(
    nodes: List[BaseNode],
    transform: Any,
    cache: Optional[IngestionCache],
    collection: Optional[str],
    show_progress: bool,
    pool: Optional[SplitPool],
    progress_callback: Optional[ProgressCallback] = None,
    embed_counts: Optional[EmbedCounts] = None,
    validate_nodes: Optional[Callable[[Sequence[BaseNode]], None]] = None,
    compact_embeddings: bool = False,
    **kwargs: Any,
) -> List[BaseNode]:
    kw = dict(kwargs)
    kw["show_progress"] = show_progress
    hooks = (progress_callback, embed_counts, validate_nodes, compact_embeddings)
    if cache is None and pool is None:
        return _carry(transform, nodes, _run_step(transform, nodes, kw, *hooks))
    digest = transformation_digest(transform)
    with_hidden = _is_parser(transform)  # see node_transform_key
    keys = [node_transform_key(n, transform, digest, with_hidden) for n in nodes]
    found = cache.get_many(keys, collection=collection) if cache is not None else {}
    miss_idx: Dict[str, int] = {}
    for i, key in enumerate(keys):
        if key not in found and key not in miss_idx:
            miss_idx[key] = i
    computed: Dict[str, List[BaseNode]] = {}
    if miss_idx:
        miss_keys = list(miss_idx)
        miss_nodes = [nodes[miss_idx[k]] for k in miss_keys]
        if pool is not None and len(miss_nodes) > 1:
            key_of = {id(n): k for k, n in zip(miss_keys, miss_nodes, strict=True)}
            for part, outputs in pool.run(transform, miss_nodes, kw):
                computed.update(_map_back([key_of[id(n)] for n in part], part, outputs, transform, kw))
        else:
            outputs = _run_step(transform, miss_nodes, kw, *hooks)
            computed.update(_map_back(miss_keys, miss_nodes, outputs, transform, kw))
        if cache is not None:
            cache.put_many(computed, collection=collection)
    result: List[BaseNode] = []
    emitted: set = set()
    for node, key in zip(nodes, keys, strict=True):
        if key in computed:
            if key in emitted:  # the same input twice: its outputs once
                continue
            emitted.add(key)
            result.extend(computed[key])
        else:
            outs = found[key] if key not in emitted else [n.copy() for n in found[key]]
            emitted.add(key)
            if not with_hidden:  # a parser's key covers the hidden metadata: its outputs are exact
                _refresh_hidden(node, outs)
            result.extend(outs)
            if embed_counts is not None and node.embedding is None and _is_embedding(transform):
                embed_counts.reused += len(outs)  # vectors from the ingestion cache
    return result


def _run_step(
    transform: Any,
    nodes: List[BaseNode],
    kw: Dict[str, Any],
    progress_callback: Optional[ProgressCallback],
    embed_counts: Optional[EmbedCounts],
    validate_nodes: Optional[Callable[[Sequence[BaseNode]], None]] = None,
    compact: bool = False,
) -> List[BaseNode]:
    """``transform(nodes)`` (raw: see :func:`_raw_call`); an embed model also validates first,
    counts (computed vs cached) and reports progress."""
    if not _is_embedding(transform) or (progress_callback is None and embed_counts is None and validate_nodes is None
                                        and not compact):
        return _raw_call(transform, nodes, kw)
    if validate_nodes is not None:
        validate_nodes(nodes)
    todo = sum(1 for n in nodes if n.embedding is None)
    emb_cache = transform.embed_cache
    misses_before = emb_cache.misses if emb_cache is not None else 0
    if progress_callback is None and not compact:
        out = list(transform(nodes, **kw))
    else:
        if progress_callback is not None:
            progress_callback("embedding", len(nodes))
        step = max(1, int(transform.embed_batch_size) * 4)
        out = []
        for i in range(0, len(nodes), step):
            part = nodes[i : i + step]
            done = transform(part, **kw)
            if compact:
                for node in done:
                    if isinstance(node.embedding, list):
                        node.embedding = np.asarray(node.embedding, dtype=np.float32)
            out.extend(done)
            if progress_callback is not None:
                progress_callback("embedded", len(part))
    if embed_counts is not None:
        computed = emb_cache.misses - misses_before if emb_cache is not None else todo
        embed_counts.embedded += computed
        embed_counts.reused += max(0, todo - computed)
    return out


def _map_back(
    keys: List[str], inputs: List[BaseNode], outputs: List[BaseNode], transform: Any, kw: Dict[str, Any]
) -> Dict[str, List[BaseNode]]:
    groups = _group(inputs, outputs)
    if groups is None:
        logger.debug("%s: outputs not mappable to inputs; applying it node by node", type(transform).__name__)
        groups = [_raw_call(transform, [n], kw) for n in inputs]
    return {key: _carry(transform, [inp], group) for key, inp, group in zip(keys, inputs, groups, strict=True)}
