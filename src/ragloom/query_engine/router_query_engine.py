"""``RouterQueryEngine``: a selector picks the query engine(s) that fit a question (LlamaIndex's
class, arguments and behaviour).

One selection: that engine's response, as is.  Several: each selected engine answers, then a
:class:`~ragloom.response_synthesizers.TreeSummarize` combines the answers into one (its
``source_nodes`` are all the engines' source nodes, in selection order).  Either way the
response's ``metadata["selector_result"]`` holds the :class:`~ragloom.selectors.SelectorResult`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any, Dict, List, Optional, Sequence

import msgspec

from ragloom.base.response.schema import RESPONSE_TYPE, AsyncStreamingResponse, Response, StreamingResponse
from ragloom.query_engine.base import BaseQueryEngine
from ragloom.schema import NodeWithScore, QueryBundle
from ragloom.selectors.llm_selectors import LLMMultiSelector, LLMSingleSelector
from ragloom.selectors.types import BaseSelector, SelectorResult
from ragloom.tools.query_engine import QueryEngineTool

logger = logging.getLogger(__name__)

__all__ = ["RouterQueryEngine", "combine_responses", "acombine_responses"]


def _check_tools(tools: Sequence[Any], kind: type, name: str) -> List[Any]:
    tools = list(tools)
    if not tools:
        raise ValueError(f"{name} must hold at least one tool")
    for i, tool in enumerate(tools):
        if not isinstance(tool, kind):
            raise ValueError(f"{name}[{i}] must be a {kind.__name__}, got {type(tool).__name__}")
    return tools


def _texts_and_sources(responses: Sequence[Any]) -> tuple:
    texts: List[str] = []
    sources: List[NodeWithScore] = []
    for r in responses:
        if isinstance(r, StreamingResponse):
            r = r.get_response()
        texts.append(str(r))
        sources.extend(r.source_nodes)
    return texts, sources


def _wrap(summary: Any, sources: List[NodeWithScore]) -> RESPONSE_TYPE:
    if isinstance(summary, str):
        return Response(summary, source_nodes=sources)
    if isinstance(summary, AsyncIterator):
        return AsyncStreamingResponse(summary, source_nodes=sources)
    return StreamingResponse(summary, source_nodes=sources)


def combine_responses(summarizer: Any, responses: Sequence[Any], query_bundle: QueryBundle) -> RESPONSE_TYPE:
    """One response from several: ``summarizer.get_response(query, [answer texts])``, with every
    response's source nodes (a streaming response is read to its end first).

    Raises:
        ValueError: a response is an ``AsyncStreamingResponse`` (read it with :func:`acombine_responses`).
    """
    if any(isinstance(r, AsyncStreamingResponse) for r in responses):
        raise ValueError("an AsyncStreamingResponse cannot be combined in sync code; use aquery()")
    texts, sources = _texts_and_sources(responses)
    return _wrap(summarizer.get_response(query_bundle.query_str, texts), sources)


async def acombine_responses(summarizer: Any, responses: Sequence[Any], query_bundle: QueryBundle) -> RESPONSE_TYPE:
    """As :func:`combine_responses`, async (async streaming responses are read first)."""
    read = [await r.get_response() if isinstance(r, AsyncStreamingResponse) else r for r in responses]
    texts, sources = _texts_and_sources(read)
    return _wrap(await summarizer.aget_response(query_bundle.query_str, texts), sources)


class RouterQueryEngine(BaseQueryEngine):
    """Route each question to the query engine(s) whose description fits it.

    Args:
        selector: a :class:`~ragloom.selectors.BaseSelector` (``LLMSingleSelector``,
            ``LLMMultiSelector``, ``EmbeddingSingleSelector``, ...).
        query_engine_tools: the candidates, as :class:`~ragloom.tools.QueryEngineTool` s; the
            selector sees their descriptions, in this order.
        llm: the model of the default summarizer (default ``Settings.llm``).
        summarizer: combines the answers when several engines are selected; default
            ``TreeSummarize(llm=llm)`` with the default summary prompt.
        verbose: print which engine was selected and why.

    Deliberate difference from LlamaIndex: when no ``summarizer`` is given and no LLM is
    configured, the default summarizer is made at the first multi-selection instead of at
    construction, so a router with an :class:`~ragloom.selectors.EmbeddingSingleSelector` runs
    without any LLM.

    Raises:
        ValueError: no tools, or a tool that is not a ``QueryEngineTool``; ``selector`` is not a
            ``BaseSelector``; (at query time) several engines selected and no LLM for the summarizer.
    """

    def __init__(
        self,
        selector: BaseSelector,
        query_engine_tools: Sequence[QueryEngineTool],
        llm: Any = None,
        summarizer: Any = None,
        verbose: bool = False,
        callback_manager: Any = None,
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        if not isinstance(selector, BaseSelector):
            raise ValueError(f"selector must be a BaseSelector, got {type(selector).__name__}")
        tools = _check_tools(query_engine_tools, QueryEngineTool, "query_engine_tools")
        self._selector = selector
        self._query_engines = [t.query_engine for t in tools]
        self._metadatas = [t.metadata for t in tools]
        self._llm = llm
        self._summarizer = summarizer if summarizer is not None else self._default_summarizer(required=False)
        self._verbose = verbose

    @classmethod
    def from_defaults(
        cls,
        query_engine_tools: Sequence[QueryEngineTool],
        llm: Any = None,
        selector: Optional[BaseSelector] = None,
        summarizer: Any = None,
        select_multi: bool = False,
        **kwargs: Any,
    ) -> "RouterQueryEngine":
        """A router whose selector is ``selector``, else ``LLMMultiSelector.from_defaults(llm)``
        when ``select_multi``, else ``LLMSingleSelector.from_defaults(llm)``.

        Raises:
            ValueError: as the constructor; no LLM for the default selector.
        """
        if selector is None:
            selector = (LLMMultiSelector if select_multi else LLMSingleSelector).from_defaults(llm=llm)
        return cls(selector, query_engine_tools, llm=llm, summarizer=summarizer, **kwargs)

    def _default_summarizer(self, required: bool) -> Any:
        from ragloom.response_synthesizers import TreeSummarize
        from ragloom.settings import Settings

        if self._llm is None and Settings.llm is None and not required:
            return None
        return TreeSummarize(llm=self._llm)

    @property
    def summarizer(self) -> Any:
        """The combining synthesizer (made now if it was deferred for want of an LLM)."""
        if self._summarizer is None:
            self._summarizer = self._default_summarizer(required=True)
        return self._summarizer

    @property
    def selector(self) -> BaseSelector:
        return self._selector

    def _get_prompt_modules(self) -> Dict[str, Any]:
        modules: Dict[str, Any] = {"selector": self._selector}
        if self._summarizer is not None:
            modules["summarizer"] = self._summarizer
        return modules

    def _log(self, result: SelectorResult) -> None:
        for ind, reason in zip(result.inds, result.reasons, strict=True):
            line = f"Selecting query engine {ind} ({self._metadatas[ind].name}): {reason}"
            logger.info(line)
            if self._verbose:
                print(line)

    @staticmethod
    def _annotate(response: Any, result: SelectorResult) -> Any:
        response.metadata = dict(response.metadata or {})
        response.metadata["selector_result"] = result
        return response

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        result = self._selector.select(self._metadatas, query_bundle)
        self._log(result)
        # each engine gets its own copy: a vector retriever stores its query embedding on the bundle
        responses = [self._query_engines[i].query(msgspec.structs.replace(query_bundle)) for i in result.inds]
        if len(responses) == 1:
            return self._annotate(responses[0], result)
        return self._annotate(combine_responses(self.summarizer, responses, query_bundle), result)

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        result = await self._selector.aselect(self._metadatas, query_bundle)
        self._log(result)
        responses = await asyncio.gather(
            *(self._query_engines[i].aquery(msgspec.structs.replace(query_bundle)) for i in result.inds)
        )
        if len(responses) == 1:
            return self._annotate(responses[0], result)
        return self._annotate(await acombine_responses(self.summarizer, responses, query_bundle), result)
