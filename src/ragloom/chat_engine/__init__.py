"""Chat engines (LlamaIndex's ``llama_index.core.chat_engine``): a conversation over an LLM and an index.

- :class:`SimpleChatEngine`: the LLM alone.
- :class:`ContextChatEngine`: retrieve with each message, passages in the system message.
- :class:`CondenseQuestionChatEngine`: rewrite the message as a standalone question, ask a query engine.
- :class:`CondensePlusContextChatEngine`: rewrite, retrieve with the rewritten question, answer with the
  passages and the conversation (what ``index.as_chat_engine()`` gives by default).

Every prompt is fitted to the LLM's context window in the LLM's own tokenizer
(:mod:`ragloom.chat_engine.utils`); the memory is a :class:`~ragloom.memory.ChatMemoryBuffer` counted the
same way.  Build one from an index with ``index.as_chat_engine(chat_mode=..., llm=..., **kwargs)``
(:func:`~ragloom.chat_engine.factory.chat_engine_for`).
"""

from ragloom.chat_engine.condense_plus_context import CondensePlusContextChatEngine
from ragloom.chat_engine.condense_question import CondenseQuestionChatEngine
from ragloom.chat_engine.context import ContextChatEngine
from ragloom.chat_engine.simple import SimpleChatEngine
from ragloom.chat_engine.types import (
    AgentChatResponse,
    BaseChatEngine,
    ChatMode,
    StreamingAgentChatResponse,
    ToolOutput,
)

__all__ = [
    "SimpleChatEngine",
    "ContextChatEngine",
    "CondenseQuestionChatEngine",
    "CondensePlusContextChatEngine",
    "BaseChatEngine",
    "ChatMode",
    "AgentChatResponse",
    "StreamingAgentChatResponse",
    "ToolOutput",
]
