"""Message and response types of the :class:`~ragloom.llms.base.LLM` protocol (LlamaIndex names)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, Optional


class MessageRole(str, Enum):
    """Role of a :class:`ChatMessage`, as in the OpenAI chat format."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"


@dataclass
class ChatMessage:
    """One chat message: ``role`` and text ``content``."""

    role: MessageRole = MessageRole.USER
    content: str = ""
    additional_kwargs: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.role = MessageRole(self.role)
        if self.content is None:
            self.content = ""

    def __str__(self) -> str:
        return f"{self.role.value}: {self.content}"


@dataclass
class CompletionResponse:
    """Result of ``complete``; in a stream, ``text`` is the text so far and ``delta`` the new piece."""

    text: str
    delta: Optional[str] = None
    raw: Any = None
    additional_kwargs: Dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.text


@dataclass
class ChatResponse:
    """Result of ``chat``; in a stream, ``message.content`` is the text so far and ``delta`` the new piece."""

    message: ChatMessage
    delta: Optional[str] = None
    raw: Any = None
    additional_kwargs: Dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return str(self.message)


@dataclass
class LLMMetadata:
    """What synthesizers need to know about a model.

    Attributes:
        context_window: tokens the model accepts, prompt and output together.
        num_output: tokens reserved for the answer (``max_tokens``).
        is_chat_model: whether ``chat`` is the native entry point (``complete`` is then
            a one-message chat).
        model_name: for logs and ``Response.metadata``.
    """

    context_window: int = 3900
    num_output: int = 256
    is_chat_model: bool = False
    model_name: str = "unknown"
