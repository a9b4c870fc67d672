"""One turn of a chat engine, written once as a *plan* and run by a sync and an async driver.

An engine's :meth:`TurnChatEngine._plan` is a generator that yields the steps it needs answered —
:class:`Retrieve` (nodes for a query) and :class:`Predict` (one LLM completion of a prompt) — and returns
how the answer is made: :class:`Answer` (``llm.chat`` on fitted messages) or :class:`AnswerByQuery`
(a query engine answers a question).  :class:`TurnChatEngine` runs plans for ``chat``, ``stream_chat``,
``achat`` and ``astream_chat`` (as the response synthesizers run theirs), so no engine repeats its
logic for async or streaming.

Memory: ``chat_history`` given to a call replaces the memory first (all four engines; LlamaIndex's
``CondenseQuestionChatEngine`` uses it for that call only and then forgets it).  The user message and the
answer are added together once the answer is complete, so a failed or abandoned turn leaves the memory
as it was.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Dict, Generator, Iterator, List, Optional, Sequence, Union

from ragloom.base.response.schema import AsyncStreamingResponse, Response, StreamingResponse
from ragloom.chat_engine.types import AgentChatResponse, BaseChatEngine, StreamingAgentChatResponse, ToolOutput
from ragloom.llms.types import ChatMessage, ChatResponse, MessageRole
from ragloom.memory.types import BaseMemory
from ragloom.query_engine.base import BaseQueryEngine
from ragloom.retrievers.base import BaseRetriever
from ragloom.schema import NodeWithScore, QueryBundle

logger = logging.getLogger(__name__)

__all__ = ["Retrieve", "Predict", "Answer", "AnswerByQuery", "TurnChatEngine", "check_message"]


@dataclass
class Retrieve:
    """Step: ``retriever.retrieve(query)`` then each postprocessor; answered with ``list[NodeWithScore]``."""

    query: str
    retriever: BaseRetriever
    node_postprocessors: Sequence[Any] = ()


@dataclass
class Predict:
    """Step: ``llm.predict(prompt, **kwargs)``; answered with the text."""

    prompt: Any
    kwargs: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Answer:
    """Final step: the answer is ``llm.chat(messages)``."""

    messages: List[ChatMessage]
    sources: List[ToolOutput] = field(default_factory=list)
    source_nodes: List[NodeWithScore] = field(default_factory=list)


@dataclass
class AnswerByQuery:
    """Final step: the answer is ``query_engine.query(question)``."""

    question: str
    query_engine: BaseQueryEngine


Step = Union[Retrieve, Predict]
Final = Union[Answer, AnswerByQuery]
Plan = Generator[Step, Any, Final]


def check_message(message: Any) -> str:
    """``message`` if it is a non-blank ``str``.

    Raises:
        ValueError: anything else.
    """
    if not isinstance(message, str) or not message.strip():
        raise ValueError(f"message must be a non-empty str, got {message!r}")
    return message


def _query_source(question: str, response: Any, text: str) -> ToolOutput:
    return ToolOutput(content=text, tool_name="query_engine", raw_input={"query": question}, raw_output=response)


def _pieces(deltas: Iterator[str]) -> Iterator[ChatResponse]:
    text = ""
    for delta in deltas:
        text += delta
        yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text), delta=delta)


async def _apieces(deltas: AsyncIterator[str]) -> AsyncIterator[ChatResponse]:
    text = ""
    async for delta in deltas:
        text += delta
        yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text), delta=delta)


async def _aone(text: str) -> AsyncIterator[ChatResponse]:
    yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text), delta=text)


class TurnChatEngine(BaseChatEngine):
    """A chat engine whose turn is a plan (see the module docstring); subclasses implement :meth:`_plan`.

    Args:
        llm: the :class:`~ragloom.llms.base.LLM` that condenses and answers.
        memory: the conversation (a :class:`~ragloom.memory.BaseMemory`).
        verbose: print the standalone question of each turn (condensing engines).
    """

    def __init__(self, llm: Any, memory: BaseMemory, verbose: bool = False) -> None:
        if not isinstance(memory, BaseMemory):
            raise ValueError(f"memory must be a ragloom.memory.BaseMemory (e.g. ChatMemoryBuffer), got "
                             f"{type(memory).__name__}")
        self._llm = llm
        self._memory = memory
        self._verbose = bool(verbose)

    @abstractmethod
    def _plan(self, message: str) -> Plan:
        """The steps of one turn answering ``message`` (the memory holds the conversation before it)."""

    # -- state ---------------------------------------------------------------------------------
    @property
    def llm(self) -> Any:
        return self._llm

    @property
    def memory(self) -> BaseMemory:
        return self._memory

    @property
    def chat_history(self) -> List[ChatMessage]:
        """The whole conversation, oldest first (the memory's ``get_all()``)."""
        return self._memory.get_all()

    def reset(self) -> None:
        """Forget the conversation (the memory's ``reset()``)."""
        self._memory.reset()

    def _begin(self, message: Any, chat_history: Optional[Sequence[ChatMessage]]) -> str:
        check_message(message)
        if chat_history is not None:
            self._memory.set(list(chat_history))
        return message

    def _record(self, message: str, answer: str) -> None:
        self._memory.put(ChatMessage(role=MessageRole.USER, content=message))
        self._memory.put(ChatMessage(role=MessageRole.ASSISTANT, content=answer))

    def _note_question(self, question: str) -> None:
        logger.info("standalone question: %s", question)
        if self._verbose:
            print(f"Querying with: {question}")

    # -- steps -----------------------------------------------------------------------------------
    def _do(self, step: Step) -> Any:
        if isinstance(step, Retrieve):
            nodes = list(step.retriever.retrieve(step.query))
            bundle = QueryBundle(query_str=step.query)
            for post in step.node_postprocessors:
                nodes = list(post.postprocess_nodes(nodes, query_bundle=bundle))
            return nodes
        return self._llm.predict(step.prompt, **step.kwargs)

    async def _ado(self, step: Step) -> Any:
        if isinstance(step, Retrieve):
            nodes = list(await step.retriever.aretrieve(step.query))
            bundle = QueryBundle(query_str=step.query)
            for post in step.node_postprocessors:
                nodes = list(await post.apostprocess_nodes(nodes, query_bundle=bundle))
            return nodes
        return await self._llm.apredict(step.prompt, **step.kwargs)

    def _run(self, message: str) -> Final:
        plan = self._plan(message)
        try:
            step = next(plan)
            while True:
                step = plan.send(self._do(step))
        except StopIteration as done:
            return done.value

    async def _arun(self, message: str) -> Final:
        plan = self._plan(message)
        try:
            step = next(plan)
            while True:
                step = plan.send(await self._ado(step))
        except StopIteration as done:
            return done.value

    # -- drivers -----------------------------------------------------------------------------------
    def chat(self, message: str, chat_history: Optional[List[ChatMessage]] = None) -> AgentChatResponse:
        """Answer ``message`` (a non-blank ``str``); ``chat_history`` replaces the memory first.

        Raises:
            ValueError: a blank message; the message and prompts do not fit the LLM's window.
        """
        message = self._begin(message, chat_history)
        final = self._run(message)
        if isinstance(final, Answer):
            text = self._llm.chat(final.messages).message.content or ""
            result = AgentChatResponse(response=text, sources=final.sources, source_nodes=final.source_nodes)
        else:
            response = final.query_engine.query(final.question)
            text = _response_text(response)
            result = AgentChatResponse(response=text, sources=[_query_source(final.question, response, text)],
                                       source_nodes=list(response.source_nodes))
        self._record(message, result.response)
        return result

    def stream_chat(self, message: str, chat_history: Optional[List[ChatMessage]] = None) -> StreamingAgentChatResponse:
        """As :meth:`chat`, the answer generated as the result's ``response_gen`` is read; the turn is
        added to the memory when the stream ends.  The retrieval and condensing steps run now."""
        message = self._begin(message, chat_history)
        final = self._run(message)

        def end(answer: str) -> None:
            self._record(message, answer)

        if isinstance(final, Answer):
            return StreamingAgentChatResponse(chat_stream=self._llm.stream_chat(final.messages), sources=final.sources,
                                              source_nodes=final.source_nodes, on_stream_end=end)
        response = final.query_engine.query(final.question)
        deltas = response.response_gen if isinstance(response, StreamingResponse) else iter([_response_text(response)])
        return StreamingAgentChatResponse(chat_stream=_pieces(deltas),
                                          sources=[_query_source(final.question, response, "")],
                                          source_nodes=list(response.source_nodes), on_stream_end=end)

    async def achat(self, message: str, chat_history: Optional[List[ChatMessage]] = None) -> AgentChatResponse:
        """As :meth:`chat`, with the LLM's and the retriever's async methods."""
        message = self._begin(message, chat_history)
        final = await self._arun(message)
        if isinstance(final, Answer):
            text = (await self._llm.achat(final.messages)).message.content or ""
            result = AgentChatResponse(response=text, sources=final.sources, source_nodes=final.source_nodes)
        else:
            response = await final.query_engine.aquery(final.question)
            text = await _aresponse_text(response)
            result = AgentChatResponse(response=text, sources=[_query_source(final.question, response, text)],
                                       source_nodes=list(response.source_nodes))
        self._record(message, result.response)
        return result

    async def astream_chat(
        self, message: str, chat_history: Optional[List[ChatMessage]] = None
    ) -> StreamingAgentChatResponse:
        """As :meth:`stream_chat`, read with ``async for delta in r.async_response_gen()``."""
        message = self._begin(message, chat_history)
        final = await self._arun(message)

        def end(answer: str) -> None:
            self._record(message, answer)

        if isinstance(final, Answer):
            return StreamingAgentChatResponse(achat_stream=self._llm.astream_chat(final.messages),
                                              sources=final.sources, source_nodes=final.source_nodes,
                                              on_stream_end=end)
        response = await final.query_engine.aquery(final.question)
        stream: AsyncIterator[ChatResponse]
        if isinstance(response, AsyncStreamingResponse):
            stream = _apieces(response.async_response_gen())
        elif isinstance(response, StreamingResponse):
            return StreamingAgentChatResponse(chat_stream=_pieces(response.response_gen),
                                              sources=[_query_source(final.question, response, "")],
                                              source_nodes=list(response.source_nodes), on_stream_end=end)
        else:
            stream = _aone(_response_text(response))
        return StreamingAgentChatResponse(achat_stream=stream, sources=[_query_source(final.question, response, "")],
                                          source_nodes=list(response.source_nodes), on_stream_end=end)


def _response_text(response: Any) -> str:
    """The answer text of a query engine's ``Response`` or ``StreamingResponse`` (read to the end).

    Raises:
        ValueError: an ``AsyncStreamingResponse`` (only ``aquery`` gives one) or anything else.
    """
    if isinstance(response, StreamingResponse):
        return response.get_response().response or ""
    if isinstance(response, Response):
        return "" if response.response is None else str(response.response)
    raise ValueError(f"the query engine answered with a {type(response).__name__}; expected a Response or "
                     "StreamingResponse")


async def _aresponse_text(response: Any) -> str:
    if isinstance(response, AsyncStreamingResponse):
        return (await response.get_response()).response or ""
    return _response_text(response)
