"""Prompt templates (``PromptTemplate``) and the synthesizers' default prompts."""

from ragloom.prompts.base import BasePromptTemplate, MissingPromptVariableError, PromptTemplate, PromptType
from ragloom.prompts.default_prompts import (
    DEFAULT_REFINE_PROMPT,
    DEFAULT_SIMPLE_INPUT_PROMPT,
    DEFAULT_TEXT_QA_PROMPT,
    DEFAULT_TREE_SUMMARIZE_PROMPT,
)
from ragloom.prompts.mixin import PromptMixin

__all__ = [
    "BasePromptTemplate",
    "PromptTemplate",
    "PromptType",
    "MissingPromptVariableError",
    "PromptMixin",
    "DEFAULT_TEXT_QA_PROMPT",
    "DEFAULT_REFINE_PROMPT",
    "DEFAULT_TREE_SUMMARIZE_PROMPT",
    "DEFAULT_SIMPLE_INPUT_PROMPT",
]
