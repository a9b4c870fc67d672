"""Sub-question generation (LlamaIndex ``llama_index.core.question_gen`` names): split a question
into simpler ones, each for one named tool (used by
:class:`~ragloom.query_engine.SubQuestionQueryEngine`)."""

from ragloom.question_gen.llm_generators import LLMQuestionGenerator, parse_sub_questions
from ragloom.question_gen.types import BaseQuestionGenerator, SubQuestion

__all__ = ["BaseQuestionGenerator", "LLMQuestionGenerator", "SubQuestion", "parse_sub_questions"]
