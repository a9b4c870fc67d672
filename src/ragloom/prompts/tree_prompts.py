"""Default prompts of :class:`~ragloom.indices.tree.TreeIndex` (ragloom's own wording; LlamaIndex's
variables, so a template written for LlamaIndex drops in).

- :data:`DEFAULT_SUMMARY_PROMPT`: ``context_str`` — summarise the texts of one tree node's children
  (building the tree).
- :data:`DEFAULT_INSERT_PROMPT`: ``num_chunks``, ``context_list`` (numbered summaries),
  ``new_chunk_text`` — which summary a new text belongs under (inserting into the tree).
  Answer: ``ANSWER: <number>``.
- :data:`DEFAULT_QUERY_PROMPT`: ``num_chunks``, ``context_list``, ``query_str`` — which summary leads
  to the answer (``TreeSelectLeafRetriever``, ``child_branch_factor=1``).  Answer: ``ANSWER: <number>``.
- :data:`DEFAULT_QUERY_PROMPT_MULTIPLE`: the same plus ``branching_factor`` — the best
  ``branching_factor`` summaries, best first.  Answer: ``ANSWER: <number>, <number>, ...``.

Summaries are asked for in the language of the text, so a Chinese corpus gets Chinese summaries.
"""

from __future__ import annotations

from ragloom.prompts.base import PromptTemplate, PromptType

__all__ = [
    "DEFAULT_SUMMARY_PROMPT_TMPL",
    "DEFAULT_SUMMARY_PROMPT",
    "DEFAULT_INSERT_PROMPT_TMPL",
    "DEFAULT_INSERT_PROMPT",
    "DEFAULT_QUERY_PROMPT_TMPL",
    "DEFAULT_QUERY_PROMPT",
    "DEFAULT_QUERY_PROMPT_MULTIPLE_TMPL",
    "DEFAULT_QUERY_PROMPT_MULTIPLE",
]

DEFAULT_SUMMARY_PROMPT_TMPL = (
    "Summarise the text between the lines of '='. Keep the names, numbers and facts someone "
    "would look for in it, leave out filler, and write in the language of the text.\n"
    "====================\n"
    "{context_str}\n"
    "====================\n"
    "Summary: "
)
DEFAULT_SUMMARY_PROMPT = PromptTemplate(DEFAULT_SUMMARY_PROMPT_TMPL, prompt_type=PromptType.SUMMARY)

DEFAULT_INSERT_PROMPT_TMPL = (
    "Below are {num_chunks} numbered summaries, from (1) to ({num_chunks}).\n"
    "====================\n"
    "{context_list}\n"
    "====================\n"
    "Here is a new passage:\n"
    "====================\n"
    "{new_chunk_text}\n"
    "====================\n"
    "Which summary is the passage closest in topic to, so that it belongs under it? Reply with "
    "the number of that summary, exactly in this form: ANSWER: <number>\n"
)
DEFAULT_INSERT_PROMPT = PromptTemplate(DEFAULT_INSERT_PROMPT_TMPL, prompt_type="tree_insert")

DEFAULT_QUERY_PROMPT_TMPL = (
    "Below are {num_chunks} numbered summaries, from (1) to ({num_chunks}).\n"
    "====================\n"
    "{context_list}\n"
    "====================\n"
    "Using only these summaries, not what you knew before, pick the one most likely to lead to "
    "the answer to this question: {query_str}\n"
    "Reply with its number, exactly in this form: ANSWER: <number>\n"
)
DEFAULT_QUERY_PROMPT = PromptTemplate(DEFAULT_QUERY_PROMPT_TMPL, prompt_type="tree_select")

DEFAULT_QUERY_PROMPT_MULTIPLE_TMPL = (
    "Below are {num_chunks} numbered summaries, from (1) to ({num_chunks}).\n"
    "====================\n"
    "{context_list}\n"
    "====================\n"
    "Using only these summaries, not what you knew before, pick at most {branching_factor} of "
    "them, most relevant first, that are most likely to lead to the answer to this question: "
    "{query_str}\n"
    "Reply with their numbers, exactly in this form: ANSWER: <number>, <number>\n"
)
DEFAULT_QUERY_PROMPT_MULTIPLE = PromptTemplate(DEFAULT_QUERY_PROMPT_MULTIPLE_TMPL, prompt_type="tree_select_multiple")
