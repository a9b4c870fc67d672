"""Default prompts of the LLM selectors (ragloom's own wording; LlamaIndex's variables, so a
template written for LlamaIndex's selectors drops in).

- :data:`DEFAULT_SINGLE_SELECT_PROMPT_TMPL`: ``num_choices``, ``context_list`` (the numbered
  descriptions), ``query_str`` — the one best choice.
- :data:`DEFAULT_MULTI_SELECT_PROMPT_TMPL`: the same plus ``max_outputs`` — up to that many
  choices, best first.

Both ask for JSON: ``[{"choice": <1-based number>, "reason": "..."}]``; see
:func:`ragloom.selectors.llm_selectors.parse_selections` for what else is read.
"""

from __future__ import annotations

from ragloom.prompts.base import PromptTemplate

__all__ = [
    "DEFAULT_SINGLE_SELECT_PROMPT_TMPL",
    "DEFAULT_MULTI_SELECT_PROMPT_TMPL",
    "DEFAULT_SINGLE_SELECT_PROMPT",
    "DEFAULT_MULTI_SELECT_PROMPT",
]

_ANSWER_FORMAT = (
    "Reply with JSON only, no other text, in this form:\n"
    '[{{"choice": <the option\'s number>, "reason": "<one short sentence>"}}]\n'
)

DEFAULT_SINGLE_SELECT_PROMPT_TMPL = (
    "Each of the {num_choices} numbered options below, (1) to ({num_choices}), describes a source "
    "of answers.\n"
    "====================\n"
    "{context_list}\n"
    "====================\n"
    "Question: {query_str}\n"
    "Pick the ONE option whose source is best placed to answer the question. " + _ANSWER_FORMAT
)

DEFAULT_MULTI_SELECT_PROMPT_TMPL = (
    "Each of the {num_choices} numbered options below, (1) to ({num_choices}), describes a source "
    "of answers.\n"
    "====================\n"
    "{context_list}\n"
    "====================\n"
    "Question: {query_str}\n"
    "Pick every option whose source helps answer the question, at most {max_outputs}, the most "
    "useful first; one list item per option. " + _ANSWER_FORMAT
)

DEFAULT_SINGLE_SELECT_PROMPT = PromptTemplate(DEFAULT_SINGLE_SELECT_PROMPT_TMPL, prompt_type="single_select")
DEFAULT_MULTI_SELECT_PROMPT = PromptTemplate(DEFAULT_MULTI_SELECT_PROMPT_TMPL, prompt_type="multi_select")
