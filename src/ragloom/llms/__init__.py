"""LLMs: the :class:`LLM` protocol, message types and providers."""

from ragloom.llms.base import LLM, CustomLLM, MockLLM, messages_to_prompt
from ragloom.llms.types import ChatMessage, ChatResponse, CompletionResponse, LLMMetadata, MessageRole

__all__ = [
    "LLM",
    "CustomLLM",
    "MockLLM",
    "messages_to_prompt",
    "ChatMessage",
    "ChatResponse",
    "CompletionResponse",
    "LLMMetadata",
    "MessageRole",
]
