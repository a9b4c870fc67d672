"""The base of HTTP LLM providers (:class:`~ragloom.llms.openai_like.OpenAILike`,
:class:`~ragloom.llms.ollama.Ollama`).

Requests go through :class:`~ragloom.transport.HTTPTransport` (the same layer as the remote
embedding providers): retries of 408/409/429/5xx, timeouts, connection errors and
malformed replies, with ``Retry-After`` honoured; a stream is retried only while it is
being opened.  Failures raise :class:`LLMProviderError`.

A subclass says which entry points its server has natively (:meth:`RemoteLLM._native_chat`,
:meth:`RemoteLLM._native_complete`) and builds/parses the requests; this class derives the
rest: ``complete`` on a chat-only model is a one-message chat, ``chat`` on a completion-only
model completes :func:`~ragloom.llms.base.messages_to_prompt`; streaming and async variants
use the native endpoints with ``httpx`` (async: an ``AsyncClient`` per call).
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from typing import Any, AsyncIterator, Dict, Iterator, List, Optional, Sequence, Tuple

from ragloom.llms.base import LLM, messages_to_prompt
from ragloom.llms.types import ChatMessage, ChatResponse, CompletionResponse, LLMMetadata, MessageRole
from ragloom.transport import HTTPTransport, ProviderError

__all__ = ["LLMProviderError", "RemoteLLM"]


class LLMProviderError(ProviderError):
    """An LLM request failed for good: connection refused, HTTP 401/404/other 4xx, 5xx or
    429 after the retries, a malformed reply, or a stream that broke.

    Attributes: ``provider``, ``model``, ``status`` (HTTP status or ``None``), ``reason``
    (short cause), ``attempts`` (requests made), ``url``.
    """

    request_kind = "LLM request"


#: a prepared request: (url, JSON payload)
Request = Tuple[str, Dict[str, Any]]


class RemoteLLM(LLM):
    """Common arguments and plumbing of the HTTP LLM providers.

    Args:
        model: the model name the server knows.
        context_window: tokens the model accepts, prompt and answer together (> 0).
        num_output: tokens reserved for the answer (> 0).
        is_chat_model: whether :meth:`chat` is the native entry point.
        headers: sent with every request (authentication lives here; never logged).
        timeout: seconds allowed for connecting and between two bytes of the reply (> 0).
        max_retries: retries after the first attempt (>= 0).
        system_prompt: prepended by :meth:`predict` / :meth:`stream` as a system message.
        tokenizer: what prompts are counted with (anything
            :func:`ragloom.tokenizers.get_tokenizer` takes); default ``cl100k_base``.
        retry_backoff_base / retry_backoff_max / max_retry_after / requests_per_minute:
            see :class:`~ragloom.transport.HTTPTransport`.

    Raises:
        ValueError: an argument out of range (the message names it).
    """

    provider_name = "remote"
    #: how streamed replies are framed: ``"sse"`` or ``"ndjson"``
    stream_framing = "sse"

    def __init__(
        self,
        model: str,
        context_window: int,
        num_output: int,
        is_chat_model: bool,
        headers: Optional[Dict[str, str]] = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        system_prompt: Optional[str] = None,
        tokenizer: Any = None,
        retry_backoff_base: float = 0.5,
        retry_backoff_max: float = 30.0,
        max_retry_after: float = 60.0,
        requests_per_minute: Optional[float] = None,
    ) -> None:
        if not model or not isinstance(model, str):
            raise ValueError(f"model must be a non-empty string, got {model!r}")
        if not isinstance(context_window, int) or context_window < 1:
            raise ValueError(f"context_window must be an int >= 1 (tokens), got {context_window!r}")
        if not isinstance(num_output, int) or num_output < 1:
            raise ValueError(f"num_output (max_tokens) must be an int >= 1 (tokens), got {num_output!r}")
        self.model = model
        self.context_window = context_window
        self.num_output = num_output
        self.is_chat_model = bool(is_chat_model)
        self.system_prompt = system_prompt
        self._tokenizer_spec = tokenizer
        self._tokenizer: Any = None
        self.transport = HTTPTransport(
            provider=self.provider_name,
            model=model,
            headers=headers,
            timeout=timeout,
            max_retries=max_retries,
            retry_backoff_base=retry_backoff_base,
            retry_backoff_max=retry_backoff_max,
            max_retry_after=max_retry_after,
            requests_per_minute=requests_per_minute,
            error_cls=LLMProviderError,
        )

    # -- what a provider implements ------------------------------------------------------
    def _native_chat(self) -> bool:
        return self.is_chat_model

    def _native_complete(self) -> bool:
        return not self.is_chat_model

    @abstractmethod
    def _chat_request(self, messages: Sequence[ChatMessage], stream: bool, **kwargs: Any) -> Request:
        """URL and payload of a chat request."""

    @abstractmethod
    def _complete_request(self, prompt: str, formatted: bool, stream: bool, **kwargs: Any) -> Request:
        """URL and payload of a completion request."""

    @abstractmethod
    def _parse_chat(self, data: Any) -> str:
        """Answer text of a chat reply; raises :class:`~ragloom.transport.BadResponse` when unusable."""

    @abstractmethod
    def _parse_complete(self, data: Any) -> str:
        """Answer text of a completion reply."""

    @abstractmethod
    def _chat_delta(self, event: Any) -> Optional[str]:
        """New text of one streamed chat event (``None``: the event carries none)."""

    @abstractmethod
    def _complete_delta(self, event: Any) -> Optional[str]:
        """New text of one streamed completion event."""

    #: ``False`` while :meth:`_resolve` still has work to do
    _resolved = True

    def _resolve(self) -> None:
        """Hook run before each request (e.g. ask the server for the context window); sets ``_resolved``."""

    # -- metadata, tokens, lifecycle -------------------------------------------------------
    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.context_window,
            num_output=self.num_output,
            is_chat_model=self.is_chat_model,
            model_name=self.model,
        )

    def get_tokenizer(self) -> Any:
        """The tokenizer given as ``tokenizer=``, else ``cl100k_base`` (an approximation for non-OpenAI models)."""
        if self._tokenizer_spec is None:
            return super().get_tokenizer()
        if self._tokenizer is None:
            from ragloom.tokenizers import get_tokenizer

            self._tokenizer = get_tokenizer(self._tokenizer_spec)
        return self._tokenizer

    def close(self) -> None:
        """Close the pooled HTTP connections (the model stays usable)."""
        self.transport.close()

    def __enter__(self) -> "RemoteLLM":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r})"

    # -- helpers ------------------------------------------------------------------------------
    @staticmethod
    def _as_user(prompt: str) -> List[ChatMessage]:
        return [ChatMessage(role=MessageRole.USER, content=prompt)]

    @staticmethod
    def _message_dicts(messages: Sequence[ChatMessage]) -> List[Dict[str, str]]:
        """``messages`` as the ``[{"role": ..., "content": ...}]`` list both OpenAI and Ollama take."""
        return [{"role": m.role.value, "content": m.content} for m in messages]

    @staticmethod
    def _chat_response(text: str, raw: Any = None, delta: Optional[str] = None) -> ChatResponse:
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text), delta=delta, raw=raw)

    def _post(self, request: Request, parse: Any) -> Tuple[str, Any]:
        url, payload = request
        return self.transport.post(url, payload, lambda data: (parse(data), data))

    async def _apost(self, request: Request, parse: Any) -> Tuple[str, Any]:
        url, payload = request
        async with self.transport.new_async_client() as client:
            return await self.transport.apost(client, url, payload, lambda data: (parse(data), data))

    def _stream(self, request: Request, delta: Any) -> Iterator[Tuple[str, Any]]:
        url, payload = request
        return self.transport.stream(url, payload, lambda ev: _piece(delta(ev), ev), framing=self.stream_framing)

    def _astream(self, request: Request, delta: Any) -> AsyncIterator[Tuple[str, Any]]:
        url, payload = request
        return self.transport.astream(url, payload, lambda ev: _piece(delta(ev), ev), framing=self.stream_framing)

    # -- sync ------------------------------------------------------------------------------
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """Complete ``prompt`` (a chat-only model gets it as one user message).

        ``kwargs`` are extra request fields for this call (e.g. ``max_tokens``, ``stop``).

        Raises:
            LLMProviderError: see the class.
        """
        self._resolve()
        if not self._native_complete():
            r = self.chat(self._as_user(prompt), **kwargs)
            return CompletionResponse(text=r.message.content, raw=r.raw)
        text, raw = self._post(self._complete_request(prompt, formatted, False, **kwargs), self._parse_complete)
        return CompletionResponse(text=text, raw=raw)

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """Answer ``messages`` (a completion-only model completes them rendered as one prompt).

        Raises:
            LLMProviderError: see the class.
        """
        self._resolve()
        if not self._native_chat():
            r = self.complete(messages_to_prompt(messages), formatted=True, **kwargs)
            return self._chat_response(r.text, r.raw)
        text, raw = self._post(self._chat_request(messages, False, **kwargs), self._parse_chat)
        return self._chat_response(text, raw)

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Iterator[CompletionResponse]:
        """Yield the completion as it is generated: ``delta`` is the new text, ``text`` all so far."""
        self._resolve()
        if not self._native_complete():
            for r in self.stream_chat(self._as_user(prompt), **kwargs):
                yield CompletionResponse(text=r.message.content, delta=r.delta, raw=r.raw)
            return
        text = ""
        for piece, raw in self._stream(self._complete_request(prompt, formatted, True, **kwargs), self._complete_delta):
            text += piece
            yield CompletionResponse(text=text, delta=piece, raw=raw)

    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Iterator[ChatResponse]:
        """Yield the chat answer as it is generated: ``delta`` is the new text, ``message.content`` all so far."""
        self._resolve()
        if not self._native_chat():
            for r in self.stream_complete(messages_to_prompt(messages), formatted=True, **kwargs):
                yield self._chat_response(r.text, r.raw, r.delta)
            return
        text = ""
        for piece, raw in self._stream(self._chat_request(messages, True, **kwargs), self._chat_delta):
            text += piece
            yield self._chat_response(text, raw, piece)

    # -- async ------------------------------------------------------------------------------
    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """Async :meth:`complete` (native ``httpx.AsyncClient`` I/O)."""
        await self._aresolve()
        if not self._native_complete():
            r = await self.achat(self._as_user(prompt), **kwargs)
            return CompletionResponse(text=r.message.content, raw=r.raw)
        text, raw = await self._apost(self._complete_request(prompt, formatted, False, **kwargs), self._parse_complete)
        return CompletionResponse(text=text, raw=raw)

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """Async :meth:`chat`."""
        await self._aresolve()
        if not self._native_chat():
            r = await self.acomplete(messages_to_prompt(messages), formatted=True, **kwargs)
            return self._chat_response(r.text, r.raw)
        text, raw = await self._apost(self._chat_request(messages, False, **kwargs), self._parse_chat)
        return self._chat_response(text, raw)

    async def astream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> AsyncIterator[CompletionResponse]:
        """Async :meth:`stream_complete`: pieces are yielded as they arrive."""
        await self._aresolve()
        if not self._native_complete():
            async for r in self.astream_chat(self._as_user(prompt), **kwargs):
                yield CompletionResponse(text=r.message.content, delta=r.delta, raw=r.raw)
            return
        text = ""
        async for piece, raw in self._astream(
            self._complete_request(prompt, formatted, True, **kwargs), self._complete_delta
        ):
            text += piece
            yield CompletionResponse(text=text, delta=piece, raw=raw)

    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> AsyncIterator[ChatResponse]:
        """Async :meth:`stream_chat`: pieces are yielded as they arrive."""
        await self._aresolve()
        if not self._native_chat():
            async for r in self.astream_complete(messages_to_prompt(messages), formatted=True, **kwargs):
                yield self._chat_response(r.text, r.raw, r.delta)
            return
        text = ""
        async for piece, raw in self._astream(self._chat_request(messages, True, **kwargs), self._chat_delta):
            text += piece
            yield self._chat_response(text, raw, piece)

    async def _aresolve(self) -> None:
        if not self._resolved:
            await asyncio.to_thread(self._resolve)


def _piece(delta: Optional[str], event: Any) -> Optional[Tuple[str, Any]]:
    return None if not delta else (delta, event)
