"""Default prompt of :class:`~ragloom.question_gen.LLMQuestionGenerator` (ragloom's own wording;
LlamaIndex's variables ``tools_str`` and ``query_str``, so a LlamaIndex template drops in).

``tools_str`` is a JSON object ``{tool name: description}``; the answer asked for is a JSON list
of ``{"sub_question": ..., "tool_name": ...}`` objects.
"""

from __future__ import annotations

from ragloom.prompts.base import PromptTemplate

__all__ = ["DEFAULT_SUB_QUESTION_PROMPT_TMPL", "DEFAULT_SUB_QUESTION_PROMPT"]

DEFAULT_SUB_QUESTION_PROMPT_TMPL = (
    "You break a question into simpler questions, each answered by one of the tools below.\n"
    "Tools (name: what it can answer), as JSON:\n"
    "{tools_str}\n"
    "Question: {query_str}\n"
    "Write the fewest self-contained sub-questions that together answer the question; each must "
    "make sense on its own (name the thing it is about, never 'it' or 'they') and go to the one "
    "tool that can answer it. Write each sub-question in the language of the question.\n"
    "Reply with JSON only, no other text, in this form:\n"
    '[{{"sub_question": "<question>", "tool_name": "<a tool name from the list>"}}]\n'
)

DEFAULT_SUB_QUESTION_PROMPT = PromptTemplate(DEFAULT_SUB_QUESTION_PROMPT_TMPL, prompt_type="sub_question")
