"""Default prompts of the docstore-backed indexes (ragloom's own wording; LlamaIndex's variables).

- :data:`DEFAULT_CHOICE_SELECT_PROMPT`: ``context_str`` (numbered documents), ``query_str`` — the LLM
  names the relevant documents with a relevance score (``SummaryIndexLLMRetriever``,
  ``LLMRerank``).  Answer lines: ``Doc: <number>, Relevance: <1-10>``.
- :data:`DEFAULT_KEYWORD_EXTRACT_TEMPLATE`: ``text``, ``max_keywords`` — keywords of a chunk
  (``KeywordTableIndex``).  Answer: ``KEYWORDS: kw1, kw2, ...``.
- :data:`DEFAULT_QUERY_KEYWORD_EXTRACT_TEMPLATE`: ``question``, ``max_keywords`` — keywords of a
  question (``KeywordTableGPTRetriever``), same answer format.

The keyword prompts ask for keywords in the language of the text, so Chinese text gets Chinese
keywords that match Chinese questions.
"""

from __future__ import annotations

from ragloom.prompts.base import PromptTemplate

__all__ = [
    "DEFAULT_CHOICE_SELECT_PROMPT_TMPL",
    "DEFAULT_CHOICE_SELECT_PROMPT",
    "DEFAULT_KEYWORD_EXTRACT_TEMPLATE_TMPL",
    "DEFAULT_KEYWORD_EXTRACT_TEMPLATE",
    "DEFAULT_QUERY_KEYWORD_EXTRACT_TEMPLATE_TMPL",
    "DEFAULT_QUERY_KEYWORD_EXTRACT_TEMPLATE",
]

DEFAULT_CHOICE_SELECT_PROMPT_TMPL = (
    "Below are numbered documents, then a question. Pick the documents that help answer the "
    "question and rate how much each helps, from 1 (a little) to 10 (it answers it).\n"
    "Reply with one line per chosen document, most helpful first, exactly in this form:\n"
    "Doc: <document number>, Relevance: <1-10>\n"
    "Leave out documents that do not help; if none helps, reply with nothing.\n\n"
    "{context_str}\n"
    "Question: {query_str}\n"
    "Answer:\n"
)
DEFAULT_CHOICE_SELECT_PROMPT = PromptTemplate(DEFAULT_CHOICE_SELECT_PROMPT_TMPL, prompt_type="choice_select")

DEFAULT_KEYWORD_EXTRACT_TEMPLATE_TMPL = (
    "List up to {max_keywords} keywords of the text below: the names, terms and topics someone "
    "would search for to find it. Write them in the language of the text, and leave out common "
    "words such as 'the' or '的'.\n"
    "---------------------\n"
    "{text}\n"
    "---------------------\n"
    "Reply on one line: KEYWORDS: <keyword>, <keyword>, ...\n"
)
DEFAULT_KEYWORD_EXTRACT_TEMPLATE = PromptTemplate(DEFAULT_KEYWORD_EXTRACT_TEMPLATE_TMPL,
                                                  prompt_type="keyword_extract")

DEFAULT_QUERY_KEYWORD_EXTRACT_TEMPLATE_TMPL = (
    "List up to {max_keywords} keywords to search for documents that answer the question below "
    "(names, terms, topics; also close variants of them). Write them in the language of the "
    "question and leave out common words.\n"
    "---------------------\n"
    "{question}\n"
    "---------------------\n"
    "Reply on one line: KEYWORDS: <keyword>, <keyword>, ...\n"
)
DEFAULT_QUERY_KEYWORD_EXTRACT_TEMPLATE = PromptTemplate(DEFAULT_QUERY_KEYWORD_EXTRACT_TEMPLATE_TMPL,
                                                        prompt_type="query_keyword_extract")
