"""Default prompts of the graph indexes (ragloom's own wording; LlamaIndex's variables).

- :data:`DEFAULT_KG_TRIPLET_EXTRACT_PROMPT`: ``max_knowledge_triplets``, ``text`` — knowledge triplets
  of a chunk, one ``(subject, relation, object)`` per line (``KnowledgeGraphIndex``,
  ``SimpleLLMPathExtractor``).  Parsed by
  :func:`~ragloom.indices.knowledge_graph.utils.parse_triplets`.
- :data:`DEFAULT_SYNONYM_EXPAND_PROMPT`: ``max_keywords``, ``query_str`` — names and variants to look
  up in a property graph (``LLMSynonymRetriever``).  Answer: ``kw1^kw2^...`` on one line.

The keyword prompt of ``KnowledgeGraphIndex`` queries is
:data:`ragloom.prompts.index_prompts.DEFAULT_QUERY_KEYWORD_EXTRACT_TEMPLATE` (as in LlamaIndex, the
keyword tables' one).  Entities are asked for in the language of the text, so Chinese text gives
Chinese entities that match Chinese questions.
"""

from __future__ import annotations

from ragloom.prompts.base import PromptTemplate

__all__ = [
    "DEFAULT_KG_TRIPLET_EXTRACT_TMPL",
    "DEFAULT_KG_TRIPLET_EXTRACT_PROMPT",
    "DEFAULT_SYNONYM_EXPAND_TMPL",
    "DEFAULT_SYNONYM_EXPAND_PROMPT",
]

DEFAULT_KG_TRIPLET_EXTRACT_TMPL = (
    "Extract up to {max_knowledge_triplets} facts from the text between the lines of '=', each as a "
    "triplet (subject, relation, object): subject and object are names of people, places, things or "
    "ideas, the relation is a short verb phrase. Use the words of the text, in its language; leave "
    "out common words.\n"
    "Example: for 'Marie Curie was born in Warsaw in 1867.' write\n"
    "(Marie Curie, born in, Warsaw)\n"
    "(Marie Curie, born in, 1867)\n"
    "====================\n"
    "{text}\n"
    "====================\n"
    "Write one triplet per line and nothing else.\n"
    "Triplets:\n"
)
DEFAULT_KG_TRIPLET_EXTRACT_PROMPT = PromptTemplate(DEFAULT_KG_TRIPLET_EXTRACT_TMPL,
                                                   prompt_type="knowledge_triplet_extract")

DEFAULT_SYNONYM_EXPAND_TMPL = (
    "List up to {max_keywords} names or terms to look up in a knowledge graph to answer the question "
    "below: the entities it mentions and common variants of them (other spellings, singular and "
    "plural, abbreviations), in the language of the question.\n"
    "====================\n"
    "{query_str}\n"
    "====================\n"
    "Reply on one line, separated by '^' symbols: keyword1^keyword2^...\n"
)
DEFAULT_SYNONYM_EXPAND_PROMPT = PromptTemplate(DEFAULT_SYNONYM_EXPAND_TMPL, prompt_type="synonym_expand")
