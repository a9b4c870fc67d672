"""Chat engine types (LlamaIndex's ``llama_index.core.chat_engine.types``): :class:`ChatMode`,
:class:`BaseChatEngine`, :class:`AgentChatResponse`, :class:`StreamingAgentChatResponse`, :class:`ToolOutput`.

:class:`StreamingAgentChatResponse` differs from LlamaIndex's in how it runs: LlamaIndex fills a queue
from a background thread; here the answer is generated as :attr:`~StreamingAgentChatResponse.response_gen`
is read (no thread), and the turn is written to the engine's memory when the stream ends.  A stream that
is abandoned half-way (or fails) leaves the memory as it was.
"""

from __future__ import annotations

import re
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import Enum
from typing import AsyncIterator, Callable, Generator, Iterator, List, Optional, Sequence, TextIO

from ragloom.base.response.schema import AsyncStreamingResponse, Response, StreamingResponse
from ragloom.llms.types import ChatMessage, ChatResponse
from ragloom.schema import NodeWithScore
from ragloom.tools.types import ToolOutput

__all__ = ["ChatMode", "ToolOutput", "AgentChatResponse", "StreamingAgentChatResponse", "BaseChatEngine"]

_WORDS = re.compile(r"\S+\s*|\s+")


def _no_deltas() -> Generator[str, None, None]:
    yield from ()


class ChatMode(str, Enum):
    """How ``index.as_chat_engine(chat_mode=...)`` chats (LlamaIndex's values).

    - ``simple``: :class:`~ragloom.chat_engine.SimpleChatEngine`, the LLM alone, no retrieval.
    - ``context``: :class:`~ragloom.chat_engine.ContextChatEngine`, retrieve with the user's message,
      answer with the passages in the system message.
    - ``condense_question``: :class:`~ragloom.chat_engine.CondenseQuestionChatEngine`, rewrite the
      message as a standalone question, answer it with the index's query engine.
    - ``condense_plus_context``: :class:`~ragloom.chat_engine.CondensePlusContextChatEngine`, rewrite,
      retrieve with the rewritten question, answer with the passages and the conversation.
    - ``best``: in LlamaIndex an agent (OpenAI function calling or ReAct) with the query engine as a
      tool; ragloom has no agents and picks ``condense_plus_context``, which retrieves on every turn
      with a question that stands on its own.
    - ``react``, ``openai``: agents; not implemented (``ValueError`` from the factory).
    """

    SIMPLE = "simple"
    CONDENSE_QUESTION = "condense_question"
    CONTEXT = "context"
    CONDENSE_PLUS_CONTEXT = "condense_plus_context"
    REACT = "react"
    OPENAI = "openai"
    BEST = "best"


def _nodes_of(sources: Sequence[ToolOutput]) -> List[NodeWithScore]:
    out: List[NodeWithScore] = []
    for source in sources:
        raw = source.raw_output
        if isinstance(raw, (Response, StreamingResponse, AsyncStreamingResponse)):
            out.extend(raw.source_nodes)
        elif isinstance(raw, list):
            out.extend(n for n in raw if isinstance(n, NodeWithScore))
    return out


@dataclass
class AgentChatResponse:
    """The answer of one turn.

    Attributes:
        response: the answer text.
        sources: what the turn's steps produced (:class:`ToolOutput`).
        source_nodes: the retrieved nodes the answer was written from (filled from ``sources`` when
            not given, as LlamaIndex).
        is_dummy_stream: allow :attr:`response_gen` on a finished answer (yields it word by word).
    """

    response: str = ""
    sources: List[ToolOutput] = field(default_factory=list)
    source_nodes: List[NodeWithScore] = field(default_factory=list)
    is_dummy_stream: bool = False

    def __post_init__(self) -> None:
        if self.sources and not self.source_nodes:
            self.source_nodes = _nodes_of(self.sources)

    def __str__(self) -> str:
        return self.response

    @property
    def response_gen(self) -> Iterator[str]:
        """The answer in pieces (words with their trailing space), only with ``is_dummy_stream``.

        Raises:
            ValueError: ``is_dummy_stream`` is false.
        """
        if not self.is_dummy_stream:
            raise ValueError("response_gen needs a streaming response: use stream_chat(), or set is_dummy_stream=True")
        return iter(_WORDS.findall(self.response))


