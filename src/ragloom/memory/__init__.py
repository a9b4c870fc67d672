"""Chat memory (LlamaIndex's ``llama_index.core.memory``): :class:`ChatMemoryBuffer`, :class:`BaseMemory`."""

from ragloom.memory.chat_memory_buffer import (
    DEFAULT_TOKEN_LIMIT,
    DEFAULT_TOKEN_LIMIT_RATIO,
    MESSAGE_OVERHEAD_TOKENS,
    ChatMemoryBuffer,
    fit_to_token_limit,
    message_token_count,
    messages_token_count,
)
from ragloom.memory.types import BaseMemory

__all__ = [
    "BaseMemory",
    "ChatMemoryBuffer",
    "DEFAULT_TOKEN_LIMIT",
    "DEFAULT_TOKEN_LIMIT_RATIO",
    "MESSAGE_OVERHEAD_TOKENS",
    "fit_to_token_limit",
    "message_token_count",
    "messages_token_count",
]
