"""``CondenseQuestionChatEngine``: rewrite the message as a standalone question, answer it with a query
engine (LlamaIndex's)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ragloom.chat_engine.simple import default_memory
from ragloom.chat_engine.turn import AnswerByQuery, Plan, Predict, TurnChatEngine
from ragloom.chat_engine.utils import fit_condense_history, history_str
from ragloom.llms.types import ChatMessage
from ragloom.memory import BaseMemory
from ragloom.prompts.base import check_vars, to_prompt
from ragloom.prompts.chat_prompts import DEFAULT_CONDENSE_QUESTION_PROMPT
from ragloom.query_engine.base import BaseQueryEngine

__all__ = ["CondenseQuestionChatEngine", "condense_prompt_or_default"]


def condense_prompt_or_default(prompt: Any, name: str) -> Any:
    """``prompt`` (a template or ``str``) or :data:`~ragloom.prompts.chat_prompts.DEFAULT_CONDENSE_QUESTION_PROMPT`.

    Raises:
        ValueError: it does not take ``{chat_history}`` and ``{question}`` (the message names ``name``).
    """
    template = DEFAULT_CONDENSE_QUESTION_PROMPT if prompt is None else to_prompt(prompt, name)
    check_vars(template, ["chat_history", "question"], name)
    return template


class CondenseQuestionChatEngine(TurnChatEngine):
    """Each turn: the LLM rewrites the conversation and the new message as one standalone question
    (``condense_question_prompt``: ``{chat_history}``, ``{question}``), then ``query_engine`` answers
    that question; the answer and the query engine's ``source_nodes`` are the turn's.

    The history in the condense prompt is cut (oldest turns first) so the prompt fits the LLM's window,
    counted in its tokenizer.  With no history yet the message is sent as it is, without an LLM call
    (LlamaIndex condenses it anyway).  A condensed question that comes back empty falls back to the
    message.  ``stream_chat`` streams the query engine's answer when it streams (``as_chat_engine``
    builds it so), else gives the whole answer as one piece (LlamaIndex raises).

    Args:
        query_engine: a :class:`~ragloom.query_engine.BaseQueryEngine`.
        condense_question_prompt: default
            :data:`~ragloom.prompts.chat_prompts.DEFAULT_CONDENSE_QUESTION_PROMPT`.
        memory: the conversation.
        llm: the LLM that condenses.
        verbose: print ``Querying with: <question>`` each turn.

    Raises:
        ValueError: a bad query engine or prompt.
    """

    def __init__(
        self,
        query_engine: BaseQueryEngine,
        condense_question_prompt: Any,
        memory: BaseMemory,
        llm: Any,
        verbose: bool = False,
    ) -> None:
        super().__init__(llm, memory, verbose=verbose)
        if not isinstance(query_engine, BaseQueryEngine):
            raise ValueError(f"query_engine must be a ragloom BaseQueryEngine (index.as_query_engine()), got "
                             f"{type(query_engine).__name__}")
        self._query_engine = query_engine
        self._condense_question_prompt = condense_prompt_or_default(condense_question_prompt,
                                                                    "condense_question_prompt")

    @classmethod
    def from_defaults(
        cls,
        query_engine: BaseQueryEngine,
        condense_question_prompt: Any = None,
        chat_history: Optional[Sequence[ChatMessage]] = None,
        memory: Optional[BaseMemory] = None,
        verbose: bool = False,
        system_prompt: Optional[str] = None,
        prefix_messages: Optional[Sequence[ChatMessage]] = None,
        llm: Any = None,
    ) -> "CondenseQuestionChatEngine":
        """An engine over ``query_engine``, condensing with ``llm`` (default ``Settings.llm``), with a
        :class:`~ragloom.memory.ChatMemoryBuffer` holding ``chat_history`` unless ``memory`` is given.

        Raises:
            ValueError: no LLM; ``system_prompt`` or ``prefix_messages`` given (the answer comes from the
                query engine, whose prompts are its own: set them there; LlamaIndex raises
                ``NotImplementedError``); both ``memory`` and ``chat_history``; as the constructor.
        """
        from ragloom.response_synthesizers.base import llm_or_default

        if system_prompt is not None or prefix_messages is not None:
            raise ValueError("system_prompt and prefix_messages are not supported by CondenseQuestionChatEngine: "
                             "the query engine writes the answer with its own prompts (text_qa_template ...)")
        llm = llm_or_default(llm)
        return cls(query_engine, condense_question_prompt, default_memory(llm, chat_history, memory), llm,
                   verbose=verbose)

    def _plan(self, message: str) -> Plan:
        history = self._memory.get(input=message)
        question = message
        if history:
            past = fit_condense_history(self._llm, self._condense_question_prompt, history, message)
            condensed = yield Predict(self._condense_question_prompt,
                                      {"chat_history": history_str(past), "question": message})
            question = condensed.strip() or message
        self._note_question(question)
        return AnswerByQuery(question=question, query_engine=self._query_engine)
