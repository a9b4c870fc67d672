"""``RetrieverQueryEngine``: retrieve → postprocess → synthesize (LlamaIndex's)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from ragloom.base.response.schema import RESPONSE_TYPE
from ragloom.query_engine.base import BaseQueryEngine, to_query_bundle
from ragloom.response_synthesizers import BaseSynthesizer, ResponseMode, get_response_synthesizer
from ragloom.schema import NodeWithScore, QueryBundle

__all__ = ["RetrieverQueryEngine"]


class RetrieverQueryEngine(BaseQueryEngine):
    """Answer questions from what a retriever finds.

    ``query(q)``: ``retriever.retrieve(q)``, then each of ``node_postprocessors`` in order, then
    ``response_synthesizer.synthesize(q, nodes)``; the response's ``source_nodes`` are the
    nodes after postprocessing.

    Args:
        retriever: a :class:`~ragloom.retrievers.BaseRetriever` (anything with ``retrieve``).
        response_synthesizer: default ``get_response_synthesizer()`` (``compact``, ``Settings.llm``).
        node_postprocessors: :class:`~ragloom.postprocessor.BaseNodePostprocessor` s.

    Raises:
        ValueError: ``retriever`` has no ``retrieve`` method; a postprocessor has no
            ``postprocess_nodes``; no synthesizer is given and no LLM is configured.
    """

    def __init__(
        self,
        retriever: Any,
        response_synthesizer: Optional[BaseSynthesizer] = None,
        node_postprocessors: Optional[Sequence[Any]] = None,
        callback_manager: Any = None,
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        if not callable(getattr(retriever, "retrieve", None)):
            raise ValueError(f"retriever must have a retrieve() method, got {type(retriever).__name__}")
        posts = list(node_postprocessors or [])
        for i, p in enumerate(posts):
            if not callable(getattr(p, "postprocess_nodes", None)):
                raise ValueError(f"node_postprocessors[{i}] has no postprocess_nodes() method: {type(p).__name__}")
        self._retriever = retriever
        self._response_synthesizer = response_synthesizer or get_response_synthesizer()
        self._node_postprocessors = posts

    @classmethod
    def from_args(
        cls,
        retriever: Any,
        llm: Any = None,
        response_synthesizer: Optional[BaseSynthesizer] = None,
        node_postprocessors: Optional[Sequence[Any]] = None,
        callback_manager: Any = None,
        response_mode: Any = ResponseMode.COMPACT,
        text_qa_template: Any = None,
        refine_template: Any = None,
        summary_template: Any = None,
        simple_template: Any = None,
        use_async: bool = False,
        streaming: bool = False,
        verbose: bool = False,
        prompt_helper: Any = None,
        **kwargs: Any,
    ) -> "RetrieverQueryEngine":
        """An engine whose synthesizer is ``get_response_synthesizer(llm=..., response_mode=..., ...)``
        (unless ``response_synthesizer`` is given).

        Raises:
            ValueError: as :func:`~ragloom.response_synthesizers.get_response_synthesizer`.
        """
        if response_synthesizer is None:
            response_synthesizer = get_response_synthesizer(
                llm=llm,
                prompt_helper=prompt_helper,
                text_qa_template=text_qa_template,
                refine_template=refine_template,
                summary_template=summary_template,
                simple_template=simple_template,
                response_mode=response_mode,
                callback_manager=callback_manager,
                use_async=use_async,
                streaming=streaming,
                verbose=verbose,
                **kwargs,
            )
        return cls(retriever, response_synthesizer, node_postprocessors, callback_manager)

    # -- parts -------------------------------------------------------------------------------
    @property
    def retriever(self) -> Any:
        return self._retriever

    @property
    def response_synthesizer(self) -> BaseSynthesizer:
        return self._response_synthesizer

    @property
    def node_postprocessors(self) -> List[Any]:
        return list(self._node_postprocessors)

    def with_retriever(self, retriever: Any) -> "RetrieverQueryEngine":
        """The same engine over another retriever."""
        return RetrieverQueryEngine(
            retriever, self._response_synthesizer, self._node_postprocessors, self.callback_manager
        )

    def _get_prompt_modules(self) -> Dict[str, Any]:
        return {"response_synthesizer": self._response_synthesizer}

    # -- steps -------------------------------------------------------------------------------
    def _apply_postprocessors(self, nodes: List[NodeWithScore], query_bundle: QueryBundle) -> List[NodeWithScore]:
        for p in self._node_postprocessors:
            nodes = p.postprocess_nodes(nodes, query_bundle=query_bundle)
        return nodes

    def retrieve(self, query_bundle: Any) -> List[NodeWithScore]:
        """Retrieved nodes after the postprocessors (``query_bundle``: ``str`` or ``QueryBundle``)."""
        bundle = to_query_bundle(query_bundle)
        return self._apply_postprocessors(list(self._retriever.retrieve(bundle)), bundle)

    async def aretrieve(self, query_bundle: Any) -> List[NodeWithScore]:
        bundle = to_query_bundle(query_bundle)
        aretrieve = getattr(self._retriever, "aretrieve", None)
        nodes = await aretrieve(bundle) if aretrieve is not None else self._retriever.retrieve(bundle)
        for p in self._node_postprocessors:
            apost = getattr(p, "apostprocess_nodes", None)
            nodes = (
                await apost(nodes, query_bundle=bundle)
                if apost is not None
                else p.postprocess_nodes(nodes, query_bundle=bundle)
            )
        return list(nodes)

    def synthesize(
        self,
        query_bundle: Any,
        nodes: List[NodeWithScore],
        additional_source_nodes: Optional[Sequence[NodeWithScore]] = None,
    ) -> RESPONSE_TYPE:
        return self._response_synthesizer.synthesize(to_query_bundle(query_bundle), nodes, additional_source_nodes)

    async def asynthesize(
        self,
        query_bundle: Any,
        nodes: List[NodeWithScore],
        additional_source_nodes: Optional[Sequence[NodeWithScore]] = None,
    ) -> RESPONSE_TYPE:
        return await self._response_synthesizer.asynthesize(
            to_query_bundle(query_bundle), nodes, additional_source_nodes
        )

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        nodes = self.retrieve(query_bundle)
        return self._response_synthesizer.synthesize(query_bundle, nodes)

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        nodes = await self.aretrieve(query_bundle)
        return await self._response_synthesizer.asynthesize(query_bundle, nodes)