@dataclass
class StreamingAgentChatResponse:
    """A turn whose answer arrives piece by piece.

    Read it once, by any of: iterating :attr:`response_gen` (text deltas), ``async for`` over
    :meth:`async_response_gen`, :meth:`print_response_stream`, or ``str()`` (which reads to the end).
    When the stream ends, :attr:`response` holds the whole answer (stripped, as LlamaIndex) and the
    engine's memory holds the turn.

    Attributes:
        response: the whole answer, once the stream has ended ("" before).
        sources, source_nodes: as :class:`AgentChatResponse`; known before the first delta.
        chat_stream: the LLM's stream (``ChatResponse`` items with ``delta``), for sync reading.
        achat_stream: the same as an async iterator (from ``astream_chat``).
        unformatted_response: the deltas so far, joined.
        is_done: whether the stream has ended.
        on_stream_end: called with :attr:`response` when the stream ends (the engine records the turn).
    """

    response: str = ""
    sources: List[ToolOutput] = field(default_factory=list)
    chat_stream: Optional[Iterator[ChatResponse]] = None
    achat_stream: Optional[AsyncIterator[ChatResponse]] = None
    source_nodes: List[NodeWithScore] = field(default_factory=list)
    unformatted_response: str = ""
    is_done: bool = False
    on_stream_end: Optional[Callable[[str], None]] = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.sources and not self.source_nodes:
            self.source_nodes = _nodes_of(self.sources)
        self._gen: Optional[Generator[str, None, None]] = None

    def _finish(self) -> None:
        self.response = self.unformatted_response.strip()
        self.is_done = True
        if self.on_stream_end is not None:
            self.on_stream_end(self.response)

    def _pump(self, stream: Iterator[ChatResponse]) -> Generator[str, None, None]:
        for piece in stream:
            if piece.delta:
                self.unformatted_response += piece.delta
                yield piece.delta
        self._finish()

    @property
    def response_gen(self) -> Generator[str, None, None]:
        """The answer's text deltas as they are generated (the same generator on every access; empty
        once the stream has ended).

        Raises:
            ValueError: this response streams asynchronously (from ``astream_chat``): use
                :meth:`async_response_gen`.
        """
        if self._gen is None:
            if self.is_done:
                return _no_deltas()
            if self.chat_stream is None:
                raise ValueError(
                    "this response streams asynchronously (astream_chat): read it with "
                    "`async for delta in response.async_response_gen()`"
                )
            self._gen = self._pump(self.chat_stream)
        return self._gen

    async def async_response_gen(self) -> AsyncIterator[str]:
        """The answer's text deltas, for ``async for`` (also works on a sync stream)."""
        if self.achat_stream is None:
            for delta in self.response_gen:
                yield delta
            return
        if self.is_done:
            return
        stream, self.achat_stream = self.achat_stream, None
        self.chat_stream = None
        self._gen = _no_deltas()  # the async stream is being read: the sync view is empty from now on
        async for piece in stream:
            if piece.delta:
                self.unformatted_response += piece.delta
                yield piece.delta
        self._finish()

    def print_response_stream(self, file: Optional[TextIO] = None) -> None:
        """Write the deltas to ``file`` (default ``sys.stdout``) as they arrive, then a newline (as
        ragloom's ``StreamingResponse``; LlamaIndex's prints no newline)."""
        out = file if file is not None else sys.stdout
        for delta in self.response_gen:
            out.write(delta)
            out.flush()
        out.write("\n")

    async def aprint_response_stream(self, file: Optional[TextIO] = None) -> None:
        """As :meth:`print_response_stream`, for an async stream."""
        out = file if file is not None else sys.stdout
        async for delta in self.async_response_gen():
            out.write(delta)
            out.flush()
        out.write("\n")

    def __str__(self) -> str:
        if not self.is_done and self.achat_stream is None:
            for _ in self.response_gen:
                pass
        return self.response


class BaseChatEngine(ABC):
    """A conversation over an LLM (and an index): ``chat`` / ``stream_chat`` and their async forms.

    ``chat_history`` (``list[ChatMessage]``) given to a call replaces the engine's memory before the
    turn.  The turn (user message, then the answer) is added to the memory when the answer is complete.
    """

    @abstractmethod
    def reset(self) -> None:
        """Forget the conversation."""

    @abstractmethod
    def chat(self, message: str, chat_history: Optional[List[ChatMessage]] = None) -> AgentChatResponse:
        """Answer ``message``."""

    @abstractmethod
    def stream_chat(self, message: str, chat_history: Optional[List[ChatMessage]] = None) -> StreamingAgentChatResponse:
        """Answer ``message`` as a stream."""

    @abstractmethod
    async def achat(self, message: str, chat_history: Optional[List[ChatMessage]] = None) -> AgentChatResponse:
        """As :meth:`chat`, with async LLM calls."""

    @abstractmethod
    async def astream_chat(
        self, message: str, chat_history: Optional[List[ChatMessage]] = None
    ) -> StreamingAgentChatResponse:
        """As :meth:`stream_chat`, with an async stream."""

    @property
    @abstractmethod
    def chat_history(self) -> List[ChatMessage]:
        """The whole conversation, oldest first."""

    def chat_repl(self) -> None:
        """A conversation on the terminal: read a line from standard input, print the answer, until
        ``exit`` or end of input (LlamaIndex's REPL; it stops at ``exit`` only)."""
        self._repl(streaming=False)

    def streaming_chat_repl(self) -> None:
        """As :meth:`chat_repl`, printing each answer as it is generated."""
        self._repl(streaming=True)

    def _repl(self, streaming: bool) -> None:
        print("===== Entering Chat REPL =====")
        print('Type "exit" (or end the input) to exit.\n')
        self.reset()
        while True:
            try:
                message = input("Human: ")
            except EOFError:
                print("")
                return
            if message.strip() == "exit":
                return
            if not message.strip():
                continue
            if streaming:
                print("Assistant: ", end="", flush=True)
                self.stream_chat(message).print_response_stream()
                print("")
            else:
                print(f"Assistant: {self.chat(message)}\n")
