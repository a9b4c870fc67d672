"""``BaseSynthesizer``: turn a query and retrieved nodes into a :class:`~ragloom.base.response.Response`.

How a synthesizer is written
----------------------------
Each mode is one *plan*: a generator that yields batches of LLM calls (``list[LLMCall]``),
receives their answers (``list[str]``, same order), and finally returns either the answer
text or the last :class:`LLMCall` whose answer is the response.  Two drivers run every plan:
:meth:`BaseSynthesizer.get_response` (blocking) and :meth:`BaseSynthesizer.aget_response`
(``async``).  A batch marked ``parallel`` runs its calls concurrently (``LLM.apredict``, with
``asyncio.gather``) — also from the blocking driver, which then runs an event loop (in a worker
thread if the caller already has one running).  When streaming, only the final call streams;
every earlier call's answer is needed whole before the next prompt can be written.

Node text reaches the LLM as ``node.get_content(MetadataMode.LLM)`` (text with the metadata
the LLM may see).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Coroutine, Dict, Generator, Iterator, List, Optional, Sequence, Tuple, Union

from ragloom.base.response.schema import RESPONSE_TYPE, AsyncStreamingResponse, Response, StreamingResponse
from ragloom.callbacks.instrument import CallbackManagerMixin
from ragloom.callbacks.schema import CBEventType, EventPayload
from ragloom.prompts.base import check_vars, to_prompt
from ragloom.prompts.mixin import PromptMixin
from ragloom.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle

logger = logging.getLogger(__name__)

__all__ = ["BaseSynthesizer", "LLMCall", "llm_or_default", "run_async", "EMPTY_RESPONSE"]

#: answer given when there are no nodes (as LlamaIndex)
EMPTY_RESPONSE = "Empty Response"

_NO_LLM_MESSAGE = (
    "no LLM is configured, and this step needs one (to write an answer, or to build an index that an "
    "LLM writes). Options:\n"
    "  - pass one: llm=... (index.as_query_engine(llm=...), KeywordTableIndex(..., llm=...), "
    "get_response_synthesizer(llm=...));\n"
    "  - set a default once: `from ragloom import Settings; Settings.llm = ...` (an LLM or a "
    "specification string), or the environment variable RAGLOOM_LLM;\n"
    "  - any OpenAI-compatible server (vLLM, llama.cpp server, LM Studio, OpenAI): "
    "`from ragloom.llms import OpenAILike; OpenAILike(model=..., api_base=...)` "
    "or llm='openai_like:<model>@<api_base>' (pip install 'ragloom[remote]');\n"
    "  - Ollama: `from ragloom.llms import Ollama; Ollama(model=...)` or llm='ollama:<model>';\n"
    "  - the small offline toy model, to try the pipeline (its answers are not for use): llm='local' "
    "(pip install 'ragloom[llm]', see the README);\n"
    "  - no LLM at all: response_mode='no_text' (retrieval only) or index.as_retriever()."
)


def llm_or_default(llm: Any = None) -> Any:
    """``llm`` if given (a specification string goes through :func:`ragloom.llms.resolve_llm`),
    else ``Settings.llm``.

    Raises:
        ValueError: neither is set (the message lists the ways to configure one), or an
            unknown specification string.
    """
    if isinstance(llm, str):
        from ragloom.llms import resolve_llm

        return resolve_llm(llm)
    if llm is not None:
        return llm
    from ragloom.settings import Settings

    llm = Settings.llm
    if llm is None:
        raise ValueError(_NO_LLM_MESSAGE)
    return llm


def run_async(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` to completion from blocking code, also when an event loop is already running
    in this thread (then in a fresh loop on a worker thread, in a copy of this thread's context so
    callback events keep their parent and manager)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(contextvars.copy_context().run, asyncio.run, coro).result()


@dataclass
class LLMCall:
    """One LLM call of a plan: ``prompt.format(**kwargs)`` sent with ``LLM.predict``."""

    prompt: Any
    kwargs: Dict[str, Any] = field(default_factory=dict)
    parallel: bool = False  # set on every call of a batch that may run concurrently

    def text(self) -> str:
        return self.prompt.format(**self.kwargs)


Plan = Generator[List[LLMCall], List[str], Union[str, LLMCall]]


def _as_nodes_with_score(nodes: Sequence[Any]) -> List[NodeWithScore]:
    out: List[NodeWithScore] = []
    for i, n in enumerate(nodes):
        if isinstance(n, NodeWithScore):
            out.append(n)
        elif isinstance(n, BaseNode):
            out.append(NodeWithScore(node=n))
        else:
            raise ValueError(f"nodes[{i}] must be a NodeWithScore or a node, got {type(n).__name__}")
    return out


class BaseSynthesizer(CallbackManagerMixin, PromptMixin):
    """Base class of response synthesizers (LlamaIndex's ``BaseSynthesizer``).

    Args:
        llm: the model (an :class:`~ragloom.llms.LLM` or a :func:`ragloom.llms.resolve_llm`
            specification such as ``"openai_like:qwen2.5@http://127.0.0.1:8000/v1"``); default
            ``Settings.llm``.
        prompt_helper: token budgeting; default ``PromptHelper.from_llm(llm)`` (the model's
            context window, output budget and tokenizer).
        streaming: return :class:`~ragloom.base.response.StreamingResponse` (text deltas) instead
            of :class:`~ragloom.base.response.Response`.
        callback_manager: where its events go (default: inherited, see :mod:`ragloom.callbacks.base`):
            :meth:`synthesize` / :meth:`asynthesize` report one ``SYNTHESIZE`` event each (start
            ``QUERY_STR``, end ``RESPONSE``; a streaming response ends it when returned, its LLM
            event ends when the stream does), the LLM calls inside it report to the same manager
            unless the LLM has its own.  Subclasses get this by implementing ``_plan``.
        verbose: accepted for LlamaIndex compatibility; unused.

    Raises:
        ValueError: no ``llm`` and no ``Settings.llm`` (for modes that call an LLM);
            ``callback_manager`` not a ``CallbackManager``.
    """

    #: whether this mode calls an LLM at all
    _needs_llm = True
    #: the prompts this mode uses, for :meth:`get_prompts` / :meth:`update_prompts`:
    #: ``{name: (attribute, default prompt, variables the prompt must take)}``
    _prompt_specs: Dict[str, Tuple[str, Any, Tuple[str, ...]]] = {}

    def __init__(
        self,
        llm: Any = None,
        callback_manager: Any = None,
        prompt_helper: Any = None,
        streaming: bool = False,
        verbose: bool = False,
        **kwargs: Any,
    ) -> None:
        if kwargs:
            raise TypeError(f"{type(self).__name__} got unexpected arguments {sorted(kwargs)}")
        if self._needs_llm:
            self._llm = llm_or_default(llm)
        else:
            self._llm = llm_or_default(llm) if isinstance(llm, str) else llm
        self._prompt_helper = prompt_helper
        self._streaming = bool(streaming)
        self._verbose = verbose
        self.callback_manager = callback_manager

    # -- prompts -----------------------------------------------------------------------
    def _set_prompt(self, name: str, template: Any) -> None:
        """Store ``template`` (``None``: the default; a ``str`` is wrapped) as the prompt ``name``
        of :attr:`_prompt_specs`.

        Raises:
            ValueError: ``template`` is not a prompt or string, or lacks a required variable
                (the message names ``name``).
        """
        attr, default, required = self._prompt_specs[name]
        prompt = default if template is None else to_prompt(template, name)
        check_vars(prompt, list(required), name)
        setattr(self, attr, prompt)

    def _get_prompts(self) -> dict:
        return {name: getattr(self, attr) for name, (attr, _, _) in self._prompt_specs.items()}

    def _update_prompts(self, prompts: dict) -> None:
        for name in self._prompt_specs:
            if name in prompts:
                self._set_prompt(name, prompts[name])

    # -- properties --------------------------------------------------------------------
    @property
    def llm(self) -> Any:
        return self._llm

    @property
    def prompt_helper(self) -> Any:
        """The :class:`~ragloom.indices.prompt_helper.PromptHelper` (made from the LLM on first use)."""
        if self._prompt_helper is None:
            from ragloom.indices.prompt_helper import PromptHelper

            if self._llm is None:
                self._prompt_helper = PromptHelper()
            else:
                self._prompt_helper = PromptHelper.from_llm(self._llm)
        return self._prompt_helper

    @property
    def streaming(self) -> bool:
        return self._streaming

    # -- plans ---------------------------------------------------------------------------
    @abstractmethod
    def _plan(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> Plan:
        """The generator described in the module docstring."""

    def _run_batch(self, calls: List[LLMCall]) -> List[str]:
        if len(calls) > 1 and all(c.parallel for c in calls):
            return run_async(self._arun_batch(calls))
        return [self._llm.predict(c.prompt, **c.kwargs) for c in calls]

    async def _arun_batch(self, calls: List[LLMCall]) -> List[str]:
        if len(calls) > 1 and all(c.parallel for c in calls):
            return list(await asyncio.gather(*(self._llm.apredict(c.prompt, **c.kwargs) for c in calls)))
        return [await self._llm.apredict(c.prompt, **c.kwargs) for c in calls]

    def get_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> Union[str, Iterator[str]]:
        """The answer to ``query_str`` from ``text_chunks``: a ``str``, or a generator of deltas when streaming."""
        plan = self._plan(query_str, list(text_chunks), **kwargs)
        try:
            calls = next(plan)
            while True:
                calls = plan.send(self._run_batch(calls))
        except StopIteration as stop:
            result = stop.value
        if isinstance(result, LLMCall):
            if self._streaming:
                return self._llm.stream(result.prompt, **result.kwargs)
            return self._llm.predict(result.prompt, **result.kwargs)
        return iter([result]) if self._streaming else result

    async def aget_response(
        self, query_str: str, text_chunks: Sequence[str], **kwargs: Any
    ) -> Union[str, AsyncIterator[str]]:
        """As :meth:`get_response`, with ``LLM.apredict``; an async generator of deltas when streaming."""
        plan = self._plan(query_str, list(text_chunks), **kwargs)
        try:
            calls = next(plan)
            while True:
                calls = plan.send(await self._arun_batch(calls))
        except StopIteration as stop:
            result = stop.value
        if isinstance(result, LLMCall):
            if self._streaming:
                return _astream(self._llm, result)
            return await self._llm.apredict(result.prompt, **result.kwargs)
        if self._streaming:
            return _aiter_one(result)
        return result

    # -- public ------------------------------------------------------------------------------
    def _prepare(self, query: Any, nodes: Sequence[Any], additional_source_nodes: Optional[Sequence[Any]]) -> tuple:
        if isinstance(query, QueryBundle):
            query_str = query.query_str
        elif isinstance(query, str):
            query_str = query
        else:
            raise ValueError(f"query must be a str or QueryBundle, got {type(query).__name__}")
        scored = _as_nodes_with_score(nodes)
        sources = scored + _as_nodes_with_score(additional_source_nodes or [])
        chunks = [n.node.get_content(metadata_mode=MetadataMode.LLM) for n in scored]
        return query_str, scored, sources, chunks

    @staticmethod
    def _metadata(sources: List[NodeWithScore]) -> Dict[str, Any]:
        return {n.node.node_id: n.node.metadata for n in sources}

    def _wrap(self, answer: Any, sources: List[NodeWithScore]) -> RESPONSE_TYPE:
        meta = self._metadata(sources)
        if isinstance(answer, str):
            return Response(answer, source_nodes=sources, metadata=meta)
        if hasattr(answer, "__anext__"):
            return AsyncStreamingResponse(answer, source_nodes=sources, metadata=meta)
        return StreamingResponse(answer, source_nodes=sources, metadata=meta)

    def synthesize(
        self,
        query: Union[str, QueryBundle],
        nodes: Sequence[Union[NodeWithScore, BaseNode]],
        additional_source_nodes: Optional[Sequence[NodeWithScore]] = None,
        **response_kwargs: Any,
    ) -> RESPONSE_TYPE:
        """Answer ``query`` from ``nodes`` (``list[NodeWithScore]``; bare nodes are wrapped).

        Returns :class:`~ragloom.base.response.Response` (or ``StreamingResponse`` when
        streaming) whose ``source_nodes`` are ``nodes`` followed by ``additional_source_nodes``.
        With no nodes the answer is ``"Empty Response"`` and no LLM is called.

        Raises:
            ValueError: ``query`` or a node has the wrong type; the prompt alone exceeds the
                context window.
        """
        query_str, scored, sources, chunks = self._prepare(query, nodes, additional_source_nodes)
        cm = self.callback_manager
        if not cm.handlers:
            return self._synthesize(query_str, scored, sources, chunks, response_kwargs)
        with cm.event(CBEventType.SYNTHESIZE, payload={EventPayload.QUERY_STR: query_str}) as event:
            response = self._synthesize(query_str, scored, sources, chunks, response_kwargs)
            event.on_end(payload={EventPayload.RESPONSE: response})
        return response

    def _synthesize(self, query_str: str, scored: List[NodeWithScore], sources: List[NodeWithScore],
                    chunks: List[str], response_kwargs: Dict[str, Any]) -> RESPONSE_TYPE:
        if not scored:
            answer: Any = iter([EMPTY_RESPONSE]) if self._streaming else EMPTY_RESPONSE
            return self._wrap(answer, sources)
        return self._wrap(self.get_response(query_str, chunks, **response_kwargs), sources)

    async def asynthesize(
        self,
        query: Union[str, QueryBundle],
        nodes: Sequence[Union[NodeWithScore, BaseNode]],
        additional_source_nodes: Optional[Sequence[NodeWithScore]] = None,
        **response_kwargs: Any,
    ) -> RESPONSE_TYPE:
        """As :meth:`synthesize`, with async LLM calls; streaming gives an ``AsyncStreamingResponse``."""
        query_str, scored, sources, chunks = self._prepare(query, nodes, additional_source_nodes)
        cm = self.callback_manager
        if not cm.handlers:
            return await self._asynthesize(query_str, scored, sources, chunks, response_kwargs)
        with cm.event(CBEventType.SYNTHESIZE, payload={EventPayload.QUERY_STR: query_str}) as event:
            response = await self._asynthesize(query_str, scored, sources, chunks, response_kwargs)
            event.on_end(payload={EventPayload.RESPONSE: response})
        return response

    async def _asynthesize(self, query_str: str, scored: List[NodeWithScore], sources: List[NodeWithScore],
                           chunks: List[str], response_kwargs: Dict[str, Any]) -> RESPONSE_TYPE:
        if not scored:
            answer: Any = _aiter_one(EMPTY_RESPONSE) if self._streaming else EMPTY_RESPONSE
            return self._wrap(answer, sources)
        return self._wrap(await self.aget_response(query_str, chunks, **response_kwargs), sources)


async def _aiter_one(text: str) -> AsyncIterator[str]:
    yield text


def _astream(llm: Any, call: LLMCall) -> AsyncIterator[str]:
    """Text deltas of ``call`` from the LLM's async streaming methods (as ``LLM.stream`` does it).

    The stream is requested now (inside the caller's SYNTHESIZE event, so its LLM event gets that
    parent and manager) and read when the result is iterated."""
    astream = getattr(llm, "astream", None)
    if astream is not None:
        return astream(call.prompt, **call.kwargs)
    text = call.text()
    if llm.metadata.is_chat_model:
        return _adeltas(llm.astream_chat(llm._messages_for(text)))
    if llm.system_prompt:
        text = f"{llm.system_prompt}\n\n{text}"
    return _adeltas(llm.astream_complete(text))


async def _adeltas(pieces: Any) -> AsyncIterator[str]:
    async for piece in pieces:
        if piece.delta:
            yield piece.delta
