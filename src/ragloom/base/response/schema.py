"""``Response`` and ``StreamingResponse`` (LlamaIndex names and fields).

- :class:`Response`: the answer text ``response`` (``None`` if there is none), the
  ``source_nodes`` (``list[NodeWithScore]``) it was made from, and ``metadata``
  (``{node_id: node.metadata}`` of the source nodes, as LlamaIndex).
- :class:`StreamingResponse`: the same with the answer as a generator of text deltas
  (``response_gen``); iterate it, or call :meth:`StreamingResponse.get_response` /
  :meth:`StreamingResponse.print_response_stream`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Dict, Iterator, List, Optional, TextIO, Union

from ragloom.schema import NodeWithScore

__all__ = ["Response", "StreamingResponse", "AsyncStreamingResponse", "RESPONSE_TYPE"]


def _formatted_sources(source_nodes: List[NodeWithScore], length: int) -> str:
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise ValueError(f"length must be an int >= 1 (characters), got {length!r}")
    lines = []
    for sn in source_nodes:
        text = " ".join(sn.node.get_content().split())
        if len(text) > length:
            text = text[:length] + "..."
        lines.append(f"> Source (Node id: {sn.node.node_id}): {text}")
    return "\n\n".join(lines)


@dataclass
class Response:
    """A synthesized answer.

    Attributes:
        response: the answer text; ``None`` when there is none (``str()`` then gives ``"None"``).
        source_nodes: the retrieved nodes the answer was made from, in the order given.
        metadata: ``{node_id: metadata}`` of the source nodes (as LlamaIndex).
    """

    response: Optional[str]
    source_nodes: List[NodeWithScore] = field(default_factory=list)
    metadata: Optional[Dict[str, Any]] = None

    def __str__(self) -> str:
        return "None" if self.response is None else self.response

    def get_formatted_sources(self, length: int = 100) -> str:
        """One line per source node: id and the first ``length`` characters of its text."""
        return _formatted_sources(self.source_nodes, length)


@dataclass
class StreamingResponse:
    """An answer whose text arrives as a generator of deltas.

    The generator can be consumed once: by iterating :attr:`response_gen`, by
    :meth:`print_response_stream`, or by :meth:`get_response` / ``str()`` (which then keep
    the whole text in :attr:`response_txt`).
    """

    response_gen: Iterator[str]
    source_nodes: List[NodeWithScore] = field(default_factory=list)
    metadata: Optional[Dict[str, Any]] = None
    response_txt: Optional[str] = None

    def __post_init__(self) -> None:
        self._parts: List[str] = []
        self._done = self.response_txt is not None
        self.response_gen = self._record(iter(self.response_gen))

    def _record(self, source: Iterator[str]) -> Iterator[str]:
        """Pass the deltas through, keeping them, so the text is known however the stream was read."""
        if self._done:
            return
        for delta in source:
            self._parts.append(delta)
            yield delta
        self._done = True
        self.response_txt = "".join(self._parts)

    def _consume(self, out: Optional[TextIO] = None) -> str:
        if out is not None and self._parts:
            out.write("".join(self._parts))  # what was already read by someone else
        for delta in self.response_gen:
            if out is not None:
                out.write(delta)
                out.flush()
        if self.response_txt is None:
            self.response_txt = "".join(self._parts)
        return self.response_txt

    def __str__(self) -> str:
        return self._consume()

    def get_response(self) -> Response:
        """Consume the stream (if not done yet) and return it as a :class:`Response`."""
        return Response(self._consume(), source_nodes=self.source_nodes, metadata=self.metadata)

    def print_response_stream(self, file: Optional[TextIO] = None) -> None:
        """Write the deltas to ``file`` (default ``sys.stdout``) as they arrive, then a newline."""
        out = file if file is not None else sys.stdout
        if self._done:
            out.write(self.response_txt or "")
        else:
            self._consume(out)
        out.write("\n")

    def get_formatted_sources(self, length: int = 100) -> str:
        return _formatted_sources(self.source_nodes, length)


@dataclass
class AsyncStreamingResponse:
    """As :class:`StreamingResponse`, with an async generator (``async for delta in r.async_response_gen()``)."""

    response_gen: AsyncIterator[str]
    source_nodes: List[NodeWithScore] = field(default_factory=list)
    metadata: Optional[Dict[str, Any]] = None
    response_txt: Optional[str] = None

    async def async_response_gen(self) -> AsyncIterator[str]:
        if self.response_txt is not None:
            yield self.response_txt
            return
        parts: List[str] = []
        async for delta in self.response_gen:
            parts.append(delta)
            yield delta
        self.response_txt = "".join(parts)

    async def get_response(self) -> Response:
        if self.response_txt is None:
            async for _ in self.async_response_gen():
                pass
        return Response(self.response_txt, source_nodes=self.source_nodes, metadata=self.metadata)

    def __str__(self) -> str:
        return self.response_txt if self.response_txt is not None else ""


RESPONSE_TYPE = Union[Response, StreamingResponse, AsyncStreamingResponse]
