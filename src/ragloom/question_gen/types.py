"""Sub-question types (LlamaIndex ``llama_index.core.question_gen.types`` names)."""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from dataclasses import dataclass
from typing import List, Sequence

from ragloom.prompts.mixin import PromptMixin
from ragloom.schema import QueryBundle
from ragloom.tools.types import ToolMetadata

__all__ = ["SubQuestion", "BaseQuestionGenerator"]


@dataclass
class SubQuestion:
    """One question to put to one tool: ``sub_question`` (text) and ``tool_name`` (a tool's name)."""

    sub_question: str
    tool_name: str


class BaseQuestionGenerator(PromptMixin):
    """Splits a question into :class:`SubQuestion` s over named tools.

    Subclasses implement :meth:`generate`; the default :meth:`agenerate` runs it in a worker thread.
    """

    @abstractmethod
    def generate(self, tools: Sequence[ToolMetadata], query: QueryBundle) -> List[SubQuestion]:
        """The sub-questions for ``query``; every ``tool_name`` is the name of one of ``tools``."""

    async def agenerate(self, tools: Sequence[ToolMetadata], query: QueryBundle) -> List[SubQuestion]:
        return await asyncio.to_thread(self.generate, tools, query)
