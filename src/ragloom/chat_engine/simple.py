"""``SimpleChatEngine``: chat with the LLM alone, no retrieval (LlamaIndex's)."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from ragloom.chat_engine.turn import Answer, Plan, TurnChatEngine
from ragloom.chat_engine.utils import fit_history
from ragloom.llms.types import ChatMessage, MessageRole
from ragloom.memory import BaseMemory, ChatMemoryBuffer

__all__ = ["SimpleChatEngine", "prefix_from", "default_memory"]


def prefix_from(system_prompt: Optional[str], prefix_messages: Optional[Sequence[ChatMessage]]) -> List[ChatMessage]:
    """The messages that open every prompt: ``[system: system_prompt]`` or ``prefix_messages``.

    Raises:
        ValueError: both are given, or ``prefix_messages`` holds something other than ``ChatMessage``.
    """
    if system_prompt is not None and prefix_messages is not None:
        raise ValueError("pass system_prompt or prefix_messages, not both")
    if system_prompt is not None:
        if not isinstance(system_prompt, str):
            raise ValueError(f"system_prompt must be a str, got {type(system_prompt).__name__}")
        return [ChatMessage(role=MessageRole.SYSTEM, content=system_prompt)]
    out = list(prefix_messages or [])
    for i, m in enumerate(out):
        if not isinstance(m, ChatMessage):
            raise ValueError(f"prefix_messages[{i}] must be a ChatMessage, got {type(m).__name__}")
    return out


def default_memory(llm: Any, chat_history: Optional[Sequence[ChatMessage]], memory: Optional[BaseMemory]) -> BaseMemory:
    """``memory``, or a :class:`~ragloom.memory.ChatMemoryBuffer` for ``llm`` holding ``chat_history``
    (limit: 0.75 × the LLM's context window, counted in its tokenizer).

    Raises:
        ValueError: both ``memory`` and ``chat_history`` are given (LlamaIndex ignores ``chat_history`` then).
    """
    if memory is not None:
        if chat_history is not None:
            raise ValueError("pass chat_history or memory, not both (put the history in the memory)")
        return memory
    return ChatMemoryBuffer.from_defaults(chat_history=chat_history, llm=llm)


class SimpleChatEngine(TurnChatEngine):
    """Chat with the LLM alone: ``[*prefix_messages, *history, user]``, the history cut (oldest turns
    first) so the prompt and ``num_output`` fit the LLM's window, counted in its tokenizer.

    Args:
        llm: the :class:`~ragloom.llms.base.LLM`.
        memory: the conversation.
        prefix_messages: messages that open every prompt (a system message, examples).
    """

    def __init__(self, llm: Any, memory: BaseMemory, prefix_messages: Optional[Sequence[ChatMessage]] = None) -> None:
        super().__init__(llm, memory)
        self._prefix_messages = prefix_from(None, prefix_messages)

    @classmethod
    def from_defaults(
        cls,
        chat_history: Optional[Sequence[ChatMessage]] = None,
        memory: Optional[BaseMemory] = None,
        system_prompt: Optional[str] = None,
        prefix_messages: Optional[Sequence[ChatMessage]] = None,
        llm: Any = None,
    ) -> "SimpleChatEngine":
        """An engine over ``llm`` (an LLM or a :func:`~ragloom.llms.resolve_llm` spec; default
        ``Settings.llm``) with a :class:`~ragloom.memory.ChatMemoryBuffer` holding ``chat_history``
        unless ``memory`` is given.

        Raises:
            ValueError: no LLM is configured; both ``system_prompt`` and ``prefix_messages``; both
                ``memory`` and ``chat_history``.
        """
        from ragloom.response_synthesizers.base import llm_or_default

        llm = llm_or_default(llm)
        prefix = prefix_from(system_prompt, prefix_messages)
        return cls(llm=llm, memory=default_memory(llm, chat_history, memory), prefix_messages=prefix)

    def _plan(self, message: str) -> Plan:
        user = ChatMessage(role=MessageRole.USER, content=message)
        history = fit_history(self._llm, self._memory.get(input=message), [*self._prefix_messages, user])
        return Answer(messages=[*self._prefix_messages, *history, user])
        yield  # a plan without steps
