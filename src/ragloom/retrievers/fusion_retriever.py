"""``QueryFusionRetriever``: run several retrievers (optionally on several LLM-written
variants of the query) and fuse their rankings into one (LlamaIndex's class and modes).

The fusion functions are :mod:`ragloom.fusion`, the same ones the SQLite store uses for its
built-in hybrid search, so
``QueryFusionRetriever([index.as_retriever(vector_store_query_mode="default", similarity_top_k=P),
BM25Retriever.from_defaults(index=index, similarity_top_k=P)], mode="dist_based_score",
similarity_top_k=k)`` ranks exactly like ``index.as_retriever(similarity_top_k=k)`` (hybrid,
``alpha`` 0.5) when ``P`` is the store's candidate pool, ``max(4k, 50)``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ragloom.fusion import FUSION_MODES, fuse_rankings, parse_mode
from ragloom.retrievers.base import BaseRetriever, QueryType
from ragloom.schema import BaseNode, NodeWithScore, QueryBundle

logger = logging.getLogger(__name__)

__all__ = ["QueryFusionRetriever", "FUSION_MODES", "DEFAULT_QUERY_GEN_PROMPT"]

DEFAULT_SIMILARITY_TOP_K = 2

#: Prompt asking the LLM for ``{num_queries}`` extra queries related to ``{query}``.
DEFAULT_QUERY_GEN_PROMPT = (
    "Write {num_queries} different search queries that would help find information to answer "
    "the question below. Put each query on its own line, with no numbering and no other text.\n"
    "Question: {query}\n"
    "Queries:\n"
)

_LIST_MARKER = re.compile(r"^\s*(?:\d+\s*[.):]|[-*•])\s*")
_MAX_THREADS = 8


def _copy_bundle(bundle: QueryBundle) -> QueryBundle:
    """A private copy per retriever: dense retrievers store the query embedding on the bundle,
    and two retrievers with different embed models must not share one."""
    return QueryBundle(
        query_str=bundle.query_str,
        image_path=bundle.image_path,
        custom_embedding_strs=None if bundle.custom_embedding_strs is None else list(bundle.custom_embedding_strs),
        embedding=bundle.embedding,
    )


def parse_generated_queries(text: str, original: str, limit: int) -> List[str]:
    """The queries in an LLM answer: one per line, code fences, list markers (``1.``, ``-``)
    and blank lines removed, duplicates and copies of ``original`` dropped, at most ``limit``."""
    out: List[str] = []
    seen = {original.strip().casefold()}
    for line in text.strip().strip("`").splitlines():
        q = _LIST_MARKER.sub("", line.strip().strip("`")).strip().strip('"').strip()
        if not q or q.startswith("```"):
            continue
        key = q.casefold()
        if key in seen:
            continue
        seen.add(key)
        out.append(q)
        if len(out) >= limit:
            break
    return out


class QueryFusionRetriever(BaseRetriever):
    """Fuse the results of several retrievers, over the query and ``num_queries - 1`` variants
    of it written by an LLM.

    Every retriever runs on every query; the ranked lists are then fused by ``mode`` (see
    :mod:`ragloom.fusion` for the formulas and their sources):

    * ``"reciprocal_rerank"`` — reciprocal rank fusion (k = 60); a retriever's weight scales
      its lists' contributions (equal weights = plain RRF);
    * ``"relative_score"`` — min-max scaled scores × retriever weight / number of queries, summed;
    * ``"dist_based_score"`` — the same with mean ± 3 std scaling (the store's hybrid fusion);
    * ``"simple"`` (the default, as in LlamaIndex) — each node's best raw score.

    Nodes are identified by node id (LlamaIndex uses the content hash, which also merges
    distinct nodes with equal text); the first retriever that returned a node supplies its
    object.  Returns at most ``similarity_top_k`` new ``NodeWithScore`` objects, best first,
    ties broken by node id.

    Args:
        retrievers: the retrievers to fuse (any object with ``retrieve(QueryBundle)``).
        llm: writes the extra queries (an object with ``complete(prompt).text``; ``acomplete``
            is used by :meth:`aretrieve` when present); default ``Settings.llm``.  Needed only
            when ``num_queries > 1``.
        query_gen_prompt: template with ``{num_queries}`` and ``{query}``.
        mode: a :class:`~ragloom.fusion.FUSION_MODES` or its value.
        similarity_top_k: nodes returned (>= 1).
        num_queries: total queries including the original (>= 1; LlamaIndex's default is 4,
            ragloom's 1 because no LLM is configured by default).  The LLM may return fewer.
        use_async: run the retrievers concurrently (threads in :meth:`retrieve`, ``asyncio``
            in :meth:`aretrieve`).
        verbose: log the generated queries at INFO (otherwise DEBUG).
        retriever_weights: one weight >= 0 per retriever, normalised to sum to 1 (default
            equal).  A retriever with weight 0 is ignored.

    Raises:
        ValueError: no retrievers, an unknown ``mode``, ``similarity_top_k`` or ``num_queries``
            < 1, bad ``retriever_weights``, a ``query_gen_prompt`` without its placeholders, or
            ``num_queries > 1`` with no ``llm`` (and no ``Settings.llm``).
    """

    def __init__(
        self,
        retrievers: Sequence[Any],
        llm: Any = None,
        query_gen_prompt: Optional[str] = None,
        mode: Union[str, FUSION_MODES] = FUSION_MODES.SIMPLE,
        similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K,
        num_queries: int = 1,
        use_async: bool = False,
        verbose: bool = False,
        retriever_weights: Optional[Sequence[float]] = None,
    ) -> None:
        retrievers = list(retrievers or [])
        if not retrievers:
            raise ValueError("retrievers must hold at least one retriever")
        for r in retrievers:
            if not callable(getattr(r, "retrieve", None)):
                raise ValueError(f"retrievers must have a retrieve() method, got {type(r).__name__}")
        self.mode = parse_mode(mode)
        for name, value in (("similarity_top_k", similarity_top_k), ("num_queries", num_queries)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        self.similarity_top_k = similarity_top_k
        self.num_queries = num_queries
        self.use_async = bool(use_async)
        self._verbose = bool(verbose)
        self._retrievers = retrievers
        if retriever_weights is None:
            weights = [1.0] * len(retrievers)
        else:
            weights = [float(w) for w in retriever_weights]
            if len(weights) != len(retrievers):
                raise ValueError(
                    f"retriever_weights must have one weight per retriever ({len(retrievers)}), got {len(weights)}"
                )
            if any(not math.isfinite(w) or w < 0 for w in weights) or sum(weights) <= 0:
                raise ValueError(f"retriever_weights must be finite, >= 0 and not all 0, got {list(retriever_weights)}")
        total = math.fsum(weights)
        self._retriever_weights = [w / total for w in weights]
        self.query_gen_prompt = query_gen_prompt or DEFAULT_QUERY_GEN_PROMPT
        if "{num_queries}" not in self.query_gen_prompt or "{query}" not in self.query_gen_prompt:
            raise ValueError("query_gen_prompt must contain the placeholders {num_queries} and {query}")
        if llm is None:
            from ragloom.settings import Settings

            llm = Settings.llm
        self._llm = llm
        if num_queries > 1:
            if llm is None:
                raise ValueError(
                    "num_queries > 1 needs an LLM to write the extra queries: pass llm=... or set Settings.llm "
                    "(or use num_queries=1)"
                )
            if not callable(getattr(llm, "complete", None)):
                raise ValueError(f"llm must have a complete(prompt) method, got {type(llm).__name__}")

    @property
    def retrievers(self) -> List[Any]:
        return list(self._retrievers)

    @property
    def retriever_weights(self) -> List[float]:
        """The normalised weights (sum 1)."""
        return list(self._retriever_weights)

    # -- query generation --------------------------------------------------------------------
    def _prompt(self, query_str: str) -> str:
        return self.query_gen_prompt.format(num_queries=self.num_queries - 1, query=query_str)

    def _parse(self, text: str, query_str: str) -> List[QueryBundle]:
        queries = parse_generated_queries(text, query_str, self.num_queries - 1)
        logger.log(logging.INFO if self._verbose else logging.DEBUG, "generated queries: %s", queries)
        return [QueryBundle(query_str=q) for q in queries]

    def _get_queries(self, query_str: str) -> List[QueryBundle]:
        """The LLM's extra queries (at most ``num_queries - 1``)."""
        response = self._llm.complete(self._prompt(query_str))
        return self._parse(str(getattr(response, "text", response)), query_str)

    async def _aget_queries(self, query_str: str) -> List[QueryBundle]:
        acomplete = getattr(self._llm, "acomplete", None)
        if callable(acomplete):
            response = await acomplete(self._prompt(query_str))
        else:
            response = await asyncio.to_thread(self._llm.complete, self._prompt(query_str))
        return self._parse(str(getattr(response, "text", response)), query_str)

    # -- retrieval -----------------------------------------------------------------------------
    def _tasks(self, queries: List[QueryBundle]) -> List[Tuple[int, int, QueryBundle]]:
        return [
            (qi, ri, _copy_bundle(q))
            for qi, q in enumerate(queries)
            for ri in range(len(self._retrievers))
            if self._retriever_weights[ri] > 0.0
        ]

    def _run(self, queries: List[QueryBundle]) -> Dict[Tuple[int, int], List[NodeWithScore]]:
        tasks = self._tasks(queries)
        if self.use_async and len(tasks) > 1:
            with ThreadPoolExecutor(max_workers=min(len(tasks), _MAX_THREADS)) as pool:
                outs = list(pool.map(lambda t: self._retrievers[t[1]].retrieve(t[2]), tasks))
        else:
            outs = [self._retrievers[ri].retrieve(q) for _, ri, q in tasks]
        return {(qi, ri): list(out) for (qi, ri, _), out in zip(tasks, outs, strict=True)}

    async def _arun(self, queries: List[QueryBundle]) -> Dict[Tuple[int, int], List[NodeWithScore]]:
        tasks = self._tasks(queries)

        async def one(ri: int, q: QueryBundle) -> List[NodeWithScore]:
            r = self._retrievers[ri]
            aretrieve = getattr(r, "aretrieve", None)
            if callable(aretrieve) and inspect.iscoroutinefunction(aretrieve):
                return list(await aretrieve(q))
            return list(await asyncio.to_thread(r.retrieve, q))

        outs = await asyncio.gather(*(one(ri, q) for _, ri, q in tasks))
        return {(qi, ri): out for (qi, ri, _), out in zip(tasks, outs, strict=True)}

    def _fuse(self, results: Dict[Tuple[int, int], List[NodeWithScore]], num_queries: int) -> List[NodeWithScore]:
        rankings: List[List[Tuple[str, Optional[float]]]] = []
        weights: List[float] = []
        nodes: Dict[str, BaseNode] = {}
        n_retrievers = len(self._retrievers)
        for (_qi, ri), found in sorted(results.items()):
            rankings.append([(n.node.node_id, n.score) for n in found])
            for n in found:
                nodes.setdefault(n.node.node_id, n.node)
            w = self._retriever_weights[ri]
            if self.mode is FUSION_MODES.RECIPROCAL_RANK:
                weights.append(w * n_retrievers)
            elif self.mode is FUSION_MODES.SIMPLE:
                weights.append(1.0)
            else:
                weights.append(w / num_queries)
        fused = fuse_rankings(rankings, self.mode, weights, top_k=self.similarity_top_k)
        return [NodeWithScore(node=nodes[node_id], score=score) for node_id, score in fused]

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        queries = [query_bundle]
        if self.num_queries > 1:
            queries.extend(self._get_queries(query_bundle.query_str))
        return self._fuse(self._run(queries), len(queries))

    async def aretrieve(self, str_or_query_bundle: QueryType) -> List[NodeWithScore]:
        """:meth:`retrieve` with the LLM call and the retrievers awaited concurrently."""
        bundle = (
            QueryBundle(query_str=str_or_query_bundle) if isinstance(str_or_query_bundle, str) else str_or_query_bundle
        )
        queries = [bundle]
        if self.num_queries > 1:
            queries.extend(await self._aget_queries(bundle.query_str))
        return self._fuse(await self._arun(queries), len(queries))
