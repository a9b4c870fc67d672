"""``SubQuestionQueryEngine``: split a question into sub-questions over several query engines,
answer each, then answer the question from the sub-answers (LlamaIndex's class and behaviour)."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ragloom.base.response.schema import RESPONSE_TYPE, AsyncStreamingResponse, StreamingResponse
from ragloom.query_engine.base import BaseQueryEngine
from ragloom.question_gen.llm_generators import LLMQuestionGenerator
from ragloom.question_gen.types import BaseQuestionGenerator, SubQuestion
from ragloom.response_synthesizers.base import BaseSynthesizer
from ragloom.schema import NodeWithScore, QueryBundle, TextNode
from ragloom.tools.query_engine import QueryEngineTool

logger = logging.getLogger(__name__)

__all__ = ["SubQuestionQueryEngine", "SubQuestionAnswerPair"]

#: most sub-questions answered at once with ``use_async`` (threads in ``query``)
MAX_CONCURRENT_SUB_QUESTIONS = 8


@dataclass
class SubQuestionAnswerPair:
    """A sub-question, its answer (``None`` until answered) and the answer's source nodes."""

    sub_q: SubQuestion
    answer: Optional[str] = None
    sources: List[NodeWithScore] = field(default_factory=list)


def _answer_text(response: Any) -> Tuple[str, List[NodeWithScore]]:
    if isinstance(response, StreamingResponse):
        response = response.get_response()
    return str(response), list(response.source_nodes)


