"""``BaseMemory``: what a chat engine keeps of a conversation (LlamaIndex's ``llama_index.core.memory.types``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import List, Optional, Sequence

from ragloom.llms.types import ChatMessage

__all__ = ["BaseMemory"]


class BaseMemory(ABC):
    """The messages of one conversation, oldest first.

    Subclasses implement :meth:`get` (what the next prompt may hold), :meth:`get_all`,
    :meth:`put`, :meth:`set` and :meth:`reset`; the ``a*`` forms call them (memory is in-process,
    nothing to await).
    """

    @abstractmethod
    def get(self, input: Optional[str] = None, initial_token_count: int = 0) -> List[ChatMessage]:
        """The messages the next prompt should carry (a suffix of :meth:`get_all`); ``input`` is the
        message about to be sent (unused by the buffers here), ``initial_token_count`` the tokens the
        rest of the prompt already takes."""

    @abstractmethod
    def get_all(self) -> List[ChatMessage]:
        """Every message, oldest first (a new list)."""

    @abstractmethod
    def put(self, message: ChatMessage) -> None:
        """Append ``message``."""

    @abstractmethod
    def set(self, messages: Sequence[ChatMessage]) -> None:
        """Replace the whole conversation with ``messages``."""

    @abstractmethod
    def reset(self) -> None:
        """Forget every message."""

    def put_messages(self, messages: Sequence[ChatMessage]) -> None:
        """Append each of ``messages`` in order."""
        for message in messages:
            self.put(message)

    async def aget(self, input: Optional[str] = None, initial_token_count: int = 0) -> List[ChatMessage]:
        return self.get(input=input, initial_token_count=initial_token_count)

    async def aget_all(self) -> List[ChatMessage]:
        return self.get_all()

    async def aput(self, message: ChatMessage) -> None:
        self.put(message)

    async def aset(self, messages: Sequence[ChatMessage]) -> None:
        self.set(messages)

    async def areset(self) -> None:
        self.reset()
