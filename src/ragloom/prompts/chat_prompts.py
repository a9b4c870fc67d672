"""Default prompts of the chat engines (ragloom's own wording).

Variables follow LlamaIndex, so a custom template written for LlamaIndex drops in:

- :data:`DEFAULT_CONTEXT_TEMPLATE`: ``context_str`` — the system message of
  :class:`~ragloom.chat_engine.ContextChatEngine` (``context_template``).
- :data:`DEFAULT_CONTEXT_PROMPT`: ``context_str`` — the system message of
  :class:`~ragloom.chat_engine.CondensePlusContextChatEngine` (``context_prompt``).
- :data:`DEFAULT_CONDENSE_QUESTION_PROMPT`: ``chat_history``, ``question`` — rewrite the new message as
  a standalone question (``condense_question_prompt`` of
  :class:`~ragloom.chat_engine.CondenseQuestionChatEngine`, ``condense_prompt`` of
  :class:`~ragloom.chat_engine.CondensePlusContextChatEngine`).

``chat_history`` is filled with one ``role: content`` line per message.  Every prompt asks for the
reply in the language of the user's message.
"""

from __future__ import annotations

from ragloom.prompts.base import PromptTemplate, PromptType

__all__ = [
    "DEFAULT_CONTEXT_TEMPLATE_TMPL",
    "DEFAULT_CONTEXT_TEMPLATE",
    "DEFAULT_CONTEXT_PROMPT_TMPL",
    "DEFAULT_CONTEXT_PROMPT",
    "DEFAULT_CONDENSE_QUESTION_TMPL",
    "DEFAULT_CONDENSE_QUESTION_PROMPT",
]

DEFAULT_CONTEXT_TEMPLATE_TMPL = (
    "Passages from the user's documents that may help with the conversation are between the lines of '-'.\n"
    "--------------------\n"
    "{context_str}\n"
    "--------------------\n"
    "Use them where they are relevant. If they do not cover what the user asks, say so instead of "
    "guessing. Reply in the language of the user's latest message.\n"
)
DEFAULT_CONTEXT_TEMPLATE = PromptTemplate(DEFAULT_CONTEXT_TEMPLATE_TMPL, prompt_type=PromptType.CUSTOM)

DEFAULT_CONTEXT_PROMPT_TMPL = (
    "You answer questions about the user's documents. The passages most relevant to the user's latest "
    "message are between the lines of '-'.\n"
    "--------------------\n"
    "{context_str}\n"
    "--------------------\n"
    "Answer from these passages and the conversation, with the specific details they give. If the "
    "passages do not contain the answer, say that you do not know. Reply in the language of the user's "
    "latest message.\n"
)
DEFAULT_CONTEXT_PROMPT = PromptTemplate(DEFAULT_CONTEXT_PROMPT_TMPL, prompt_type=PromptType.CUSTOM)

DEFAULT_CONDENSE_QUESTION_TMPL = (
    "Below is a conversation between a user and an assistant, then the user's new message.\n"
    "Rewrite the new message as one question that can be understood without the conversation: replace "
    "words such as 'it', 'they' or 'that one' by what they refer to in the conversation, keep the "
    "language of the new message, and do not answer it. Reply with the question only.\n"
    "\n"
    "Conversation:\n"
    "{chat_history}\n"
    "\n"
    "New message: {question}\n"
    "\n"
    "Standalone question: "
)
DEFAULT_CONDENSE_QUESTION_PROMPT = PromptTemplate(DEFAULT_CONDENSE_QUESTION_TMPL, prompt_type=PromptType.CUSTOM)
