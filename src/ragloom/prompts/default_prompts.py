"""Default prompts of the response synthesizers (ragloom's own wording).

Variables follow LlamaIndex, so a custom template written for LlamaIndex drops in:

- :data:`DEFAULT_TEXT_QA_PROMPT`: ``context_str``, ``query_str`` — answer from retrieved text.
- :data:`DEFAULT_REFINE_PROMPT`: ``query_str``, ``existing_answer``, ``context_msg`` — improve
  an answer with more text.
- :data:`DEFAULT_TREE_SUMMARIZE_PROMPT`: ``context_str``, ``query_str`` — combine several
  passages (or summaries of them) into one answer.
- :data:`DEFAULT_SIMPLE_INPUT_PROMPT`: ``query_str`` — the question alone (``generation`` mode).

Every prompt tells the model to answer in the language of the question: users ask in
Chinese about English documents and the other way round.
"""

from __future__ import annotations

from ragloom.prompts.base import PromptTemplate, PromptType

__all__ = [
    "DEFAULT_TEXT_QA_PROMPT_TMPL",
    "DEFAULT_TEXT_QA_PROMPT",
    "DEFAULT_REFINE_PROMPT_TMPL",
    "DEFAULT_REFINE_PROMPT",
    "DEFAULT_TREE_SUMMARIZE_TMPL",
    "DEFAULT_TREE_SUMMARIZE_PROMPT",
    "DEFAULT_SIMPLE_INPUT_TMPL",
    "DEFAULT_SIMPLE_INPUT_PROMPT",
]

DEFAULT_TEXT_QA_PROMPT_TMPL = (
    "Answer the question using only the passages between the lines of '='.\n"
    "====================\n"
    "{context_str}\n"
    "====================\n"
    "Rules: rely on the passages, not on what you knew before; if they do not contain the "
    "answer, say that they do not. Do not mention 'the passages' or 'the context' in your "
    "answer. Write the answer in the same language as the question.\n"
    "Question: {query_str}\n"
    "Answer: "
)
DEFAULT_TEXT_QA_PROMPT = PromptTemplate(DEFAULT_TEXT_QA_PROMPT_TMPL, prompt_type=PromptType.QUESTION_ANSWER)

DEFAULT_REFINE_PROMPT_TMPL = (
    "Question: {query_str}\n"
    "Draft answer so far: {existing_answer}\n"
    "Here is more text that may help, between the lines of '='.\n"
    "====================\n"
    "{context_msg}\n"
    "====================\n"
    "Improve the draft with this text: correct it, complete it, or keep it unchanged if the "
    "text adds nothing relevant. Reply with the final answer only, without mentioning the "
    "draft or the text, in the same language as the question.\n"
    "Final answer: "
)
DEFAULT_REFINE_PROMPT = PromptTemplate(DEFAULT_REFINE_PROMPT_TMPL, prompt_type=PromptType.REFINE)

DEFAULT_TREE_SUMMARIZE_TMPL = (
    "Below, between the lines of '=', are passages from one or more sources.\n"
    "====================\n"
    "{context_str}\n"
    "====================\n"
    "Using only these passages, not what you knew before, answer the question. Combine what "
    "the passages say into one coherent answer; if they do not contain the answer, say so. "
    "Write the answer in the same language as the question.\n"
    "Question: {query_str}\n"
    "Answer: "
)
DEFAULT_TREE_SUMMARIZE_PROMPT = PromptTemplate(DEFAULT_TREE_SUMMARIZE_TMPL, prompt_type=PromptType.SUMMARY)

DEFAULT_SIMPLE_INPUT_TMPL = "{query_str}"
DEFAULT_SIMPLE_INPUT_PROMPT = PromptTemplate(DEFAULT_SIMPLE_INPUT_TMPL, prompt_type=PromptType.SIMPLE_INPUT)
