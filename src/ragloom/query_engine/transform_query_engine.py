"""``TransformQueryEngine``: rewrite the query with a query transform, then run another engine
(LlamaIndex's class), e.g. ``TransformQueryEngine(index.as_query_engine(), HyDEQueryTransform())``."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from ragloom.base.response.schema import RESPONSE_TYPE
from ragloom.indices.query.query_transform.base import BaseQueryTransform
from ragloom.query_engine.base import BaseQueryEngine, to_query_bundle
from ragloom.query_engine.retriever_query_engine import RetrieverQueryEngine
from ragloom.schema import NodeWithScore, QueryBundle

__all__ = ["TransformQueryEngine"]


class TransformQueryEngine(BaseQueryEngine):
    """Run ``query_engine`` on ``query_transform.run(query, metadata=transform_metadata)``.

    :meth:`retrieve` and :meth:`synthesize` work when the inner engine is a
    :class:`~ragloom.query_engine.RetrieverQueryEngine` (or another ``TransformQueryEngine``).

    Raises:
        ValueError: ``query_transform`` is not a :class:`BaseQueryTransform`, or ``query_engine``
            is not a :class:`BaseQueryEngine`.
    """

    def __init__(
        self,
        query_engine: BaseQueryEngine,
        query_transform: BaseQueryTransform,
        transform_metadata: Optional[Dict[str, Any]] = None,
        callback_manager: Any = None,
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        if not isinstance(query_engine, BaseQueryEngine):
            raise ValueError(f"query_engine must be a BaseQueryEngine, got {type(query_engine).__name__}")
        if not isinstance(query_transform, BaseQueryTransform):
            raise ValueError(f"query_transform must be a BaseQueryTransform, got {type(query_transform).__name__}")
        self._query_engine = query_engine
        self._query_transform = query_transform
        self._transform_metadata = transform_metadata

    @property
    def query_engine(self) -> BaseQueryEngine:
        return self._query_engine

    @property
    def query_transform(self) -> BaseQueryTransform:
        return self._query_transform

    def _get_prompt_modules(self) -> Dict[str, Any]:
        return {"query_transform": self._query_transform, "query_engine": self._query_engine}

    def _inner(self, step: str) -> Any:
        engine = self._query_engine
        if not isinstance(engine, (RetrieverQueryEngine, TransformQueryEngine)):
            raise NotImplementedError(
                f"{step}() needs a RetrieverQueryEngine (or TransformQueryEngine) inside; got {type(engine).__name__}"
            )
        return engine

    def _transform(self, query: Any) -> QueryBundle:
        return self._query_transform.run(to_query_bundle(query), metadata=self._transform_metadata)

    def retrieve(self, query_bundle: Any) -> List[NodeWithScore]:
        """The inner engine's retrieved (and postprocessed) nodes for the transformed query.

        Raises:
            NotImplementedError: the inner engine has no retrieval step.
        """
        return self._inner("retrieve").retrieve(self._transform(query_bundle))

    def synthesize(
        self,
        query_bundle: Any,
        nodes: List[NodeWithScore],
        additional_source_nodes: Optional[Sequence[NodeWithScore]] = None,
    ) -> RESPONSE_TYPE:
        """The inner engine's answer from ``nodes`` to the transformed query."""
        return self._inner("synthesize").synthesize(self._transform(query_bundle), nodes, additional_source_nodes)

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        return self._query_engine.query(self._transform(query_bundle))

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        bundle = await self._query_transform.arun(query_bundle, metadata=self._transform_metadata)
        return await self._query_engine.aquery(bundle)
