"""The ``LLM`` protocol: ``complete`` / ``chat``, their streaming and async variants.

A provider implements :meth:`LLM.complete` and :meth:`LLM.chat` (and, when it can stream,
:meth:`LLM.stream_complete` / :meth:`LLM.stream_chat`); everything else has a working default:
the async methods run the sync ones in a worker thread, a non-streaming provider streams its
whole answer as one piece, and a chat-only (or completion-only) model gets the other entry
point by adapting messages (:func:`messages_to_prompt`). Token counting for prompt packing
goes through :meth:`LLM.count_tokens`, which uses :meth:`LLM.get_tokenizer` when the
provider knows its tokenizer and tiktoken ``cl100k_base`` otherwise.

Callbacks: every call of ``complete``, ``chat``, ``stream_complete``, ``stream_chat`` and their
``a*`` forms is one ``CBEventType.LLM`` event of :attr:`LLM.callback_manager`, whoever implements
the method: ``LLM.__init_subclass__`` wraps each of these methods a subclass defines (see
:func:`_instrumented`), so a provider needs no callback code.  A call one of them makes to another
on the same model (``complete`` of a chat model calling ``self.chat``, an override calling
``super()``) is part of the outer event, not a second one.  Without handlers the wrapper checks
``callback_manager.handlers`` and calls through.  ``predict`` / ``stream`` with a prompt template
also report a ``TEMPLATING`` event.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from typing import Any, AsyncIterator, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ragloom.callbacks.instrument import (
    CallbackManagerMixin,
    current_parent_id,
    enter_component,
    instrument_methods,
    is_busy,
    leave_component,
    traced_astream,
    traced_stream,
)
from ragloom.callbacks.schema import CBEventType, EventPayload
from ragloom.llms.types import ChatMessage, ChatResponse, CompletionResponse, LLMMetadata, MessageRole


def messages_to_prompt(messages: Sequence[ChatMessage]) -> str:
    """Render chat messages as one completion prompt (``"role: content"`` lines, then ``"assistant: "``)."""
    lines = [f"{m.role.value}: {m.content}" for m in messages]
    lines.append(f"{MessageRole.ASSISTANT.value}: ")
    return "\n".join(lines)


class LLM(CallbackManagerMixin, ABC):
    """Base class of language models used by the response synthesizers and query engines.

    Subclasses implement :attr:`metadata`, :meth:`complete` and :meth:`chat`; override
    :meth:`stream_complete` / :meth:`stream_chat` for real streaming and the ``a*`` methods for
    native async I/O.  Each call reports an LLM event to :attr:`callback_manager` (see the module
    docstring); ``llm.callback_manager = cm`` routes this model's events to ``cm``.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        instrument_methods(cls, _LLM_WRAPPERS)

    #: text prepended as a system message by :meth:`predict` when set
    system_prompt: Optional[str] = None
    #: True for models whose answers are only good for testing the pipeline (the offline toy)
    is_toy: bool = False
    #: what to tell the user about a toy model's answers (``None`` for real models)
    TOY_NOTICE: Optional[str] = None
    #: True when the model runs in this process (generation is then serialised by callers that
    #: share one instance between threads, such as ``ragloom serve``: it gains nothing from
    #: concurrency on the same cores)
    runs_locally: bool = False

    @property
    @abstractmethod
    def metadata(self) -> LLMMetadata:
        """Context window, output budget (tokens) and model name."""

    @abstractmethod
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """Complete ``prompt``; ``formatted=True`` means the prompt already has the model's template applied."""

    @abstractmethod
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """Answer a conversation."""

    # streaming ------------------------------------------------------------------
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Iterator[CompletionResponse]:
        """Yield the completion piece by piece (default: the whole answer as one piece)."""
        response = self.complete(prompt, formatted=formatted, **kwargs)
        yield CompletionResponse(text=response.text, delta=response.text, raw=response.raw)

    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Iterator[ChatResponse]:
        """Yield the chat answer piece by piece (default: the whole answer as one piece)."""
        response = self.chat(messages, **kwargs)
        yield ChatResponse(message=response.message, delta=response.message.content, raw=response.raw)

    # async ----------------------------------------------------------------------
    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return await asyncio.to_thread(self.complete, prompt, formatted, **kwargs)

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return await asyncio.to_thread(self.chat, messages, **kwargs)

    async def astream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> AsyncIterator[CompletionResponse]:
        pieces = await asyncio.to_thread(lambda: list(self.stream_complete(prompt, formatted, **kwargs)))
        for piece in pieces:
            yield piece

    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> AsyncIterator[ChatResponse]:
        pieces = await asyncio.to_thread(lambda: list(self.stream_chat(messages, **kwargs)))
        for piece in pieces:
            yield piece

    # prompts ----------------------------------------------------------------------
    def _messages_for(self, prompt: str) -> List[ChatMessage]:
        messages = []
        if self.system_prompt:
            messages.append(ChatMessage(role=MessageRole.SYSTEM, content=self.system_prompt))
        messages.append(ChatMessage(role=MessageRole.USER, content=prompt))
        return messages

    def predict(self, prompt: Any, **prompt_args: Any) -> str:
        """Format ``prompt`` (a template with ``.format(**kwargs)``, or a ``str``) and return the answer text.

        Chat models get ``[system_prompt?, user: prompt]``; completion models get the prompt.
        """
        text = prompt.format(**prompt_args) if prompt_args or not isinstance(prompt, str) else prompt
        self._log_template_data(prompt, prompt_args)
        if self.metadata.is_chat_model:
            return self.chat(self._messages_for(text)).message.content or ""
        if self.system_prompt:
            text = f"{self.system_prompt}\n\n{text}"
        return self.complete(text).text

    def stream(self, prompt: Any, **prompt_args: Any) -> Iterator[str]:
        """Like :meth:`predict`, yielding text deltas as they arrive.

        The prompt is formatted and the stream requested when this is called (so the LLM event
        belongs to the caller's event and manager); the model is asked when the first delta is.
        """
        text = prompt.format(**prompt_args) if prompt_args or not isinstance(prompt, str) else prompt
        self._log_template_data(prompt, prompt_args)
        if self.metadata.is_chat_model:
            return _deltas(self.stream_chat(self._messages_for(text)))
        if self.system_prompt:
            text = f"{self.system_prompt}\n\n{text}"
        return _deltas(self.stream_complete(text))

    async def apredict(self, prompt: Any, **prompt_args: Any) -> str:
        return await asyncio.to_thread(self.predict, prompt, **prompt_args)

    def _log_template_data(self, prompt: Any, prompt_args: Dict[str, Any]) -> None:
        """A ``TEMPLATING`` event (template text, variables, system prompt) when ``prompt`` is a
        prompt template and the manager has handlers."""
        if isinstance(prompt, str):
            return
        cm = self.callback_manager
        if not cm.handlers:
            return
        from ragloom.prompts.base import BasePromptTemplate

        if not isinstance(prompt, BasePromptTemplate):
            return
        payload = {
            EventPayload.TEMPLATE: prompt.get_template(),
            EventPayload.TEMPLATE_VARS: {**prompt.kwargs, **prompt_args},
            EventPayload.SYSTEM_PROMPT: self.system_prompt,
            EventPayload.QUERY_WRAPPER_PROMPT: None,
        }
        with cm.event(CBEventType.TEMPLATING, payload=payload):
            pass

    # tokens -------------------------------------------------------------------------
    def get_tokenizer(self) -> Any:
        """The :class:`~ragloom.tokenizers.Tokenizer` prompts are measured in (default: ``cl100k_base``)."""
        from ragloom.tokenizers import get_tokenizer

        return get_tokenizer("cl100k_base")

    def count_tokens(self, text: str) -> int:
        """Number of tokens of ``text`` in :meth:`get_tokenizer`."""
        return self.get_tokenizer().count(text)


