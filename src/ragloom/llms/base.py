"""The ``LLM`` protocol: ``complete`` / ``chat``, their streaming and async variants.

A provider implements :meth:`LLM.complete` and :meth:`LLM.chat` (and, when it can stream,
:meth:`LLM.stream_complete` / :meth:`LLM.stream_chat`); everything else has a working default:
the async methods run the sync ones in a worker thread, a non-streaming provider streams its
whole answer as one piece, and a chat-only (or completion-only) model gets the other entry
point by adapting messages (:func:`messages_to_prompt`). Token counting for prompt packing
goes through :meth:`LLM.count_tokens`, which uses :meth:`LLM.get_tokenizer` when the
provider knows its tokenizer and tiktoken ``cl100k_base`` otherwise.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from typing import Any, AsyncIterator, Iterator, List, Optional, Sequence

from ragloom.llms.types import ChatMessage, ChatResponse, CompletionResponse, LLMMetadata, MessageRole


def messages_to_prompt(messages: Sequence[ChatMessage]) -> str:
    """Render chat messages as one completion prompt (``"role: content"`` lines, then ``"assistant: "``)."""
    lines = [f"{m.role.value}: {m.content}" for m in messages]
    lines.append(f"{MessageRole.ASSISTANT.value}: ")
    return "\n".join(lines)


class LLM(ABC):
    """Base class of language models used by the response synthesizers and query engines.

    Subclasses implement :attr:`metadata`, :meth:`complete` and :meth:`chat`; override
    :meth:`stream_complete` / :meth:`stream_chat` for real streaming and the ``a*`` methods for
    native async I/O.
    """

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
        if self.metadata.is_chat_model:
            return self.chat(self._messages_for(text)).message.content or ""
        if self.system_prompt:
            text = f"{self.system_prompt}\n\n{text}"
        return self.complete(text).text

    def stream(self, prompt: Any, **prompt_args: Any) -> Iterator[str]:
        """Like :meth:`predict`, yielding text deltas as they arrive."""
        text = prompt.format(**prompt_args) if prompt_args or not isinstance(prompt, str) else prompt
        if self.metadata.is_chat_model:
            for piece in self.stream_chat(self._messages_for(text)):
                if piece.delta:
                    yield piece.delta
            return
        if self.system_prompt:
            text = f"{self.system_prompt}\n\n{text}"
        for piece in self.stream_complete(text):
            if piece.delta:
                yield piece.delta

    async def apredict(self, prompt: Any, **prompt_args: Any) -> str:
        return await asyncio.to_thread(self.predict, prompt, **prompt_args)

    # tokens -------------------------------------------------------------------------
    def get_tokenizer(self) -> Any:
        """The :class:`~ragloom.tokenizers.Tokenizer` prompts are measured in (default: ``cl100k_base``)."""
        from ragloom.tokenizers import get_tokenizer

        return get_tokenizer("cl100k_base")

    def count_tokens(self, text: str) -> int:
        """Number of tokens of ``text`` in :meth:`get_tokenizer`."""
        return self.get_tokenizer().count(text)


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
    """

    def __init__(self, max_tokens: Optional[int] = None, context_window: int = 3900) -> None:
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1 or None, got {max_tokens!r}")
        self.max_tokens = max_tokens
        self._metadata = LLMMetadata(context_window=context_window, num_output=max_tokens or 256, model_name="mock")

    @property
    def metadata(self) -> LLMMetadata:
        return self._metadata

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        text = prompt if self.max_tokens is None else " ".join(prompt.split()[: self.max_tokens])
        return CompletionResponse(text=text)