class SubQuestionQueryEngine(BaseQueryEngine):
    """Answer a question that needs several sources (compare, contrast, combine).

    1. ``question_gen`` turns the question and the tools' names and descriptions into
       :class:`~ragloom.question_gen.SubQuestion` s.
    2. Each sub-question goes to its tool's query engine; with ``use_async`` they run
       concurrently (up to 8 at a time, in threads from :meth:`query`, as tasks from :meth:`aquery`).
    3. ``response_synthesizer`` answers the question from one text node per sub-question,
       ``"Sub question: <q>\\nResponse: <answer>"``.

    The response's ``source_nodes`` are those sub-answer nodes followed by every sub-answer's own
    source nodes, as LlamaIndex.  A sub-question that fails is logged (warning) and left out, as
    LlamaIndex; deliberate difference: when every sub-question fails, the first error is raised
    instead of answering "Empty Response" (a down LLM server should not look like no data).

    Args:
        question_gen: a :class:`~ragloom.question_gen.BaseQuestionGenerator`.
        response_synthesizer: a :class:`~ragloom.response_synthesizers.BaseSynthesizer`.
        query_engine_tools: :class:`~ragloom.tools.QueryEngineTool` s with distinct names.
        verbose: print the sub-questions and their answers.
        use_async: answer the sub-questions concurrently.

    Raises:
        ValueError: no tools, a tool that is not a ``QueryEngineTool``, a tool without a name, or
            two tools with one name.
    """

    def __init__(
        self,
        question_gen: BaseQuestionGenerator,
        response_synthesizer: BaseSynthesizer,
        query_engine_tools: Sequence[QueryEngineTool],
        callback_manager: Any = None,
        verbose: bool = False,
        use_async: bool = False,
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        tools = list(query_engine_tools)
        if not tools:
            raise ValueError("query_engine_tools must hold at least one tool")
        engines: Dict[str, Any] = {}
        for i, tool in enumerate(tools):
            if not isinstance(tool, QueryEngineTool):
                raise ValueError(f"query_engine_tools[{i}] must be a QueryEngineTool, got {type(tool).__name__}")
            name = tool.metadata.get_name()
            if name in engines:
                raise ValueError(f"query_engine_tools: two tools are named {name!r}; names must be distinct")
            engines[name] = tool.query_engine
        self._question_gen = question_gen
        self._response_synthesizer = response_synthesizer
        self._metadatas = [t.metadata for t in tools]
        self._query_engines = engines
        self._verbose = verbose
        self._use_async = use_async

    @classmethod
    def from_defaults(
        cls,
        query_engine_tools: Sequence[QueryEngineTool],
        llm: Any = None,
        question_gen: Optional[BaseQuestionGenerator] = None,
        response_synthesizer: Optional[BaseSynthesizer] = None,
        verbose: bool = False,
        use_async: bool = True,
        callback_manager: Any = None,
    ) -> "SubQuestionQueryEngine":
        """An engine with ``question_gen`` (default ``LLMQuestionGenerator.from_defaults(llm)``)
        and ``response_synthesizer`` (default ``get_response_synthesizer(llm, use_async=use_async)``,
        compact mode); ``llm`` defaults to ``Settings.llm``.

        ``verbose`` defaults to False here (LlamaIndex: True, which prints every sub-question).

        Raises:
            ValueError: as the constructor; no LLM is configured and a default part needs one.
        """
        from ragloom.response_synthesizers import get_response_synthesizer
        from ragloom.response_synthesizers.base import llm_or_default

        if question_gen is None or response_synthesizer is None:
            llm = llm_or_default(llm)
        if question_gen is None:
            question_gen = LLMQuestionGenerator.from_defaults(llm=llm)
        if response_synthesizer is None:
            response_synthesizer = get_response_synthesizer(
                llm=llm, use_async=use_async, callback_manager=callback_manager
            )
        return cls(question_gen, response_synthesizer, query_engine_tools,
                   callback_manager=callback_manager, verbose=verbose, use_async=use_async)

    def _get_prompt_modules(self) -> Dict[str, Any]:
        return {"question_gen": self._question_gen, "response_synthesizer": self._response_synthesizer}

    # -- one sub-question ----------------------------------------------------------------------
    def _say(self, text: str) -> None:
        logger.info(text)
        if self._verbose:
            print(text)

    def _engine(self, sub_q: SubQuestion) -> Any:
        engine = self._query_engines.get(sub_q.tool_name)
        if engine is None:
            raise ValueError(
                f"sub-question names unknown tool {sub_q.tool_name!r}; tools: {sorted(self._query_engines)}"
            )
        return engine

    def _pair(self, sub_q: SubQuestion, response: Any) -> SubQuestionAnswerPair:
        text, sources = _answer_text(response)
        self._say(f"[{sub_q.tool_name}] A: {text}")
        return SubQuestionAnswerPair(sub_q=sub_q, answer=text, sources=sources)

    def _query_subq(self, sub_q: SubQuestion) -> SubQuestionAnswerPair:
        engine = self._engine(sub_q)
        self._say(f"[{sub_q.tool_name}] Q: {sub_q.sub_question}")
        return self._pair(sub_q, engine.query(sub_q.sub_question))

    async def _aquery_subq(self, sub_q: SubQuestion) -> SubQuestionAnswerPair:
        engine = self._engine(sub_q)
        self._say(f"[{sub_q.tool_name}] Q: {sub_q.sub_question}")
        response = await engine.aquery(sub_q.sub_question)
        if isinstance(response, AsyncStreamingResponse):
            response = await response.get_response()
        return self._pair(sub_q, response)

    # -- all of them ----------------------------------------------------------------------------
    def _run_all(self, sub_questions: List[SubQuestion]) -> List[Any]:
        """Each sub-question's pair, or the exception it raised, in order."""
        def run(sq: SubQuestion) -> Any:
            try:
                return self._query_subq(sq)
            except Exception as exc:  # one failing source must not sink the others (as LlamaIndex)
                return exc

        if self._use_async and len(sub_questions) > 1:
            workers = min(MAX_CONCURRENT_SUB_QUESTIONS, len(sub_questions))
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ragloom-subq") as pool:
                return list(pool.map(run, sub_questions))
        return [run(sq) for sq in sub_questions]

    async def _arun_all(self, sub_questions: List[SubQuestion]) -> List[Any]:
        limit = asyncio.Semaphore(MAX_CONCURRENT_SUB_QUESTIONS)

        async def run(sq: SubQuestion) -> Any:
            async with limit:
                try:
                    return await self._aquery_subq(sq)
                except Exception as exc:
                    return exc

        return list(await asyncio.gather(*(run(sq) for sq in sub_questions)))

    def _answered(self, sub_questions: List[SubQuestion], results: List[Any]) -> List[SubQuestionAnswerPair]:
        pairs = [r for r in results if isinstance(r, SubQuestionAnswerPair)]
        for sq, r in zip(sub_questions, results, strict=True):
            if isinstance(r, BaseException):
                logger.warning("[%s] failed to answer %r: %s", sq.tool_name, sq.sub_question, r, exc_info=r)
        if sub_questions and not pairs:
            first = next(r for r in results if isinstance(r, BaseException))
            raise first
        return pairs

    @staticmethod
    def _nodes(pairs: List[SubQuestionAnswerPair]) -> Tuple[List[NodeWithScore], List[NodeWithScore]]:
        nodes = [
            NodeWithScore(node=TextNode(text=f"Sub question: {p.sub_q.sub_question}\nResponse: {p.answer}"))
            for p in pairs
        ]
        return nodes, [n for p in pairs for n in p.sources]

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        sub_questions = self._question_gen.generate(self._metadatas, query_bundle)
        self._say(f"Generated {len(sub_questions)} sub questions.")
        pairs = self._answered(sub_questions, self._run_all(sub_questions))
        nodes, sources = self._nodes(pairs)
        return self._response_synthesizer.synthesize(query_bundle, nodes, additional_source_nodes=sources)

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        sub_questions = await self._question_gen.agenerate(self._metadatas, query_bundle)
        self._say(f"Generated {len(sub_questions)} sub questions.")
        pairs = self._answered(sub_questions, await self._arun_all(sub_questions))
        nodes, sources = self._nodes(pairs)
        return await self._response_synthesizer.asynthesize(query_bundle, nodes, additional_source_nodes=sources)