def _deltas(pieces: Any) -> Iterator[str]:
    """The non-empty ``delta`` of each piece of a stream."""
    for piece in pieces:
        if piece.delta:
            yield piece.delta


# -- callbacks --------------------------------------------------------------------------------
def _call_input(chat: bool, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Tuple[Any, Dict[str, Any]]:
    """``(prompt or messages, the other keyword arguments)`` of an LLM call."""
    key = "messages" if chat else "prompt"
    first = args[0] if args else kwargs.get(key)
    extra = {k: v for k, v in kwargs.items() if k not in (key, "formatted")}
    return first, extra


def _model_tokenizer(llm: "LLM") -> Any:
    try:
        return llm.get_tokenizer()
    except Exception:  # a model without a usable tokenizer: the counting handler falls back
        return None


def _start_payload(llm: "LLM", chat: bool, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Dict[str, Any]:
    first, extra = _call_input(chat, args, kwargs)
    meta = llm.metadata
    serialized = {"class_name": type(llm).__name__, "model_name": meta.model_name,
                  "context_window": meta.context_window, "num_output": meta.num_output}
    return {
        EventPayload.MESSAGES if chat else EventPayload.PROMPT: first,
        EventPayload.ADDITIONAL_KWARGS: extra,
        EventPayload.SERIALIZED: serialized,
        EventPayload.MODEL_NAME: meta.model_name,
    }


def _end_payload(llm: "LLM", chat: bool, args: Tuple[Any, ...], kwargs: Dict[str, Any], out: Any) -> Dict[str, Any]:
    first, _ = _call_input(chat, args, kwargs)
    if chat:
        return {EventPayload.MESSAGES: first, EventPayload.RESPONSE: out, EventPayload.TOKENIZER: _model_tokenizer(llm)}
    return {EventPayload.PROMPT: first, EventPayload.COMPLETION: out, EventPayload.TOKENIZER: _model_tokenizer(llm)}


def _instrumented(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The wrapper maker of LLM method ``name``: one LLM event per call (see the module docstring).

    Sync calls and coroutines run inside ``callback_manager.event``; streams (sync or async) in an
    event that starts at the first piece and ends, with the last piece as the response, when the
    stream is exhausted or closed (:func:`~ragloom.callbacks.instrument.traced_stream`).
    """
    chat = "chat" in name
    if "stream" in name:
        tracer: Any = traced_astream if name.startswith("a") else traced_stream

        def make_stream(fn: Callable[..., Any]) -> Callable[..., Any]:
            def stream_wrapper(self: "LLM", *args: Any, **kwargs: Any) -> Any:
                cm = self.callback_manager
                if not cm.handlers or is_busy(self):
                    return fn(self, *args, **kwargs)
                return tracer(cm, self, CBEventType.LLM,
                              lambda: _start_payload(self, chat, args, kwargs),
                              lambda: fn(self, *args, **kwargs),
                              lambda last: _end_payload(self, chat, args, kwargs, last),
                              parent_id=current_parent_id())

            return stream_wrapper

        return make_stream
    if name.startswith("a"):

        def make_async(fn: Callable[..., Any]) -> Callable[..., Any]:
            async def async_wrapper(self: "LLM", *args: Any, **kwargs: Any) -> Any:
                cm = self.callback_manager
                token = enter_component(self) if cm.handlers else None
                if token is None:
                    return await fn(self, *args, **kwargs)
                try:
                    with cm.event(CBEventType.LLM, payload=_start_payload(self, chat, args, kwargs)) as event:
                        out = await fn(self, *args, **kwargs)
                        event.on_end(payload=_end_payload(self, chat, args, kwargs, out))
                    return out
                finally:
                    leave_component(token)

            return async_wrapper

        return make_async

    def make(fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: "LLM", *args: Any, **kwargs: Any) -> Any:
            cm = self.callback_manager
            token = enter_component(self) if cm.handlers else None
            if token is None:
                return fn(self, *args, **kwargs)
            try:
                with cm.event(CBEventType.LLM, payload=_start_payload(self, chat, args, kwargs)) as event:
                    out = fn(self, *args, **kwargs)
                    event.on_end(payload=_end_payload(self, chat, args, kwargs, out))
                return out
            finally:
                leave_component(token)

        return wrapper

    return make


_LLM_METHODS = ("complete", "chat", "stream_complete", "stream_chat",
                "acomplete", "achat", "astream_complete", "astream_chat")
_LLM_WRAPPERS = {name: _instrumented(name) for name in _LLM_METHODS}
# LLM's own defaults (streaming and async built on complete/chat) are public entry points too
instrument_methods(LLM, _LLM_WRAPPERS)


class CustomLLM(LLM):
    """Convenience base for completion-only models: implement ``metadata`` and ``complete``; ``chat`` is derived."""

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        response = self.complete(messages_to_prompt(messages), formatted=True, **kwargs)
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=response.text), raw=response.raw)

    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Iterator[ChatResponse]:
        text = ""
        for piece in self.stream_complete(messages_to_prompt(messages), formatted=True, **kwargs):
            text += piece.delta or ""
            yield ChatResponse(
                message=ChatMessage(role=MessageRole.ASSISTANT, content=text), delta=piece.delta, raw=piece.raw
            )


class MockLLM(CustomLLM):
    """An LLM that answers with (the start of) its prompt, for wiring tests and dry runs (as LlamaIndex's).

    Args:
        max_tokens: when set, the answer is the first ``max_tokens`` whitespace-separated words
            of the prompt; otherwise the whole prompt.
        context_window: reported context window (tokens).
        callback_manager: where its LLM events go (default: inherited, see :mod:`ragloom.callbacks.base`).
    """

    def __init__(self, max_tokens: Optional[int] = None, context_window: int = 3900,
                 callback_manager: Any = None) -> None:
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1 or None, got {max_tokens!r}")
        self.callback_manager = callback_manager
        self.max_tokens = max_tokens
        self._metadata = LLMMetadata(context_window=context_window, num_output=max_tokens or 256, model_name="mock")

    @property
    def metadata(self) -> LLMMetadata:
        return self._metadata

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        text = prompt if self.max_tokens is None else " ".join(prompt.split()[: self.max_tokens])
        return CompletionResponse(text=text)
